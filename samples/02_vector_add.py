# The sample class for 02_vector_add, graded by `make demo` and by the tests (see autograder/samples.py).
# ida answers every exercise correctly but differently from the solutions (tests/test_second_answers.py
# checks that it covers them): it must lose no points, or a hidden test rejects a valid answer.
{
    "ada": {"about": "a correct submission", "answers": "solution", "fails": []},
    "ida": {"about": "every answer written differently, all correct", "answers": "solution", "fails": [],
            "replace": {
                "copy_kernel": """@triton.jit
def copy_kernel(src_ptr, dst_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    in_bounds = offsets < n_elements
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=in_bounds, other=0), mask=in_bounds)
""",
                "add_kernel": """@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    block_start = tl.program_id(axis=0) * BLOCK_SIZE
    lanes = tl.arange(0, BLOCK_SIZE)
    real = block_start + lanes < n_elements
    a = tl.load(x_ptr + block_start + lanes, mask=real)
    b = tl.load(y_ptr + block_start + lanes, mask=real)
    tl.store(out_ptr + block_start + lanes, a + b, mask=real)
""",
                "add": """def add(x, y):
    if x.shape != y.shape or x.device != y.device or x.dtype != y.dtype:
        raise ValueError(f"add needs tensors of one shape, device and dtype, got {x.shape}, {y.shape}")
    flat_x, flat_y = x.reshape(-1).contiguous(), y.reshape(-1).contiguous()
    out = torch.empty(flat_x.numel(), dtype=x.dtype, device=x.device)
    n = out.numel()
    add_kernel[(triton.cdiv(n, 2048),)](flat_x, flat_y, out, n, BLOCK_SIZE=2048)
    return out.view(x.shape)
""",
            }},
    "bo": {"about": "the release, untouched", "answers": "release",
           "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance",
                     "test_copy_kernel", "test_copy_kernel_hidden"],
           "why": {"test_add": "add is still the exercise stub"}},
    "cy": {"about": "kernels without masks", "answers": "solution",
           "edits": {"copy_kernel": [[", mask=mask)", ")"]], "add_kernel": [[", mask=mask)", ")"]]},
           "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_copy_kernel",
                     "test_copy_kernel_hidden"],
           "why": {"test_add": "past the end",
                   "test_add_hidden": "past the end",
                   "test_add_kernel_hidden": "past the end",
                   "test_copy_kernel": "past the end",
                   "test_copy_kernel_hidden": "past the end"}},
    "dee": {"ci": False, "about": "a correct kernel, but add returns x + y", "answers": "solution",
            "edits": {"add": [["    add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)\n    return out",
                               "    return x + y"]]},
            "fails": ["test_add", "test_add_hidden", "test_add_performance"],
            "why": {"test_add": "launched no Triton kernel", "test_add_hidden": "launched no Triton kernel",
                    "test_add_performance": "launched no Triton kernel"}, "flags": ["torch fallback"]},
    "eve": {"about": "correct, but prints warnings on stderr", "answers": "solution",
            "edits": {"add": [["    return out", "    import sys, warnings\n    warnings.warn('debugging')\n"
                                                     "    print('shape', out.shape, file=sys.stderr)\n    return out"]]},
            "fails": []},
    "fay": {"about": "correct, but deleted the visible test of add", "answers": "solution",
            "delete": ["test_add"], "fails": [], "flags": ["deleted the read-only cell 'test_add'"]},
}

# The sample class for 04_fusion, graded by `autograder demo 04_fusion` and by the tests (see
# autograder/samples.py).
# The written_* cells are graded by hand: the demo lists them as "to grade by hand", except in the
# untouched release, where nbgrader scores an unanswered cell 0 at once. Samples marked "ci": False
# are graded by the demo only; CI keeps a softmax that overflows (eve), an unfused launch (fay) and
# ida, a second correct answer to every exercise, written differently from the solutions
# (tests/test_second_answers.py checks that it covers them), which must lose no points: a hidden
# test that rejects it rejects a valid answer.
{
    "ada": {"about": "a correct submission", "answers": "solution", "fails": []},
    "ida": {"about": "every answer written differently, all correct", "answers": "solution", "fails": [],
            "replace": {
                "count_bytes": """def eager_bytes(n, element_size=4):
    reads = [1, 1, 1, 1, 1, 1, 1, 1, 2, 2]  # input tensors of each of the ten kernels
    return sum(r + 1 for r in reads) * n * element_size  # + one write each


def fused_bytes(n, element_size=4):
    return n * element_size + n * element_size
""",
                "q_predict": "answer_q_predict = 'D'\n",
                "ten_ops_kernel": """@triton.jit
def ten_ops_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    m = offs < n_elements
    x = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32)
    y = tl.where(x * 1.5 + 0.25 > 0, x * 1.5 + 0.25, 0.0)
    y = tl.abs(y - 0.5)
    y = tl.where(y > 3.0, 3.0, y)
    y = 2.0 / (1.0 + tl.exp(-y))  # 2 * sigmoid(y)
    y = (y + x) * x
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=m)
""",
                "ten_ops": """def ten_ops(x):
    flat = x.contiguous().view(-1)
    out = torch.empty_like(flat)
    n = flat.numel()
    ten_ops_kernel[(triton.cdiv(n, 2048),)](flat, out, n, BLOCK_SIZE=2048)
    return out.view(x.shape)
""",
                "q_blocks": 'answer_q_blocks = " d"\n',
                "softmax_kernel": """@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_rows, n_cols, x_row_stride, out_row_stride,
                   ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    row_ids = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    col_ids = tl.arange(0, BLOCK_N)
    keep = (row_ids < n_rows)[:, None] & (col_ids < n_cols)[None, :]
    tile = tl.load(x_ptr + row_ids[:, None] * x_row_stride + col_ids[None, :], mask=keep,
                   other=float("-inf")).to(tl.float32)
    e = tl.exp(tile - tl.max(tile, axis=1, keep_dims=True))
    total = tl.sum(e, axis=1, keep_dims=True)
    tl.store(out_ptr + row_ids[:, None] * out_row_stride + col_ids[None, :],
             (e / total).to(out_ptr.dtype.element_ty), mask=keep)
""",
                "softmax": """def softmax(x):
    if x.dim() != 2:
        raise ValueError(f"softmax takes a 2-D tensor, got {x.dim()} dimensions")
    x = x if x.stride(-1) == 1 else x.contiguous()
    n_rows, n_cols = x.shape
    block_n = triton.next_power_of_2(n_cols)
    rows = 1  # double while a program holds at most 4 rows and 4096 elements, and rows remain
    while rows < 4 and 2 * rows * block_n <= 4096 and rows < n_rows:
        rows *= 2
    out = torch.empty(n_rows, n_cols, dtype=x.dtype, device=x.device)
    softmax_kernel[(triton.cdiv(n_rows, rows),)](x, out, n_rows, n_cols, x.stride(0), out.stride(0),
                                                 ROWS=rows, BLOCK_N=block_n,
                                                 num_warps=max(4, rows * block_n // 1024))
    return out
""",
                "q_misconception": "answer_q_misconception = 'C'\n",
            }},
    "bo": {"ci": False, "about": "the release, untouched", "answers": "release",
           "fails": ["test_count_bytes", "test_count_bytes_hidden", "test_q_blocks", "test_q_misconception",
                     "test_q_predict",
                     "test_softmax", "test_softmax_hidden", "test_softmax_kernel",
                     "test_softmax_kernel_hidden", "test_softmax_performance", "test_ten_ops",
                     "test_ten_ops_hidden", "test_ten_ops_kernel", "test_ten_ops_kernel_hidden",
                     "test_ten_ops_performance", "written_fusion", "written_ladder", "written_torch_compile"],
           "why": {"test_ten_ops": "ten_ops is still the exercise stub",
                   "test_q_predict": "answer_q_predict is not set"}},
    "cy": {"about": "a fused kernel without masks", "answers": "solution",
           "edits": {"ten_ops_kernel": [[", mask=mask, other=0.0)", ")"],
                                        [".element_ty), mask=mask)", ".element_ty))"]]},
           "fails": ["test_ten_ops", "test_ten_ops_hidden", "test_ten_ops_kernel", "test_ten_ops_kernel_hidden"],
           "why": {"test_ten_ops": "past the end",
                   "test_ten_ops_hidden": "past the end",
                   "test_ten_ops_kernel": "past the end",
                   "test_ten_ops_kernel_hidden": "past the end"},
           "ci": False},
    "dee": {"about": "torch in place of the kernels", "answers": "solution",
            "edits": {"ten_ops": [["    x = x.contiguous()\n", "    return ten_ops_torch(x)\n"]],
                      "softmax": [["    assert x.dim() == 2", "    return torch.softmax(x, dim=-1)\n    assert x.dim() == 2"]]},
            "fails": ["test_softmax", "test_softmax_hidden", "test_softmax_performance", "test_ten_ops",
                      "test_ten_ops_hidden", "test_ten_ops_performance"],
            "why": {"test_softmax": "launched no Triton kernel", "test_softmax_hidden": "launched no Triton kernel",
                    "test_softmax_performance": "launched no Triton kernel",
                    "test_ten_ops": "launched no Triton kernel", "test_ten_ops_hidden": "launched no Triton kernel",
                    "test_ten_ops_performance": "launched no Triton kernel"}, "ci": False},
    "eve": {"about": "a softmax without the maximum subtraction", "answers": "solution",
            "edits": {"softmax_kernel": [["    x = x - tl.max(x, axis=1)[:, None]\n", ""]]},
            "fails": ["test_softmax", "test_softmax_hidden", "test_softmax_kernel", "test_softmax_kernel_hidden"],
            "why": {"test_softmax": "subtract each row's maximum",
                    "test_softmax_hidden": "subtract each row's maximum",
                    "test_softmax_kernel": "subtract each row's maximum",
                    "test_softmax_kernel_hidden": "subtract each row's maximum"}},
    "fay": {"about": "one launch per half: not fused", "answers": "solution",
            "edits": {"ten_ops": [["    ten_ops_kernel[grid](x, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)\n",
                                   "    ten_ops_kernel[grid](x, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)\n"
                                   "    ten_ops_kernel[grid](x, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)\n"]]},
            "fails": ["test_ten_ops", "test_ten_ops_hidden"],
            "why": {"test_ten_ops": "a fused function launches exactly one",
                    "test_ten_ops_hidden": "a fused function launches exactly one"},
            # The work done twice: on an H200 51% of the copy bandwidth, below the 60% a GPU grades.
            "on_gpu": {"fails": ["test_ten_ops", "test_ten_ops_hidden", "test_ten_ops_performance"]}},
    "hal": {"about": "a fused kernel that stores an intermediate and loads it back (right values, twice the traffic)",
            "answers": "solution",
            "edits": {"ten_ops_kernel": [["    y = tl.abs(y)\n",
                                          "    y = tl.abs(y)\n    tl.store(out_ptr + offsets, y, mask=mask)\n"
                                          "    y = tl.load(out_ptr + offsets, mask=mask).to(tl.float32)\n"]]},
            # Its speed can pass (the GPU's cache hides the second pass); the bytes the interpreter
            # counts do not: one load and one store is what the exercise asks.
            "fails": ["test_ten_ops_kernel"],
            "why": {"test_ten_ops_kernel": "a fused kernel loads x once and stores out once"}, "ci": False},
    "gus": {"about": "counted one read per kernel (and predicted from that count), wrong quiz letters",
            "answers": "solution",
            "edits": {"count_bytes": [["two_inputs * 3", "two_inputs * 2"]],
                      "q_predict": [['answer_q_predict = "d"', 'answer_q_predict = "c"']],
                      "q_blocks": [['answer_q_blocks = "d"', 'answer_q_blocks = "a"']],
                      "q_misconception": [['answer_q_misconception = "c"', 'answer_q_misconception = "b"']]},
            "fails": ["test_count_bytes_hidden", "test_q_blocks", "test_q_misconception", "test_q_predict"],
            "why": {"test_count_bytes_hidden": "you counted one read per kernel",
                    "test_q_blocks": "answer_q_blocks = 'a' is not the right answer",
                    "test_q_misconception": "answer_q_misconception = 'b' is not the right answer",
                    "test_q_predict": "answer_q_predict = 'c' is not the right answer"},
            "ci": False},
}

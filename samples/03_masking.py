# The sample class for 03_masking, graded by `autograder demo 03_masking` and by the tests (see
# autograder/samples.py). The written_mask cell is graded by hand: the demo lists it as "to grade by
# hand", except in the untouched release, where nbgrader scores an unanswered cell 0 at once.
# Every expected failure is the same on a GPU and under the interpreter (a sum loaded without
# other= passes under the interpreter, which fills off lanes with 0, so it is not a sample).
# Samples marked "ci": False are graded by the demo only (eve's stores outside the matrix have their
# like in 02's cy, the untouched release in 02's, 05's and 07's bo); CI keeps a wrong neutral element
# with the matching wrong quiz answer (cy) and ida, a second correct answer to every exercise,
# written differently from the solutions (tests/test_second_answers.py checks that it covers them),
# which must lose no points: a hidden test that rejects it rejects a valid answer.
{
    "ada": {"about": "a correct submission", "answers": "solution", "fails": []},
    "ida": {"about": "every answer written differently, all correct", "answers": "solution", "fails": [],
            "replace": {
                "q_grid": 'answer_grid = "B"\n',
                "q_max_other": "answer_max_other = ' b'\n",
                "q_min_other": 'answer_min_other = "C "\n',
                "row_sum_kernel": """@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, stride_row, stride_col, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    values = tl.load(x_ptr + row * stride_row + cols * stride_col, mask=cols < n_cols)
    values = tl.where(cols < n_cols, values.to(tl.float32), 0.0)  # off lanes: whatever was loaded, now 0
    tl.store(out_ptr + row, tl.sum(values, axis=0))
""",
                "row_sum": """def row_sum(x):
    n_rows, n_cols = x.shape
    out = torch.empty((n_rows,), dtype=x.dtype, device=x.device)
    row_sum_kernel[(n_rows,)](x, out, n_cols, *x.stride(), BLOCK_SIZE=max(16, triton.next_power_of_2(n_cols)))
    return out
""",
                "row_max_kernel": """@triton.jit
def row_max_kernel(x_ptr, out_ptr, n_cols, stride_row, stride_col, BLOCK_SIZE: tl.constexpr):
    offs = tl.arange(0, BLOCK_SIZE)
    row_start = x_ptr + tl.program_id(0) * stride_row
    x = tl.load(row_start + offs * stride_col, mask=offs < n_cols, other=float("-inf"))
    tl.store(out_ptr + tl.program_id(0), tl.max(x, 0))
""",
                "row_max": """def row_max(x):
    rows, cols = x.shape
    block = 1 << (cols - 1).bit_length()  # the next power of two
    result = torch.empty(rows, dtype=x.dtype, device=x.device)
    row_max_kernel[(rows,)](x, result, cols, x.stride(0), x.stride(1), BLOCK_SIZE=block)
    return result
""",
                "copy_2d_kernel": """@triton.jit
def copy_2d_kernel(x_ptr, out_ptr, M, N, stride_xm, stride_xn, stride_om, stride_on,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    inside = (rows < M) & (cols < N)
    tile = tl.load(x_ptr + rows * stride_xm + cols * stride_xn, mask=inside, other=0.0)
    tl.store(out_ptr + rows * stride_om + cols * stride_on, tile, mask=inside)
""",
                "copy_2d": """def copy_2d(x):
    M, N = x.shape
    out = x.new_empty((M, N))  # new_empty makes a contiguous tensor, whatever x's layout
    tiles = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    copy_2d_kernel[tiles](x, out, M, N, *x.stride(), *out.stride(), BLOCK_M=64, BLOCK_N=64)
    return out
""",
            }},
    "bo": {"ci": False, "about": "the release, untouched", "answers": "release",
           "fails": ["test_copy_2d", "test_copy_2d_hidden", "test_copy_2d_kernel", "test_copy_2d_kernel_hidden",
                     "test_copy_2d_performance", "test_q_grid", "test_q_max_other", "test_q_min_other",
                     "test_row_max", "test_row_max_hidden", "test_row_sum", "test_row_sum_hidden",
                     "test_row_sum_kernel", "test_row_sum_kernel_hidden", "written_mask"],
           "why": {"test_row_sum": "row_sum is still the exercise stub", "test_q_grid": "answer_grid is not set"}},
    "cy": {"about": "row_max with other=0.0, and quiz answer a (off lanes are never read)", "answers": "solution",
           "edits": {"row_max_kernel": [['other=-float("inf")', "other=0.0"]],
                     "q_max_other": [['answer_max_other = "b"', 'answer_max_other = "a"']]},
           "fails": ["test_q_max_other", "test_row_max", "test_row_max_hidden"],
           "why": {"test_q_max_other": "answer_max_other = 'a' is not the right answer",
                   "test_row_max": "the masked-off lanes held 0.0 and won tl.max",
                   "test_row_max_hidden": "A row of negative numbers got the maximum 0.0"}},
    "dee": {"about": "copy_2d_kernel assumes contiguous matrices (i * N + j), not strides", "answers": "solution",
            "edits": {"copy_2d_kernel": [["offs_m[:, None] * stride_xm + offs_n[None, :] * stride_xn",
                                          "offs_m[:, None] * N + offs_n[None, :]"],
                                         ["offs_m[:, None] * stride_om + offs_n[None, :] * stride_on",
                                          "offs_m[:, None] * N + offs_n[None, :]"]]},
            "fails": ["test_copy_2d", "test_copy_2d_hidden", "test_copy_2d_kernel", "test_copy_2d_kernel_hidden",
                      "test_copy_2d_performance"],
            "why": {"test_copy_2d": "copy_2d on a transposed (33, 65) matrix: element",
                    "test_copy_2d_hidden": "copy_2d on a transposed (2, 3) matrix: element",
                    "test_copy_2d_kernel": "copy_2d_kernel on a transposed (33, 65) matrix",
                    "test_copy_2d_kernel_hidden": "copy_2d_kernel on a transposed (2, 3) matrix",
                    "test_copy_2d_performance": "copy_2d on a transposed matrix: element"}, "ci": False},
    "eve": {"ci": False, "about": "copy_2d_kernel masks rows only: edge tiles write past the last column", "answers": "solution",
            "edits": {"copy_2d_kernel": [["mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)",
                                          "mask = offs_m[:, None] < M"]]},
            "fails": ["test_copy_2d", "test_copy_2d_hidden", "test_copy_2d_kernel", "test_copy_2d_kernel_hidden",
                      "test_copy_2d_performance"],
            "why": {"test_copy_2d": "past the end",
                    "test_copy_2d_hidden": "past the end",
                    "test_copy_2d_kernel": "past the end",
                    "test_copy_2d_kernel_hidden": "past the end",
                    "test_copy_2d_performance": "past the end"}},
    "fay": {"about": "row_sum with a fixed BLOCK_SIZE = 128: rows longer than 128 lose their tail",
            "answers": "solution",
            "edits": {"row_sum": [["BLOCK_SIZE = triton.next_power_of_2(n_cols)", "BLOCK_SIZE = 128"]]},
            "fails": ["test_row_sum_hidden"],
            "why": {"test_row_sum_hidden": "row_sum on a (8, 129) matrix"}, "ci": False},
    "gus": {"about": "copy_2d allocates with torch.empty_like(x): a transposed x gets a transposed copy",
            "answers": "solution",
            "edits": {"copy_2d": [["torch.empty((M, N), dtype=x.dtype, device=x.device)", "torch.empty_like(x)"]]},
            "fails": ["test_copy_2d", "test_copy_2d_hidden"],
            "why": {"test_copy_2d": "torch.empty_like(x) copies x's layout",
                    "test_copy_2d_hidden": "not a contiguous tensor"}, "ci": False},
}

# The sample class for 03_masking, graded by `autograder demo 03_masking` and by the tests (see
# autograder/samples.py). The written_mask cell is graded by hand: the demo lists it as "to grade by
# hand", except in the untouched release, where nbgrader scores an unanswered cell 0 at once.
# Every expected failure is the same on a GPU and under the interpreter (a sum loaded without
# other= passes under the interpreter, which fills off lanes with 0, so it is not a sample).
# Samples marked "ci": False are graded by the demo only; CI keeps a wrong neutral element with the
# matching wrong quiz answer (cy) and stores outside the matrix (eve).
{
    "ada": {"about": "a correct submission", "answers": "solution", "fails": []},
    "bo": {"about": "the release, untouched", "answers": "release",
           "fails": ["test_copy_2d", "test_copy_2d_hidden", "test_copy_2d_kernel", "test_copy_2d_kernel_hidden",
                     "test_copy_2d_performance", "test_q_max_other", "test_row_max", "test_row_max_hidden",
                     "test_row_sum", "test_row_sum_hidden", "test_row_sum_kernel", "test_row_sum_kernel_hidden",
                     "written_mask"]},
    "cy": {"about": "row_max with other=0.0, and quiz answer a (off lanes are never read)", "answers": "solution",
           "edits": {"row_max_kernel": [['other=-float("inf")', "other=0.0"]],
                     "q_max_other": [['answer_max_other = "b"', 'answer_max_other = "a"']]},
           "fails": ["test_q_max_other", "test_row_max", "test_row_max_hidden"]},
    "dee": {"about": "copy_2d_kernel assumes contiguous matrices (i * N + j), not strides", "answers": "solution",
            "edits": {"copy_2d_kernel": [["offs_m[:, None] * stride_xm + offs_n[None, :] * stride_xn",
                                          "offs_m[:, None] * N + offs_n[None, :]"],
                                         ["offs_m[:, None] * stride_om + offs_n[None, :] * stride_on",
                                          "offs_m[:, None] * N + offs_n[None, :]"]]},
            "fails": ["test_copy_2d", "test_copy_2d_hidden", "test_copy_2d_kernel", "test_copy_2d_kernel_hidden",
                      "test_copy_2d_performance"], "ci": False},
    "eve": {"about": "copy_2d_kernel masks rows only: edge tiles write past the last column", "answers": "solution",
            "edits": {"copy_2d_kernel": [["mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)",
                                          "mask = offs_m[:, None] < M"]]},
            "fails": ["test_copy_2d", "test_copy_2d_hidden", "test_copy_2d_kernel", "test_copy_2d_kernel_hidden",
                      "test_copy_2d_performance"]},
    "fay": {"about": "row_sum with a fixed BLOCK_SIZE = 128: rows longer than 128 lose their tail",
            "answers": "solution",
            "edits": {"row_sum": [["BLOCK_SIZE = triton.next_power_of_2(n_cols)", "BLOCK_SIZE = 128"]]},
            "fails": ["test_row_sum_hidden"], "ci": False},
    "gus": {"about": "copy_2d allocates with torch.empty_like(x): a transposed x gets a transposed copy",
            "answers": "solution",
            "edits": {"copy_2d": [["torch.empty((M, N), dtype=x.dtype, device=x.device)", "torch.empty_like(x)"]]},
            "fails": ["test_copy_2d", "test_copy_2d_hidden"], "ci": False},
}

# The sample class for 04_fusion, graded by `autograder demo 04_fusion` and by the tests (see
# autograder/samples.py).
# The written_* cells are graded by hand: the demo lists them as "to grade by hand", except in the
# untouched release, where nbgrader scores an unanswered cell 0 at once. Samples marked "ci": False
# are graded by the demo only; CI keeps a softmax that overflows (eve) and an unfused launch (fay).
{
    "ada": {"about": "a correct submission", "answers": "solution", "fails": []},
    "bo": {"about": "the release, untouched", "answers": "release",
           "fails": ["test_count_bytes", "test_count_bytes_hidden", "test_q_blocks", "test_q_misconception",
                     "test_softmax", "test_softmax_hidden", "test_softmax_kernel",
                     "test_softmax_kernel_hidden", "test_softmax_performance", "test_ten_ops",
                     "test_ten_ops_hidden", "test_ten_ops_kernel", "test_ten_ops_kernel_hidden",
                     "test_ten_ops_performance", "written_fusion", "written_ladder", "written_torch_compile"]},
    "cy": {"about": "a fused kernel without masks", "answers": "solution",
           "edits": {"ten_ops_kernel": [[", mask=mask, other=0.0)", ")"],
                                        [".element_ty), mask=mask)", ".element_ty))"]]},
           "fails": ["test_ten_ops", "test_ten_ops_hidden", "test_ten_ops_kernel", "test_ten_ops_kernel_hidden"],
           "ci": False},
    "dee": {"about": "torch in place of the kernels", "answers": "solution",
            "edits": {"ten_ops": [["    x = x.contiguous()\n", "    return ten_ops_torch(x)\n"]],
                      "softmax": [["    assert x.dim() == 2", "    return torch.softmax(x, dim=-1)\n    assert x.dim() == 2"]]},
            "fails": ["test_softmax", "test_softmax_hidden", "test_softmax_performance", "test_ten_ops",
                      "test_ten_ops_hidden", "test_ten_ops_performance"], "ci": False},
    "eve": {"about": "a softmax without the maximum subtraction", "answers": "solution",
            "edits": {"softmax_kernel": [["    x = x - tl.max(x, axis=1)[:, None]\n", ""]]},
            "fails": ["test_softmax", "test_softmax_hidden", "test_softmax_kernel", "test_softmax_kernel_hidden"]},
    "fay": {"about": "one launch per half: not fused", "answers": "solution",
            "edits": {"ten_ops": [["    ten_ops_kernel[grid](x, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)\n",
                                   "    ten_ops_kernel[grid](x, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)\n"
                                   "    ten_ops_kernel[grid](x, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)\n"]]},
            "fails": ["test_ten_ops", "test_ten_ops_hidden"]},
    "gus": {"about": "counted one read per kernel, wrong quiz letters", "answers": "solution",
            "edits": {"count_bytes": [["two_inputs * 3", "two_inputs * 2"]],
                      "q_blocks": [['answer_q_blocks = "d"', 'answer_q_blocks = "a"']],
                      "q_misconception": [['answer_q_misconception = "c"', 'answer_q_misconception = "b"']]},
            "fails": ["test_count_bytes_hidden", "test_q_blocks", "test_q_misconception"], "ci": False},
}

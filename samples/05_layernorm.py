# The sample class for 05_layernorm, graded by `autograder demo 05_layernorm` and by the tests (see
# autograder/samples.py). The written_variance cell is graded by hand: the demo lists it as "to grade
# by hand", except in the untouched release, where nbgrader scores an unanswered cell 0 at once.
# Every expected failure is the same on a GPU and under the interpreter: cy's layer_norm_forward
# launches no kernel anywhere, and dee's one-pass variance loses every digit on rows with a mean of
# 1000 in fp32 (about 0.06 of rounding in E[x^2] against a variance of 1), which only the hidden tests try.
{
    "ada": {"about": "a correct submission", "answers": "solution", "fails": []},
    "bo": {"about": "the release, untouched", "answers": "release",
           "fails": ["test_add_layer_norm_kernel", "test_add_layer_norm_kernel_hidden", "test_column_sum_kernel",
                     "test_column_sum_kernel_hidden", "test_count_bytes", "test_count_bytes_hidden",
                     "test_layer_norm_autograd", "test_layer_norm_autograd_hidden", "test_layer_norm_bwd_kernel",
                     "test_layer_norm_bwd_kernel_hidden", "test_layer_norm_forward",
                     "test_layer_norm_forward_hidden", "test_layer_norm_forward_performance",
                     "test_layer_norm_fwd_kernel", "test_layer_norm_fwd_kernel_hidden", "test_q_partial_sums",
                     "test_rms_norm", "test_rms_norm_hidden", "written_variance"]},
    "cy": {"about": "layer_norm_forward computes with F.layer_norm, torch.mean and torch.var, no kernel",
           "answers": "solution",
           "replace": {"layer_norm_forward":
                       "def layer_norm_forward(x, weight, bias, eps=1e-5):\n"
                       "    n_cols = x.shape[-1]\n"
                       "    rows = x.reshape(-1, n_cols).float()\n"
                       "    mean = torch.mean(rows, dim=1)\n"
                       "    rstd = 1 / torch.sqrt(torch.var(rows, dim=1, unbiased=False) + eps)\n"
                       "    return F.layer_norm(x, (n_cols,), weight, bias, eps), mean, rstd\n"},
           "fails": ["test_layer_norm_autograd", "test_layer_norm_autograd_hidden", "test_layer_norm_forward",
                     "test_layer_norm_forward_hidden", "test_layer_norm_forward_performance"],
           "flags": ["layer_norm_forward computes with F.layer_norm and launches no kernel"]},
    "dee": {"about": "a one-pass variance, E[x^2] - E[x]^2: right for rows with a small mean only",
            "answers": "solution",
            "edits": {"layer_norm_fwd_kernel": [
                ["        centered = tl.where(mask, x - mean, 0.0)\n        squares += centered * centered\n",
                 "        squares += x * x\n"],
                ["tl.sum(squares, axis=0) / n_cols + eps)", "tl.sum(squares, axis=0) / n_cols - mean * mean + eps)"]]},
            "fails": ["test_layer_norm_forward_hidden", "test_layer_norm_fwd_kernel_hidden"]},
}

# The sample class for 05_layernorm, graded by `autograder demo 05_layernorm` and by the tests (see
# autograder/samples.py). The written_variance cell is graded by hand: the demo lists it as "to grade
# by hand", except in the untouched release, where nbgrader scores an unanswered cell 0 at once.
# Every expected failure is the same on a GPU and under the interpreter: cy's layer_norm_forward
# launches no kernel anywhere, and dee's one-pass variance loses every digit on rows with a mean of
# 1000 in fp32 (about 0.06 of rounding in E[x^2] against a variance of 1), which only the hidden tests try.
# ida writes every answer differently from the solutions (tests/test_second_answers.py checks that it
# covers them), Welford's one-pass statistics among them, and must lose no points: a hidden test that
# rejects it rejects a valid answer. Speed is another matter: on an H200 its Welford kernel, launched
# with 8 warps for 4096 columns (the lesson measured 4 as faster), reached 61% of the copy bandwidth
# (2520 GB/s), under the 70% that 05's performance test asks on a GPU (see "on_gpu").
{
    "ada": {"about": "a correct submission", "answers": "solution", "fails": []},
    "ida": {"about": "every answer written differently, all correct", "answers": "solution", "fails": [],
            "replace": {
                "layer_norm_fwd_kernel": """@triton.jit
def layer_norm_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, x_row_stride, y_row_stride,
                          n_cols, eps, BLOCK_SIZE: tl.constexpr, RMS_NORM: tl.constexpr):
    # The statistics in one pass (Welford's update in each lane, then Chan's merge of the lanes),
    # then a second pass that normalizes.
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    lanes = tl.arange(0, BLOCK_SIZE)
    n_chunks = tl.cdiv(n_cols, BLOCK_SIZE)
    if RMS_NORM:
        sum_sq = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for chunk in range(n_chunks):
            cols = chunk * BLOCK_SIZE + lanes
            x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
            sum_sq += x * x
        mean = 0.0
        var = tl.sum(sum_sq, axis=0) / n_cols
    else:
        lane_mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        lane_m2 = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for chunk in range(n_chunks):
            cols = chunk * BLOCK_SIZE + lanes
            inside = cols < n_cols
            x = tl.load(x_row + cols, mask=inside).to(tl.float32)
            # a lane inside the row in this chunk was inside in every chunk before: its (chunk + 1)-th value
            one_over_count = 1.0 / (chunk + 1)  # one division per chunk, not per element
            delta = x - lane_mean
            lane_mean += tl.where(inside, delta * one_over_count, 0.0)
            lane_m2 += tl.where(inside, delta * (x - lane_mean), 0.0)
        # every chunk but the last is full: a lane holds n_chunks - 1 values, one more if inside the last
        lane_count = (n_chunks - 1) + tl.where((n_chunks - 1) * BLOCK_SIZE + lanes < n_cols, 1.0, 0.0)
        mean = tl.sum(lane_count * lane_mean, axis=0) / n_cols
        spread = lane_mean - mean
        var = (tl.sum(lane_m2, axis=0) + tl.sum(lane_count * spread * spread, axis=0)) / n_cols
    rstd = tl.rsqrt(var + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for chunk in range(n_chunks):
        cols = chunk * BLOCK_SIZE + lanes
        inside = cols < n_cols
        x_hat = (tl.load(x_row + cols, mask=inside).to(tl.float32) - mean) * rstd
        w = tl.load(w_ptr + cols, mask=inside).to(tl.float32)
        if RMS_NORM:
            y = x_hat * w
        else:
            y = x_hat * w + tl.load(b_ptr + cols, mask=inside).to(tl.float32)
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=inside)
""",
                "layer_norm_forward": """def launch_norm_rows(x, weight, bias, eps, rms):
    # (y, mean, rstd) from one launch of layer_norm_fwd_kernel, one program per row of x's last dimension
    n_cols = x.shape[-1]
    rows = x.reshape(-1, n_cols) if x.stride(-1) == 1 else x.contiguous().view(-1, n_cols)
    n_rows = rows.shape[0]
    y = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    mean = torch.empty(n_rows, dtype=torch.float32, device=x.device)
    rstd = torch.empty_like(mean)
    # Welford carries two vectors across its loop: blocks of 1024 keep the registers per thread low
    # (more programs per multiprocessor); wider rows loop
    block = min(triton.next_power_of_2(n_cols), 1024)
    warps = 4
    layer_norm_fwd_kernel[(n_rows,)](rows, y, weight.contiguous(), bias.contiguous(), mean, rstd,
                                     rows.stride(0), y.stride(0), n_cols, eps,
                                     BLOCK_SIZE=block, RMS_NORM=rms, num_warps=warps)
    return y.view(x.shape), mean, rstd


def layer_norm_forward(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5):
    return launch_norm_rows(x, weight, bias, eps, rms=False)
""",
                "count_bytes": """def add_then_norm_bytes(n_rows, n_cols, element_size=2):
    one_pass = n_rows * n_cols * element_size
    add = 2 * one_pass + one_pass  # reads x and r, writes h
    norm = one_pass + one_pass  # reads h back, writes y
    return add + norm


def add_norm_fused_bytes(n_rows, n_cols, element_size=2):
    reads, writes = ("x", "r"), ("h", "y")
    return (len(reads) + len(writes)) * n_rows * n_cols * element_size
""",
                "add_layer_norm_kernel": """@triton.jit
def add_layer_norm_kernel(x_ptr, r_ptr, h_ptr, y_ptr, w_ptr, b_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK_SIZE)
    real = cols < n_cols
    x = tl.load(x_ptr + start + cols, mask=real)
    r = tl.load(r_ptr + start + cols, mask=real)
    h = tl.where(real, x.to(tl.float32) + r.to(tl.float32), 0.0)
    mean = tl.sum(h, axis=0) / n_cols
    diff = tl.where(real, h - mean, 0.0)
    inv_std = tl.rsqrt(tl.sum(diff * diff, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=real).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=real).to(tl.float32)
    tl.store(y_ptr + start + cols, (diff * inv_std * w + b).to(y_ptr.dtype.element_ty), mask=real)
    tl.store(h_ptr + start + cols, h.to(h_ptr.dtype.element_ty), mask=real)
""",
                "q_partial_sums": "answer_q_partial_sums = ' B '\n",
                "layer_norm_bwd_kernel": """@triton.jit
def layer_norm_bwd_kernel(x_ptr, dy_ptr, dx_ptr, w_ptr, mean_ptr, rstd_ptr, dw_partial_ptr, db_partial_ptr,
                          n_rows, n_cols, rows_per_program, BLOCK_SIZE: tl.constexpr):
    group = tl.program_id(0)
    first = group * rows_per_program
    cols = tl.arange(0, BLOCK_SIZE)
    real = cols < n_cols
    w = tl.where(real, tl.load(w_ptr + cols, mask=real).to(tl.float32), 0.0)
    sum_dy_x_hat = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    sum_dy = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    offsets = first.to(tl.int64) * n_cols + cols  # walks down the group's rows
    for i in range(tl.minimum(rows_per_program, n_rows - first)):  # the last group may be short
        x = tl.load(x_ptr + offsets, mask=real).to(tl.float32)
        dy = tl.where(real, tl.load(dy_ptr + offsets, mask=real).to(tl.float32), 0.0)
        rstd = tl.load(rstd_ptr + first + i)
        x_hat = tl.where(real, (x - tl.load(mean_ptr + first + i)) * rstd, 0.0)
        g = dy * w
        dx = rstd * (g - tl.sum(g, axis=0) / n_cols - x_hat * (tl.sum(g * x_hat, axis=0) / n_cols))
        tl.store(dx_ptr + offsets, dx.to(dx_ptr.dtype.element_ty), mask=real)
        sum_dy_x_hat += dy * x_hat
        sum_dy += dy
        offsets += n_cols
    tl.store(dw_partial_ptr + group * n_cols + cols, sum_dy_x_hat, mask=real)
    tl.store(db_partial_ptr + group * n_cols + cols, sum_dy, mask=real)
""",
                "column_sum_kernel": """@triton.jit
def column_sum_kernel(partial_ptr, out_ptr, n_partials, n_cols, BLOCK_ROWS: tl.constexpr,
                      BLOCK_COLS: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_COLS + tl.arange(0, BLOCK_COLS)
    in_cols = cols < n_cols
    sums = tl.zeros([BLOCK_COLS], dtype=tl.float32)  # each tile is reduced as it comes
    for first in range(0, n_partials, BLOCK_ROWS):
        rows = first + tl.arange(0, BLOCK_ROWS)
        keep = (rows < n_partials)[:, None] & in_cols[None, :]
        tile = tl.load(partial_ptr + rows[:, None] * n_cols + cols[None, :], mask=keep)
        sums += tl.sum(tl.where(keep, tile, 0.0), axis=0)
    tl.store(out_ptr + cols, sums.to(out_ptr.dtype.element_ty), mask=in_cols)
""",
                "layer_norm_autograd": """def layer_norm_backward(dy, x, weight, mean, rstd):
    n_cols = x.shape[-1]
    x_rows = x.contiguous().view(-1, n_cols)
    dy_rows = dy.contiguous().view(-1, n_cols)  # a dy of stride 0 (from y.sum()) becomes real rows
    n_rows = x_rows.shape[0]
    rows_per_program = triton.cdiv(n_rows, min(n_rows, 512))  # at most 512 programs
    n_programs = triton.cdiv(n_rows, rows_per_program)
    dx = torch.empty_like(x_rows)
    dw_partial = torch.empty((n_programs, n_cols), dtype=torch.float32, device=x.device)
    db_partial = torch.empty_like(dw_partial)
    block = triton.next_power_of_2(n_cols)
    layer_norm_bwd_kernel[(n_programs,)](x_rows, dy_rows, dx, weight.contiguous(), mean, rstd, dw_partial,
                                         db_partial, n_rows, n_cols, rows_per_program, BLOCK_SIZE=block,
                                         num_warps=max(1, min(16, block // 512)))
    dw = torch.empty(weight.shape, dtype=weight.dtype, device=weight.device)
    db = torch.empty(weight.shape, dtype=weight.dtype, device=weight.device)
    grid = (triton.cdiv(n_cols, 64),)
    column_sum_kernel[grid](dw_partial, dw, n_programs, n_cols, BLOCK_ROWS=64, BLOCK_COLS=64)
    column_sum_kernel[grid](db_partial, db, n_programs, n_cols, BLOCK_ROWS=64, BLOCK_COLS=64)
    return dx.view(x.shape), dw, db


class LayerNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        y, *statistics = layer_norm_forward(x, weight, bias, eps)
        ctx.save_for_backward(x, weight, *statistics)
        return y

    @staticmethod
    def backward(ctx, dy):
        return (*layer_norm_backward(dy, *ctx.saved_tensors), None)
""",
                "rms_norm": """def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    y, _, _ = launch_norm_rows(x, weight, weight, eps, rms=True)  # the kernel never reads the bias
    return y
""",
            }},
    "bo": {"about": "the release, untouched", "answers": "release",
           "fails": ["test_add_layer_norm_kernel", "test_add_layer_norm_kernel_hidden", "test_column_sum_kernel",
                     "test_column_sum_kernel_hidden", "test_count_bytes", "test_count_bytes_hidden",
                     "test_layer_norm_autograd", "test_layer_norm_autograd_hidden", "test_layer_norm_bwd_kernel",
                     "test_layer_norm_bwd_kernel_hidden", "test_layer_norm_forward",
                     "test_layer_norm_forward_hidden", "test_layer_norm_forward_performance",
                     "test_layer_norm_fwd_kernel", "test_layer_norm_fwd_kernel_hidden", "test_q_partial_sums",
                     "test_rms_norm", "test_rms_norm_hidden", "written_variance"],
           "why": {"test_layer_norm_fwd_kernel": "layer_norm_fwd_kernel is still the exercise stub",
                   "test_q_partial_sums": "answer_q_partial_sums is not set"}},
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
           "why": {"test_layer_norm_autograd": "launched no Triton kernel",
                   "test_layer_norm_autograd_hidden": "launched no Triton kernel",
                   "test_layer_norm_forward": "launched no Triton kernel",
                   "test_layer_norm_forward_hidden": "launched no Triton kernel",
                   "test_layer_norm_forward_performance": "launched no Triton kernel"},
           "flags": ["layer_norm_forward computes with F.layer_norm and launches no kernel",
                     "computes with torch.mean and launches no kernel", "computes with torch.sqrt and launches no kernel",
                     "computes with torch.var and launches no kernel"]},
    "dee": {"ci": False, "about": "a one-pass variance, E[x^2] - E[x]^2: right for rows with a small mean only",
            "answers": "solution",
            "edits": {"layer_norm_fwd_kernel": [  # in both plans: the row that fits, and the loops
                ["tl.sum(centered * centered, axis=0) / n_cols + eps)", "tl.sum(x * x, axis=0) / n_cols - mean * mean + eps)"],
                ["            centered = tl.where(mask, x - mean, 0.0)\n            squares += centered * centered\n",
                 "            squares += x * x\n"],
                ["tl.sum(squares, axis=0) / n_cols + eps)", "tl.sum(squares, axis=0) / n_cols - mean * mean + eps)"]]},
            "fails": ["test_layer_norm_forward_hidden", "test_layer_norm_fwd_kernel_hidden"],
            "why": {"test_layer_norm_forward_hidden": "E[x^2] - E[x]^2",
                    "test_layer_norm_fwd_kernel_hidden": "E[x^2] - E[x]^2"}},
    "kim": {"about": "drops the bias from its kernels and from layer_norm_torch, the reference, in the cell "
                     "where the lesson gives it: grading restores the read-only reference, so the kernels fail "
                     "the tests that compare with it, and the edit is flagged",
            "answers": "solution",
            "edits": {"layer_norm_reference": [[" + bias.double()).to(x.dtype)", ").to(x.dtype)"]],
                      "layer_norm_fwd_kernel": [["        if not RMS_NORM:\n            y += tl.load(b_ptr + cols, "
                                                 "mask=mask).to(tl.float32)\n", ""],  # the row that fits
                                                ["            if not RMS_NORM:\n                y += tl.load(b_ptr + "
                                                 "cols, mask=mask).to(tl.float32)\n", ""]],  # the loops
                      "add_layer_norm_kernel": [["centered * rstd * w + b)", "centered * rstd * w)"]]},
            "fails": ["test_add_layer_norm_kernel", "test_add_layer_norm_kernel_hidden", "test_layer_norm_autograd",
                      "test_layer_norm_autograd_hidden", "test_layer_norm_forward", "test_layer_norm_forward_hidden",
                      "test_layer_norm_forward_performance", "test_layer_norm_fwd_kernel",
                      "test_layer_norm_fwd_kernel_hidden"],
            "why": {"test_add_layer_norm_kernel": "add_layer_norm_kernel on 6 x 300 torch.float32: y: element",
                    "test_add_layer_norm_kernel_hidden": "add_layer_norm_kernel on 1 x 1 torch.float32: y: element",
                    "test_layer_norm_autograd": "layer_norm on (6, 100) fp32: element",
                    "test_layer_norm_autograd_hidden": "layer_norm on (1, 1) fp32: element",
                    "test_layer_norm_forward": "layer_norm_forward on (8, 300) fp32: element",
                    "test_layer_norm_forward_hidden": "layer_norm_forward on (1, 1) fp32: element",
                    "test_layer_norm_forward_performance": "layer_norm_forward: element",
                    "test_layer_norm_fwd_kernel": "layer_norm_fwd_kernel on 5 x 300, BLOCK_SIZE=128: y: element",
                    "test_layer_norm_fwd_kernel_hidden": "BLOCK_SIZE=16: y: element"},
            "flags": ["edited the read-only cell 'layer_norm_reference'"]},
}

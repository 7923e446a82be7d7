"""The lessons' reference kernels beside variants and textbook kernels, in one run, timed as `make bench`
times them (`triton.testing.do_bench`, medians): the anchors that say whether a reference is behind
what a lesson could teach, and where (docs/benchmarks.md quotes them). Needs a CUDA GPU; `--check`
runs every variant once on small shapes against torch instead (under the interpreter too).

    .venv/bin/python benchmarks/anchors.py                       # about 4 minutes on an H200
    .venv/bin/python benchmarks/anchors.py --only matmul
    .venv/bin/python benchmarks/anchors.py --check

- matmul: 06's `matmul_kernel` with each of CONFIGS, and two textbook layouts of it (Triton's
  tutorial's: offsets wrapped with `%`, contiguity hints, masks on K only; and one that recomputes
  its pointers at every step of K), fp16 and bf16 at 2048, 4096 and 8192, against cuBLAS measured
  before, between and after them.
- layernorm: 05's forward kernel with 1 to 16 warps at every width, against F.layer_norm and
  torch.compile (make bench's rows); a forward that normalizes several rows per program (for narrow
  rows), and the sample class's Welford kernel (statistics in one loop, a second to normalize) in
  blocks narrower than the row.
- layernorm-backward: 05's backward kernel with 2 to 16 programs per multiprocessor and 4 to 16
  warps, and a backward that loops over the row (for rows too wide for one block in registers).
- int4: 10's `int4_matmul_kernel` with each of INT4_CONFIGS (columns and rows a step, warps, stages,
  programs per multiprocessor, which sets SPLIT_K) and alone (without the split-K sum), against
  torch's own int4 kernel (tinygemm), cuBLAS on fp16 weights and a copy of the packed weights, at
  M = 1 and 16, K = N = 4096 and 8192, from CUDA graphs in turns (a call lasts microseconds).
"""
import argparse
import functools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernels as bench  # noqa: E402  (make bench's loader and rows)

SECTIONS = ("matmul", "layernorm", "layernorm-backward", "int4")
CONFIGS = [(128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (256, 128, 64, 8, 3), (256, 128, 64, 8, 4),
           (128, 128, 64, 8, 4), (128, 128, 64, 4, 4), (128, 128, 64, 4, 3), (128, 128, 32, 4, 4),
           (64, 256, 64, 4, 4), (128, 256, 32, 8, 4), (64, 128, 64, 4, 4), (128, 64, 64, 4, 4)]  # M, N, K, warps, stages

kit = bench.answers("02_vector_add")  # the setup cell: the kit, on the GPU it finds
torch, triton, tl = kit["torch"], kit["triton"], kit["tl"]
F = torch.nn.functional
START = time.time()


def log(*parts):
    print(f"[{time.time() - START:5.0f} s]", *parts, flush=True)


def ms(fn):
    fn()  # compile outside the measurement
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


# ---------------------------------------------------------------------------------------------
# matmul: two textbook layouts of 06's kernel, in 06's grouped order

MATMUL_LESSON = bench.answers("06_matmul")
tile_of_program = MATMUL_LESSON["tile_of_program"]  # the lesson's own (a jitted function the layouts call)


@triton.jit
def _store_tile(c_ptr, acc, M, N, stride_cm, stride_cn, pid_m, pid_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc.to(c_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def matmul_recomputed(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """Masks on M, N and K; the pointers computed afresh at every step of K (nothing carried)."""
    pid_m, pid_n = tile_of_program(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        offs_k = k * BLOCK_K + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak,
                    mask=(offs_m[:, None] < M) & (offs_k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                    mask=(offs_k[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    _store_tile(c_ptr, acc, M, N, stride_cm, stride_cn, pid_m, pid_n, BLOCK_M, BLOCK_N)


@triton.jit
def matmul_tutorial(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """Triton's matmul tutorial's layout: rows and columns wrapped with %, contiguity hints, masks on K only."""
    pid_m, pid_n = tile_of_program(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    offs_am = tl.max_contiguous(tl.multiple_of((pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M, BLOCK_M), BLOCK_M)
    offs_bn = tl.max_contiguous(tl.multiple_of((pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N, BLOCK_N), BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        acc = tl.dot(tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0),
                     tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0), acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    _store_tile(c_ptr, acc, M, N, stride_cm, stride_cn, pid_m, pid_n, BLOCK_M, BLOCK_N)


def launch_matmul(kernel, a, b, c, config):
    block_m, block_n, block_k, warps, stages = config
    (M, K), N = a.shape, b.shape[1]
    return lambda: kernel[(triton.cdiv(M, block_m) * triton.cdiv(N, block_n),)](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8, num_warps=warps, num_stages=stages)


def matmul_section(check):
    lesson = MATMUL_LESSON
    layouts = {"lesson": lesson["matmul_kernel"], "recomputed": matmul_recomputed, "tutorial": matmul_tutorial}
    if check:
        for name, kernel in layouts.items():
            for M, N, K in ((33, 47, 65), (64, 64, 16), (100, 30, 70)):
                a, b = kit["rand"](M, K), kit["rand"](K, N)
                c = torch.empty(M, N, device=a.device)
                launch_matmul(kernel, a, b, c, (32, 32, 16, 4, 2))()
                kit["check_output"](c, a @ b, name=f"{name} on {M}x{N}x{K}")
        log("matmul: every layout computes a @ b")
        return
    for dtype in (torch.float16, torch.bfloat16):
        for side in (2048, 4096, 8192):
            a, b = kit["rand"](side, side, dtype=dtype), kit["rand"](side, side, dtype=dtype)
            c = torch.empty(side, side, dtype=dtype, device=a.device)
            tflops = lambda t: 2 * side ** 3 / t / 1e9  # noqa: E731
            cublas = [ms(lambda: torch.matmul(a, b))]
            tuned = ms(lambda: lesson["matmul_tuned"](a, b))
            times = {}
            for name, kernel in layouts.items():
                for config in CONFIGS:
                    try:
                        times[name, config] = ms(launch_matmul(kernel, a, b, c, config))
                    except Exception as error:  # a configuration that does not fit this GPU
                        log(f"  {name} {config}: {type(error).__name__}: {str(error)[:80]}")
                cublas.append(ms(lambda: torch.matmul(a, b)))
            theirs = sum(cublas) / len(cublas)
            log(f"{str(dtype)[6:]} {side}^3: cuBLAS {tflops(theirs):.0f} TFLOP/s (measured "
                f"{', '.join(f'{tflops(t):.0f}' for t in cublas)}); matmul_tuned {tflops(tuned):.0f} = "
                f"{theirs / tuned:.3f}x, with {getattr(lesson['matmul_kernel_tuned'], 'best_config', None)}")
            for (name, config), t in sorted(times.items(), key=lambda item: item[1])[:8]:
                log(f"    {name:10} {config}: {tflops(t):.0f} TFLOP/s = {theirs / t:.3f}x")
            best = {name: min(t for (n, _), t in times.items() if n == name) for name in layouts}
            log("    best of each layout: " + ", ".join(f"{name} {theirs / t:.3f}x" for name, t in best.items()))


# ---------------------------------------------------------------------------------------------
# layer norm: 05's kernels with other launches, and a backward that loops over the row

def outputs(x):
    """A forward's y, mean and rstd for rows x."""
    mean = torch.empty(x.shape[0], dtype=torch.float32, device=x.device)
    return torch.empty_like(x), mean, torch.empty_like(mean)


def layer_norm_forward(lesson, x, weight, bias, warps, eps=1e-5):
    n_rows, n_cols = x.shape
    y, mean, rstd = outputs(x)
    lesson["layer_norm_fwd_kernel"][(n_rows,)](x, y, weight, bias, mean, rstd, x.stride(0), y.stride(0), n_cols, eps,
                                               BLOCK_SIZE=min(triton.next_power_of_2(n_cols), 16384),
                                               RMS_NORM=False, num_warps=warps)
    return y, mean, rstd


@triton.jit
def layer_norm_fwd_rows(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, n_rows, n_cols, eps,
                        ROWS: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    """05's one-read forward for ROWS rows per program (a [ROWS, BLOCK_SIZE] tile): fewer, larger
    programs for rows of a few kilobytes."""
    rows = tl.program_id(axis=0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offsets = rows[:, None].to(tl.int64) * n_cols + cols[None, :]
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=1) / n_cols
    centered = tl.where(mask, x - mean[:, None], 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centered * centered, axis=1) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=cols < n_cols).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=cols < n_cols).to(tl.float32)
    y = centered * rstd[:, None] * w[None, :] + b[None, :]
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(mean_ptr + rows, mean, mask=rows < n_rows)
    tl.store(rstd_ptr + rows, rstd, mask=rows < n_rows)


def layer_norm_forward_rows(x, weight, bias, rows, warps, eps=1e-5):
    n_rows, n_cols = x.shape
    y, mean, rstd = outputs(x)
    layer_norm_fwd_rows[(triton.cdiv(n_rows, rows),)](x, y, weight, bias, mean, rstd, n_rows, n_cols, eps, ROWS=rows,
                                                      BLOCK_SIZE=triton.next_power_of_2(n_cols), num_warps=warps)
    return y, mean, rstd


def welford_forward(welford, x, weight, bias, block, warps, eps=1e-5):
    """The sample class's Welford kernel (ida's) in blocks of `block` columns."""
    n_rows, n_cols = x.shape
    y, mean, rstd = outputs(x)
    welford[(n_rows,)](x, y, weight, bias, mean, rstd, x.stride(0), y.stride(0), n_cols, eps,
                       BLOCK_SIZE=block, RMS_NORM=False, num_warps=warps)
    return y, mean, rstd


def welford_kernel():
    """ida's layer_norm_fwd_kernel (samples/05_layernorm.py), loaded as calibrate.py loads a variant."""
    sys.path.insert(0, str(bench.ROOT))
    from autograder.course import Course
    from autograder.samples import load_samples, make_submission
    course = Course(bench.ROOT)
    notebook = make_submission(course, "05_layernorm", load_samples(course, "05_layernorm")["ida"])
    return bench.answers("05_layernorm", notebook, "ida")["layer_norm_fwd_kernel"]


@triton.jit
def layer_norm_bwd_looped(x_ptr, dy_ptr, dx_ptr, w_ptr, mean_ptr, rstd_ptr, dw_partial_ptr, db_partial_ptr,
                          n_rows, n_cols, rows_per_program, BLOCK_SIZE: tl.constexpr):
    """05's backward for rows wider than a block: per row, one loop for the two sums and one for dx;
    the program's partial sums of dw and db are added into its row of dw_partial and db_partial
    (zeroed before the launch; in L2), so that no thread holds a whole row of accumulators."""
    pid = tl.program_id(axis=0)
    first = pid * rows_per_program
    for row in range(first, min(first + rows_per_program, n_rows)):
        mean, rstd = tl.load(mean_ptr + row), tl.load(rstd_ptr + row)
        sum_xhat_wdy = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        sum_wdy = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK_SIZE):
            cols = start + tl.arange(0, BLOCK_SIZE)
            mask = cols < n_cols
            x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
            wdy = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32) * \
                tl.load(dy_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
            sum_xhat_wdy += tl.where(mask, (x - mean) * rstd, 0.0) * wdy
            sum_wdy += wdy
        c1 = tl.sum(sum_xhat_wdy, axis=0) / n_cols
        c2 = tl.sum(sum_wdy, axis=0) / n_cols
        for start in range(0, n_cols, BLOCK_SIZE):
            cols = start + tl.arange(0, BLOCK_SIZE)
            mask = cols < n_cols
            x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
            dy = tl.load(dy_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
            x_hat = tl.where(mask, (x - mean) * rstd, 0.0)
            wdy = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32) * dy
            tl.store(dx_ptr + row * n_cols + cols, ((wdy - (x_hat * c1 + c2)) * rstd).to(dx_ptr.dtype.element_ty),
                     mask=mask)
            partial = pid * n_cols + cols  # zeroed before the launch
            tl.store(dw_partial_ptr + partial, tl.load(dw_partial_ptr + partial, mask=mask) + dy * x_hat, mask=mask)
            tl.store(db_partial_ptr + partial, tl.load(db_partial_ptr + partial, mask=mask) + dy, mask=mask)


def layer_norm_backward(lesson, kernel, dy, x, weight, mean, rstd, programs, warps, block=None):
    """05's layer_norm_backward with `programs` programs (rows split evenly), `warps` warps and, for a
    looped kernel, blocks of `block` columns."""
    n_rows, n_cols = x.shape
    rows_per_program = triton.cdiv(n_rows, programs)
    n_programs = triton.cdiv(n_rows, rows_per_program)
    dx = torch.empty_like(x)
    partials = torch.zeros if block else torch.empty  # a looped kernel adds into its partial sums
    dw_partial = partials((n_programs, n_cols), dtype=torch.float32, device=x.device)
    db_partial = partials((n_programs, n_cols), dtype=torch.float32, device=x.device)
    kernel[(n_programs,)](x, dy, dx, weight, mean, rstd, dw_partial, db_partial, n_rows, n_cols, rows_per_program,
                          BLOCK_SIZE=block or triton.next_power_of_2(n_cols), num_warps=warps)
    dw, db = torch.empty(n_cols, dtype=weight.dtype, device=x.device), torch.empty(n_cols, dtype=weight.dtype,
                                                                                  device=x.device)
    for partial, out in ((dw_partial, dw), (db_partial, db)):
        lesson["column_sum_kernel"][(triton.cdiv(n_cols, 128),)](partial, out, n_programs, n_cols, BLOCK_ROWS=32,
                                                                BLOCK_COLS=128)
    return dx, dw, db


def layer_norm_section(check, backward):
    lesson = bench.answers("05_layernorm")
    welford = welford_kernel()
    if check:
        for n_rows, n_cols in ((7, 300), (5, 64), (9, 1000)):
            x, weight, bias, dy = (kit["rand"](*shape) for shape in ((n_rows, n_cols), (n_cols,), (n_cols,),
                                                                      (n_rows, n_cols)))
            leaves = [t.clone().requires_grad_() for t in (x, weight, bias)]
            F.layer_norm(leaves[0], (n_cols,), leaves[1], leaves[2]).backward(dy)
            y, mean, rstd = layer_norm_forward(lesson, x, weight, bias, warps=2)
            expected = F.layer_norm(x, (n_cols,), weight, bias)
            kit["check_output"](y, expected, name="the forward, 2 warps")
            kit["check_output"](layer_norm_forward_rows(x, weight, bias, rows=4, warps=2)[0], expected,
                                name="the forward, 4 rows per program")
            kit["check_output"](welford_forward(welford, x, weight, bias, block=128, warps=2)[0], expected,
                                name="ida's Welford forward, blocks of 128")
            for kernel, block in ((lesson["layer_norm_bwd_kernel"], None), (layer_norm_bwd_looped, 128)):
                got = layer_norm_backward(lesson, kernel, dy, x, weight, mean, rstd, programs=3, warps=4, block=block)
                for value, leaf, name in zip(got, leaves, ("dx", "dw", "db")):
                    kit["check_output"](value, leaf.grad, name=f"{kernel.__name__}'s {name} on {n_rows} x {n_cols}")
        log("layer norm: every variant matches torch, forward and backward")
        return
    roof = kit["copy_bandwidth"](2 ** 28)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    log(f"copy {roof:.0f} GB/s, {sms} multiprocessors")
    _, rows = (bench.layer_norm_bwd if backward else bench.layer_norm_fwd)(kit, lesson)
    for label, nbytes, times in rows:  # make bench's rows, measured in this run
        log(f"{'backward' if backward else 'forward'} {label}: " + ", ".join(
            f"{key} {nbytes / t / 1e6:.0f} GB/s" for key, t in times.items() if t))
    for width in (1024, 2048, 4096, 8192, 16384):
        x, weight, bias = (t.detach() for t in bench.layer_norm_inputs(kit, width))
        results = []
        if not backward:
            launches = [(f"lesson's kernel, {warps} warps", lambda warps=warps: layer_norm_forward(
                lesson, x, weight, bias, warps)) for warps in (1, 2, 4, 8, 16) if 32 * warps <= width <= 4096 * warps]
            launches += [(f"{rows} rows per program, {warps} warps", lambda rows=rows, warps=warps:
                          layer_norm_forward_rows(x, weight, bias, rows, warps)) for rows in (2, 4, 8)
                         for warps in (2, 4, 8, 16) if rows * width <= 16384 and 32 * warps <= rows * width <= 4096 * warps]
            launches += [(f"Welford in blocks of {block}, {warps} warps", lambda block=block, warps=warps:
                          welford_forward(welford, x, weight, bias, block, warps)) for block in (1024, 2048, 4096)
                         for warps in (4, 8, 16) if block < width and 32 * warps <= block]
            for name, launch in launches:
                results.append((2 * x.numel() * 2 / ms(launch) / 1e6, name))
        else:
            dy = kit["rand"](*x.shape, dtype=x.dtype)
            _, mean, rstd = lesson["layer_norm_forward"](x, weight, bias)
            launches = [(lesson["layer_norm_bwd_kernel"], None, per_sm, warps) for per_sm in (2, 4, 8, 16)
                        for warps in (4, 8, 16) if 32 * warps <= width <= 2048 * warps]
            launches += [(layer_norm_bwd_looped, block, per_sm, warps) for per_sm in (2, 4) for warps in (4, 8, 16)
                         for block in (1024, 2048, 4096) if block < width and 32 * warps <= block]
            for kernel, block, per_sm, warps in launches:
                t = ms(lambda: layer_norm_backward(lesson, kernel, dy, x, weight, mean, rstd, per_sm * sms, warps, block))
                name = "lesson's kernel" if block is None else f"looped, blocks of {block}"
                results.append((3 * x.numel() * 2 / t / 1e6, f"{name}, {per_sm} per SM, {warps} warps"))
        results.sort(reverse=True)
        log(f"{x.shape[0]} x {width}: " + "; ".join(f"{what} {gbps:.0f} ({gbps / roof:.2f})" for gbps, what in results[:6]))


# ---------------------------------------------------------------------------------------------
# int4: 10's kernel with other blocks and splits, beside torch's own int4 kernel and a copy

# BLOCK_N, BLOCK_K, warps, stages, programs per multiprocessor; the first is int4_config's on a GPU
INT4_CONFIGS = [(256, 128, 4, 3, 2), (256, 128, 8, 3, 2), (256, 128, 4, 3, 4), (128, 128, 4, 3, 4),
                (128, 128, 8, 3, 4), (128, 128, 4, 4, 4), (128, 128, 4, 3, 8), (64, 128, 4, 4, 8), (256, 64, 4, 4, 4)]


def launch_int4(lesson, x, packed, scales, zeros, group_size, config, reduce=True):
    """10's two kernels launched as int4_linear launches them, with `config`'s blocks and as many
    slices of K as give that many programs per multiprocessor; reduce=False launches the first kernel
    alone (the partials left unsummed: what the split-K sum costs)."""
    block_n, block_k, warps, stages, fill = config
    (M, K), N = x.shape, packed.shape[1]
    block_k = min(block_k, group_size)
    columns, rows = triton.cdiv(N, block_n), triton.cdiv(M, 16)
    split_k = max(1, min(triton.cdiv(fill * lesson["multiprocessors"](), columns * rows), K // block_k))
    k_per_split = triton.cdiv(triton.cdiv(K, split_k), block_k) * block_k
    split_k = triton.cdiv(K, k_per_split)  # the slices the rounding to whole steps leaves
    part = torch.empty((split_k, M, N), dtype=torch.float32, device=x.device)
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)

    def run():
        lesson["int4_matmul_kernel"][(columns, rows, split_k)](
            x, packed, scales, zeros, part, M, N, K, k_per_split, *x.stride(), *packed.stride(), *scales.stride(),
            *zeros.stride(), GROUP_SIZE=group_size, BLOCK_M=16, BLOCK_N=block_n, BLOCK_K=block_k, num_warps=warps,
            num_stages=stages)
        if reduce:
            splits = triton.next_power_of_2(split_k)
            block = max(32, 4096 // splits)
            lesson["int4_reduce_kernel"][(triton.cdiv(M * N, block),)](part, out, M * N, split_k, SPLITS=splits,
                                                                        BLOCK=block)
        return out
    return run


def int4_section(check):
    lesson = bench.answers("10_inference")
    if check:
        dtype = lesson["int4_dtypes"]()[0]
        for M, K, N, group_size in ((1, 256, 96, 64), (5, 512, 64, 128)):
            x, packed, scales, zeros = lesson["int4_inputs"](M, K, N, group_size, dtype)
            for config in ((32, 32, 4, 1, 1), (32, 32, 4, 1, 4), (64, 64, 4, 1, 2)):
                lesson["check_int4"](launch_int4(lesson, x, packed, scales, zeros, group_size, config)(), x, packed,
                                     scales, zeros, group_size, f"{config} on {M}x{K}x{N}")
        log("int4: every launch computes x @ W")
        return
    roof = kit["copy_bandwidth"](2 ** 28)
    log(f"int4: x @ W, groups of 128, fp16 x; microseconds, and the packed bytes / time / copy bandwidth ({roof:.0f} GB/s)")
    for side in (4096, 8192):
        for m in (1, 16):
            x, packed, scales, zeros = lesson["int4_inputs"](m, side, side, 128, torch.float16)
            operands = (lesson, x, packed, scales, zeros, 128)
            copy = torch.empty_like(packed)
            calls = {"int4_linear (the reference)": functools.partial(lesson["int4_linear"], *operands[1:]),
                     "its first kernel alone": launch_int4(*operands, INT4_CONFIGS[0], reduce=False),
                     **{f"{config}": launch_int4(*operands, config) for config in INT4_CONFIGS},
                     "cuBLAS on fp16 weights": functools.partial(
                         torch.matmul, x, lesson["dequantize"](packed, scales, zeros, 128).to(torch.float16)),
                     "a copy of the packed weights": functools.partial(copy.copy_, packed)}
            if vendor := bench.tinygemm(x, packed, scales, zeros, 128):
                calls["torch's int4 kernel (tinygemm), bf16 x"] = vendor
            for name, t in bench.graphed_in_turns(kit, calls, rounds=3).items():
                log(f"  M = {m}, K = N = {side}, {name}: " +
                    (f"{t * 1e3:.1f} us, {packed.numel() / (t * 1e-3) / 1e9 / roof:.2f}" if t else "failed"))
            del calls, operands, x, packed, scales, zeros, copy


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=SECTIONS, default=SECTIONS)
    parser.add_argument("--check", action="store_true", help="each variant once on small shapes, against torch")
    args = parser.parse_args()
    if not args.check and not kit["ON_GPU"]:
        print("The anchors need a CUDA GPU: under Triton's interpreter timings say nothing about GPUs. "
              "--check runs the variants against torch.")
        return 2
    if "matmul" in args.only:
        matmul_section(args.check)
    if "layernorm" in args.only or (args.check and "layernorm-backward" in args.only):
        layer_norm_section(args.check, backward=False)  # a check covers both directions
    if "layernorm-backward" in args.only and not args.check:
        layer_norm_section(args.check, backward=True)
    if "int4" in args.only:
        int4_section(args.check)
    return 0


if __name__ == "__main__":
    sys.exit(main())

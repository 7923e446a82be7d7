"""Calibrate 06_matmul's performance test: what fraction of cuBLAS each kind of kernel reaches.

The test asks matmul_tuned for a fraction of torch.matmul's TFLOP/s at 4096^3 in fp16, measured in
the same process. The fraction must be cleared by a decent tiled kernel (the lesson's reference,
autotuned) with room for noise, and missed by naive ones. This script times, at 4096^3 in fp16 and
bf16, each a few times: cuBLAS; the reference matmul_tuned; the reference matmul with fixed tiles
(128 x 128 x 64, and the lesson's default 64 x 64 x 32); tiny 16 x 16 x 16 tiles in row-major order;
and a kernel without tl.dot (outer products, one k at a time). Each result is checked against torch
first. Needs a CUDA GPU and a built course (source/06_matmul).

    .venv/bin/python benchmarks/matmul_calibration.py
"""
import sys

from kernels import answers

LESSON = answers("06_matmul")  # the kit first: it decides where kernels run, before any @triton.jit below
triton, tl, torch = LESSON["triton"], LESSON["tl"], LESSON["torch"]


@triton.jit
def outer_product_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                         stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """A tile of C = A @ B without tl.dot: one column of A times one row of B per step, on the
    CUDA cores, the way one would write it before meeting tl.dot."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K):
        a = tl.load(a_ptr + offs_m * stride_am + k * stride_ak, mask=offs_m < M, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + k * stride_bk + offs_n * stride_bn, mask=offs_n < N, other=0.0).to(tl.float32)
        acc += a[:, None] * b[None, :]
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc.to(c_ptr.dtype.element_ty),
             mask=mask)


def outer_product_matmul(a, b, BLOCK=64):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    outer_product_kernel[(triton.cdiv(M, BLOCK), triton.cdiv(N, BLOCK))](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=BLOCK, BLOCK_N=BLOCK)
    return c


def variants():
    """label -> a function of (a, b): the kernels a student might hand in, best first."""
    matmul, matmul_tuned = LESSON["matmul"], LESSON["matmul_tuned"]
    return {
        "reference matmul_tuned (autotuned over TUNING_CONFIGS)": matmul_tuned,
        "matmul, fixed 128 x 128 x 64 tiles, GROUP_M 8": lambda a, b: matmul(a, b, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64),
        "matmul, the lesson's default 64 x 64 x 32 tiles": matmul,
        "matmul, tiny 16 x 16 x 16 tiles, row-major": lambda a, b: matmul(a, b, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16,
                                                                          GROUP_M=1),
        "no tl.dot: outer products, 64 x 64 tiles": outer_product_matmul,
    }


def main(side=4096, repeats=3):
    kit = LESSON
    if not kit["ON_GPU"]:
        print("The calibration needs a CUDA GPU: under Triton's interpreter timings say nothing about GPUs.")
        return 2
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, Triton {triton.__version__}; "
          f"{side}^3, medians of CUDA-event timings (the kit's bench_ms), {repeats} rounds")
    tflops = lambda ms: 2 * side ** 3 / (ms * 1e-3) / 1e12  # noqa: E731
    for dtype in (torch.float16, torch.bfloat16):
        a, b = kit["rand"](side, side, dtype=dtype), kit["rand"](side, side, dtype=dtype)
        expected = torch.matmul(a, b)
        print(f"\n{dtype}:")
        for label, fn in variants().items():
            kit["check_output"](fn(a, b), expected, name=label, atol=0.5, rtol=1e-2)  # entries are about 64
            fractions = []
            for _ in range(repeats):  # cuBLAS next to each, as the test measures them
                ours, theirs = kit["bench_ms"](lambda: fn(a, b)), kit["bench_ms"](lambda: torch.matmul(a, b))
                fractions.append(theirs / ours)
            print(f"  {label:50} {tflops(ours):6.0f} TFLOP/s (cuBLAS {tflops(theirs):4.0f}): "
                  f"{', '.join(f'{f:.3f}' for f in fractions)} of cuBLAS")
    print("\nThe test's fraction (TARGET in test_matmul_performance) should sit well below the reference's "
          "lowest fraction in fp16 and well above the best naive one.")
    return 0


if __name__ == "__main__":
    sys.exit(main())

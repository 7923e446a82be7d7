"""Calibrate 07_attention's performance test: what fraction of SDPA's FlashAttention each kind of kernel reaches.

The test asks `attention` for a fraction of the TFLOP/s of F.scaled_dot_product_attention's flash
backend at B = 4, H = 8, N = 4096, d = 64 in fp16, not causal, measured in the same process. The
fraction must be cleared by a decent blocked kernel (the lesson's reference, and the sample class's
second answer, ida's, which loops once with masks everywhere) with room for noise, and missed by
naive ones. This script times, each a few times next to SDPA's flash backend: the reference with
its default 128 x 64 blocks, with 64 x 32 and with tiny 16 x 16 blocks; ida's kernel; a blocked
kernel without tl.dot (products summed on the CUDA cores); and the three steps in torch (cuBLAS and
a softmax, with S and P in memory). Each result is checked against the lesson's reference first.
With --sweep it then launches the reference kernel itself over a few block sizes, warps and
pipeline stages (fp16, d = 64 and 128, causal and not) next to SDPA's flash backend, to choose the
wrapper's defaults and see where `make bench` stands. Needs a CUDA GPU and a built course
(source/07_attention).

    .venv/bin/python benchmarks/attention_calibration.py [--sweep]
"""
import ast
import itertools
import runpy
import sys

from kernels import ROOT, answers

LESSON = answers("07_attention")  # the kit first: it decides where kernels run, before any @triton.jit below
triton, tl, torch = LESSON["triton"], LESSON["tl"], LESSON["torch"]


@triton.jit
def no_dot_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, N, scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                            BLOCK_N: tl.constexpr):
    """The forward pass for BLOCK_M queries of one head without tl.dot: each score and each weighted
    value summed with tl.sum over broadcast products, the way one might write it after lesson 4."""
    head = tl.program_id(1).to(tl.int64) * N * HEAD_DIM
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + head + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=offs_m[:, None] < N,
                other=0.0).to(tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    m = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    row_sum = tl.zeros((BLOCK_M,), tl.float32)
    for start_n in range(0, N, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        rows = head + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
        k = tl.load(k_ptr + rows, mask=offs_n[:, None] < N, other=0.0).to(tl.float32)
        v = tl.load(v_ptr + rows, mask=offs_n[:, None] < N, other=0.0).to(tl.float32)
        s = tl.sum(q[:, None, :] * k[None, :, :], axis=2) * scale
        s = tl.where(offs_n[None, :] < N, s, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        row_sum = row_sum * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.sum(p[:, :, None] * v[None, :, :], axis=1)
        m = m_new
    tl.store(o_ptr + head + offs_m[:, None] * HEAD_DIM + offs_d[None, :], (acc / row_sum[:, None]).to(o_ptr.dtype.element_ty),
             mask=offs_m[:, None] < N)


def no_dot_attention(q, k, v, BLOCK_M=16, BLOCK_N=32):
    B, H, N, d = q.shape
    o = torch.empty_like(q)
    no_dot_attention_kernel[(triton.cdiv(N, BLOCK_M), B * H)](q, k, v, o, N, d ** -0.5, HEAD_DIM=d,
                                                               BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    return o


def three_steps(q, k, v):
    """S and P in memory: cuBLAS, torch.softmax, cuBLAS (what a kernel that writes the scores costs at best)."""
    return torch.softmax((q * q.shape[-1] ** -0.5) @ k.transpose(-2, -1), dim=-1) @ v


def second_answer():
    """ida's attention from samples/07_attention.py: one loop, masks everywhere, tl.exp. Written to a
    file and run there (@triton.jit reads its functions' source from one), with the lesson's names."""
    ida = ast.literal_eval((ROOT / "samples" / "07_attention.py").read_text())["ida"]["replace"]
    path = ROOT / "build" / "bench" / "07_attention_ida.py"
    path.write_text(ida["attention_fwd_kernel"] + "\n\n" + ida["attention"])
    return runpy.run_path(str(path), init_globals=LESSON, run_name="lesson_07_attention_ida")["attention"]


def variants():
    """label -> a function of (q, k, v) returning o: the kernels a student might hand in, best first."""
    attention = LESSON["attention"]
    ida = second_answer()
    return {
        "reference attention (128 x 64 blocks)": lambda q, k, v: attention(q, k, v)[0],
        "ida's attention (one loop, masks everywhere)": lambda q, k, v: ida(q, k, v)[0],
        "reference, 64 x 32 blocks": lambda q, k, v: attention(q, k, v, BLOCK_M=64, BLOCK_N=32)[0],
        "reference, tiny 16 x 16 blocks": lambda q, k, v: attention(q, k, v, BLOCK_M=16, BLOCK_N=16)[0],
        "no tl.dot: broadcast products, 16 x 32 blocks": no_dot_attention,
        "three steps in torch (S and P in memory)": three_steps,
    }


def sweep(kit, flash, B=4, H=8, N=4096):
    """TFLOP/s of attention_fwd_kernel for each configuration, against SDPA's flash backend."""
    kernel = kit["attention_fwd_kernel"]
    for d, causal in itertools.product((64, 128), (False, True)):
        q, k, v = (kit["rand"](B, H, N, d, dtype=torch.float16) for _ in range(3))
        o, lse = torch.empty_like(q), torch.empty(B, H, N, device=q.device)
        expected = kit["reference_attention"](q, k, v, causal)[0]
        work = 4 * B * H * N * N * d / (2 if causal else 1)
        theirs = kit["bench_ms"](lambda: flash(q, k, v, causal))
        print(f"\nd = {d}, {'causal' if causal else 'not causal'}: SDPA flash {work / theirs / 1e9:.0f} TFLOP/s")
        for block_m, block_n, warps, stages in itertools.product((64, 128), (32, 64, 128), (4, 8), (2, 3, 4)):
            if block_m % block_n:
                continue

            def launch():
                kernel[(triton.cdiv(N, block_m), B * H)](q, k, v, o, lse, N, d ** -0.5, HEAD_DIM=d, BLOCK_M=block_m,
                                                         BLOCK_N=block_n, CAUSAL=causal, num_warps=warps,
                                                         num_stages=stages)
            label = f"BLOCK_M {block_m:3}, BLOCK_N {block_n:3}, {warps} warps, {stages} stages"
            try:
                launch()
                kit["check_output"](o, expected, name=label)
                ours = kit["bench_ms"](launch)
            except Exception as error:  # out of shared memory, for one
                print(f"  {label}: failed: {type(error).__name__}: {str(error).splitlines()[0][:100]}")
                continue
            print(f"  {label}: {work / ours / 1e9:4.0f} TFLOP/s, {theirs / ours:.3f} of SDPA flash")


def main(shape=(4, 8, 4096, 64), repeats=3):
    kit = LESSON
    if not kit["ON_GPU"]:
        print("The calibration needs a CUDA GPU: under Triton's interpreter timings say nothing about GPUs.")
        return 2
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def flash(q, k, v, causal=False):
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

    B, H, N, d = shape
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, Triton {triton.__version__}; "
          f"B, H, N, d = {shape}, fp16, not causal, medians of CUDA-event timings (the kit's bench_ms), "
          f"{repeats} rounds")
    tflops = lambda ms: 4 * B * H * N * N * d / (ms * 1e-3) / 1e12  # noqa: E731
    q, k, v = (kit["rand"](*shape, dtype=torch.float16) for _ in range(3))
    expected = kit["reference_attention"](q, k, v)[0]
    for label, fn in variants().items():
        try:
            kit["check_output"](fn(q, k, v), expected, name=label)
        except Exception as error:  # a variant that does not compile here must not stop the others
            print(f"  {label:50} failed: {type(error).__name__}: {str(error).splitlines()[0][:120]}")
            continue
        fractions = []
        for _ in range(repeats):  # SDPA next to each, as the test measures them
            ours, theirs = kit["bench_ms"](lambda: fn(q, k, v)), kit["bench_ms"](lambda: flash(q, k, v))
            fractions.append(theirs / ours)
        print(f"  {label:50} {tflops(ours):6.0f} TFLOP/s (SDPA flash {tflops(theirs):4.0f}): "
              f"{', '.join(f'{f:.3f}' for f in fractions)} of SDPA flash")
    print("\nThe test's fraction (TARGET in test_attention_performance) should sit well below the lowest "
          "fraction of the reference and of ida's kernel, and well above the best naive one.")
    if "--sweep" in sys.argv[1:]:
        sweep(kit, flash)
    return 0


if __name__ == "__main__":
    sys.exit(main())

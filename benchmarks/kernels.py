"""`make bench`: the course's reference kernels against eager torch, torch.compile and the copy roof.

Loads each lesson's reference answers from source/<lesson>/ (the setup cell, the answer cells and
the cells that only define things), times them with the kit's bench_ms (CUDA events, median) and
writes a table and a plot into docs/benchmarks.md and docs/benchmarks.png. Needs a CUDA GPU.
`--only LESSON ...` measures those lessons and prints their tables, leaving the docs as they are
(the doc's tables and plot always come from one whole run).

    .venv/bin/python benchmarks/kernels.py
    .venv/bin/python benchmarks/kernels.py --only 07_attention
    .venv/bin/python benchmarks/kernels.py --only 08_hopper_matmul --max-autotune
"""
import argparse
import ast
import functools
import re
import runpy
import statistics
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- kernels: begin (written by `make bench`) -->", "<!-- kernels: end -->"
DEFINITIONS = (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign)


def answers(lesson, notebook=None, label="reference"):
    """A namespace holding a lesson's reference answers (or those of `notebook`, a student's) and what
    they rely on (the setup cell, the course's read-only cells, the cells that only define things),
    nothing run besides. The code goes through a real file: @triton.jit reads its
    functions' source from one."""
    chosen = []
    source = notebook or nbformat.read(ROOT / "source" / lesson / f"{lesson}.ipynb", as_version=4)
    for cell in source.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or meta.get("grade"):
            continue
        code = re.sub(r"^\s*[%!].*$", "", cell.source, flags=re.M)
        body = ast.parse(code).body
        if "setup" in cell.metadata.get("tags", []) or meta.get("solution") or meta.get("locked") or \
                all(isinstance(node, DEFINITIONS) for node in body):
            chosen.append(code)
    path = ROOT / "build" / "bench" / f"{lesson}-{re.sub(r'[^a-z0-9]+', '-', label.lower())[:60]}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n\n".join(chosen) + "\n")
    return runpy.run_path(str(path), run_name=f"lesson_{lesson}")


def compiled(fn, mode=None):
    """torch.compile(fn) for one shape: time it at one size, and make a new one for the next. It
    compiles at its first call (bench_ms makes that call outside the timing) with dynamic=False, after
    torch._dynamo.reset(), so that every size gets kernels specialised to it, as a model with fixed
    shapes does. One compiled function reused across sizes recompiles at the second size with dynamic
    shapes and serves every later size with those generic kernels: on an H200 that took the softmax
    at width 4096 from 3290 down to 1934 GB/s."""
    import torch
    torch._dynamo.reset()  # forget the graphs compiled for other sizes (same code objects)
    try:
        return torch.compile(fn, dynamic=False, mode=mode)
    except Exception as error:  # a broken compiler must not stop the other rows
        print(f"torch.compile unavailable: {error}")
        return None


def time_or_none(kit, fn, graphed=False):
    """Median milliseconds of fn, or None when it fails. `graphed`: replayed from a CUDA graph, which
    times the GPU's work without Python's launch cost (for kernels that run for microseconds)."""
    try:
        if fn and graphed:
            fn()  # compile, and tune, before the graph records the launches
            return kit["triton"].testing.do_bench_cudagraph(fn, rep=100, return_mode="median")
        return kit["bench_ms"](fn) if fn else None
    except Exception as error:
        print(f"  failed: {type(error).__name__}: {str(error).splitlines()[0][:120]}")
        return None


def in_turns(kit, calls, rounds=3, graphed=False):
    """{key: median milliseconds} of calls timed in turns, `rounds` times (None for one that failed):
    an H200's clock follows its power draw, and one implementation timed after another sees another
    clock (cuBLAS alone moved by a tenth within one run; torch.compile's layer norm by a third
    between two runs of a day), so each is compared with the others measured around it."""
    runs = {key: [] for key in calls}
    for _ in range(rounds):
        for key, fn in calls.items():
            runs[key].append(time_or_none(kit, fn, graphed))
    return {key: statistics.median(t) if None not in t else None for key, t in runs.items()}


def graphed_in_turns(kit, calls, rounds):
    """in_turns from CUDA graphs, then, plainly, the calls a graph could not record."""
    times = in_turns(kit, calls, rounds, graphed=True)
    times.update(in_turns(kit, {key: calls[key] for key, t in times.items() if t is None}, rounds))
    return times


def vector_add(kit, lesson):
    rand = kit["rand"]
    rows = []
    for power in range(12, 29, 2):
        n = 2 ** power
        x, y = rand(n), rand(n)
        add_compiled = compiled(lambda x, y: x + y)
        times = {"ours": time_or_none(kit, lambda: lesson["add"](x, y)),
                 "eager": time_or_none(kit, lambda: x + y),
                 "compile": time_or_none(kit, add_compiled and (lambda: add_compiled(x, y)))}
        rows.append((f"2^{power}", 12 * n, times))
    return "vector add, fp32 (GB/s, 3 passes)", rows


def ten_ops(kit, lesson):
    rand = kit["rand"]
    rows = []
    for power in (20, 22, 24, 26, 28):
        n = 2 ** power
        x = rand(n)
        chain_compiled = compiled(lesson["ten_ops_torch"])
        times = {"ours": time_or_none(kit, lambda: lesson["ten_ops"](x)),
                 "eager": time_or_none(kit, lambda: lesson["ten_ops_torch"](x)),
                 "compile": time_or_none(kit, chain_compiled and (lambda: chain_compiled(x)))}
        rows.append((f"2^{power}", 8 * n, times))
    return "ten elementwise ops, fp32 (GB/s of the bytes floor: one read, one write)", rows


def softmax(kit, lesson):
    torch, rand = kit["torch"], kit["rand"]
    rows = []
    for width in (128, 256, 512, 1024, 2048, 4096, 8192, 16384):
        x = rand(2 ** 26 // width, width)
        softmax_compiled = compiled(lambda x: torch.softmax(x, dim=-1))
        times = {"ours": time_or_none(kit, lambda: lesson["softmax"](x)),
                 "eager": time_or_none(kit, lambda: torch.softmax(x, dim=-1)),
                 "compile": time_or_none(kit, softmax_compiled and (lambda: softmax_compiled(x)))}
        rows.append((f"{x.shape[0]}x{width}", 8 * x.numel(), times))
    return "row softmax, fp32, 2^26 elements (GB/s, one read, one write)", rows


def layer_norm_inputs(kit, width):
    """fp16 rows of `width` columns, 2^26 elements in all, with weight and bias that take gradients."""
    torch, rand = kit["torch"], kit["rand"]
    x = rand(2 ** 26 // width, width, dtype=torch.float16).requires_grad_()
    weight = rand(width, dtype=torch.float16).requires_grad_()
    bias = rand(width, dtype=torch.float16).requires_grad_()
    return x, weight, bias


def layer_norm_fwd(kit, lesson):
    torch = kit["torch"]
    F = torch.nn.functional
    rows = []
    for width in (1024, 2048, 4096, 8192, 16384):
        x, weight, bias = layer_norm_inputs(kit, width)
        torch_norm = lambda: F.layer_norm(x, (width,), weight, bias)  # noqa: E731
        norm_compiled = compiled(lambda t: F.layer_norm(t, (width,), weight, bias))  # one per shape
        with torch.no_grad():
            times = in_turns(kit, {"ours": lambda: lesson["layer_norm_forward"](x, weight, bias), "eager": torch_norm,
                                   "compile": norm_compiled and (lambda: norm_compiled(x))})
        rows.append((f"{x.shape[0]}x{width}", 2 * x.numel() * x.element_size(), times))
    return "layer norm forward, fp16, 2^26 elements (GB/s, one read, one write)", rows


def layer_norm_bwd(kit, lesson):
    """The backward alone. torch's and torch.compile's through autograd; the lesson's as its
    layer_norm_backward (its three launches, given dy and the saved mean and rstd), not through its
    Python autograd.Function, which can take longer to issue than its kernels run and would then
    time the host (figures in docs/benchmarks.md)."""
    torch = kit["torch"]
    F = torch.nn.functional
    rows = []
    for width in (1024, 2048, 4096, 8192, 16384):
        x, weight, bias = layer_norm_inputs(kit, width)
        dy = kit["rand"](*x.shape, dtype=x.dtype)
        with torch.no_grad():
            _, mean, rstd = lesson["layer_norm_forward"](x, weight, bias)
        norm_compiled = compiled(lambda t, w, b: F.layer_norm(t, (width,), w, b))  # one per shape
        calls = {"ours": lambda: lesson["layer_norm_backward"](dy, x, weight, mean, rstd)}
        for key, forward in {"eager": lambda: F.layer_norm(x, (width,), weight, bias),
                             "compile": norm_compiled and (lambda: norm_compiled(x, weight, bias))}.items():
            try:
                y = forward() if forward else None
            except Exception as error:
                print(f"  failed: {type(error).__name__}: {str(error).splitlines()[0][:120]}")
                y = None
            calls[key] = y is not None and (lambda y=y: torch.autograd.grad(y, (x, weight, bias), dy, retain_graph=True))
        times = in_turns(kit, calls)
        del calls, y
        rows.append((f"{x.shape[0]}x{width}", 3 * x.numel() * x.element_size(), times))
    return "layer norm backward, fp16, 2^26 elements (GB/s, read x and dy, write dx)", rows


def matmul(kit, lesson, dtype="float16", rounds=3):
    """The lesson's autotuned matmul against cuBLAS (torch.matmul) on square products. A section of
    its own kind: TFLOP/s, and no copy roof (ours / eager is the fraction of cuBLAS). Replayed from
    CUDA graphs: at 2048 a product lasts about 28 us on an H200, less than Python takes to issue the
    autotuner's launch, so timing calls one by one measured the host (docs/benchmarks.md). The three
    take turns, `rounds` times, each keeping its median (in_turns)."""
    torch, rand = kit["torch"], kit["rand"]
    rows = []
    for side in (1024, 2048, 4096, 8192):
        a, b = rand(side, side, dtype=getattr(torch, dtype)), rand(side, side, dtype=getattr(torch, dtype))
        product_compiled = compiled(lambda a, b: a @ b)
        times = in_turns(kit, {"ours": lambda: lesson["matmul_tuned"](a, b), "eager": lambda: torch.matmul(a, b),
                               "compile": product_compiled and (lambda: product_compiled(a, b))}, rounds, graphed=True)
        rows.append((f"{side}^3", 2 * side ** 3, times))
    return f"matmul, {dtype}, square (TFLOP/s, CUDA graphs; eager torch is cuBLAS)", rows, "TFLOP/s"


def attention(kit, lesson, head_dim=64):
    """The lesson's attention (forward) against SDPA's FlashAttention-2 and cuDNN backends in fp16, on
    16384 tokens (B * N) of 2048 features (H * d), causal and not: a section of its own kind, TFLOP/s
    of 4 B H N^2 d operations (half of them causal), and the two backends in place of eager and compile."""
    torch, rand = kit["torch"], kit["rand"]
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def sdpa(backend, q, k, v, causal):
        with sdpa_kernel(backend):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

    rows = []
    for causal in (False, True):
        for n in (4096, 16384):
            b, h = 16384 // n, 2048 // head_dim
            q, k, v = (rand(b, h, n, head_dim, dtype=torch.float16) for _ in range(3))
            times = {"ours": time_or_none(kit, lambda: lesson["attention"](q, k, v, causal=causal)),
                     "eager": time_or_none(kit, lambda: sdpa(SDPBackend.FLASH_ATTENTION, q, k, v, causal)),
                     "compile": time_or_none(kit, lambda: sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, causal))}
            work = 4 * b * h * n * n * head_dim // (2 if causal else 1)
            rows.append((f"{b}x{h}x{n}{' causal' if causal else ''}", work, times))
    return (f"attention forward, fp16, d = {head_dim}, B x H x N (TFLOP/s)", rows, "TFLOP/s",
            {"eager": ("SDPA flash", "flash"), "compile": ("SDPA cuDNN", "cuDNN")})


def hopper_matmul(kit, lesson, dtype="float16", rounds=3):
    """Lesson 08's persistent TMA kernels against the vendor's library on square products, in turns
    from CUDA graphs as 06's matmul (a launch through a descriptor allocates its scratch from torch,
    which a graph records too; a call that cannot be graphed is timed plainly): fp16 and bf16 against
    cuBLAS, FP8 (e4m3, rowwise scales) against torch._scaled_mm with use_fast_accum=True, each beside
    the same kernel warp-specialised."""
    torch, rand = kit["torch"], kit["rand"]
    rows = []
    for side in (4096, 8192):
        if dtype == "float8_e4m3fn":
            x8, w8, x_scale, w_scale = lesson["quantized_pair"](side, side, side)
            calls = {"ours": lambda: lesson["fp8_linear"](x8, w8, x_scale, w_scale),
                     "eager": lambda: torch._scaled_mm(x8, w8.t(), scale_a=x_scale[:, None], scale_b=w_scale[None, :],
                                                       out_dtype=torch.bfloat16, use_fast_accum=True),
                     "compile": lambda: lesson["fp8_linear"](x8, w8, x_scale, w_scale, warp_specialize=True)}
        else:
            a, b = rand(side, side, dtype=getattr(torch, dtype)), rand(side, side, dtype=getattr(torch, dtype))
            calls = {"ours": lambda: lesson["tma_matmul"](a, b), "eager": lambda: torch.matmul(a, b),
                     "compile": lambda: lesson["tma_matmul"](a, b, warp_specialize=True)}
        times = graphed_in_turns(kit, calls, rounds)
        rows.append((f"{side}^3", 2 * side ** 3, times))
    vendor = "torch._scaled_mm" if dtype == "float8_e4m3fn" else "cuBLAS"
    return (f"Hopper matmul (lesson 08), {dtype}, square (TFLOP/s, CUDA graphs)", rows, "TFLOP/s",
            {"eager": (vendor, vendor), "compile": ("ours, warp_specialize=True", "WS")})


def hopper_matmul_max_autotune(kit, lesson, dtype="float16", rounds=3):
    """Lesson 08's persistent TMA kernel against cuBLAS and torch.compile's max-autotune (Inductor
    benchmarks its own Triton templates, persistent TMA ones among them on Hopper, against cuBLAS for
    each shape, and keeps the fastest), in turns from CUDA graphs. Without Inductor's own CUDA graphs
    (the timing replays one). Its tuning takes minutes a shape, so only --max-autotune runs it."""
    torch, rand = kit["torch"], kit["rand"]
    rows = []
    for side in (4096, 8192):
        a, b = rand(side, side, dtype=getattr(torch, dtype)), rand(side, side, dtype=getattr(torch, dtype))
        started = time.monotonic()
        product = compiled(lambda a, b: a @ b, mode="max-autotune-no-cudagraphs")
        tuned = time_or_none(kit, product and (lambda: product(a, b)))  # compiles and tunes
        tuning = f", tuned in {time.monotonic() - started:.0f} s" if tuned else ""
        times = graphed_in_turns(kit, {"ours": lambda: lesson["tma_matmul"](a, b), "eager": lambda: torch.matmul(a, b),
                                       "compile": product and (lambda: product(a, b))}, rounds)
        rows.append((f"{side}^3{tuning}", 2 * side ** 3, times))
    return (f"Hopper matmul (lesson 08) against max-autotune, {dtype}, square (TFLOP/s, CUDA graphs)", rows,
            "TFLOP/s", {"eager": ("cuBLAS", "cuBLAS"), "compile": ("torch.compile max-autotune", "max-autotune")})


def attention_training(kit, lesson, head_dim=128, backward=False):
    """Lesson 09's attention on (B, N, H, d) tensors against SDPA's FlashAttention-2 and cuDNN backends,
    in fp16, at B x H x N = 4 x 32 x 4096 and 1 x 32 x 16384, causal and not, and with 8 query heads
    per K/V head (GQA, 4 x 32 x 4096). The forward pass alone, or the backward alone: the lesson's
    attention_backward given the saved (o, lse), SDPA's through autograd.grad on a graph kept for it.
    TFLOP/s of 4 B H N^2 d operations forward, 10 backward (five products), half of them causal."""
    torch, rand = kit["torch"], kit["rand"]
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def sdpa(backend, q, k, v, causal):
        with sdpa_kernel(backend):
            return torch.nn.functional.scaled_dot_product_attention(
                *(t.transpose(1, 2) for t in (q, k, v)), is_causal=causal, enable_gqa=q.shape[2] != k.shape[2])

    rows = []
    for b, n, h_kv, causal in ((4, 4096, 32, False), (1, 16384, 32, False), (4, 4096, 32, True),
                               (1, 16384, 32, True), (4, 4096, 4, False)):
        q = rand(b, n, 32, head_dim, dtype=torch.float16)
        k, v = (rand(b, n, h_kv, head_dim, dtype=torch.float16) for _ in range(2))
        calls = {}
        if backward:
            do = rand(b, n, 32, head_dim, dtype=torch.float16)
            o, lse = lesson["attention_forward"](q, k, v, causal)
            calls["ours"] = lambda: lesson["attention_backward"](q, k, v, o, lse, do, causal)
            for key, backend in (("eager", SDPBackend.FLASH_ATTENTION), ("compile", SDPBackend.CUDNN_ATTENTION)):
                leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
                try:
                    graph = sdpa(backend, *leaves, causal)
                except RuntimeError as error:  # a backend that does not take these inputs (GQA, say)
                    print(f"  {backend.name} refused: {str(error).splitlines()[0][:120]}")
                    calls[key] = None
                    continue
                calls[key] = lambda graph=graph, leaves=leaves: torch.autograd.grad(
                    graph, leaves, do.transpose(1, 2), retain_graph=True)
        else:
            calls = {"ours": lambda: lesson["attention_forward"](q, k, v, causal),
                     "eager": lambda: sdpa(SDPBackend.FLASH_ATTENTION, q, k, v, causal),
                     "compile": lambda: sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, causal)}
        times = {key: time_or_none(kit, call) for key, call in calls.items()}
        del calls
        work = (10 if backward else 4) * b * 32 * n * n * head_dim // (2 if causal else 1)
        gqa = f" GQA {32 // h_kv}:1" if h_kv != 32 else ""
        rows.append((f"{b}x32x{n}{' causal' if causal else ''}{gqa}", work, times))
    return (f"attention {'backward' if backward else 'forward'} (lesson 09), fp16, d = {head_dim}, "
            "(B, N, H, d) inputs, B x H x N (TFLOP/s)", rows, "TFLOP/s",
            {"eager": ("SDPA flash", "flash"), "compile": ("SDPA cuDNN", "cuDNN")})


def paged_decode(kit, lesson, rounds=3):
    """Lesson 10's paged decoding against torch's way (the pages gathered into a contiguous cache, then
    SDPA with a mask of the lengths) and beside the lesson's own kernel on a contiguous cache of the
    same size (exercise 1): B = 4 sequences, H = 32 query heads over H_kv = 8, d = 128, fp16, pages of
    16 tokens (shuffled). GB/s on the bytes floor (K and V read once, q and o, the block table). In
    turns from CUDA graphs as 06's matmul: a call lasts tens of microseconds, less than its host code
    (checks, allocations, two launches), so timing calls one by one measured the CPU; a call that
    cannot be graphed is timed plainly."""
    torch = kit["torch"]
    rows = []
    for n in (2048, 8192, 32768):
        q, k_pages, v_pages, table, lengths = lesson["paged_inputs"]([n] * 4, 32, 8, 128, 16, torch.float16,
                                                                     spare_pages=0)
        nbytes = (k_pages.numel() + v_pages.numel() + 2 * q.numel()) * q.element_size() + table.numel() * 4
        qc, k, v = lesson["decode_inputs"](4, n, 32, 8, 128, torch.float16)
        # partial, not lambdas: a closure would keep the caches alive past the del below
        calls = {"ours": functools.partial(lesson["paged_decode_attention"], q, k_pages, v_pages, table, lengths),
                 "eager": functools.partial(lesson["torch_paged_decode"], q, k_pages, v_pages, table, lengths),
                 "compile": functools.partial(lesson["decode_attention"], qc, k, v)}
        times = graphed_in_turns(kit, calls, rounds)
        del calls, q, k_pages, v_pages, table, lengths, qc, k, v  # K and V: 512 MiB, paged and again contiguous, at 32768
        rows.append((f"4x{n}", nbytes, times))
    return ("paged decoding (lesson 10), fp16, B = 4, H = 32, H_kv = 8, d = 128, pages of 16, B x tokens "
            "(GB/s on the bytes floor, CUDA graphs)", rows, "GB/s",
            {"eager": ("gather + SDPA", "SDPA"), "compile": ("ours, contiguous cache (ex. 1)", "contiguous")})


def tinygemm(x, packed, scales, zeros, group_size):
    """torch's own int4 kernel (`torch._weight_int4pack_mm`, tinygemm: hand-written CUDA) on the
    lesson's int4 weights, as a call of no arguments, or None (saying why) where this torch has none.
    Its layout: the weights transposed, the nibbles of rows 2i and 2i + 1 of a column in one byte, high
    first, tiled; per group a bf16 scale and offset, W = (q - 8) * scale + offset, so offset = (8 -
    zero) * scale; x in bf16, which it requires."""
    import torch
    try:
        q = torch.stack([packed & 15, packed >> 4], 1).reshape(2 * packed.shape[0], packed.shape[1])
        qt = q.T.contiguous().to(torch.int32)
        weights = torch._convert_weight_to_int4pack((qt[:, ::2] << 4 | qt[:, 1::2]).to(torch.uint8), 8)
    except (AttributeError, RuntimeError) as error:
        print(f"  torch's int4 kernel unavailable: {str(error).splitlines()[0][:120]}")
        return None
    offsets = (8 - zeros.float()) * scales.float()
    scales_offsets = torch.stack([scales.float(), offsets], -1).to(torch.bfloat16).contiguous()
    return functools.partial(torch._weight_int4pack_mm, x.to(torch.bfloat16), weights, group_size, scales_offsets)


def int4_matmul(kit, lesson, rounds=3):
    """Lesson 10's int4 weight-only product (groups of 128, fp16 x) against cuBLAS (torch.matmul) on the
    same weights in fp16, and against torch's own int4 kernel (tinygemm, the same weights in its
    layout, x in bf16, which it requires), for M = 1, 4, 16 rows of x and K = N = 4096 and 8192.
    cuBLAS reads four times the weight bytes, but every column is counted on the same int4 bytes
    floor (packed weights, scales, zeros, x and the output), so the ratios are ratios of time. In
    turns from CUDA graphs as 06's matmul: at these sizes the floor is a few microseconds at the copy
    bandwidth, less than Python takes to check, allocate and launch the two kernels (the lesson's
    notebook, timing calls one by one, measures the host); a call that cannot be graphed is timed
    plainly, and one torch cannot make (no tinygemm in this build) is left out."""
    torch = kit["torch"]
    rows = []
    for side in (4096, 8192):
        for m in (1, 4, 16):
            x, packed, scales, zeros = lesson["int4_inputs"](m, side, side, 128, torch.float16)
            w16 = lesson["dequantize"](packed, scales, zeros, 128).to(torch.float16)
            nbytes = packed.numel() + (scales.numel() + zeros.numel()) * 2 + (x.numel() + m * side) * 2
            # partial, not lambdas: a closure would keep the tensors alive past the del below
            calls = {"ours": functools.partial(lesson["int4_linear"], x, packed, scales, zeros, 128),
                     "eager": functools.partial(torch.matmul, x, w16),
                     "compile": tinygemm(x, packed, scales, zeros, 128)}
            times = graphed_in_turns(kit, calls, rounds)
            del calls, x, packed, scales, zeros, w16
            rows.append((f"{m}x{side}x{side}", nbytes, times))
    return ("int4 x @ W (lesson 10), fp16 x, groups of 128, M x K x N (GB/s on the int4 bytes floor, CUDA graphs)",
            rows, "GB/s", {"eager": ("cuBLAS on fp16 weights", "cuBLAS"),
                           "compile": ("torch's int4 kernel (tinygemm, bf16 x)", "tinygemm")})


BENCHMARKS = {"02_vector_add": [vector_add], "04_fusion": [ten_ops, softmax],
              "05_layernorm": [layer_norm_fwd, layer_norm_bwd],
              "06_matmul": [matmul, functools.partial(matmul, dtype="bfloat16")],
              "07_attention": [attention, functools.partial(attention, head_dim=128)],
              "08_hopper_matmul": [hopper_matmul, functools.partial(hopper_matmul, dtype="bfloat16"),
                                   functools.partial(hopper_matmul, dtype="float8_e4m3fn")],
              "09_attention_training": [attention_training, functools.partial(attention_training, head_dim=64),
                                        functools.partial(attention_training, backward=True),
                                        functools.partial(attention_training, head_dim=64, backward=True)],
              "10_inference": [paged_decode, int4_matmul]}
MAX_AUTOTUNE = {"08_hopper_matmul": [hopper_matmul_max_autotune,
                                     functools.partial(hopper_matmul_max_autotune, dtype="bfloat16")]}
UNITS = {"GB/s": 1e9, "TFLOP/s": 1e12}  # a row's work (bytes, operations) per second, in the unit
# What a section compares with, unless it says: the column's name, and its short name in the ratios.
LABELS = {"eager": ("eager torch", "eager"), "compile": ("torch.compile", "compile")}


def table(title, rows, roof, unit="GB/s", labels=LABELS):
    """A markdown table of rates in `unit`; the last column compares with the copy roof (GB/s only)."""
    (eager, eager_short), (compile_, compile_short) = labels["eager"], labels["compile"]
    lines = [f"### {title}", "", f"| size | ours | {eager} | {compile_} | ours / {eager_short} | ours / {compile_short} |"
             + (" ours / copy |" if roof else ""), "|---|---|---|---|---|---|" + ("---|" if roof else "")]
    for size, work, t in rows:
        rate = {k: work / (v * 1e-3) / UNITS[unit] if v else None for k, v in t.items()}
        ratio = lambda a, b: f"{rate[a] / rate[b]:.2f}" if rate[a] and rate[b] else "-"  # noqa: E731
        cells = [f"{rate[k]:.0f}" if rate[k] else "-" for k in ("ours", "eager", "compile")]
        to_roof = (f" {rate['ours'] / roof:.2f} |" if rate["ours"] else " - |") if roof else ""
        lines.append(f"| {size} | {' | '.join(cells)} | {ratio('ours', 'eager')} | {ratio('ours', 'compile')} |{to_roof}")
    return "\n".join(lines)


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    columns = min(3, len(results))
    lines = -(-len(results) // columns)
    figure, axes = plt.subplots(lines, columns, figsize=(6 * columns, 4 * lines), squeeze=False)
    for ax in axes.flat[len(results):]:
        ax.set_visible(False)
    for ax, (title, rows, roof, unit, labels) in zip(axes.flat, results):
        for key, label in (("ours", "reference Triton kernel"), ("eager", labels["eager"][0]),
                           ("compile", labels["compile"][0])):
            ax.plot([r[0] for r in rows],
                    [r[1] / (r[2][key] * 1e-3) / UNITS[unit] if r[2][key] else float("nan") for r in rows],
                    marker="o", label=label)
        if roof:
            ax.axhline(roof, color="grey", linestyle="--", label=f"copy bandwidth ({roof:.0f} GB/s)")
        ax.set_title(title, fontsize=9)
        ax.set_ylabel(unit)
        ax.tick_params(axis="x", rotation=45, labelsize=7)
        ax.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=sorted(BENCHMARKS), metavar="LESSON",
                        help="measure these lessons only, print their tables and write nothing")
    parser.add_argument("--max-autotune", action="store_true",
                        help="also time torch.compile's max-autotune against lesson 08 (minutes of tuning a shape)")
    options = parser.parse_args()
    only = options.only
    kit = answers("02_vector_add")  # the setup cell: the kit, on the GPU it finds
    if not kit["ON_GPU"]:
        print("make bench needs a CUDA GPU: under Triton's interpreter timings say nothing about GPUs.")
        return 2
    torch = kit["torch"]
    roof = kit["copy_bandwidth"](2 ** 28)
    device = f"{torch.cuda.get_device_name()}, torch {torch.__version__}, Triton {kit['triton'].__version__}"
    print(f"{device}; copy bandwidth {roof:.0f} GB/s")
    results = []
    for lesson, benchmarks in BENCHMARKS.items():
        if not (ROOT / "source" / lesson).is_dir() or (only and lesson not in only):
            continue
        namespace = answers(lesson)
        for benchmark in benchmarks + (MAX_AUTOTUNE.get(lesson, []) if options.max_autotune else []):
            # A unit other than GB/s comes third, and names for the columns other than eager torch and
            # torch.compile fourth.
            title, rows, *kind = benchmark(namespace, namespace)
            unit, labels = (kind + ["GB/s", LABELS][len(kind):])[:2]
            results.append((title, rows, roof if unit == "GB/s" else None, unit, labels))
            print(table(*results[-1]), end="\n\n")
    if only:
        return 0
    DOC.parent.mkdir(exist_ok=True)
    plot(results, DOC.with_suffix(".png"))
    section = "\n\n".join([BEGIN, f"Measured on {device}; copy bandwidth (read + write, 2^28 fp32) "
                           f"{roof:.0f} GB/s. Reproduce with `make bench` (or `python benchmarks/kernels.py`). "
                           "torch.compile is compiled for each size on its own (`dynamic=False`, after "
                           "`torch._dynamo.reset()`), as for a model of fixed shapes.",
                           *(table(*result) for result in results), "![benchmarks](benchmarks.png)", END])
    text = DOC.read_text() if DOC.exists() else "# Benchmarks\n\n"
    text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: section, text, flags=re.S) \
        if BEGIN in text else text + "\n## Kernels\n\n" + section + "\n"
    DOC.write_text(text)
    print(f"wrote {DOC.relative_to(ROOT)} and {DOC.with_suffix('.png').relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

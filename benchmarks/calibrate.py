"""Calibrate the lessons' performance tests: run each test, as the grader runs it, on answers that
must pass it and answers that must miss it, on this GPU.

A performance test is fair when every correct answer a student writes in the way the lesson teaches
clears it (other block sizes and warps, Welford's statistics, tl.where for a mask, the sample class's
second answers) and the naive ones miss it (tiny blocks, an extra copy, a kernel that skips what the
lesson is about). Each variant is written like a sample (autograder/samples.py: edits or replaced
cells applied to the solution), with what it `should` do. For each, this script builds the
student's notebook, takes its setup cell, answer cells and the cells that only define things (as
`make bench` does), runs the lesson's own performance-test cell on them `--rounds` times, and reads
the figure the test printed or failed with. The sample class's correct answers are included (they
must pass), and so are samples that the class expects to miss on a GPU.

    .venv/bin/python benchmarks/calibrate.py                  # every lesson -> docs/calibration.md
    .venv/bin/python benchmarks/calibrate.py --only 05_layernorm --rounds 2   # printed only
    .venv/bin/python benchmarks/calibrate.py --without-gpu --rounds 1   # every variant applies and runs

Needs a CUDA GPU and a built course.
"""
import argparse
import contextlib
import io
import re
import sys
import time


from kernels import ROOT, answers

sys.path.insert(0, str(ROOT))
from autograder.course import Course  # noqa: E402
from autograder.samples import expected_here, load_samples, make_submission  # noqa: E402

DOC = ROOT / "docs" / "calibration.md"
BEGIN, END = "<!-- calibration: begin (written by benchmarks/calibrate.py) -->", "<!-- calibration: end -->"

# The tests' own words for the figure they grade: a fraction of the copy bandwidth, or of the vendor's speed.
FIGURE = re.compile(r"(\d+)% of this device's copy bandwidth|: ([\d.]+)x (?:cuBLAS|SDPA|torch\._scaled_mm|torch's)")

# lesson -> {its performance test: {label: variant}}; a variant is a sample (edits, replace, add_cells)
# with "should": "pass" or "miss", and "like": a sample of the class whose answers it edits.
VARIANTS = {
    "02_vector_add": {"test_add_performance": {
        "blocks of 256": {"should": "pass", "edits": {"add": [["BLOCK_SIZE = 1024", "BLOCK_SIZE = 256"]]}},
        "blocks of 4096": {"should": "pass", "edits": {"add": [["BLOCK_SIZE = 1024", "BLOCK_SIZE = 4096"]]}},
        "blocks of 1024, 8 warps": {"should": "pass", "edits": {"add": [[
            "BLOCK_SIZE=BLOCK_SIZE)", "BLOCK_SIZE=BLOCK_SIZE, num_warps=8)"]]}},
        "blocks of 32": {"should": "miss", "edits": {"add": [["BLOCK_SIZE = 1024", "BLOCK_SIZE = 32"]]}},
        "copies of both inputs first": {"should": "miss", "edits": {"add": [[
            "x, y = x.contiguous(), y.contiguous()", "x, y = x.clone(), y.clone()"]]}},
    }},
    "03_masking": {"test_copy_2d_performance": {
        "32 x 32 tiles": {"should": "pass", "edits": {"copy_2d": [["BLOCK_M, BLOCK_N = 64, 64", "BLOCK_M, BLOCK_N = 32, 32"]]}},
        "32 x 128 tiles": {"should": "pass", "edits": {"copy_2d": [["BLOCK_M, BLOCK_N = 64, 64", "BLOCK_M, BLOCK_N = 32, 128"]]}},
        "8 x 8 tiles": {"should": "miss", "edits": {"copy_2d": [["BLOCK_M, BLOCK_N = 64, 64", "BLOCK_M, BLOCK_N = 8, 8"]]}},
        "x.contiguous() first": {"should": "miss", "edits": {"copy_2d": [[
            "    M, N = x.shape\n", "    x = x.contiguous()\n    M, N = x.shape\n"]]}},
    }},
    "04_fusion": {"test_ten_ops_performance": {
        "blocks of 256": {"should": "pass", "edits": {"ten_ops": [["BLOCK_SIZE = 1024", "BLOCK_SIZE = 256"]]}},
        "relu as tl.where, clamp as tl.where": {"should": "pass", "edits": {"ten_ops_kernel": [
            ["y = tl.maximum(y, 0.0)", "y = tl.where(y > 0, y, 0.0)"], ["y = tl.minimum(y, 3.0)", "y = tl.where(y < 3.0, y, 3.0)"]]}},
        "sigmoid written out, 1 / (1 + exp(-y))": {"should": "pass", "edits": {"ten_ops_kernel": [
            ["y = tl.sigmoid(y)", "y = 1.0 / (1.0 + tl.exp(-y))"]]}},
        "blocks of 32": {"should": "miss", "edits": {"ten_ops": [["BLOCK_SIZE = 1024", "BLOCK_SIZE = 32"]]}},
    }},
    "05_layernorm": {"test_layer_norm_forward_performance": {
        "the reference with 8 warps (the warps of Triton's layer-norm tutorial)": {"should": "pass", "edits": {"layer_norm_forward": [[
            "num_warps = max(1, min(8, BLOCK_SIZE // 512))", "num_warps = 8"]]}},
        "the reference with 2 warps": {"should": "pass", "edits": {"layer_norm_forward": [[
            "num_warps = max(1, min(8, BLOCK_SIZE // 512))", "num_warps = 2"]]}},
        "three loops whatever the width (the course's reference before it read a row that fits once)": {
            "should": "pass", "edits": {"layer_norm_fwd_kernel": [["    if n_cols <= BLOCK_SIZE:", "    if n_cols < 0:"]]}},
        # A row that fits one block read three times, which exercise 1 teaches to avoid (the test's hint names it).
        "blocks of 1024 (four per row, three passes)": {"should": "miss", "edits": {"layer_norm_forward": [[
            "BLOCK_SIZE = min(triton.next_power_of_2(n_cols), 16384)", "BLOCK_SIZE = 1024"]]}},
        "blocks of 2048 (two per row, three passes)": {"should": "pass", "edits": {"layer_norm_forward": [[
            "BLOCK_SIZE = min(triton.next_power_of_2(n_cols), 16384)", "BLOCK_SIZE = 2048"]]}},
        "sample ida's Welford kernel with the row in one block of 4096, 8 warps": {"should": "miss", "like": "ida", "edits": {
            "layer_norm_forward": [["min(triton.next_power_of_2(n_cols), 1024)", "min(triton.next_power_of_2(n_cols), 8192)"],
                                   ["warps = 4", "warps = max(1, min(16, block // 512))"]]}},
        "blocks of 256": {"should": "miss", "edits": {"layer_norm_forward": [[
            "BLOCK_SIZE = min(triton.next_power_of_2(n_cols), 16384)", "BLOCK_SIZE = 256"]]}},
    }},
    "06_matmul": {"test_matmul_performance": {
        # Every tile then comes through registers instead of straight into shared memory: 06 teaches it.
        "loads without other=, masked lanes zeroed with tl.where": {"should": "miss", "edits": {"matmul_kernel": [
            ["        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)\n"
             "        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0)\n",
             "        mask_a = (offs_m[:, None] < M) & (offs_k[None, :] < K - k)\n"
             "        mask_b = (offs_k[:, None] < K - k) & (offs_n[None, :] < N)\n"
             "        a = tl.where(mask_a, tl.load(a_ptrs, mask=mask_a), 0.0)\n"
             "        b = tl.where(mask_b, tl.load(b_ptrs, mask=mask_b), 0.0)\n"]]}},
        "the configurations of Triton's matmul tutorial (fp16, CUDA)": {"should": "pass", "edits": {"matmul_tuned": [[
            "TUNING_CONFIGS = [\n", "TUNING_CONFIGS = [triton.Config({'BLOCK_M': m, 'BLOCK_N': n, 'BLOCK_K': k, 'GROUP_M': 8}, "
            "num_stages=s, num_warps=w) for m, n, k, s, w in [(128, 256, 64, 3, 8), (64, 256, 32, 4, 4), (128, 128, 32, 4, 4), "
            "(128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (128, 32, 32, 4, 4), (64, 32, 32, 5, 2), (32, 64, 32, 5, 2)]]\n"
            "_LESSON_CONFIGS = [\n"]]}},
        "only the three 128 x 128 configurations": {"should": "pass", "edits": {"matmul_tuned": [
            ["TUNING_CONFIGS = [\n", "TUNING_CONFIGS = [c for c in [\n"],
            ["num_warps=4, num_stages=3),\n]", "num_warps=4, num_stages=3),\n] if c.kwargs['BLOCK_M'] == c.kwargs['BLOCK_N'] == 128]"]]}},
        "one configuration: the lesson's default 64 x 64 x 32": {"should": "miss", "edits": {"matmul_tuned": [
            ["TUNING_CONFIGS = [\n", "TUNING_CONFIGS = [c for c in [\n"],
            ["num_warps=4, num_stages=3),\n]", "num_warps=4, num_stages=3),\n] if c.kwargs['BLOCK_M'] == 64 == c.kwargs['BLOCK_N']]"]]}},
        "copies of both inputs first (a.clone(), b.clone())": {"should": "pass", "edits": {"matmul_tuned": [
            ["    c = torch.empty((M, N), dtype=a.dtype, device=a.device)\n",
             "    a, b = a.clone(), b.clone()\n    c = torch.empty((M, N), dtype=a.dtype, device=a.device)\n"]]}},
    }},
    "07_attention": {"test_attention_performance": {
        "64 x 32 blocks": {"should": "pass", "add_cells": [["attention", "from functools import partial\n\n"
                                                             "attention = partial(attention, BLOCK_M=64, BLOCK_N=32)"]]},
        "16 x 16 blocks": {"should": "miss", "add_cells": [["attention", "from functools import partial\n\n"
                                                             "attention = partial(attention, BLOCK_M=16, BLOCK_N=16)"]]},
    }},
    "08_hopper_matmul": {"test_tma_matmul_performance": {
        "warp-specialised": {"should": "pass", "add_cells": [["tma_matmul", "from functools import partial\n\n"
                                                              "tma_matmul = partial(tma_matmul, warp_specialize=True)"]]},
        "128 x 128 x 64 tiles, 8 warps, 4 stages": {"should": "pass", "add_cells": [["tma_matmul", (
            "from functools import partial\n\ntma_matmul = partial(tma_matmul, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, "
            "GROUP_M=8, num_warps=8, num_stages=4)")]]},
        "lesson 6's tiled kernel (pointer loads, one program per tile)": {"should": "pass", "add_cells": [
            ["tma_matmul", "def tma_matmul(a, b):\n    return tiled_matmul(a, b)"]]},
        "64 x 64 x 32 tiles": {"should": "miss", "add_cells": [["tma_matmul", (
            "from functools import partial\n\ntma_matmul = partial(tma_matmul, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, "
            "GROUP_M=8, num_warps=4, num_stages=3)")]]},
    }},
    "09_attention_training": {
        "test_forward_performance": {
            "pointers instead of descriptors": {"should": "pass", "add_cells": [["attention_forward", (
                "from functools import partial\n\nattention_forward = partial(attention_forward, DESCRIPTORS=False)")]]},
            "warp-specialised": {"should": "pass", "add_cells": [["attention_forward", (
                "from functools import partial\n\nattention_forward = partial(attention_forward, WARP_SPECIALIZE=True)")]]},
            "lesson 7's blocks: 64 queries, 32 keys, 4 warps, 2 stages, pointers": {"should": "pass", "add_cells": [[
                "attention_forward", "from functools import partial\n\nattention_forward = partial(attention_forward, "
                "BLOCK_M=64, BLOCK_N=32, num_warps=4, num_stages=2, DESCRIPTORS=False)"]]},
            "every block masked": {"should": "pass", "edits": {"attention_forward": [[
                "offs_m, 0, diagonal, N, qk_scale, HEAD_DIM, BLOCK_N, False,",
                "offs_m, 0, diagonal, N, qk_scale, HEAD_DIM, BLOCK_N, True,"]]}},
            "32 x 16 blocks, 4 warps, 1 stage": {"should": "miss", "add_cells": [[
                "attention_forward", "from functools import partial\n\nattention_forward = partial(attention_forward, "
                "BLOCK_M=32, BLOCK_N=16, num_warps=4, num_stages=1)"]]},
        },
        "test_backward_performance": {
            "64 keys per program, 32 per step": {"should": "pass", "add_cells": [[
                "attention_backward", "from functools import partial\n\nattention_backward = partial(attention_backward, "
                "BLOCK_OWN=64, BLOCK_STEP=32)"]]},
            "2 stages": {"should": "pass", "add_cells": [[
                "attention_backward", "from functools import partial\n\nattention_backward = partial(attention_backward, "
                "num_stages=2)"]]},
            "every block masked": {"should": "pass", "edits": {"attention_backward": [[
                "BLOCK_STEP, False, CAUSAL)", "BLOCK_STEP, True, CAUSAL)"]]}},
            "32 keys per program, 16 per step, 4 warps, 1 stage": {"should": "miss", "add_cells": [[
                "attention_backward", "from functools import partial\n\nattention_backward = partial(attention_backward, "
                "BLOCK_OWN=32, BLOCK_STEP=16, num_warps=4, num_stages=1)"]]},
        },
    },
    "10_inference": {
        "test_decode_performance": {
            "64 slices per head": {"should": "pass", "add_cells": [["paged_decode_attention", (
                "from functools import partial\n\npaged_decode_attention = partial(paged_decode_attention, splits=64)")]]},
            "one slice per head (lesson 7's grid: no split-KV)": {"should": "miss", "add_cells": [[
                "paged_decode_attention", "from functools import partial\n\npaged_decode_attention = "
                "partial(paged_decode_attention, splits=1)"]]},
        },
        "test_int4_performance": {
            "split-K of 16": {"should": "pass", "add_cells": [["int4_linear", (
                "from functools import partial\n\nint4_linear = partial(int4_linear, split_k=16)")]]},
            # Advisory on every GPU (docs/calibration.md): it passes, and its figures show how far it is.
            "no split-K (one program per 128 columns)": {"should": "pass", "add_cells": [["int4_linear", (
                "from functools import partial\n\nint4_linear = partial(int4_linear, split_k=1)")]]},
        },
    },
}


def cell_source(nb, grade_id):
    return next(c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def measure(course, lesson, test, label, sample):
    """(passed, figure, message) of the lesson's performance test on one variant."""
    notebook = make_submission(course, lesson, sample)
    namespace = answers(lesson, notebook, label)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(cell_source(notebook, test), f"<{test}>", "exec"), namespace)
        passed, said = True, out.getvalue()
    except Exception as error:  # a CheckFailed says why the variant missed; anything else is shown as is
        passed, said = False, f"{out.getvalue()}\n{type(error).__name__}: {error}"
    found = FIGURE.findall(said)
    # a test graded on two figures (lesson 10's: a fraction of copy, a ratio to torch) gives both
    figure = " / ".join(dict.fromkeys(f"{share}%" if share else f"{ratio}x" for share, ratio in found)) or "-"
    return passed, figure, said.strip().splitlines()[-1][:300] if said.strip() else ""


def variants_of(course, lesson, test):
    """The lesson's sample class (those correct on a GPU, and those that miss only this test there),
    then the calibration's own variants."""
    chosen, samples = {}, load_samples(course, lesson)
    for student, sample in samples.items():
        fails = expected_here(sample, on_gpu=True)["fails"]
        if sample["answers"] == "solution" and not [f for f in fails if f != test and not f.startswith("written_")]:
            chosen[f"sample {student}: {sample['about']}"] = {**sample, "should": "miss" if test in fails else "pass"}
    for label, variant in VARIANTS[lesson][test].items():
        like = samples[variant["like"]] if "like" in variant else {}
        chosen[label] = {"answers": "solution", "fails": [], "replace": like.get("replace", {}), **variant}
    return chosen


def calibrate(course, lesson, test, rounds):
    rows = []
    for label, sample in variants_of(course, lesson, test).items():
        results = [measure(course, lesson, test, label, sample) for _ in range(rounds)]
        passes = sum(passed for passed, _, _ in results)
        verdict = "pass" if passes == rounds else "miss" if passes == 0 else f"{passes} of {rounds}"
        rows.append((label, sample["should"], verdict, ", ".join(figure for _, figure, _ in results)))
        print(f"  {label[:70]:70} should {sample['should']}: {verdict:7} {rows[-1][3]}", flush=True)
        if verdict != sample["should"]:
            print(f"    {results[-1][2]}")
    return rows


def table(lesson, test, rows):
    lines = [f"**{lesson}**, `{test}`:", "", "| answer | should | got | figures |", "|---|---|---|---|"]
    lines += [f"| {label} | {should} | {'**' + got + '**' if got != should else got} | {figures} |"
              for label, should, got, figures in rows]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=sorted(VARIANTS), metavar="LESSON")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--without-gpu", action="store_true",
                        help="run every variant under Triton's interpreter, where the tests only advise: "
                             "checks that each variant applies and runs, measures nothing")
    options = parser.parse_args()
    import torch
    if not torch.cuda.is_available() and not options.without_gpu:
        print("The calibration needs a CUDA GPU: under Triton's interpreter the performance tests only advise.")
        return 2
    from importlib.metadata import version  # not `import triton`: the kit imports it, once it has chosen a mode
    course, started = Course(ROOT), time.monotonic()
    where = torch.cuda.get_device_name() if torch.cuda.is_available() else "Triton's interpreter (nothing measured)"
    header = (f"{where}, torch {torch.__version__}, Triton {version('triton')}, "
              f"{options.rounds} rounds of each test")
    print(header, flush=True)
    tables = []
    for lesson in options.only or sorted(VARIANTS):
        for test in VARIANTS[lesson]:
            print(f"\n{lesson}, {test}", flush=True)
            tables.append(table(lesson, test, calibrate(course, lesson, test, options.rounds)))
    print(f"\n{time.monotonic() - started:.0f} s")
    if not options.only and not options.without_gpu:
        text = DOC.read_text()
        DOC.write_text(text[:text.index(BEGIN) + len(BEGIN)] + f"\n{header}:\n\n" + "\n\n".join(tables) + "\n"
                       + text[text.index(END):])
    return 0


if __name__ == "__main__":
    sys.exit(main())

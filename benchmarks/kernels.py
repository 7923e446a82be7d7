"""`make bench`: the course's reference kernels against eager torch, torch.compile and the copy roof.

Loads each lesson's reference answers from source/<lesson>/ (the setup cell, the answer cells and
the cells that only define things), times them with the kit's bench_ms (CUDA events, median) and
writes a table and a plot into docs/benchmarks.md and docs/benchmarks.png. Needs a CUDA GPU.

    .venv/bin/python benchmarks/kernels.py
"""
import ast
import re
import runpy
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- kernels: begin (written by `make bench`) -->", "<!-- kernels: end -->"
DEFINITIONS = (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign)


def answers(lesson):
    """A namespace holding a lesson's reference answers and what they rely on, nothing run besides.
    The code goes through a real file: @triton.jit reads its functions' source from one."""
    chosen = []
    source = nbformat.read(ROOT / "source" / lesson / f"{lesson}.ipynb", as_version=4)
    for cell in source.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or meta.get("grade"):
            continue
        code = re.sub(r"^\s*[%!].*$", "", cell.source, flags=re.M)
        body = ast.parse(code).body
        if "setup" in cell.metadata.get("tags", []) or meta.get("solution") or \
                all(isinstance(node, DEFINITIONS) for node in body):
            chosen.append(code)
    path = ROOT / "build" / "bench" / f"{lesson}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n\n".join(chosen) + "\n")
    return runpy.run_path(str(path), run_name=f"lesson_{lesson}")


def compiled(fn):
    import torch
    try:
        return torch.compile(fn)
    except Exception as error:  # a broken compiler must not stop the other rows
        print(f"torch.compile unavailable: {error}")
        return None


def time_or_none(kit, fn):
    try:
        return kit["bench_ms"](fn) if fn else None
    except Exception as error:
        print(f"  failed: {type(error).__name__}: {str(error).splitlines()[0][:120]}")
        return None


def vector_add(kit, lesson):
    rand = kit["rand"]
    add_compiled = compiled(lambda x, y: x + y)
    rows = []
    for power in range(12, 29, 2):
        n = 2 ** power
        x, y = rand(n), rand(n)
        times = {"ours": time_or_none(kit, lambda: lesson["add"](x, y)),
                 "eager": time_or_none(kit, lambda: x + y),
                 "compile": time_or_none(kit, add_compiled and (lambda: add_compiled(x, y)))}
        rows.append((f"2^{power}", 12 * n, times))
    return "vector add, fp32 (GB/s, 3 passes)", rows


def ten_ops(kit, lesson):
    rand = kit["rand"]
    chain_compiled = compiled(lesson["ten_ops_torch"])
    rows = []
    for power in (20, 22, 24, 26, 28):
        n = 2 ** power
        x = rand(n)
        times = {"ours": time_or_none(kit, lambda: lesson["ten_ops"](x)),
                 "eager": time_or_none(kit, lambda: lesson["ten_ops_torch"](x)),
                 "compile": time_or_none(kit, chain_compiled and (lambda: chain_compiled(x)))}
        rows.append((f"2^{power}", 8 * n, times))
    return "ten elementwise ops, fp32 (GB/s of the bytes floor: one read, one write)", rows


def softmax(kit, lesson):
    torch, rand = kit["torch"], kit["rand"]
    softmax_compiled = compiled(lambda x: torch.softmax(x, dim=-1))
    rows = []
    for width in (128, 256, 512, 1024, 2048, 4096, 8192, 16384):
        x = rand(2 ** 26 // width, width)
        times = {"ours": time_or_none(kit, lambda: lesson["softmax"](x)),
                 "eager": time_or_none(kit, lambda: torch.softmax(x, dim=-1)),
                 "compile": time_or_none(kit, softmax_compiled and (lambda: softmax_compiled(x)))}
        rows.append((f"{x.shape[0]}x{width}", 8 * x.numel(), times))
    return "row softmax, fp32, 2^26 elements (GB/s, one read, one write)", rows


BENCHMARKS = {"02_vector_add": [vector_add], "04_fusion": [ten_ops, softmax]}


def table(title, rows, roof):
    lines = [f"### {title}", "", "| size | ours | eager torch | torch.compile | ours / eager | ours / compile | ours / copy |",
             "|---|---|---|---|---|---|---|"]
    for size, nbytes, t in rows:
        rate = {k: nbytes / (v * 1e-3) / 1e9 if v else None for k, v in t.items()}
        ratio = lambda a, b: f"{rate[a] / rate[b]:.2f}" if rate[a] and rate[b] else "-"  # noqa: E731
        cells = [f"{rate[k]:.0f}" if rate[k] else "-" for k in ("ours", "eager", "compile")]
        lines.append(f"| {size} | {' | '.join(cells)} | {ratio('ours', 'eager')} | {ratio('ours', 'compile')} | "
                     f"{rate['ours'] / roof:.2f} |" if rate["ours"] else f"| {size} | {' | '.join(cells)} | - | - | - |")
    return "\n".join(lines)


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4))
    for ax, (title, rows, roof) in zip(axes, results):
        for key, label in (("ours", "reference Triton kernel"), ("eager", "eager torch"), ("compile", "torch.compile")):
            ax.plot([r[0] for r in rows], [r[1] / (r[2][key] * 1e-3) / 1e9 if r[2][key] else float("nan") for r in rows],
                    marker="o", label=label)
        ax.axhline(roof, color="grey", linestyle="--", label=f"copy bandwidth ({roof:.0f} GB/s)")
        ax.set_title(title, fontsize=9)
        ax.set_ylabel("GB/s")
        ax.tick_params(axis="x", rotation=45, labelsize=7)
        ax.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main():
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
        if not (ROOT / "source" / lesson).is_dir():
            continue
        namespace = answers(lesson)
        for benchmark in benchmarks:
            title, rows = benchmark(namespace, namespace)
            results.append((title, rows, roof))
            print(table(title, rows, roof), end="\n\n")
    DOC.parent.mkdir(exist_ok=True)
    plot(results, DOC.with_suffix(".png"))
    section = "\n\n".join([BEGIN, f"Measured on {device}; copy bandwidth (read + write, 2^28 fp32) "
                           f"{roof:.0f} GB/s. Reproduce with `make bench` (or `python benchmarks/kernels.py`).",
                           *(table(t, r, roof) for t, r, roof in results), "![benchmarks](benchmarks.png)", END])
    text = DOC.read_text() if DOC.exists() else "# Benchmarks\n\n"
    text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: section, text, flags=re.S) \
        if BEGIN in text else text + "\n## Kernels\n\n" + section + "\n"
    DOC.write_text(text)
    print(f"wrote {DOC.relative_to(ROOT)} and {DOC.with_suffix('.png').relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

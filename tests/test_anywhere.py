"""Release notebooks run anywhere: in a fresh virtual environment that holds only what Colab
preinstalls (torch, Triton, numpy, matplotlib) and ipykernel (which every Jupyter has), in a real
kernel, with none of our packages importable; its Triton is the oldest the course supports.

(a) With the answers from solutions/ filled in, every lesson runs top to bottom and every cell succeeds.
(b) As released, every visible test fails with one line: a message that says what to do.

No GPU in CI: the notebooks switch themselves to Triton's interpreter. Each run's wall time is
printed: a laptop must get through every lesson in minutes.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

from autograder.course import Course
from autograder.samples import make_submission
from conftest import ROOT, patient, record_wall

LESSONS = Course(ROOT).lessons()
# The CPU torch that `make test` installs (the Makefile's TORCH), then the rest from the package index.
TORCH = re.search(r"^TORCH \?= (\S+)", (ROOT / "Makefile").read_text(), re.M).group(1)
# The oldest Triton the course supports (pyproject.toml): the main .venv has the newest, so that CI
# runs the lessons on Triton's interpreter at both ends of the range.
OLDEST_TRITON = re.search(r'"triton>=([\d.]+)', (ROOT / "pyproject.toml").read_text()).group(1)
PACKAGES = [TORCH, f"triton=={OLDEST_TRITON}.*", "numpy", "matplotlib", "ipykernel"]
OURS = ["autograder", "nbgrader", "jupytext"]  # none may be importable where the notebooks run
KERNEL = "anywhere"
CELL_TIMEOUT = 300
LESSON_BUDGET = 300  # seconds for one lesson on the interpreter: "minutes", with room for slow machines
# A stub's test fails with CheckFailed, which the kit shows as one line: its message.
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class Venv:
    python: Path
    kernels: Path  # holds the kernelspec KERNEL, which runs ipykernel with `python`
    env: dict  # the environment the kernel starts in: as if the venv were activated, nothing else
    seconds: float  # to build it


@pytest.fixture(scope="session")
def venv(tmp_path_factory):
    """A fresh venv with only PACKAGES: built once per session; a failure to build it fails the tests."""
    root = tmp_path_factory.mktemp("anywhere")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "TRITON_INTERPRET",
                        "JUPYTER_PATH", "JUPYTER_CONFIG_DIR")}
    env["PATH"] = os.pathsep.join([str(root / "venv" / "bin"), env.get("PATH", "")])
    start = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True, env=env)
    python = root / "venv" / "bin" / "python"
    # --no-compile: byte-compiling the 2 GB that torch and Triton unpack into takes minutes on two
    # cores; Python compiles what the notebooks import when they import it.
    pip = subprocess.run([str(python), "-m", "pip", "install", "--no-compile", "--progress-bar", "off", *PACKAGES],
                         env=env, capture_output=True, text=True, timeout=patient(900))
    if pip.returncode != 0:
        pytest.fail(f"could not build the fresh venv (pip install {' '.join(PACKAGES)}):\n"
                    f"{pip.stdout[-3000:]}{pip.stderr[-3000:]}")
    probe = ("import importlib.util, sys\n"
             f"print([name for name in {OURS!r} if importlib.util.find_spec(name)])")
    empty = root / "empty"
    empty.mkdir()
    found = subprocess.run([str(python), "-c", probe], cwd=empty, env=env, capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]", f"the fresh venv can import our packages: {found.stdout}"
    spec = root / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "fresh venv", "language": "python"}))
    yield Venv(python, root / "kernels", env, time.monotonic() - start)
    shutil.rmtree(root / "venv", ignore_errors=True)  # 2 GB; pytest keeps the last three sessions' tmp


def run(venv, nb, workdir, allow_errors, node, what):
    """Execute the notebook in the venv's kernel, from an empty folder like a student's download.
    Seconds taken, kernel start (importing torch and Triton) included, kept for the summary at the
    end of the run as `what` (the "a laptop gets through every lesson in minutes" numbers)."""
    workdir.mkdir(parents=True)
    kernel = KernelManager(kernel_name=KERNEL, kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(venv.kernels)]))
    client = NotebookClient(nb, km=kernel, timeout=round(patient(CELL_TIMEOUT)), allow_errors=allow_errors,
                            resources={"metadata": {"path": str(workdir)}})
    start = time.monotonic()
    try:
        client.execute(env=venv.env)
    finally:
        nbformat.write(nb, workdir / "executed.ipynb")  # to look at when a test fails
    seconds = time.monotonic() - start
    record_wall(node, "fresh venv (venv + pip install)", venv.seconds)
    record_wall(node, what, seconds)
    return seconds


def text_of(cell, kind="stream"):
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == kind)


@pytest.mark.parametrize("lesson", LESSONS)
def test_solved_notebook_runs_in_a_fresh_venv(venv, course, lesson, tmp_path, request):
    nb = make_submission(course, lesson, {"answers": "solution"})
    # The last cell shows which Python the kernel ran and that none of our packages was in reach.
    nb.cells.append(nbformat.v4.new_code_cell(
        "import importlib.util, sys\n"
        f"print(sys.executable, [name for name in {OURS!r} if importlib.util.find_spec(name)], triton.__version__)",
        id="where"))
    # raises at the first failing cell
    seconds = run(venv, nb, tmp_path / lesson, False, request.node, f"{lesson} with the solutions")
    assert "Mode: " in text_of(next(c for c in nb.cells if c.id == "setup"))
    python, ours, triton = text_of(nb.cells[-1]).split()
    assert (python, ours) == (str(venv.python), "[]") and triton.startswith(f"{OLDEST_TRITON}."), triton
    assert seconds < patient(LESSON_BUDGET), f"{lesson} took {seconds:.0f} s on the interpreter"


def _exercise_is_code(cells, index):
    """Whether the answer cell nearest above cells[index] asks for code (else it is a quiz answer)."""
    answers = [c for c in cells[:index] if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")]
    return bool(answers) and bool(re.search(r"^\s*(def|@triton\.jit)", answers[-1].source, re.M))


@pytest.mark.parametrize("lesson", LESSONS)
def test_stubs_fail_each_visible_test_with_a_short_teaching_message(venv, course, lesson, tmp_path, request):
    nb = nbformat.read(course.notebook("release", lesson), as_version=4)
    seconds = run(venv, nb, tmp_path / lesson, True, request.node, f"{lesson} as released (stubs)")
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code), f"{lesson}: the kernel stopped before the last cell"
    tests = [(i, c) for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade")
             and c.cell_type == "code" and any(line.strip() and not line.lstrip().startswith("#")
                                                for line in c.source.splitlines())]
    assert tests, f"{lesson} has no visible test"
    for index, cell in tests:
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert errors, f"{lesson} {cell.id}: a visible test passes on the released stubs"
        error = errors[0]
        where = f"{lesson} {cell.id} ({error.ename}: {error.evalue})"
        assert error.ename == "CheckFailed" and error.evalue, where
        if _exercise_is_code(nb.cells, index):
            assert "still the exercise stub" in error.evalue, where
        else:
            assert "in the cell above" in error.evalue, where
        traceback = ANSI.sub("", "\n".join(error.traceback)).strip().splitlines()
        assert traceback == [f"{error.ename}: {error.evalue}"], \
            f"{where}: a traceback instead of the message alone\n" + "\n".join(traceback)
    assert seconds < patient(LESSON_BUDGET), f"{lesson} took {seconds:.0f} s on the interpreter"

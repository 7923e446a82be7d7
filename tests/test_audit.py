"""The audit of student code (autograder/grade/integrity.py): an allowlist, measured both ways.

No notebook runs here: the audit reads code. Honest work must raise no flag at all: every lesson's
answers (straight from the masters, 05 and 06 included), every demo cell a student edits, every
honest sample and corpus entry, and the habits students bring (%timeit, %%time, TRITON_INTERPRET on
a laptop, plots, prints, helpers). Cheats must be flagged, on their line, with a reason: every
corpus entry that expects a flag, and the ways around the tests listed in CHEATS.
"""
import copy

import nbformat
import pytest

from autograder.generate.source import master_to_source
from autograder.course import Course
from autograder.grade.integrity import _meta, audit, grade_id, kernel_wrappers, tampering
from autograder.samples import load_samples, make_submission
from conftest import ROOT

COURSE = Course(ROOT)
LESSON = "02_vector_add"
RELEASE = nbformat.read(COURSE.notebook("release", LESSON), as_version=4)
WRAPPERS = kernel_wrappers(nbformat.read(COURSE.notebook("source", LESSON), as_version=4))


def flags_of(*cells):
    """The audit's flags on the 02 release with these code cells added by a student after the setup cell."""
    nb = copy.deepcopy(RELEASE)
    after_setup = next(i for i, cell in enumerate(nb.cells) if grade_id(cell) == "setup") + 1
    nb.cells[after_setup:after_setup] = [nbformat.v4.new_code_cell(source, id=f"added-{number}")
                                        for number, source in enumerate(cells)]
    return audit(nb, RELEASE, WRAPPERS)


# What students write besides their answers, none of it a cheat.
HONEST_HABITS = {
    "timeit": "%timeit add(x, y)",
    "timeit with options": "x, y = rand(4099), rand(4099)\n%timeit -n 10 -r 3 add(x, y)",
    "timeit in a loop": "for n in [1000, 4099]:\n    x, y = rand(n), rand(n)\n    %timeit add(x, y)",
    "time": "%time out = add(x, y)",
    "time cell": "%%time\nout = add(x, y)\nprint(out[:4])",
    "timeit cell": "%%timeit -n 5 x = rand(4099)\nadd(x, x)",
    "help": "add?\ntl.load??",
    "nvidia-smi": "!nvidia-smi",
    "matplotlib inline": "%matplotlib inline",
    "interpreter on a laptop": 'import os\n\nos.environ["TRITON_INTERPRET"] = "1"  # before importing triton\nimport triton',
    "interpreter by %env": "%env TRITON_INTERPRET=1",
    "reading the mode": 'import os\n\nif os.environ.get("TRITON_INTERPRET") == "1" or "CUDA_LAUNCH_BLOCKING" in os.environ:\n'
                        '    print("debugging")\nprint(os.getenv("TRITON_DEBUG"), os.cpu_count())',
    "a plot": '''import matplotlib.pyplot as plt

sizes = [2**k for k in range(10, 16)]
speeds = [gbps(3 * n * 4, bench_ms(lambda: add(rand(n), rand(n)))) for n in sizes]
plt.plot(sizes, speeds, marker="o", label="add")
plt.xscale("log", base=2)
plt.legend()
plt.savefig("speed.png")
plt.show()''',
    "the kit's plot": 'plot_bandwidth([1, 2], {"add": [1.0, 2.0]}, "mine", roof=copy_bandwidth())\nn = sized(2**20, 2**10)\ndoctor()',
    "prints": 'print(f"{x.shape=} {x.dtype} {x.device} {x.is_contiguous()} {x.stride()} {x.numel():,}")\n'
              'print(torch.__version__, triton.__version__, torch.cuda.get_device_name() if ON_GPU else "CPU")',
    "versions": "import sys\n\nprint(sys.version, sys.platform)\nprint('note', file=sys.stderr)",
    "helpers with hints and docstrings": '''from __future__ import annotations

from math import prod
from typing import Optional


def grid_for(n: int, block: int = 1024) -> tuple[int]:
    """How many programs cover n elements."""
    return (triton.cdiv(n, block),)


def check(shape: tuple[int, ...], dtype: Optional[torch.dtype] = None) -> None:
    """My own test of add, with torch's comparison."""
    x, y = rand(*shape, dtype=dtype or torch.float32), rand(*shape, dtype=dtype or torch.float32)
    assert x.is_cuda or not ON_GPU, "x must be on the GPU"
    torch.testing.assert_close(add(x, y), x + y)
    print(prod(shape), "elements: ok")


for shape in [(1,), (17,), (37, 53)]:
    check(shape)''',
    "seeds": "import random\n\nimport numpy as np\n\ntorch.manual_seed(0)\nnp.random.seed(0)\nrandom.seed(0)",
    "numpy check": "import numpy as np\n\nprint(np.allclose(add(x, y).cpu().numpy(), (x + y).cpu().numpy()))",
    "no_grad and synchronize": "with torch.no_grad():\n    out = add(x, y)\nif torch.cuda.is_available():\n"
                               "    torch.cuda.synchronize()\ntorch.cuda.empty_cache() if ON_GPU else None",
    "comprehensions": "results = {n: add(rand(n), rand(n)).sum().item() for n in [1, 17, 1025]}\n"
                      "print(sorted(results.items(), key=lambda item: -item[0]))\nprint([n for n in results if n > 1])",
    "catching a check": 'try:\n    check_output(add(x, y), x + y, name="add")\nexcept CheckFailed as error:\n    print(error)',
    "timing by hand": '''import statistics
import time

times = []
for _ in range(5):
    start = time.perf_counter()
    add(x, y)
    if ON_GPU:
        torch.cuda.synchronize()
    times.append(time.perf_counter() - start)
print(statistics.median(times))''',
    "a timer class": '''class Timer:
    """with Timer() as t: ... then t.ms"""

    def __init__(self, label="run"):
        self.label = label

    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.ms = (time.perf_counter() - self.start) * 1e3
        print(f"{self.label}: {self.ms:.3f} ms")


with Timer("add") as timer:
    add(x, y)''',
    "triton's own tools": "ms = triton.testing.do_bench(lambda: add(x, y))\n"
                          "import torch.utils.benchmark as benchmark\n"
                          't = benchmark.Timer(stmt="add(x, y)", globals={"add": add, "x": x, "y": y})',
    "an autotuned kernel": '''@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 1024}, num_warps=4)], key=["n_elements"])
@triton.jit
def add_kernel_tuned(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def add_tuned(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n_elements = out.numel()
    add_kernel_tuned[lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)](x, y, out, n_elements)
    return out''',
    "warnings": 'import warnings\n\nwarnings.filterwarnings("ignore", category=UserWarning)',
    "getattr by a constant": 'dtype = getattr(torch, "float16")\nprint(getattr(add, "__name__", "add"), add.__doc__)',
    "a dataclass and partial": "from dataclasses import dataclass\nfrom functools import partial\n\n\n@dataclass\n"
                               "class Result:\n    n: int\n    ms: float\n\n\nadd_to_x = partial(add, x)",
    "an autograd function": '''class Add(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        return add(x, y)

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


x.requires_grad_(True)
x.grad = None''',
    "my own exception": 'class ShapeError(Exception):\n    def __init__(self, message):\n        super().__init__(message)',
    "a name that shadows a built-in": "input = rand(10)\nprint(input.sum())",
    "a walrus": "if (n := x.numel()) > 0:\n    print(n)",
    "type named, not called": "def describe(kind: type, value) -> str:\n    return f'{isinstance(value, kind)} {type(value).__name__}'\n"
                              "\n\nprint(describe(int, 3), isinstance(int, type))",
    "a lesson's demo cell, copied": '''for n, block in [(14, 4), (16, 4), (1000, 256), (98432, 1024)]:
    print(f"n = {n:6}, BLOCK_SIZE = {block:5}: triton.cdiv = {triton.cdiv(n, block):3} programs "
          f"(n // BLOCK_SIZE = {n // block})")''',
}


@pytest.mark.parametrize("habit", HONEST_HABITS)
def test_honest_habits_raise_no_flag(habit):
    assert flags_of(HONEST_HABITS[habit]) == []


def _lesson(lesson):
    """(source built from the master, a release-like copy whose answer cells hold stubs)."""
    source = master_to_source(COURSE.master(lesson), lesson)
    release = copy.deepcopy(source)
    for cell in release.cells:
        if _meta(cell).get("solution"):
            cell.source = "# YOUR CODE HERE\nraise NotImplementedError()"
    return source, release


@pytest.mark.parametrize("lesson", COURSE.lessons())
def test_every_answer_of_every_lesson_raises_no_flag(lesson):
    """Every lesson with a master (lessons in the making too): its reference answers, as a student's."""
    source, release = _lesson(lesson)
    answers = [cell for cell in source.cells if _meta(cell).get("solution")]
    assert answers, f"{lesson} has no answer cells"
    assert audit(source, release, kernel_wrappers(source)) == []


@pytest.mark.parametrize("lesson", COURSE.lessons())
def test_demo_cells_a_student_edits_raise_no_flag(lesson):
    """The course's own cells, edited: the course's lines stay the course's (04's TorchFunctionMode demo)."""
    source, release = _lesson(lesson)
    for cell in source.cells:
        if cell.cell_type == "code" and not _meta(cell).get("locked") and not _meta(cell).get("solution"):
            cell.source += "\nprint('tried it with other sizes')"
    assert audit(source, release, kernel_wrappers(source)) == []


def _entries():
    """(lesson, folder, name, entry) for every sample and corpus entry whose flags the audit decides
    (a renamed file's flag comes from collecting it, lost metadata's from recovering it)."""
    for lesson in COURSE.lessons():
        for folder in ("samples", "tests/corpus"):
            if (ROOT / folder / f"{lesson}.py").is_file():
                for name, entry in load_samples(COURSE, lesson, folder).items():
                    if not entry.get("file") and not entry.get("strip_metadata"):
                        yield lesson, folder, name, entry


ENTRIES = list(_entries())


def _flags(lesson, entry):
    release = nbformat.read(COURSE.notebook("release", lesson), as_version=4)
    source = nbformat.read(COURSE.notebook("source", lesson), as_version=4)
    nb = make_submission(COURSE, lesson, entry)
    return tampering(nb, release) + audit(nb, release, kernel_wrappers(source))


@pytest.mark.parametrize("lesson, folder, name, entry",
                         [e for e in ENTRIES if not e[3].get("flags")], ids=lambda v: v if isinstance(v, str) else "")
def test_honest_samples_and_corpus_entries_raise_no_flag(lesson, folder, name, entry):
    assert _flags(lesson, entry) == [], entry["about"]


@pytest.mark.parametrize("lesson, folder, name, entry",
                         [e for e in ENTRIES if e[3].get("flags")], ids=lambda v: v if isinstance(v, str) else "")
def test_flagged_samples_and_corpus_entries_are_flagged_before_they_run(lesson, folder, name, entry):
    """Each cheat gets, from the audit or the cell comparison alone, at least one of the flags it expects
    (others may come from the grading run, which tests/test_batch.py checks end to end)."""
    flags = _flags(lesson, entry)
    assert [text for text in entry["flags"] if any(text in flag for flag in flags)], flags


# Ways around the tests, and a text that the flag must contain.
CHEATS = {
    "kit through __main__": ('import __main__\n\n__main__.__dict__["check_output"] = check_output',
                             ["imports __main__", "__dict__"]),
    "kit through a function's globals": ('def helper():\n    pass\n\n\nhelper.__globals__["check_output"] = check_output',
                                         ["__globals__"]),
    "kit through a frame": ('import sys\n\nsys._getframe(0).f_globals["check_output"] = check_output',
                            ["inspects the caller's frames (sys._getframe)", "reaches into a frame", "f_globals"]),
    "kit through inspect": ("import inspect\n\ninspect.currentframe().f_globals['rand'] = rand",
                            ["imports inspect", "f_globals"]),
    "kit through a traceback": ("try:\n    1 / 0\nexcept ZeroDivisionError as error:\n"
                                "    error.__traceback__.tb_frame.f_globals['rand'] = rand", ["__traceback__", "tb_frame"]),
    "kit through vars": ('vars()["check_output"] = check_output', ["vars()"]),
    "kit through locals": ('locals()["rand"] = rand', ["locals()"]),
    "kit through __builtins__": ('__builtins__.print = print', ["uses __builtins__"]),
    "kit rebound": ("check_output = lambda *args, **kwargs: None", ["redefines the course's check_output"]),
    "kit rebound by a loop": ("for rand in [rand]:\n    pass", ["redefines the course's rand"]),
    "kit rebound from a function": ("def sneaky():\n    global expect_launched\n    expect_launched = print",
                                    ["redefines the course's expect_launched"]),
    "kit rebound by import": ("from math import isclose as check_output", ["redefines the course's check_output"]),
    "kit mutated": ("FLOAT_DTYPES.clear()", ["changes the course's FLOAT_DTYPES"]),
    "kit attribute": ("CheckFailed.args = ()", ["changes the course's CheckFailed"]),
    "kit private": ("print(_GUARDED)", ["reaches the course's private _GUARDED"]),
    "type.__setattr__ on a torch class": ('type.__setattr__(torch.Tensor, "all", torch.Tensor.all)', ["__setattr__"]),
    "object.__setattr__": ('object.__setattr__(rand, "x", 1)', ["__setattr__"]),
    "setattr with a computed name": ('name = "all" + "close"\nsetattr(torch, name, torch.allclose)',
                                     ["sets an attribute whose name is computed (setattr)"]),
    "setattr with a constant name": ('setattr(torch, "allclose", torch.allclose)', ["assigns torch.allclose (monkeypatching)"]),
    "delattr": ('delattr(torch.testing, "assert_close")', ["deletes torch.testing.assert_close (monkeypatching)"]),
    "del": ("del torch.allclose", ["deletes torch.allclose (monkeypatching)"]),
    "getattr with a computed name": ('close = getattr(torch, "all" + "close")', ["reads an attribute whose name is computed"]),
    "getattr passed around": ('g = getattr\ng(torch, "ops")', ["hands getattr on to be called elsewhere"]),
    "getattr passed to a function": ('import functools\n\nfunctools.reduce(getattr, ["__globals__"], rand)',
                                     ["hands getattr on"]),
    "a class built by type": ('Fake = type("Fake", (torch.Tensor,), {"__eq__": lambda self, other: True})',
                              ["builds a class with type(name, bases, namespace)"]),
    "a class attribute through type()": ("type(x).all = lambda self: True", ["assigns an attribute of a class"]),
    "torch.ops in place of a kernel": ("def add(x, y):\n    return torch.ops.aten.add(x, y)",
                                       ["calls torch's operators directly (torch.ops.aten.add)", "torch fallback"]),
    "torch.ops imported": ("from torch import ops", ["imports torch.ops (calls torch's operators directly)"]),
    "torch._C": ("torch._C._set_grad_enabled(True)", ["reaches a private part of torch (torch._C"]),
    "torch.library": ('lib = torch.library.Library("aten", "IMPL")', ["torch.library"]),
    "a torch function mode": ("from torch.overrides import TorchFunctionMode", ["intercepts torch functions"]),
    "__torch_function__": ("class Any:\n    def __torch_function__(self, func, types, args=(), kwargs=None):\n"
                           "        return True", ["defines __torch_function__ (intercepts torch functions)"]),
    "a tensor subclass": ("class Sneaky(torch.Tensor):\n    pass", ["subclasses torch.Tensor"]),
    "a metaclass": ("class Meta(type):\n    pass\n\n\nclass A(metaclass=Meta):\n    pass", ["metaclass"]),
    "equal to anything": ("class Always:\n    def __eq__(self, other):\n        return True", ["defines __eq__"]),
    "sys through torch": ('torch.sys.modules["__main__"]', ["reaches the sys module through torch"]),
    "subprocess through matplotlib": ('import matplotlib\n\nmatplotlib.subprocess.run(["ls"])',
                                      ["reaches the subprocess module through matplotlib"]),
    "sys.modules": ('import sys\n\nsys.modules["torch"].allclose = torch.allclose', ["sys.modules", "monkeypatching"]),
    "importlib": ('import importlib\n\nimportlib.import_module("torch")', ["imports importlib"]),
    "builtins": ("import builtins\n\nbuiltins.print = print", ["imports builtins", "assigns builtins.print"]),
    "np.testing": ("import numpy as np\n\nnp.testing.assert_allclose = print", ["assigns np.testing.assert_allclose"]),
    "an alias": ("T = torch\nT.allclose = print", ["assigns T.allclose (monkeypatching)"]),
    "a dunder of torch": ("torch.Tensor.__eq__ = lambda self, other: True", ["uses __eq__", "monkeypatching"]),
    "exec": ('exec("x = 1")', ["runs generated code (exec)"]),
    "eval": ('eval("1")', ["runs generated code (eval)"]),
    "compile": ('compile("1", "cell", "eval")', ["compiles generated code"]),
    "__import__": ('__import__("os")', ["imports by name"]),
    "globals": ('globals()["rand"] = rand', ["globals()"]),
    "history": ("print(In[-1], _i3, Out)", ["reads IPython's input history (In)", "(_i3)", "output history (Out)"]),
    "the shell object": ("ip = get_ipython()", ["uses the IPython shell object"]),
    "a magic written out": ('get_ipython().run_line_magic("timeit", "add(x, y)")', ["uses the IPython shell object"]),
    "a shell command written out": ('get_ipython().system("nvidia-smi")', ["uses the IPython shell object"]),
    "a shell command": ("!ls /", ["runs a shell command (!ls /)"]),
    "a shell command's output": ("files = !cat /etc/hostname", ["runs a shell command"]),
    "%run": ("%run other.py", ["uses the IPython magic %run"]),
    "%%bash": ("%%bash\nls", ["runs the cell through the IPython magic %%bash"]),
    "code in %timeit": ('x = 1\n%timeit open("/etc/hostname")', ["line 2: opens a file"]),
    "code in %%time": ("%%time\nx = 1\nimport subprocess", ["line 3: imports subprocess (runs processes)"]),
    "code in help": ("check_output.__globals__?", ["uses __globals__"]),
    "code in a magic's line": ("%matplotlib {exec('x = 1')}", ["runs code in the line of %matplotlib"]),
    "%env of the grader": ("%env NBGRADER_EXECUTION", ["reads NBGRADER_EXECUTION"]),
    "%env of everything": ("%env", ["reads the whole environment"]),
    "the whole environment": ("import os\n\nprint(dict(os.environ))", ["reads the whole environment (os.environ)"]),
    "the environment by another name": ("from os import environ as e\n\nprint(list(e))", ["reads the whole environment"]),
    "hiding the GPU": ('import os\n\nos.environ["CUDA_VISIBLE_DEVICES"] = ""',
                       ["uses the environment variable CUDA_VISIBLE_DEVICES"]),
    "a computed variable": ('import os\n\nos.environ["NBGRADER" + "_EXECUTION"]', ["name is computed"]),
    "the grader's variable": ('import os\n\nos.getenv("COURSE_GPU_TURN")', ["reads COURSE_GPU_TURN"]),
    "a shell through a local import": ('def f():\n    import os\n    os.system("ls")', ["runs a shell command (os.system)"]),
    "other os": ('import os\n\nos.path.exists("/work")', ["uses a part of os"]),
    "files": ('open("notes.txt", "w").write("x")', ["opens a file"]),
    "numpy files": ('np.save("x.npy", np.zeros(3))', ["writes a file (np.save)"]),
    "C++": ("from torch.utils.cpp_extension import load_inline", ["compiles C++"]),
    "a cache": ("from functools import lru_cache\n\n\n@lru_cache\ndef twice(n):\n    return 2 * n", ["caches results"]),
    "torch's defaults": ("torch.set_default_dtype(torch.float16)", ["changes torch's defaults"]),
    "torch's settings": ("torch.backends.cuda.matmul.allow_tf32 = True",
                         ["assigns torch.backends.cuda.matmul.allow_tf32 (changes torch's settings, for the tests too)"]),
    "a hook": ("import sys\n\nsys.excepthook = print", ["replaces excepthook"]),
    "gc": ("import gc\n\ngc.get_objects()", ["imports gc (reaches every live object)"]),
    "import *": ("from os import *", ["imports every name of os"]),
    "a module __getattr__": ("def __getattr__(name):\n    return None", ["defines __getattr__"]),
    "a debugger": ("breakpoint()", ["stops in a debugger"]),
    "an exit": ("exit()", ["exits the kernel"]),
    "attributes by name through operator": ('import operator\n\noperator.attrgetter("__globals__")(rand)',
                                             ["reads attributes by name (operator.attrgetter)"]),
    "strings evaluated as code": ("import typing\n\ntyping.get_type_hints(rand)", ["evaluates strings as code"]),
    "the memory cap by another path": ("torch.cuda.memory.set_per_process_memory_fraction(1.0)",
                                       ["changes its share of GPU memory"]),
    "code too deep to read": ("x = " + " + ".join(["1"] * 900), ["is nested too deeply for the audit to read"]),
    "a built-in outside the language": ("memoryview(b'x')", ["uses the built-in memoryview"]),
}


@pytest.mark.parametrize("cheat", CHEATS)
def test_ways_around_the_tests_are_flagged(cheat):
    code, texts = CHEATS[cheat]
    flags = flags_of(code)
    assert all(flag.startswith("cell 4 (added by the student), line ") for flag in flags), flags
    assert not [text for text in texts if not any(text in flag for flag in flags)], flags


def test_a_flag_names_the_line_and_the_cell_it_is_in():
    assert flags_of("x = 1\n\nexec('y = 2')", "print('fine')", "\n\nimport socket") == [
        "cell 4 (added by the student), line 3: runs generated code (exec)",
        "cell 6 (added by the student), line 3: imports socket (uses the network)"]


def test_a_module_the_grader_lacks_is_not_flagged_and_one_it_has_is():
    assert flags_of("from my_helpers_that_are_not_installed import add") == []
    assert flags_of("import requests_that_are_not_installed as requests\nrequests.get('x')") == []
    assert flags_of("import nbformat") == [
        "cell 4 (added by the student), line 1: imports nbformat (a module this course's answers never need)"]


def test_answer_cells_are_audited_by_name_and_release_cells_unchanged_are_not():
    nb = copy.deepcopy(RELEASE)
    answer = next(cell for cell in nb.cells if grade_id(cell) == "add")
    answer.source = answer.source.replace("raise NotImplementedError()", "return eval('x + y')")
    line = next(number for number, text in enumerate(answer.source.splitlines(), 1) if "eval" in text)
    assert audit(nb, RELEASE, WRAPPERS) == [f"cell 'add', line {line}: runs generated code (eval)"]
    assert audit(RELEASE, RELEASE, WRAPPERS) == []


def test_lines_copied_from_demo_cells_are_the_courses_but_not_those_of_the_setup_cell():
    """The setup cell is locked and does what answers must not (it wraps torch's allocators): a line
    copied from it is the student's. A demo cell's lines are the course's, wherever they are pasted."""
    setup = nbformat.v4.new_code_cell('KIT = 1\nexec("x = 1")', id="setup", metadata={
        "tags": ["setup"], "nbgrader": {"grade_id": "setup", "locked": True, "solution": False, "grade": False}})
    demo = nbformat.v4.new_code_cell('eval("1 + 1")', id="demo")
    release = nbformat.v4.new_notebook(cells=[setup, demo])
    nb = copy.deepcopy(release)
    nb.cells.append(nbformat.v4.new_code_cell('exec("x = 1")\neval("1 + 1")\nKIT = 2', id="mine"))
    assert audit(nb, release) == ["cell 3 (added by the student), line 1: runs generated code (exec)",
                                  "cell 3 (added by the student), line 3: redefines the course's KIT, which the tests use "
                                  "(give yours another name)"]

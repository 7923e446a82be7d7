"""The seal (autograder/grade/seal.py): graded tests run with the kit as the setup cell made it, and
whatever a notebook replaces to get around them fails the test and is reported in a signed receipt.

Most tests run the kit in an IPython shell in this process, as a kernel would; the last ones run a
notebook through execute.py with a real kernel, where the receipts are checked from outside it.
"""
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest
from IPython.core.displaypub import CapturingDisplayPublisher
from IPython.core.interactiveshell import InteractiveShell

from autograder import kit  # first: without a GPU it sets TRITON_INTERPRET, which Triton reads on import
from autograder.grade import seal
from conftest import patient, unavailable

import triton  # noqa: E402 (after the kit: see above)

KIT = Path(kit.__file__).read_text()
KIT_NAMES = {name for name in vars(kit) if not name.startswith("__")}
# A test cell in the style of the lessons': a wrong answer must fail it.
WRONG_ANSWER_TEST = """x = rand(100)
check_output(x * 2, x, name="doubled")
"""


class Notebook:
    """An IPython shell that ran the kit as its setup cell, then installed the seal."""

    def __init__(self, shell, mode="interpreter"):
        self.shell, self.key = shell, secrets.token_bytes(32)
        shell.reset()
        # As in ipykernel, whose shell hides the names it starts with (a plain IPython shell does not).
        shell.user_ns_hidden.update({name: shell.user_ns[name] for name in ("__name__", "__builtins__")})
        shell.display_pub = CapturingDisplayPublisher()
        assert shell.run_cell(KIT).success
        handle, settings = tempfile.mkstemp()
        with os.fdopen(handle, "w") as file:
            json.dump({"key": self.key.hex(), "mode": mode}, file)
        assert shell.run_cell(f"import autograder.grade.seal\nautograder.grade.seal.install({settings!r})",
                              store_history=False).success
        assert not os.path.exists(settings), "the seal deletes the grader's settings once read"
        self.install = self._receipts("install")[0]

    def student(self, code):
        assert self.shell.run_cell(code).success, code

    def test(self, source, nonce=None):
        """Run a test cell through the seal: (the error it raised or None, its receipt)."""
        nonce, before = nonce or secrets.token_hex(8), len(self.shell.display_pub.outputs)
        result = self.shell.run_cell(f"autograder.grade.seal.run({nonce!r}, {source!r}, 'test')")
        receipts = self._receipts(nonce, since=before)
        assert len(receipts) == 1
        return result.error_in_exec, receipts[0]

    def _receipts(self, nonce, since=0):
        found = [o["data"][seal.RECEIPT] for o in self.shell.display_pub.outputs[since:] if seal.RECEIPT in o["data"]]
        return [r for r in found if r["nonce"] == nonce and
                r["mac"] == seal.signed(self.key, nonce, r["verdict"], r["source"], r["problems"])]


@pytest.fixture(scope="module")
def shell():
    shell = InteractiveShell.instance()
    yield shell
    shell.reset()


@pytest.fixture
def notebook(shell):
    return Notebook(shell)


def test_an_honest_test_passes_with_a_signed_receipt(notebook):
    assert notebook.install["verdict"] == kit.MODE and notebook.install["problems"] == []
    error, receipt = notebook.test("x = rand(100)\ncheck_output(x.clone(), x)\nresult = 'kept'")
    assert error is None and receipt["verdict"] == "passed"
    assert receipt["source"] == seal.source_hash("x = rand(100)\ncheck_output(x.clone(), x)\nresult = 'kept'")
    assert notebook.shell.user_ns["result"] == "kept", "what a test binds is the notebook's afterwards"


def test_a_test_cell_defines_helpers_that_later_tests_use(notebook):
    assert notebook.test("def _check(x):\n    check_output(x.clone(), x)\n")[0] is None
    notebook.student("answer = 1")
    assert notebook.test("_check(rand(10))\nassert answer == 1")[0] is None
    assert notebook.test("del answer")[0] is None and "answer" not in notebook.shell.user_ns


def test_copying_a_kernel_is_no_tampering(notebook):
    # Python caches __slotnames__ on a class when one of its objects is first copied or pickled;
    # torch.compile copies Triton kernels, and a GPU's 04 and 05 plot a compiled function.
    notebook.student("import copy\n\n@triton.jit\ndef twice(x_ptr):\n    pass\n\ncopy.copy(twice)")
    error, receipt = notebook.test("x = rand(10)\ncheck_output(x * 0, torch.zeros_like(x))")
    assert error is None and receipt["verdict"] == "passed", receipt["problems"]


@pytest.mark.parametrize("rebinding", [
    'globals()["check_output"] = lambda *args, **kwargs: None',
    'import sys\nsys._getframe(0).f_globals["check_output"] = lambda *args, **kwargs: None',
    'rand.__globals__["check_output"] = lambda *args, **kwargs: None',
    'rand.__globals__["_isclose"] = lambda a, b, **kwargs: (a == a)',
    'FLOAT_DTYPES.clear()\n_COPY_BANDWIDTH[1] = 1.0',
])
def test_rebinding_the_kit_in_the_notebook_does_not_reach_the_tests(notebook, rebinding):
    notebook.student(rebinding)
    error, receipt = notebook.test(WRONG_ANSWER_TEST)
    assert isinstance(error, AssertionError) and "doubled: element" in str(error), error
    assert receipt["verdict"] == "check failed" and receipt["problems"] == []


def test_nothing_the_kit_holds_is_shared_with_the_notebook_at_any_depth(notebook):
    """The sealed kit's containers are copies, and so is every container inside them (the GPU's
    replay keeps a set of launches in a dict: shared, the notebook could fill it and skip replays)."""
    notebook.student(MUTABLE_CONTAINERS + "notebooks = mutable_containers(globals())")
    error, _ = notebook.test(MUTABLE_CONTAINERS + "shared = notebooks & mutable_containers(globals())\n"
                                                  "assert notebooks and not shared, len(shared)")
    assert error is None, error


MUTABLE_CONTAINERS = f"""def mutable_containers(namespace):
    found, todo = set(), [value for name, value in namespace.items() if name in {sorted(KIT_NAMES)!r}]
    while todo:
        value = todo.pop()
        if type(value) in (dict, list, set, tuple) and id(value) not in found:
            if type(value) is not tuple:
                found.add(id(value))
            todo.extend(value.values() if type(value) is dict else value)
    return found
"""


def test_an_error_named_like_the_courses_check_is_told_apart(notebook):
    """Feedback shows the message of the course's own errors only: the receipt says whether the
    sealed CheckFailed raised it, whatever the error's class is called."""
    notebook.student("class CheckFailed(AssertionError):\n    pass\n\ndef doubled(x):\n    raise CheckFailed('hidden')")
    error, receipt = notebook.test("doubled(rand(4))")
    assert type(error).__name__ == "CheckFailed" and receipt["verdict"] == "failed", (error, receipt)


CHECK_DOUBLED = "def check_doubled(x):\n    raise CheckFailed('doubled: element 3 is wrong')"


def test_a_course_helper_defined_after_the_setup_fails_as_the_course(notebook):
    """Lessons define checks of their own in read-only cells after the setup cell (06's check_product):
    run through the seal, their CheckFailed is the course's, and feedback shows its message."""
    assert notebook.test(CHECK_DOUBLED)[0] is None  # the read-only cell, as execute.py sends it
    error, receipt = notebook.test("check_doubled(rand(4))")
    assert "element 3 is wrong" in str(error) and receipt["verdict"] == "check failed", (error, receipt)


def test_a_check_failed_the_notebook_raised_is_the_students_output(notebook):
    """The kit's own CheckFailed, raised by the student's code with a message it composed (or handed to
    a course helper to fail with), is no verdict of the course's: the test just failed, and feedback
    shows no message (a hidden test's line, encoded, would go out in it)."""
    notebook.student(CHECK_DOUBLED)  # the same helper, in the student's own cell
    error, receipt = notebook.test("check_doubled(rand(4))")
    assert isinstance(error, notebook.shell.user_ns["CheckFailed"]) and receipt["verdict"] == "failed", (error, receipt)
    notebook.test("def check_named(x, name):\n    check_output(x * 2, x, name=name)")
    notebook.student("def answer(x):\n    check_named(x, name='aGlkZGVu')  # base64 of a hidden line")
    error, receipt = notebook.test("answer(rand(4))")
    assert "aGlkZGVu" in str(error) and receipt["verdict"] == "failed", (error, receipt)
    error, receipt = notebook.test("check_named(rand(4), 'doubled')")  # the course calling it: its verdict
    assert receipt["verdict"] == "check failed", (error, receipt)
    # An answer that borrows a module's globals is still the notebook's code.
    notebook.student("import contextlib, types\n\n"
                     "def _raise(x):\n    raise CheckFailed('aGlkZGVu')\n\n"
                     "disguised = types.FunctionType(_raise.__code__, dict(vars(contextlib), CheckFailed=CheckFailed))\n"
                     "laundered = types.FunctionType(_raise.__code__, vars(contextlib))\n"
                     "vars(contextlib)['CheckFailed'] = CheckFailed")
    for answer in ("disguised", "laundered"):
        error, receipt = notebook.test(f"{answer}(rand(4))")
        assert "aGlkZGVu" in str(error) and receipt["verdict"] == "failed", (answer, error, receipt)
    notebook.student("del vars(contextlib)['CheckFailed']")


@pytest.mark.parametrize("redefinition", [
    "def check_doubled(x):\n    pass",  # a plain def, as an answer cell would hold it
    "exec('def check_doubled(x):\\n    pass', globals())",
    "import __main__\n__main__.check_doubled = lambda x: None",
])
def test_a_course_helper_the_notebook_redefines_still_checks(notebook, redefinition):
    """The tests reach the course's helpers through what the course's cell bound, never by the name in
    the student's namespace: a student's definition of the same name replaces the student's copy only."""
    notebook.test(CHECK_DOUBLED)
    notebook.student(redefinition)
    error, receipt = notebook.test("check_doubled(rand(4))")
    assert "element 3 is wrong" in str(error) and receipt["verdict"] == "check failed", (error, receipt)


def test_the_courses_code_finds_the_answers_and_pythons_builtins(notebook):
    """A course helper calls the student's answer by name (06's record_tiles_kernel calls
    tile_of_program); a student's name that shadows a builtin never reaches the course's code."""
    notebook.test("def check_answer():\n    check_output(answer(rand(4)), rand(4) * 0, name='answer')")
    notebook.student("def answer(x):\n    return x * 0\n\nlen = lambda x: 0")
    assert notebook.test("check_answer()\nassert len([1]) == 1")[0] is None
    notebook.student("def answer(x):\n    return x")  # a later, wrong answer: the course's code sees it
    error, receipt = notebook.test("check_answer()")
    assert "answer: element" in str(error) and receipt["verdict"] == "check failed", (error, receipt)


def test_a_course_cell_defines_a_kernel_that_calls_the_answer(notebook):
    """06's read-only cell program_tiles defines a @triton.jit kernel that calls the student's
    @triton.jit tile_of_program, and later tests launch it: on a GPU as under the interpreter."""
    notebook.student("@triton.jit\ndef doubled(x):\n    return x * 2")
    error, receipt = notebook.test(
        "@triton.jit\ndef course_kernel(out_ptr, BLOCK: tl.constexpr):\n"
        "    offsets = tl.arange(0, BLOCK)\n    tl.store(out_ptr + offsets, doubled(offsets))\n\n\n"
        "def run_course_kernel():\n    out = guarded_empty(16, dtype=torch.int32)\n"
        "    call_answer(lambda: course_kernel[(1,)](out, BLOCK=16), name='doubled')\n    return out")
    assert error is None and receipt["verdict"] == "passed", (error, receipt)
    import inspect
    assert "doubled(offsets)" in inspect.getsource(notebook.shell.user_ns["course_kernel"].fn)
    error, receipt = notebook.test("out = run_course_kernel()\n"
                                   "check_output(out, 2 * torch.arange(16, dtype=torch.int32, device=out.device))")
    assert error is None and receipt["verdict"] == "passed", (error, receipt)


def test_a_course_cell_defines_a_helper_that_the_answers_kernel_calls(notebook):
    """08's read-only cell hopper_helpers defines the @triton.jit tile_of_program that the student's
    kernels call. Compiling a kernel, Triton reads the __module__ of every global it names: the
    helper's must be a module name, as in the notebook, or the GPU compile fails."""
    error, receipt = notebook.test("@triton.jit\ndef course_helper(x):\n    return x + 1")
    assert error is None and receipt["verdict"] == "passed", (error, receipt)
    assert notebook.shell.user_ns["course_helper"].fn.__module__ == "__main__"
    notebook.student("@triton.jit\ndef answer_kernel(out_ptr, BLOCK: tl.constexpr):\n"
                     "    offsets = tl.arange(0, BLOCK)\n    tl.store(out_ptr + offsets, course_helper(offsets))")
    error, receipt = notebook.test("out = guarded_empty(16, dtype=torch.int32)\n"
                                   "call_answer(lambda: answer_kernel[(1,)](out, BLOCK=16), name='answer_kernel')\n"
                                   "check_output(out, 1 + torch.arange(16, dtype=torch.int32, device=out.device))")
    assert error is None and receipt["verdict"] == "passed", (error, receipt)


@pytest.mark.parametrize("rebinding", [
    "TOLERANCE, HINT, LIMITS = 1e9, 'a hidden test reads rand(7)', (0, 1e9)",
    "globals().update(TOLERANCE=1e9, HINT='a hidden test reads rand(7)', LIMITS=(0, 1e9))",
    "import __main__\n__main__.TOLERANCE = 1e9\n__main__.HINT = 'a hidden test reads rand(7)'",
])
def test_a_constant_of_the_course_stays_the_courses(notebook, rebinding):
    """A course cell's tolerance, hint text or limits are the course's, like its functions: a student's
    cell that rebinds them (by name, through globals(), through __main__) does not loosen the check,
    and puts no text of its own into the check's message (which feedback shows)."""
    notebook.test("TOLERANCE, HINT, LIMITS = 1e-6, 'multiply by two', (1, 3)\n\n"
                  "def check_twice(answer):\n    x = rand(8)\n    lo, hi = LIMITS\n"
                  "    check_output(answer(x), x * 2, name='twice', atol=TOLERANCE, rtol=0, hint=HINT)\n")
    notebook.student("def twice(x):\n    return x * 3\n\n" + rebinding)
    error, receipt = notebook.test("check_twice(twice)")
    assert receipt["verdict"] == "check failed" and "multiply by two" in str(error) and "rand(7)" not in str(error), \
        (error, receipt)
    assert notebook.test("assert TOLERANCE == 1e-6 and LIMITS == (1, 3)")[0] is None


def test_what_a_test_computed_is_freed_with_the_students_copy(notebook):
    """The course keeps what its cells define, not the tensors a test made: once the notebook drops
    its copy, the memory goes (a GPU notebook has a share of GPU memory, and tests make big inputs)."""
    import gc
    import weakref
    notebook.test("inputs = rand(1000)")
    made = weakref.ref(notebook.shell.user_ns["inputs"])
    notebook.student("inputs = None")
    notebook.test("pass")  # the next course cell sees the notebook as it is now
    gc.collect()
    assert made() is None, "the course's scope still holds the test's tensor"


def test_a_course_helper_changed_through_its_globals_is_tampering(notebook):
    notebook.test(CHECK_DOUBLED)
    notebook.student("check_doubled.__globals__['check_doubled'] = lambda x: None")
    error, receipt = notebook.test("check_doubled(rand(4))")
    assert receipt["verdict"] == "tampered" and "course's check_doubled was changed" in str(error), error


def test_on_a_gpu_grader_triton_stays_on_the_gpu_whatever_the_notebook_sets(monkeypatch):
    """The seal pins Triton's mode on a GPU grader: a notebook that sets TRITON_INTERPRET afterwards
    (a laptop's habit) still gets kernels compiled for the GPU."""
    from triton.runtime.jit import JITFunction

    def kernel(x_ptr):
        pass

    seal._pin_to_the_gpu()
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # what the notebook does after the setup cell
    try:
        assert type(triton.jit(kernel)) is JITFunction
    finally:
        del triton.knobs.runtime.interpret
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # the knob wrote "0" there
    assert type(triton.jit(kernel)) is not JITFunction, "without the pin the environment decides"


@pytest.mark.parametrize("replacement, named", [
    ("torch.isclose = lambda a, b, **kwargs: torch.ones_like(a, dtype=torch.bool)", "torch.isclose was replaced"),
    ('type.__setattr__(torch.Tensor, "all", lambda self, *args: torch.tensor(True))', "torch.Tensor.all was added"),
    ("import math\nmath.isclose = lambda *args, **kwargs: True", "math.isclose was replaced"),
    ("import builtins\nbuiltins.divmod = lambda a, b: (0, 0)", "builtins.divmod was replaced"),
    ("from torch.overrides import TorchFunctionMode\nTorchFunctionMode().__enter__()", "mode was left active"),
])
def test_what_a_notebook_replaces_fails_the_test_and_is_named(notebook, replacement, named, restores):
    notebook.student(replacement)
    error, receipt = notebook.test("x = rand(10)\ncheck_output(x.clone(), x)")
    assert "cannot trust its checks" in str(error) and named in str(error), error
    assert receipt["verdict"] == "tampered" and any(named in problem for problem in receipt["problems"])


def test_a_lying_operator_in_torchs_dispatcher_is_caught(notebook, restores):
    notebook.student("lie = torch.library.Library('aten', 'IMPL')\n"
                     "for key in ('CPU', 'CUDA'):\n"
                     "    lie.impl('isclose', lambda a, b, **kwargs: torch.ones_like(a, dtype=torch.bool), key)")
    error, receipt = notebook.test(WRONG_ANSWER_TEST)
    notebook.student("lie._destroy()")
    assert receipt["verdict"] == "tampered" and "comparisons give wrong answers" in str(error)


def test_an_answer_that_rebinds_the_kit_from_inside_a_test_is_caught(notebook):
    notebook.student('''import sys

def add(x):
    frame = sys._getframe(1)
    while frame is not None:  # every caller's namespace: the kit's, then the test's
        frame.f_globals["check_output"] = lambda *args, **kwargs: None
        frame = frame.f_back
    return x * 2''')
    error, receipt = notebook.test('x = rand(10)\nout = call_answer(add, x)\ncheck_output(out, x, name="add")')
    assert receipt["verdict"] == "tampered" and "check_output" in str(error), error


def test_a_test_run_twice_under_one_nonce_is_tampering(notebook):
    assert notebook.test("x = 1", nonce="once")[1]["verdict"] == "passed"
    assert notebook.test("x = 1", nonce="once")[1]["verdict"] == "tampered"


def test_the_graders_mode_reaches_only_the_sealed_kit(shell):
    notebook = Notebook(shell, mode="cuda")  # a GPU grader whose notebook ended up on the interpreter
    if kit.ON_GPU:
        pytest.skip("on a GPU the kit's own mode is cuda")
    error, receipt = notebook.test('check_bandwidth(1.0, 0.7, "add")')
    assert "The grader ran this notebook with a GPU" in str(error) and receipt["verdict"] == "check failed"
    notebook.student('check_bandwidth(1.0, 0.7, "add")')  # the student's own run: advisory, as always


@pytest.fixture
def restores():
    """Put back what a replacement test changes in this process's torch, math and builtins."""
    import builtins
    import math

    import torch
    saved = {torch: dict(vars(torch)), math: dict(vars(math)), builtins: dict(vars(builtins))}
    tensor_all = vars(torch.Tensor).get("all")
    yield
    for module, names in saved.items():
        vars(module).update(names)
    if tensor_all is None and "all" in vars(torch.Tensor):
        delattr(torch.Tensor, "all")
    while torch._C._len_torch_function_stack():
        torch._C._pop_torch_function_stack()


def execute(tmp_path, cells, mode=kit.MODE, env=None):
    """The messages execute.py reports for a notebook of `cells`, run with a real kernel."""
    path = tmp_path / "notebook.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    read_end, write_end = os.pipe()
    subprocess.run([sys.executable, "-m", "autograder.grade.execute", str(path), "--report-fd", str(write_end),
                    "--mode", mode], pass_fds=(write_end,), cwd=tmp_path, check=True, timeout=patient(300),
                   env={**os.environ, **({} if kit.ON_GPU else {"TRITON_INTERPRET": "1"}), **(env or {})})
    os.close(write_end)
    with os.fdopen(read_end) as report:
        return [json.loads(line) for line in report]


def test_execute_fails_a_test_that_did_not_run_through_the_seal(tmp_path):
    """Through execute.py and a real kernel: an input transformer turns the second test into `pass`;
    its cell has no valid receipt, so the report says so (isolate.py fails the test and flags it)."""
    skip_tests = '''def skip_tests(lines):
    return ["pass\\n"] if "check_output" in "".join(lines) else lines


get_ipython().input_transformers_cleanup.append(skip_tests)'''
    test = {"nbgrader": {"grade": True, "grade_id": "test_doubled", "locked": True, "points": 1}}
    cells = [nbformat.v4.new_code_cell(KIT, metadata={"nbgrader": {"grade_id": "setup", "locked": True}}),
             nbformat.v4.new_code_cell("x = rand(10)\ncheck_output(x.clone(), x)", metadata=test),
             nbformat.v4.new_code_cell(skip_tests),
             nbformat.v4.new_code_cell(WRONG_ANSWER_TEST, metadata={"nbgrader": {**test["nbgrader"],
                                                                                "grade_id": "test_later"}})]
    messages = execute(tmp_path, cells)
    assert {"seal": [], "mode": kit.MODE} in messages
    cells = {m["index"]: m for m in messages if "index" in m and "outputs" in m}
    assert cells[1]["status"] == "ok" and cells[1]["integrity"] is None
    assert cells[3].get("integrity"), messages
    assert cells[3]["integrity"]["flag"].startswith("tests did not run as the grader sent them")
    assert not any(seal.RECEIPT in o.get("data", {}) for m in cells.values() for o in m["outputs"]), \
        "receipts are taken out of the outputs"


# A CUDA driver for a machine without one (compiled into libcuda.so.1, which the seal loads): the
# context of the process whose id is in the file FAULTED is lost, as a kernel that stores to wild
# addresses leaves it. The seal's code, execute.py's fresh kernel and the cells it runs again are all
# real; only the GPU is pretend, so that CI runs what the GPU test below runs on a GPU.
PRETEND_DRIVER = r"""
#include <stdio.h>
#include <unistd.h>
int cuCtxSynchronize(void) {
    long pid = -1;
    FILE *file = fopen(FAULTED, "r");
    if (file) { fscanf(file, "%ld", &pid); fclose(file); }
    return pid == (long)getpid() ? 700 : 0;  /* CUDA_ERROR_ILLEGAL_ADDRESS */
}
int cuGetErrorName(int code, const char **name) { *name = "CUDA_ERROR_ILLEGAL_ADDRESS"; return 0; }
int cuGetErrorString(int code, const char **text) { *text = "an illegal memory access was encountered"; return 0; }
"""
WILD_KERNEL = """import triton
import triton.language as tl


@triton.jit
def wild_store(x_ptr):
    offsets = tl.arange(0, 16).to(tl.int64) * (1 << 36)
    tl.store(x_ptr + offsets, 1.0)
"""


def _real_gpu(tmp_path):
    """The setup cell's addition, the answer's kernel, the wild test's source and execute.py's extra
    environment, for this machine's GPU, which the wild test breaks."""
    return "", WILD_KERNEL, "x = rand(16)\nwild_store[(1,)](x)\ntorch.cuda.synchronize()", {}


def _pretend_gpu(tmp_path):
    """The same for a GPU that the pretend driver breaks when the wild test writes its process's id
    into FAULTED."""
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        unavailable("no C compiler", "the device-fault test on a pretend GPU", "apt-get install gcc")
    faulted, driver = tmp_path / "faulted", tmp_path / "driver"
    driver.mkdir()
    (driver / "driver.c").write_text(PRETEND_DRIVER)
    subprocess.run([compiler, "-shared", "-fPIC", f'-DFAULTED="{faulted}"', "-o", str(driver / "libcuda.so.1"),
                    str(driver / "driver.c")], check=True)
    wild = f"import os\nwith open({str(faulted)!r}, 'w') as file:\n    file.write(str(os.getpid()))"
    # The kit found no GPU; the seal asks the driver only where the grader and the kit both say cuda.
    return "\nMODE = 'cuda'", "", wild, {"LD_LIBRARY_PATH": str(driver)}


@pytest.mark.parametrize("gpu", ["real", "pretend"])
def test_a_test_that_breaks_the_gpu_fails_and_the_tests_after_it_run_in_a_fresh_kernel(tmp_path, gpu):
    """A kernel that stores to wild addresses loses the process its CUDA context: the test that ran
    it fails saying so (no flag: nothing was tampered with), and the next test, run in a fresh kernel
    where the answers and the course's helper were defined again, passes; the test before it is not
    run again. On a GPU for real; without one, on the pretend driver above."""
    if (gpu == "real") != kit.ON_GPU:
        pytest.skip("a real GPU breaks on a GPU only" if gpu == "real" else "a GPU machine has its own driver")
    setup, kernel, wild, env = (_real_gpu if gpu == "real" else _pretend_gpu)(tmp_path)
    answer = kernel + "\n\ndef doubled(x):\n    return x * 2\n"
    runs = tmp_path / "runs"
    meta = lambda grade_id, **more: {"nbgrader": {"grade_id": grade_id, "locked": True, **more}}  # noqa: E731
    test = lambda grade_id: meta(grade_id, grade=True, points=1)  # noqa: E731
    cells = [nbformat.v4.new_code_cell(KIT + setup, metadata=meta("setup")),
             nbformat.v4.new_code_cell(answer, metadata={"nbgrader": {"grade_id": "answer", "solution": True}}),
             nbformat.v4.new_code_cell("def halved(x):\n    return x / 2", metadata=meta("helper")),
             nbformat.v4.new_code_cell(f"with open({str(runs)!r}, 'a') as file:\n    file.write('ran ')",
                                       metadata=test("test_before")),
             nbformat.v4.new_code_cell(wild, metadata=test("test_wild")),
             nbformat.v4.new_code_cell("x = rand(16)\nassert torch.equal(halved(doubled(x)), x)",
                                       metadata=test("test_after"))]
    messages = execute(tmp_path, cells, mode="cuda", env=env)
    reports = {m["index"]: m for m in messages if "index" in m and "outputs" in m}
    assert messages[-1] == {"end": "finished"}, messages[-1]
    assert sorted(reports) == list(range(len(cells))), "each cell is reported once"
    before, wild, after = reports[3], reports[4], reports[5]
    assert before["status"] == "ok" and runs.read_text() == "ran ", "a test graded before the fault ran again"
    assert wild["status"] == "error" and wild["integrity"] is None and wild["course_error"], wild
    error = next(o for o in wild["outputs"] if o["output_type"] == "error")
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in error["evalue"] and "masked" in error["evalue"], error
    assert after["status"] == "ok" and after["integrity"] is None, after
    assert sum("seal" in m for m in messages) == 2, "the seal is installed again in the fresh kernel"

# The grader's adversarial corpus for 02_vector_add, in the format of autograder/samples.py, graded by
# tests/test_batch.py with Settings(deadline=45 (120 on a GPU), memory_mb=3072, processes=64). One key more:
#   reason   (optional) text that the grade's reason must contain.
#   on_gpu   (optional) keys that replace the entry's own when the corpus is graded on a GPU.
# Each entry is one attack or fault, and its expectation is what a correct grader does with it: score
# it fairly, or flag it for a person where it cannot (flags), and never crash. Expectations are not
# bent to fit today's grader: an entry it gets wrong fails in tests/test_batch.py until it is fixed.
#
# To keep the batch fast, most entries build on a cheap base:
# - "release" answers (stubs: every test fails at once, 0/13), with a copy_kernel that is wrong
#   (it doubles the values), so that a check that still compares values is what fails it;
# - "release" answers with only copy_kernel done right (3/13: test_copy_kernel and its hidden test
#   pass), for probes that must do no harm: a probe that gets through (reads the hidden tests, writes
#   outside, fills the disk, reaches the network, sees NBGRADER_EXECUTION) sets copy_kernel = None, so
#   that the copy tests fail and the entry's expectation breaks.
# Students whose names sort first are graded first: the two that run into the deadline lead.
{
    "busy_loop_kernel": {
        "about": "add_kernel never ends (on the interpreter a Python loop; on a GPU a spinning kernel): "
                 "the deadline kills the notebook in the first cell that launches it",
        "answers": "solution",
        # The loop stores: a loop without side effects is deleted by Triton's compiler on a GPU.
        "edits": {"add_kernel": [["    pid = tl.program_id(axis=0)\n",
                                  "    pid = tl.program_id(axis=0)\n    while pid >= 0:  # never ends\n"
                                  "        tl.store(out_ptr, 0.0)\n        pid = pid + 0\n"]]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
        "status": "stopped",
        "reason": "deadline",
    },
    "busy_loop_python": {
        "about": "an endless Python loop in the add cell: killed at the deadline, earlier tests keep their points",
        "answers": "solution",
        "edits": {"add": [["    return out", "    return out\n\n\nwhile True:  # an endless loop\n    pass"]]},
        "fails": ["test_add", "test_add_hidden", "test_add_performance"],
        "status": "stopped",
        "reason": "deadline",
    },
    "cached_result": {
        "about": "add computes x + y once per pair of input tensors and returns that result whenever it is "
                 "given the same tensors again: right on every new input, but a timed call that reuses its "
                 "inputs does no work. Every timed call gets new values in its inputs, and its result is checked",
        "answers": "solution",
        "edits": {"add": [["    return out", '''    return out


_results = {}
_compute = add


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """x + y, computed once per pair of tensors: the last pair is kept (so that their ids stay
    theirs), and only that one (on a GPU, keeping every pair would run out of memory in the sweeps)."""
    if (id(x), id(y)) not in _results:
        _results.clear()
        _results[id(x), id(y)] = (x, y, _compute(x, y))
    return _results[id(x), id(y)][2]''']]},
        "fails": ["test_add_performance"],
        "reason": "add in a timed run",
    },
    "check_failed_of_the_kit_composed": {
        "about": "add finds the hidden test that calls it and raises the kit's own CheckFailed (the real class, "
                 "not a lookalike) with a hidden line in base64 as its message: a message the student's code "
                 "composed is the student's output, whatever class carries it, and feedback does not show it",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)''']]},
        "replace": {"add": '''import base64
import linecache
import sys


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    frame = sys._getframe(1)
    while frame is not None:
        lines = [line.strip() for line in linecache.getlines(frame.f_code.co_filename)]
        hidden = [line for line in lines if len(line) > 20 and not line.startswith("#")]
        if any("BEGIN HIDDEN" in line for line in lines) and hidden:
            raise CheckFailed(base64.b64encode(hidden[-1].encode()).decode())
        frame = frame.f_back
    raise NotImplementedError()'''},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
        "flags": ["a module this course's answers never need (base64.b64encode)", "reaches into a frame, which holds the tests' names (frame.f_back)", "imports base64 (a module this course's answers never need)", "imports linecache (reads the source cache, which holds the hidden tests)", "reaches into a frame, which holds the tests' names (frame.f_code)", "reads the source cache, which holds the hidden tests (linecache.getlines)", "_getframe"],
    },
    "correct": {"about": "a correct submission", "answers": "solution", "fails": []},
    "corrupt": {
        "about": "a file that is not a notebook", "answers": "release", "file": "corrupt: {not json",
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance",
                  "test_copy_kernel", "test_copy_kernel_hidden"],
        "status": "error",
        "reason": "could not be read",
    },
    "deleted_answer_and_test": {
        "about": "the student deleted the copy_kernel answer cell together with its visible test",
        "answers": "release", "delete": ["copy_kernel", "test_copy_kernel"],
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance",
                  "test_copy_kernel", "test_copy_kernel_hidden"],
        "flags": ["deleted the read-only cell 'test_copy_kernel'"],
    },
    "deleted_setup": {
        "about": "copy_kernel done, the locked setup cell deleted: it must be put back for grading, as the flag says",
        "answers": "release", "delete": ["setup"],
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
        "flags": ["deleted the read-only cell 'setup'"],
    },
    "deleted_setup_own_kit": {
        "about": "deleted the locked setup cell and added lenient look-alike helpers, with stub answers: "
                 "every test passes in the notebook; graded, the setup cell is put back and runs first, the "
                 "tests use its kit and fail, and the redefinitions are flagged",
        "answers": "release", "delete": ["setup"],
        "add_cells": [["cell-0", '''import math
import os

import numpy as np
import torch
import triton
import triton.language as tl

ON_GPU = False
DEVICE = torch.device("cpu")
FLOAT_DTYPES = [torch.float32]


def sized(gpu, cpu):
    return cpu


def rand(*shape, dtype=torch.float32, device=None):
    return torch.randn(*shape).to(dtype)


def guarded_empty(shape, dtype=torch.float32, device=None, fill=None):
    return torch.zeros(shape, dtype=dtype)


def call_answer(fn, *args, name=None, **kwargs):
    try:
        return fn(*args, **kwargs)
    except Exception:
        return None


def check_output(*args, **kwargs):
    return None


def expect_launched(*args, **kwargs):
    return None


class count_launches:
    def __enter__(self):
        return []

    def __exit__(self, *args):
        return False


guarded_allocations = count_launches


def bench_ms(fn):
    return 1.0


def gbps(nbytes, ms):
    return 1.0


def copy_bandwidth(n=None):
    return 1.0


def check_bandwidth(*args, **kwargs):
    return None


def plot_bandwidth(*args, **kwargs):
    return None'''],],
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance",
                  "test_copy_kernel", "test_copy_kernel_hidden"],
        "flags": ["redefines the course's DEVICE, which the tests use (give yours another name)", "redefines the course's FLOAT_DTYPES, which the tests use (give yours another name)", "redefines the course's sized, which the tests use (give yours another name)", "redefines the course's rand, which the tests use (give yours another name)", "redefines the course's guarded_empty, which the tests use (give yours another name)", "redefines the course's call_answer, which the tests use (give yours another name)", "redefines the course's expect_launched, which the tests use (give yours another name)", "redefines the course's count_launches, which the tests use (give yours another name)", "redefines the course's guarded_allocations, which the tests use (give yours another name)", "redefines the course's bench_ms, which the tests use (give yours another name)", "redefines the course's gbps, which the tests use (give yours another name)", "redefines the course's copy_bandwidth, which the tests use (give yours another name)", "redefines the course's check_bandwidth, which the tests use (give yours another name)", "redefines the course's plot_bandwidth, which the tests use (give yours another name)", "redefines the course's ON_GPU, which the tests use (give yours another name)", "deleted the read-only cell 'setup'", "redefines the course's check_output"],
    },
    "disk_filler": {
        "about": "writes 40 files of 60 MB (each under the 64 MB file limit) into its own folder, on the host's disk",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)


written = 0
try:
    for number in range(40):
        with open(f"filler-{number}.bin", "wb") as handle:
            handle.write(b"x" * (60 << 20))
        written += 60
except OSError as error:
    print("stopped writing:", error)
print("wrote", written, "MB")
if written >= 40 * 60:  # 2.4 GB, and nothing stopped it: no cap on the disk a submission may fill
    copy_kernel = None''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
        "flags": ["opens a file"],
    },
    "edited_tests": {
        "about": "stub answers; the visible tests replaced by `pass` (nbgrader restores them)",
        "answers": "release", "replace": {"test_copy_kernel": "pass", "test_add": "pass", "test_add_hidden": "pass"},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance",
                  "test_copy_kernel", "test_copy_kernel_hidden"],
        "flags": ["edited the read-only cell 'test_copy_kernel'", "edited the read-only cell 'test_add'",
                  "edited the read-only cell 'test_add_hidden'"],
    },
    "deleted_tests": {
        "about": "stub answers; test cells deleted (nbgrader adds them back)",
        "answers": "release", "delete": ["test_copy_kernel", "test_add_kernel_hidden", "test_add", "test_add_performance"],
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance",
                  "test_copy_kernel", "test_copy_kernel_hidden"],
        "flags": ["deleted the read-only cell 'test_copy_kernel'", "deleted the read-only cell 'test_add'",
                  "deleted the read-only cell 'test_add_kernel_hidden'",
                  "deleted the read-only cell 'test_add_performance'"],
    },
    "equal_to_anything": {
        "about": "add launches a kernel but returns an object whose __eq__ is always true",
        "answers": "solution",
        "replace": {"add": '''class AlwaysEqual:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return AlwaysEqual()'''},
        "fails": ["test_add", "test_add_hidden", "test_add_performance"],
        "flags": ["defines __ne__ (an object that compares equal to anything?)", "defines __eq__"],
    },
    "fallback_index_add_into_output": {
        "about": "add launches add_kernel with n_elements=0 (a launch that adds nothing) on its output, "
                 "then fills the output with torch's index_add_, which no list of arithmetic names has",
        "answers": "solution",
        "replace": {"add": '''def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x, y = x.contiguous(), y.contiguous()
    out = torch.zeros_like(x)
    add_kernel[(1,)](x, y, out, 0, BLOCK_SIZE=1024)
    flat = out.view(-1)
    everywhere = torch.arange(flat.numel(), device=x.device)
    flat.index_add_(0, everywhere, x.view(-1)).index_add_(0, everywhere, y.view(-1))
    return out'''},
        "fails": ["test_add", "test_add_hidden", "test_add_performance"],
        "reason": "computed with torch (aten.arange, aten.index_add_)",
    },
    "fallback_numpy_into_output": {
        "about": "add hands its output to a kernel that does nothing, then writes x + y into it with NumPy "
                 "through np.asarray: no torch arithmetic at all",
        "answers": "solution",
        "replace": {"add": '''import numpy as np


@triton.jit
def nothing_kernel(out_ptr):
    pass


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x, y = x.contiguous(), y.contiguous()
    out = torch.empty_like(x)
    nothing_kernel[(1,)](out)
    np.add(np.asarray(x), np.asarray(y), out=np.asarray(out))
    return out'''},
        "fails": ["test_add", "test_add_hidden", "test_add_performance"],
        "reason": "computed with torch (Tensor.__array__)",
        "on_gpu": {"reason": "numpy"},  # NumPy cannot read GPU memory: the answer fails by itself there
    },
    "fallback_in_a_grid_function": {
        "about": "add's kernel does nothing; the grid function that Triton's launcher calls adds x and y "
                 "into the output with torch: a callback is the student's code, watched like the rest",
        "answers": "solution",
        "replace": {"add": '''@triton.jit
def launched_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pass


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)

    def grid(meta):
        torch.add(x, y, out=out)
        return (triton.cdiv(x.numel(), meta["BLOCK_SIZE"]),)

    launched_kernel[grid](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out'''},
        "fails": ["test_add", "test_add_hidden", "test_add_performance"],
        "reason": "computed with torch (aten.add)",
    },
    "fallback_in_a_heuristic": {
        "about": "add's kernel does nothing; a triton.heuristics function, which the launcher calls with the "
                 "kernel's arguments, computes the sum into the output with torch",
        "answers": "solution",
        "replace": {"add": '''def _block(args):
    torch.add(args["x_ptr"], args["y_ptr"], out=args["out_ptr"])
    return 1024


@triton.heuristics({"BLOCK_SIZE": _block})
@triton.jit
def launched_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pass


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    launched_kernel[(1,)](x, y, out, x.numel())
    return out'''},
        "fails": ["test_add", "test_add_hidden", "test_add_performance"],
        "reason": "computed with torch (aten.add)",
    },
    "fallback_with_dummy_launch": {
        "about": "add launches a do-nothing kernel, so that a launch is counted, and returns x + y",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)''']]},
        "replace": {"add": '''@triton.jit
def nothing_kernel(x_ptr):
    pass


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    nothing_kernel[(1,)](x)
    return x + y'''},
        # The launch is counted, but x + y is torch arithmetic and the output was never handed
        # to a kernel: expect_launched fails every test of add.
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
        "flags": ["torch fallback"],
    },
    "files_beside_helper_module": {
        "about": "add is imported from vector_helpers.py, handed in beside the notebook (a correct add, kernel "
                 "and all): only the notebook is graded, so the import fails and the reason says why",
        "answers": "solution",
        "beside": {"vector_helpers.py": '''import torch
import triton
import triton.language as tl


@triton.jit
def helper_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def add(x, y):
    out = torch.empty_like(x)
    n_elements = out.numel()
    helper_add_kernel[(triton.cdiv(n_elements, 1024),)](x, y, out, n_elements, BLOCK_SIZE=1024)
    return out
'''},
        "replace": {"add": "from vector_helpers import add  # the kernel and its wrapper live in vector_helpers.py"},
        "fails": ["test_add", "test_add_hidden", "test_add_performance"],
        "reason": "the notebook imports vector_helpers, which is not a module here",
    },
    "files_beside_shadowing_modules": {
        "about": "numpy.py and torch.py handed in beside the notebook, which would replace the real modules "
                 "if they were importable (and break the setup cell): they are left out, and listed",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)''']]},
        "beside": {"numpy.py": "raise ImportError('numpy.py, handed in beside the notebook, was imported')\n",
                   "torch.py": "raise ImportError('torch.py, handed in beside the notebook, was imported')\n"},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
        "reason": "not graded, handed in beside the notebook (only the notebook is graded): numpy.py, torch.py",
    },
    "fork_bomb": {
        # The forks are in add itself, so that every test calling it meets them: forked once at the
        # top of the cell, a correct add could pass the next test before the sandbox is killed, or
        # not, depending on how busy the machine is.
        "about": "forks 100000 sleeping children each time add is called: the sandbox's process limit stops it",
        "answers": "solution",
        "edits": {"add": [["    return out", '''    import os
    import time

    for _ in range(100000):
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
    return out''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_performance"],
        "status": "stopped",
        "reason": "too many processes",
        "flags": ["exits the kernel (os._exit)", "forks processes"],
    },
    "gpu_memory_share": {
        "about": "a wrong copy_kernel; lifts the GPU memory cap the grader gives each notebook (on a GPU it "
                 "could then starve the notebooks beside it)",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values * 2, mask=mask)


if torch.cuda.is_available():
    torch.cuda.set_per_process_memory_fraction(1.0)''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance",
                  "test_copy_kernel", "test_copy_kernel_hidden"],
        "flags": ["changes its share of GPU memory"],
    },
    "hidden_tests_encoded_in_outputs": {
        "about": "add finds the hidden test that calls it (its caller's frames, the source cache) and puts it "
                 "in every output it can: stdout in base64 and reversed, stderr, a plot, an exception named "
                 "like the course's own check (whose messages feedback does show): feedback shows none of the "
                 "run's outputs, only a bounded verdict per test, and the message of the course's errors only",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)''']]},
        "replace": {"add": '''import base64
import linecache
import sys

import matplotlib.pyplot as plt


class CheckFailed(AssertionError):
    pass


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    frame, found = sys._getframe(1), ""
    while frame is not None and not found:
        lines = linecache.getlines(frame.f_code.co_filename)
        found = "".join(lines) if any("BEGIN HIDDEN" in line for line in lines) else ""
        frame = frame.f_back
    if not found:
        raise NotImplementedError()
    print(base64.b64encode(found.encode()).decode())
    print(found[::-1])
    print(found, file=sys.stderr)
    figure = plt.figure(figsize=(12, 8))
    figure.text(0, 0, found[:3000], fontsize=5, family="monospace")
    plt.show()
    raise CheckFailed(found[::-1])'''},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
        "flags": ["reaches into a frame, which holds the tests' names (frame.f_code)", "reads the source cache, which holds the hidden tests (linecache.getlines)", "reaches into a frame, which holds the tests' names (frame.f_back)", "imports base64 (a module this course's answers never need)", "a module this course's answers never need (base64.b64encode)", "imports linecache (reads the source cache, which holds the hidden tests)", "redefines the course's CheckFailed, which the tests use (give yours another name)", "_getframe"],
    },
    "hidden_tests_via_history": {
        "about": "prints IPython's input history (In), which holds the hidden tests that already ran, "
                 "into its own output: the feedback must not show them",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)''']],
                  "add": [["    raise NotImplementedError()", '''    raise NotImplementedError()


for source in In:
    if "BEGIN HIDDEN" in source:
        print(source)''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
        "flags": ["reads IPython's input history"],
    },
    "honest_habits": {
        "about": "a correct submission with the cells students add: %timeit, a %%time cell, a plot, prints, "
                 "a helper that checks add with torch.testing: full marks and not one flag",
        "answers": "solution",
        "add_cells": [["add", '''x, y = rand(4099), rand(4099)
%timeit -n 3 -r 1 add(x, y)'''],
                      ["add", '''%%time
x, y = rand(4099), rand(4099)
out = add(x, y)
print(f"{out.shape=} {out.dtype} {out.device}", out[:4].tolist())'''],
                      ["add", '''import matplotlib.pyplot as plt
from math import prod


def check_add(shape: tuple[int, ...]) -> float:
    """My own check: add against torch, and its time in ms."""
    torch.manual_seed(0)
    x, y = rand(*shape), rand(*shape)
    torch.testing.assert_close(add(x, y), x + y)
    return bench_ms(lambda: add(x, y))


shapes = [(1,), (1000,), (37, 53)]
times = [check_add(shape) for shape in shapes]
plt.plot([prod(shape) for shape in shapes], times, marker="o")
plt.xlabel("elements")
plt.show()''']],
        "fails": [],
    },
    "honest_wrapper_layouts": {
        "about": "a correct add whose wrapper does what honest wrappers do with torch: checks, a contiguous "
                 "copy, reshape and view, .to(device, dtype), torch.empty(shape), a flattened output for "
                 "the kernel: full marks and not one flag",
        "answers": "solution",
        "replace": {"add": '''def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """x + y, computed by add_kernel on flattened copies of the inputs."""
    if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
        raise ValueError(f"x and y differ: {x.shape} {x.dtype} {x.device}, {y.shape} {y.dtype} {y.device}")
    flat_x = x.contiguous().view(-1)
    flat_y = y.to(x.device, x.dtype).contiguous().reshape(-1)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = flat_x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](flat_x, flat_y, out.view(-1), n, BLOCK_SIZE=1024)
    return out'''},
        "fails": [],
    },
    "huge_output": {
        "about": "prints 50 MB in an answer cell: the output is cut, grading goes on",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)


for _ in range(1000):
    print("y" * 50000)''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
    },
    "inplace_kernel": {
        "about": "add launches add_kernel with x as the output (saves an allocation) and returns x",
        "answers": "solution",
        "edits": {"add": [["    add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)\n    return out",
                           "    add_kernel[grid](x, y, x, n_elements, BLOCK_SIZE=BLOCK_SIZE)\n    return x"]]},
        "fails": ["test_add", "test_add_hidden", "test_add_performance"],
    },
    "inplace_torch": {
        "about": "add writes the sum into x with torch (x.add_(y); return x)",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)''']],
                  "add": [["    # YOUR CODE HERE\n    raise NotImplementedError()", "    x.add_(y)\n    return x"]]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
    },
    "input_transformer": {
        "about": "a wrong copy_kernel and stubs; an IPython input transformer turns every test cell into `pass`",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values * 2, mask=mask)


def skip_tests(lines):
    text = "".join(lines)
    if "check_output" in text or "expect_launched" in text or "HIDDEN" in text:
        return ["pass\\n"]
    return lines


get_ipython().input_transformers_cleanup.append(skip_tests)''']]},
        # Rewritten tests return no receipt from the sealed kit: each fails, and the notebook is flagged.
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance",
                  "test_copy_kernel", "test_copy_kernel_hidden"],
        "flags": ["uses the IPython shell object", "tests did not run as the grader sent them"],
    },
    "input_transformer_hidden": {
        "about": "the same input transformer, reached through sys.modules so that no name gives it away",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values * 2, mask=mask)


import sys


def skip_tests(lines):
    text = "".join(lines)
    if "check_output" in text or "expect_launched" in text or "HIDDEN" in text:
        return ["pass\\n"]
    return lines


sys.modules["IPython"].get_ipython().input_transformers_cleanup.append(skip_tests)''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance",
                  "test_copy_kernel", "test_copy_kernel_hidden"],
        "flags": ["sys.modules", "tests did not run as the grader sent them"],
    },
    "kit_disarmed_without_assignment": {
        "about": "a wrong copy_kernel and stubs; check_output, expect_launched and call_answer replaced by "
                 "functions that accept anything, through the __main__ module, a function's __globals__ and a "
                 "frame, so that no assignment names them: graded tests use the kit as the setup cell made it",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values * 2, mask=mask)


import sys

import __main__


def accept(*args, **kwargs):
    return None


__main__.__dict__["check_output"] = accept
accept.__globals__["expect_launched"] = accept
sys._getframe(0).f_globals["call_answer"] = accept''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance",
                  "test_copy_kernel", "test_copy_kernel_hidden"],
        "flags": ["assigns __main__.__dict__['check_output'] (monkeypatching)", "reaches the notebook's own namespace, where the tests find the course's helpers (__main__.__dict__)", "reaches into a frame, which holds the tests' names (f_globals)", "imports __main__", "uses __globals__", "sys._getframe"],
    },
    "kit_rebound_via_frame": {
        "about": "a right copy_kernel; check_output rebound through the frame's globals (sys._getframe): to "
                 "itself, so that the grade does not depend on the tests' own defences, only the audit's flag",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)


import sys

sys._getframe(0).f_globals["check_output"] = check_output''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
        "flags": ["assigns sys._getframe(0).f_globals['check_output'] (monkeypatching)", "inspects the caller's frames (sys._getframe)", "reaches into a frame"],
    },
    "kit_rebound_via_function_globals": {
        "about": "a right copy_kernel; check_output rebound through a function's __globals__ (to itself, as above)",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)


def namespace():
    pass


namespace.__globals__["check_output"] = check_output''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
        "flags": ["uses __globals__"],
    },
    "kit_rebound_via_main_module": {
        "about": "a right copy_kernel; check_output rebound through the __main__ module's __dict__ (to itself, "
                 "as above)",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)


import __main__

__main__.__dict__["check_output"] = check_output''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
        "flags": ["imports __main__", "__main__.__dict__"],
    },
    "kit_replaced_via_globals": {
        "about": "a right copy_kernel; check_output replaced through globals() so that no assignment names it",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)


globals()["check_output"] = lambda *args, **kwargs: None''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
        "flags": ["globals()"],
    },
    "interpreter_left_on": {
        "about": "a correct submission from a laptop: its first cell sets TRITON_INTERPRET=1, another uses "
                 "setdefault, a third %env (honest habits). On a GPU grader the kernels still run on the GPU "
                 "(the seal pins Triton's mode), full marks, and the report says the setting was ignored",
        "answers": "solution",
        "add_cells": [["cell-0", 'import os\n\nos.environ["TRITON_INTERPRET"] = "1"'],
                      ["add_kernel", 'os.environ.setdefault("TRITON_INTERPRET", "1")'],
                      ["add", "%env TRITON_INTERPRET=1"]],
        "fails": [],
        "on_gpu": {"reason": "the setting was ignored"},
    },
    "kill_grader": {
        "about": "kills its parent (the process that runs the notebook and reports each cell) from the add cell",
        "answers": "solution",
        "edits": {"add": [["    return out", "    return out\n\n\nimport os\nimport signal\n\nos.kill(os.getppid(), signal.SIGKILL)"]]},
        "fails": ["test_add", "test_add_hidden", "test_add_performance"],
        "status": "stopped",
        "flags": ["imports signal (sends or catches signals)", "sends or catches signals (signal.SIGKILL)", "uses a part of os that this course's answers never need (os.getppid)", "sends signals"],
    },
    "loads_other": {
        "about": "add_kernel loads with mask=mask, other=0.0: honest (a masked-off lane reads nothing)",
        "answers": "solution",
        "edits": {"add_kernel": [["x = tl.load(x_ptr + offsets, mask=mask)", "x = tl.load(x_ptr + offsets, mask=mask, other=0.0)"],
                                 ["y = tl.load(y_ptr + offsets, mask=mask)", "y = tl.load(y_ptr + offsets, mask=mask, other=0.0)"]]},
        "fails": [],
    },
    "loads_unmasked": {
        "about": "add_kernel masks its store but not its loads: its last program reads past the end of x and y",
        "answers": "solution",
        "edits": {"add_kernel": [["x = tl.load(x_ptr + offsets, mask=mask)", "x = tl.load(x_ptr + offsets)"],
                                 ["y = tl.load(y_ptr + offsets, mask=mask)", "y = tl.load(y_ptr + offsets)"]]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden"],  # the timed size is 2^12: no tail
        "reason": "add_kernel read past the end of x_ptr",
        # A GPU does not see loads, and the masked store throws the stray values away: there the kit
        # runs each small launch once more under the interpreter, which sees every load.
    },
    "metadata_lost": {
        "about": "a correct notebook saved by an editor that drops cell metadata (and makes new cell ids): "
                 "its cells are matched with the release, graded in full, and the reason says so",
        "answers": "solution", "strip_metadata": True,
        "fails": [],
        "reason": "nbgrader's cell metadata was missing",
    },
    "metadata_lost_two_answers": {
        "about": "cell metadata dropped, and two cells define copy_kernel (an old attempt kept above the new "
                 "one): which one is the answer is for a person to say, so it is not graded, with a reason",
        "answers": "solution", "strip_metadata": True,
        "add_cells": [["cell-10", '''@triton.jit
def copy_kernel(src_ptr, dst_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # first try: no mask yet
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets))''']],
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance",
                  "test_copy_kernel", "test_copy_kernel_hidden"],
        "status": "error",
        "reason": "the answer 'copy_kernel' cannot be told apart",
    },
    "metadata_not_a_dict": {
        "about": "a notebook whose cell metadata has \"nbgrader\": null (a hand-edited or damaged file)",
        "answers": "release",
        "file": 'corrupt: {"cells": [{"cell_type": "code", "execution_count": null, "id": "answer", '
                '"metadata": {"nbgrader": null}, "outputs": [], "source": "print(1)"}], "metadata": {}, '
                '"nbformat": 4, "nbformat_minor": 5}',
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance",
                  "test_copy_kernel", "test_copy_kernel_hidden"],
        "status": "error",
        "flags": ["deleted the read-only cell", "deleted the read-only cell 'setup'"],
    },
    "memory_hog": {
        "about": "fills host memory 256 MB at a time (really written): the memory limit ends it with a MemoryError",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)


def fill_memory():
    blocks = []
    while True:
        blocks.append(b"x" * (256 << 20))


fill_memory()''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
        # On a GPU an address-space limit would break CUDA, so memory is watched and the sandbox
        # killed instead of raising MemoryError (or, as root, the memory cgroup kills the kernel
        # first): either way the run stops in the cell that filled it.
        "on_gpu": {"fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance",
                             "test_copy_kernel", "test_copy_kernel_hidden"],
                   "status": "stopped", "reason": "stopped in cell 'copy_kernel'"},
    },
    "missing_mask": {
        "about": "kernels without masks",
        "answers": "solution",
        "edits": {"copy_kernel": [[", mask=mask)", ")"]], "add_kernel": [[", mask=mask)", ")"]]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_copy_kernel",
                  "test_copy_kernel_hidden"],
    },
    "monkeypatch_aliased": {
        "about": "a right copy_kernel; torch.Tensor.all patched through an alias (import torch as T)",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)


import torch as T

T.Tensor.all = lambda self, *args, **kwargs: True''']]},
        # The tests after it cannot trust torch.Tensor.all: they fail, the right copy_kernel's too.
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance",
                  "test_copy_kernel", "test_copy_kernel_hidden"],
        "flags": ["monkeypatching", "changed what graded tests rely on: torch.Tensor.all was added"],
    },
    "monkeypatch_comparisons": {
        "about": "a wrong copy_kernel; torch.allclose, torch.testing.assert_close, math.isclose and "
                 "numpy.testing.assert_allclose patched to always agree",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values * 2, mask=mask)


import math

import numpy

torch.allclose = lambda *args, **kwargs: True
torch.testing.assert_close = lambda *args, **kwargs: None
math.isclose = lambda *args, **kwargs: True
numpy.testing.assert_allclose = lambda *args, **kwargs: None''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance",
                  "test_copy_kernel", "test_copy_kernel_hidden"],
        "flags": ["changed what graded tests rely on: torch.allclose was replaced; torch.testing.assert_close was replaced; numpy.testing.assert_allclose was replaced; math.isclose was replaced", "assigns torch.allclose", "assigns torch.testing.assert_close", "assigns math.isclose",
                  "assigns numpy.testing.assert_allclose"],
    },
    "monkeypatch_isclose": {
        "about": "a wrong copy_kernel; torch.isclose patched to say every element matches",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values * 2, mask=mask)


torch.isclose = lambda a, b, *args, **kwargs: torch.ones_like(a, dtype=torch.bool)''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance",
                  "test_copy_kernel", "test_copy_kernel_hidden"],
        "flags": ["changed what graded tests rely on: torch.isclose was replaced", "assigns torch.isclose"],
    },
    "nbgrader_env": {
        "about": "behaves differently when NBGRADER_EXECUTION or COURSE_GPU_TURN is set (it must not be)",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)


import os

print("environment:", sorted(os.environ))
if os.environ.get("NBGRADER_EXECUTION") or os.environ.get("COURSE_GPU_TURN"):
    copy_kernel = None''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
        "flags": ["reads the whole environment (os.environ)", "NBGRADER_EXECUTION", "COURSE_GPU_TURN"],
    },
    "network": {
        "about": "opens a socket to 1.1.1.1:53 from an answer cell: no network in the sandbox",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)


import socket

try:
    socket.create_connection(("1.1.1.1", 53), timeout=3).close()
    print("the network is reachable")
    copy_kernel = None
except OSError as error:
    print("no network:", error)''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
        "flags": ["uses the network"],
    },
    "os_exit": {
        "about": "os._exit(0) in the add cell: the kernel dies; tests that ran keep their points",
        "answers": "solution",
        "edits": {"add": [["    return out", "    return out\n\n\nimport os\n\nos._exit(0)"]]},
        "fails": ["test_add", "test_add_hidden", "test_add_performance"],
        "status": "stopped",
        "reason": "exited",
        "flags": ["exits the kernel"],
    },
    "pretends_no_gpu": {
        "about": "add launches its kernel four times (right, at a quarter of the speed of memory), and the "
                 "notebook tries to make the grader think it has no GPU, so that the performance test would be "
                 "advisory: a cell before the setup cell hides the GPU (CUDA_VISIBLE_DEVICES), a later one sets "
                 "ON_GPU and MODE through __main__. Graded, the setup cell runs first and the tests use its kit: "
                 "on a GPU the performance test is graded, and fails",
        "answers": "solution",
        "add_cells": [["cell-0", 'import os\n\nos.environ["CUDA_VISIBLE_DEVICES"] = ""']],
        "edits": {"add": [["    add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)\n",
                           "    for _ in range(4):\n        add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)\n"],
                          ["    return out", '''    return out


import __main__

__main__.ON_GPU, __main__.MODE = False, "interpreter"''']]},
        "fails": [],
        "flags": ["assigns __main__.MODE (monkeypatching)", "assigns __main__.ON_GPU (monkeypatching)", "reaches the notebook's own namespace, where the tests find the course's helpers (__main__.MODE)", "reaches the notebook's own namespace, where the tests find the course's helpers (__main__.ON_GPU)", "CUDA_VISIBLE_DEVICES", "imports __main__"],
        "on_gpu": {"fails": ["test_add_performance"], "reason": "copy bandwidth"},
    },
    "read_outside": {
        "about": "reads /etc/hostname (fine), then looks everywhere for the hidden tests and gradebooks",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)


import os

print("hostname:", open("/etc/hostname").read().strip())
hidden = ("_check_add" + "_kernel(").encode()  # a hidden test's name (spelt so that this cell does not match)
lesson = ("02_vector" + "_add").encode()
candidates = ["../../source/02_vector_add/02_vector_add.ipynb", "../source/02_vector_add/02_vector_add.ipynb",
              "../../gradebook.db", "../gradebook.db", "/work/main/source/02_vector_add/02_vector_add.ipynb",
              "/work/main/gradebook.db"]
for root, folders, files in os.walk("/"):  # all but the system's and the toolchains' trees (.pyenv, .rustup,
    folders[:] = [f for f in folders if os.path.join(root, f) not in ("/proc", "/sys", "/dev", "/usr", "/etc")
                  and not f.startswith(".") and f != "site-packages"]  # .venv), whose size varies by machine
    candidates += [os.path.join(root, f) for f in files if f.endswith((".ipynb", ".db", ".json"))]
leaks = []
for path in candidates:
    try:
        with open(path, "rb") as handle:
            text = handle.read()
    except OSError:
        continue
    if hidden in text or (text.startswith(b"SQLite format 3") and lesson in text):
        leaks.append(path)
print("hidden tests or gradebooks found:", leaks)
if leaks:
    copy_kernel = None''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
        "flags": ["lists folders (os.walk)", "uses a part of os that this course's answers never need (os.path.join)", "opens a file"],
    },
    "release": {
        "about": "the release, untouched", "answers": "release",
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance",
                  "test_copy_kernel", "test_copy_kernel_hidden"],
    },
    "renamed": {
        "about": "the notebook was saved as 'Copy of 02_vector_add.ipynb'",
        "answers": "release", "file": "Copy of 02_vector_add.ipynb",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
        "flags": ["renamed to 'Copy of 02_vector_add.ipynb'"],
    },
    "retyped_tests": {
        "about": "stub answers; two test cells turned into markdown (nbgrader turns them back)",
        "answers": "release", "retype": ["test_copy_kernel", "test_add_hidden"],
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance",
                  "test_copy_kernel", "test_copy_kernel_hidden"],
        "flags": ["changed cell 'test_copy_kernel' from code to markdown",
                  "changed cell 'test_add_hidden' from code to markdown"],
    },
    "segfault": {
        "about": "crashes the kernel with a segmentation fault (ctypes.string_at(0)) in the add cell",
        "answers": "solution",
        "edits": {"add": [["    return out", "    return out\n\n\nimport ctypes\n\nctypes.string_at(0)"]]},
        "fails": ["test_add", "test_add_hidden", "test_add_performance"],
        "status": "stopped",
        "reason": "SIGSEGV",
        "flags": ["calls C directly (ctypes.string_at)", "imports ctypes"],
    },
    "setattr_computed_name": {
        "about": "a right copy_kernel; torch.allclose set with setattr and a name put together at run time, so "
                 "that no text names it (set to itself, as in kit_rebound_via_frame)",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)


name = "all" + "close"
setattr(torch, name, torch.allclose)''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
        "flags": ["sets an attribute whose name is computed (setattr)"],
    },
    "showtraceback": {
        "about": "a wrong copy_kernel and stubs; the shell's showtraceback replaced so that errors print nothing",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values * 2, mask=mask)


get_ipython().showtraceback = lambda *args, **kwargs: None''']]},
        # The kit shows a failed check through its own handler, so the messages are there anyway.
        "fails": ["test_copy_kernel", "test_copy_kernel_hidden", "test_add_kernel_hidden",
                  "test_add", "test_add_hidden", "test_add_performance"],
        "reason": "test_copy_kernel: CheckFailed: copy_kernel: element 0 of",
        "flags": ["uses the IPython shell object", "replaces showtraceback"],
    },
    "showtraceback_all": {
        "about": "a wrong copy_kernel and stubs; showtraceback and the kit's route (_showtraceback) both silenced",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values * 2, mask=mask)


get_ipython().showtraceback = get_ipython()._showtraceback = lambda *args, **kwargs: None''']]},
        # No error is printed, but the kernel still replies "error": the grader shows it again.
        "fails": ["test_copy_kernel", "test_copy_kernel_hidden", "test_add_kernel_hidden",
                  "test_add", "test_add_hidden", "test_add_performance"],
        "reason": "code in the notebook hid it",
        "flags": ["reaches a private attribute (_showtraceback)", "uses the IPython shell object", "replaces showtraceback", "replaces _showtraceback"],
    },
    "stderr_redirect": {
        "about": "a wrong copy_kernel; sys.stderr replaced by a StringIO",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values * 2, mask=mask)


import io
import sys

sys.stderr = io.StringIO()''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance",
                  "test_copy_kernel", "test_copy_kernel_hidden"],
        "flags": ["imports io (makes file-like streams)", "makes file-like streams (io.StringIO)", "assigns sys.stderr"],
    },
    "sys_exit": {
        "about": "sys.exit(1) at the end of an answer cell: IPython catches SystemExit, grading goes on",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)


import sys

sys.exit(1)''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
        "flags": ["exits the kernel"],
    },
    "tensor_method_via_type_setattr": {
        "about": "a right copy_kernel; torch.Tensor.all set through type.__setattr__, which no assignment shows "
                 "(to the method it was): the tests see a torch class changed after the setup cell and fail, "
                 "and the audit names the line",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)


type.__setattr__(torch.Tensor, "all", torch.Tensor.all)''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance",
                  "test_copy_kernel", "test_copy_kernel_hidden"],
        "flags": ["changed what graded tests rely on: torch.Tensor.all was added", "uses __setattr__"],
    },
    "torch_fallback": {
        "about": "add returns x + y and launches nothing",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)''']],
                  "add": [["    # YOUR CODE HERE\n    raise NotImplementedError()", "    return x + y"]]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
        "flags": ["torch fallback"],
    },
    "torch_operator_replaced": {
        "about": "a wrong copy_kernel and stubs; torch's own isclose operator replaced in its dispatcher "
                 "(torch.library) by one that finds any two tensors close: no Python name changes, so what "
                 "catches it is the seal asking torch's comparisons a question whose answer it knows",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values * 2, mask=mask)


def all_close(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return torch.ones(a.shape, dtype=torch.bool, device=a.device)


lie = torch.library.Library("aten", "IMPL")
for key in ("CPU", "CUDA"):
    lie.impl("isclose", all_close, key)''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance",
                  "test_copy_kernel", "test_copy_kernel_hidden"],
        "flags": ["torch.library", "torch's comparisons give wrong answers"],
    },
    "torch_ops_fallback": {
        "about": "add calls aten's add through torch.ops, an entry point no list of torch functions names, "
                 "and launches nothing",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)''']],
                  "add": [["    # YOUR CODE HERE\n    raise NotImplementedError()", "    return torch.ops.aten.add(x, y)"]]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
        "flags": ["add computes with torch.ops.aten.add and launches no kernel (torch fallback?)", "calls torch's operators directly (torch.ops.aten.add)"],
    },
    "uninitialised": {
        "about": "add computes x + y with torch, frees it, and returns torch.empty_like(x), which may hold it",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)''']],
                  "add": [["    # YOUR CODE HERE\n    raise NotImplementedError()",
                           "    total = x + y\n    del total\n    return torch.empty_like(x)"]]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
    },
    "write_outside": {
        "about": "tries to write a file into every folder it can see outside its own",
        "answers": "release",
        "edits": {"copy_kernel": [["    # YOUR CODE HERE\n    raise NotImplementedError()", '''    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)


import os

folders = ["..", "../..", "/", "/work", "/work/main", "/root"]
for root, subfolders, files in os.walk("/"):
    subfolders[:] = [f for f in subfolders if os.path.join(root, f) not in ("/proc", "/sys", "/dev")]
    if root.count("/") <= 4 or any(f.endswith((".ipynb", ".db")) for f in files):
        folders.append(root)
written = []
for folder in folders:
    try:
        with open(os.path.join(folder, "PWNED-write_outside"), "w") as handle:
            handle.write("written by a student")
        written.append(folder)
    except OSError:
        pass
for root, subfolders, files in os.walk("/"):
    subfolders[:] = [f for f in subfolders if os.path.join(root, f) not in ("/proc", "/sys", "/dev")]
    for name in files:
        if name.endswith(".db"):
            try:
                with open(os.path.join(root, name), "ab") as handle:
                    handle.write(b"garbage")
                written.append(os.path.join(root, name))
            except OSError:
                pass
print("wrote into:", written)''']]},
        "fails": ["test_add", "test_add_hidden", "test_add_kernel_hidden", "test_add_performance"],
        "flags": ["lists folders (os.walk)", "uses a part of os that this course's answers never need (os.path.join)", "opens a file"],
    },
}

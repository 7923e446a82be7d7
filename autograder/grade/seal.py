"""Graded tests that the notebook's own code cannot reach. This module runs inside the notebook's
kernel, and only when the notebook is graded (execute.py drives it); students' own runs never see it.

Test cells use the kit (check_output, rand, bench_ms, ...) and torch by name, in the student's
namespace. A notebook can rebind those names without an assignment the audit sees (through
`__main__`, a function's `__globals__`, a frame), and can replace torch's functions and tensor
methods. So, when grading:

- right after the setup cell, before any student code, execute.py calls `install`. It copies the
  kit the setup cell defined into a dict of its own (functions rebound to that dict, containers
  copied: the sealed kit) and takes a snapshot of what the tests rely on (the functions of torch,
  NumPy, math, time, builtins and Triton's launcher; torch.Tensor's methods; the kit's classes);
- execute.py sends each of the course's cells after the setup (test cells, and the read-only cells
  where a lesson defines its own helpers and references: 06's check_product, 05's layer_norm_torch)
  as `run(nonce, source, name)`. It runs in the course's scope: the names the course bound (the
  sealed kit, then what its cells defined), over the student's names (their answers), never over a
  builtin. What the cell defines (functions, classes, modules, kernels) and the constants it binds
  (numbers, strings, tuples of them: a tolerance, a hint) are the course's from then on: a later
  cell of the student's that binds the same name changes the student's namespace, where the cell's
  bindings are copied too, and never what the course's code finds. Other data a course cell binds
  (tensors) stays the student's only, and the build refuses course code that reads it from another
  cell (RequireKeptData in autograder/generate/source.py);
- before and after the test, the snapshot is compared with what is there now, torch's function and
  dispatch modes and Python's trace hooks are checked, and torch's comparisons are asked a question
  whose answer is known. Anything replaced fails the test, with a message naming it;
- the test ends with a receipt (a display output that execute.py removes): its verdict, the hash of
  the source that ran, and a signature with a key that only this seal and execute.py hold. A test
  that did not run through the genuine seal (an input transformer rewrote it, `run` was replaced)
  has no valid receipt, and execute.py fails it and flags the notebook. The verdict "check failed"
  (whose message feedback shows) is given only to a CheckFailed that the course's code raised with
  no code of the notebook's on the way: a message the student's code composed, or handed to the
  course's helpers to fail with, is the student's output, and its test just "failed";
- on a GPU grader, the seal asks CUDA's driver after each test whether the process's context is
  lost (an illegal address, a device-side assert): then the test fails with the verdict "device
  fault", whose message says what to look for, and none of the checks that would need the GPU run;
- on a GPU grader, Triton's mode is pinned to the GPU: a notebook that sets TRITON_INTERPRET (a
  laptop's habit) still runs its kernels on the GPU it is graded on.

Code in the notebook's process can still reach all of this (gc, frames, ctypes): it cannot do it by
rebinding a name, and what it replaces is found and flagged, so a person looks at it.
"""
import builtins
import contextlib
import json
import os
import re
import sys
from _hashlib import hmac_digest, openssl_sha256
from ast import Expr, Interactive, PyCF_ONLY_AST
from ctypes import CDLL, byref, c_char_p
import linecache
from types import FunctionType, ModuleType

# Everything the installed seal uses is taken now, when this module is imported (before any student
# code runs), not looked up later in modules a notebook could change.

RECEIPT = "application/vnd.course.receipt+json"  # the mimetype of receipts, removed by execute.py
DEVICE_FAULT = "device fault"  # the verdict on a test after which the process cannot use its GPU
# The CUDA errors after which the process's context "cannot be used, so it must be destroyed" (CUDA's
# CUresult): an illegal or misaligned address, a device-side assert, an illegal instruction, a
# launch that failed or timed out. Every later call on the GPU fails with the same error.
STICKY_CUDA_ERRORS = frozenset({700, 702, 710, 714, 715, 716, 717, 718, 719})
# Names IPython puts in the namespace (history, outputs, helpers): not the kit's.
IPYTHON_NAMES = re.compile(r"_+|_i+|_i?\d+|_[iod]h|In|Out|exit|quit|get_ipython|_exit_code")


def signed(key, nonce, verdict, source_hash, problems):
    """The signature of a receipt: execute.py checks it with the key it gave this seal."""
    text = f"{nonce}|{verdict}|{source_hash}|{'; '.join(problems)}"
    return hmac_digest(key, text.encode(), "sha256").hex()


def source_hash(source):
    return openssl_sha256(source.encode()).hexdigest()


def run(nonce, source, name):
    """Replaced by `install`; a test that reaches this one ran without the seal."""
    raise RuntimeError("the grader's seal was not installed: this test cannot be graded")


def install(settings_path):
    """Seal the kit the setup cell defined; from now on `run` runs tests with it. Reads (and deletes)
    the grader's settings: the receipts' key and the mode the grader ran the notebook in."""
    with open(settings_path) as handle:
        settings = json.load(handle)
    os.unlink(settings_path)
    # This module's own functions, rebound to a private copy of its globals: a notebook that
    # replaces one of them here (autograder.grade.seal.signed, ...) does not reach the installed seal.
    own = {}
    own.update({name: _rebound(value, own, globals()) for name, value in globals().items()})
    own["__builtins__"] = dict(vars(builtins))
    own["_Checks"] = type("_Checks", (), {name: _rebound(value, own, globals())
                                          for name, value in vars(_Checks).items() if name != "__dict__"})
    own["_install"](bytes.fromhex(settings["key"]), settings["mode"])


def _install(key, mode):
    from IPython import get_ipython
    from IPython.display import publish_display_data

    shell = get_ipython()
    namespace = shell.user_ns
    sealed = {}
    for name, value in namespace.items():
        if name not in shell.user_ns_hidden and not IPYTHON_NAMES.fullmatch(name):
            sealed[name] = _rebound(value, sealed, namespace)
    sealed["__builtins__"] = dict(vars(builtins))
    sealed["_GRADED_IN"] = mode  # the kit's performance checks compare their mode with the grader's
    course = dict(sealed)  # what the course defined: the kit, then its cells' definitions
    # The globals of the course's cells: course over the notebook's names (see _refresh). Named as the
    # notebook is: a function or a @triton.jit helper a course cell defines takes its __module__ from
    # here, and Triton's compiler reads the __module__ of every global a kernel names (None failed it).
    scope = {"__name__": namespace.get("__name__", "__main__")}
    checks = _Checks(sealed, course, scope)
    problems = checks()
    if mode == "cuda" and sealed.get("MODE") == "cuda":
        _pin_to_the_gpu()

    def receipt(nonce, verdict, digest, found):
        publish_display_data({RECEIPT: {"nonce": nonce, "verdict": verdict, "source": digest,
                                        "problems": found, "mac": signed(key, nonce, verdict, digest, found)}})

    receipt("install", sealed.get("MODE", "unknown"), "", problems)
    device_fault = _device_fault_probe() if mode == "cuda" and sealed.get("MODE") == "cuda" else lambda: None
    sys.modules[__name__].run = _runner(namespace, sealed, course, scope, checks, receipt, device_fault)


def _device_fault_probe():
    """A function naming the error that broke this process's CUDA context, else returning None. It
    asks CUDA's driver, not torch, whose functions a notebook can replace."""
    try:
        driver = CDLL("libcuda.so.1")
    except OSError:
        return lambda: None
    synchronize, error_name, error_text = driver.cuCtxSynchronize, driver.cuGetErrorName, driver.cuGetErrorString

    def device_fault():
        code = synchronize()
        if code not in STICKY_CUDA_ERRORS:
            return None
        name, text = c_char_p(), c_char_p()
        error_name(code, byref(name))
        error_text(code, byref(text))
        return f"{name.value.decode()}: {text.value.decode()}"
    return device_fault


def _device_fault_message(fault, before):
    when = "had already stopped working when this test began" if before else "stopped working during this test"
    return (f"The GPU {when} ({fault}): a kernel read or wrote outside the memory of its tensors (or "
            "failed a device-side assert), and this process cannot use the GPU again. Are all of the "
            "kernel's loads and stores masked, and do the offsets it computes, from indices it loaded "
            "too, stay inside their tensors? The tests after this one are graded in a fresh kernel.")


def _pin_to_the_gpu():
    """Triton decides at each @triton.jit whether the kernel is interpreted, from TRITON_INTERPRET;
    its knob, once set, outranks the environment. A Triton without knobs reads the environment only."""
    import triton
    with contextlib.suppress(AttributeError):
        triton.knobs.runtime.interpret = False


def _refresh(scope, course, namespace):
    """The course's scope as the notebook stands now: the student's names (answers the course's code
    calls), then the course's over them. A student's name that is a builtin's is left out: the
    course's code always finds Python's own print, len or isinstance."""
    for name in [name for name in scope if name not in course and name not in namespace]:
        del scope[name]
    scope.update((name, value) for name, value in namespace.items()
                 if name not in course and name not in BUILTIN_NAMES)
    scope.update(course)


def _runner(namespace, sealed, course, scope, checks, receipt, device_fault):
    started, runs = set(), {}
    kit_names = {name for name, value in sealed.items() if isinstance(value, (FunctionType, type, ModuleType))}
    own = (scope, sealed)  # the globals of the course's code

    def fail_if_the_gpu_broke(nonce, source, before):
        __tracebackhide__ = True
        fault = device_fault()
        if fault:
            receipt(nonce, DEVICE_FAULT, source_hash(source), [])
            raise sealed["CheckFailed"](_device_fault_message(fault, before)) from None

    def run(nonce, source, name):
        __tracebackhide__ = True  # IPython leaves this frame out of tracebacks
        fail_if_the_gpu_broke(nonce, source, before=True)  # in an earlier cell: no check can run on it
        problems = checks()
        if nonce in started:
            problems.append("the test was started a second time")
        started.add(nonce)
        runs[name] = runs.get(name, 0) + 1  # each run its own file name: a kernel's source is read from it later
        _refresh(scope, course, namespace)
        before = dict(scope)
        error = None
        try:
            _execute(source, f"<test {name}>" if runs[name] == 1 else f"<test {name}, run {runs[name]}>", scope)
        except BaseException as raised:  # a failed check, the student's own error, KeyboardInterrupt
            error = raised
        # The test's kernels broke the GPU: the checks below would fail on it, and this process is done
        # with (execute.py grades the rest in a fresh kernel).
        fail_if_the_gpu_broke(nonce, source, before=False)
        problems += [f"{name} was rebound in the test's namespace" for name in kit_names
                     if scope.get(name) is not sealed[name]]
        _keep_bindings(scope, before, course, namespace, sealed, kit_names)
        problems += checks()
        problems = list(dict.fromkeys(problems))  # found before the test and again after it: once
        _refresh(scope, course, namespace)
        verdict = "tampered" if problems else "passed" if error is None else \
            "check failed" if _raised_by_the_course(error, sealed["CheckFailed"], own) else "failed"
        receipt(nonce, verdict, source_hash(source), problems)
        if problems:
            raise sealed["CheckFailed"](
                f"This test cannot trust its checks: {'; '.join(problems)}, after the setup cell ran. "
                "The test fails, and a person will look at the notebook.") from None
        if error is not None:
            raise error
    return run


def _raised_by_the_course(error, check_failed, own):
    """Whether the course's own code failed the test: a CheckFailed (the course's class: a class the
    student named CheckFailed is not it) raised by code whose globals are the course's, called by
    the course's code, with no code of the notebook's between the test and the raise (an answer that
    raises it, or hands a message of its own to a course helper, is not the course failing)."""
    if not isinstance(error, check_failed):
        return False
    frames, tb = [], error.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    test = next((i for i, frame in enumerate(frames) if frame.f_code.co_filename.startswith("<test ")), None)
    return test is not None and all(_is_course_or_library(frame, own) for frame in frames[test:])


def _is_course_or_library(frame, own):
    """The course's code (its globals are the course's scope or the sealed kit), or an installed
    module's own code (the library a check calls through: contextlib, triton.testing): the module's
    globals, and the code from the module's file. A notebook's code runs in the notebook's
    namespace, or in a dict it made, and comes from its cells, even when it borrows a module's
    globals."""
    globals_ = frame.f_globals
    if any(globals_ is mine for mine in own):
        return True
    module = sys.modules.get(globals_.get("__name__", ""))
    return module is not None and module.__name__ != "__main__" and vars(module) is globals_ \
        and frame.f_code.co_filename == getattr(module, "__file__", None)


def _execute(source, filename, into):
    """Run a test cell's source as IPython would: statements, then its last expression displayed."""
    # Where tracebacks, and @triton.jit (which reads a kernel's source), find the cell's lines: the
    # module's own cache (a module is not copied into the seal's globals, as a dict would be).
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    tree = compile(source, filename, "exec", PyCF_ONLY_AST)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], Expr) else None
    exec(compile(tree, filename, "exec"), into)
    if last is not None:
        exec(compile(Interactive([last]), filename, "single"), into)


def _keep_bindings(scope, before, course, namespace, sealed, kit_names):
    """What the cell bound or deleted goes to the student's namespace, as if the cell had run there
    (never a sealed object of the kit's); its definitions (functions, classes, modules, kernels:
    what later cells call) and constants (is_constant) are the course's from now on, the kit's own
    names excepted (a cell that rebinds one has already failed). Its other data (the tensors a test
    made) stays the student's only, so that the course holds no memory that the notebook frees."""
    missing = object()
    for name, value in scope.items():
        if before.get(name, missing) is value or name in kit_names:
            continue
        if sealed.get(name, missing) is not value:
            namespace[name] = value
        if _is_definition(value) or is_constant(value):
            course[name] = value
    for name in before.keys() - scope.keys():
        course.pop(name, None)
        namespace.pop(name, None)


def _is_definition(value):
    """A function, class, module or Triton kernel (a jitted function, an autotuner), not data."""
    return callable(value) or isinstance(value, ModuleType) or hasattr(value, "run")


CONSTANT_TYPES = frozenset({type(None), bool, int, float, complex, str, bytes})


def is_constant(value):
    """A number, a string, None, or a tuple or frozenset of them: data that cannot change in place and
    holds no memory worth freeing, which the course keeps like a definition (a tolerance, a hint's
    text). The build lets the course's code read no other data across cells (RequireKeptData in
    autograder/generate/source.py), judging a cell's literals by this same rule."""
    if type(value) in (tuple, frozenset):
        return all(is_constant(item) for item in value)
    return type(value) in CONSTANT_TYPES


# Builtins that IPython and ipykernel set again for every cell: the last result, and input() (sent
# to the frontend of the request being run); and what Python caches on a class the first time one
# of its objects is copied or pickled (copyreg's __slotnames__: torch.compile copies Triton kernels).
RESET_PER_CELL = {"_", "input", "raw_input", "__slotnames__"}
BUILTIN_NAMES = frozenset(vars(builtins))


def _watched(owner, name):
    """Whether a change of owner.name counts. Modules: their public names (private ones change as
    torch loads itself lazily); builtins and classes: every name but those set again for every cell."""
    if isinstance(owner, ModuleType) and owner is not builtins:
        return not name.startswith("_")
    return name not in RESET_PER_CELL


_CONTEXTMANAGER_CODE = contextlib.contextmanager(lambda: (yield)).__code__


def _rebound(value, into, home):
    """`value` for the sealed copy: a function defined in `home` (the namespace it was copied from)
    rebound to `into`, so that it looks up its helpers there; a container copied, and what it holds
    rebound the same way, at every depth (a set inside one of the kit's dicts, changed through the
    notebook's copy, would change the sealed kit too); else itself."""
    if isinstance(value, FunctionType):
        wrapped = getattr(value, "__wrapped__", None)
        if value.__code__ is _CONTEXTMANAGER_CODE and isinstance(wrapped, FunctionType):
            return contextlib.contextmanager(_rebound(wrapped, into, home))
        if value.__globals__ is not home:
            return value
        copy = FunctionType(value.__code__, into, value.__name__, value.__defaults__, value.__closure__)
        copy.__kwdefaults__ = value.__kwdefaults__
        copy.__dict__.update(value.__dict__)
        copy.__qualname__, copy.__doc__ = value.__qualname__, value.__doc__
        return copy
    if type(value) is dict:
        return {key: _rebound(item, into, home) for key, item in value.items()}
    if type(value) in (list, set, tuple):
        return type(value)(_rebound(item, into, home) for item in value)
    return value


class _Checks:
    """What the tests rely on, as it was when the seal was made; calling it lists what changed."""

    def __init__(self, sealed, course, scope):
        import math
        import time

        import numpy
        import torch
        import triton
        import triton.testing
        from triton.runtime.jit import JITFunction

        self.torch = torch
        watched = {"torch": torch, "torch.Tensor": torch.Tensor, "torch.cuda": torch.cuda,
                   "torch.testing": torch.testing, "torch.nn.functional": torch.nn.functional,
                   "numpy": numpy, "numpy.testing": numpy.testing, "math": math, "time": time,
                   "builtins": builtins, "triton": triton, "triton.testing": triton.testing,
                   "JITFunction": JITFunction}
        with contextlib.suppress(ImportError):
            from triton.runtime.interpreter import InterpretedFunction
            watched["InterpretedFunction"] = InterpretedFunction
        watched.update({name: value for name, value in sealed.items()
                        if isinstance(value, type) and value.__module__ == "__main__"})  # the kit's classes
        self.snapshot = {label: (owner, dict(vars(owner))) for label, owner in watched.items()}
        # torch._dynamo, when something first imports it, wraps a few torch functions (manual_seed)
        # in torch._disable_dynamo: a wrapper that calls the very same function is no replacement.
        self.dynamo_wrapper = torch._disable_dynamo(lambda: None).__code__
        self.sealed, self.sealed_snapshot = sealed, dict(sealed)
        self.course, self.scope = course, scope
        self.gettrace, self.getprofile = sys.gettrace, sys.getprofile
        self.hooks = (sys.gettrace(), sys.getprofile())
        self.modes = (torch._C._len_torch_function_stack, torch._C._len_torch_dispatch_stack)
        self.device = sealed.get("DEVICE", "cpu")
        self.isclose, self.equal = torch.isclose, torch.equal

    def __call__(self):
        problems = []
        for label, (owner, was) in self.snapshot.items():
            now = vars(owner)
            for name, value in was.items():
                if not self._same(now.get(name), value) and _watched(owner, name):
                    problems.append(f"{label}.{name} was replaced")
            if isinstance(owner, type):  # a new attribute of a class hides an inherited one
                problems += [f"{label}.{name} was added" for name in now.keys() - was.keys()
                             if _watched(owner, name)]
        problems += [f"the kit's {name} was changed" for name, value in self.sealed_snapshot.items()
                     if self.sealed.get(name) is not value]
        problems += [f"the course's {name} was changed in the tests' namespace" for name, value in self.course.items()
                     if name in self.scope and self.scope[name] is not value]
        if any(depth() for depth in self.modes):
            problems.append("a torch function or dispatch mode was left active")
        if (self.gettrace(), self.getprofile()) != self.hooks:
            problems.append("a trace or profile function was set (sys.settrace, sys.setprofile)")
        if not problems and not self._comparisons_answer():
            problems.append("torch's comparisons give wrong answers (its dispatcher was changed?)")
        return problems

    def _same(self, now, was):
        return now is was or (getattr(now, "__code__", None) is self.dynamo_wrapper
                              and getattr(now, "__wrapped__", None) is was)

    def _comparisons_answer(self):
        """torch.isclose and torch.equal, asked about a pair that differs in exactly one element."""
        torch = self.torch
        a = torch.arange(1.0, 9.0, device=self.device)
        b = a.clone()
        b[3] = 0.5
        close = self.isclose(a, b)
        return (not bool(close.all()) and int((~close).sum()) == 1 and not bool(close[3])
                and self.equal(a, a.clone()) and not self.equal(a, b))

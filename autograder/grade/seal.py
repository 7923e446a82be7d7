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
- execute.py sends each test cell as `run(nonce, source, name)`. The test runs in a globals dict of
  its own: the student's names, overlaid with the sealed kit. What the test defines is copied back
  to the student's namespace afterwards, as if the cell had run there;
- before and after the test, the snapshot is compared with what is there now, torch's function and
  dispatch modes and Python's trace hooks are checked, and torch's comparisons are asked a question
  whose answer is known. Anything replaced fails the test, with a message naming it;
- the test ends with a receipt (a display output that execute.py removes): its verdict, the hash of
  the source that ran, and a signature with a key that only this seal and execute.py hold. A test
  that did not run through the genuine seal (an input transformer rewrote it, `run` was replaced)
  has no valid receipt, and execute.py fails it and flags the notebook.

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
from linecache import cache as line_cache
from types import FunctionType, ModuleType

# Everything the installed seal uses is taken now, when this module is imported (before any student
# code runs), not looked up later in modules a notebook could change.

RECEIPT = "application/vnd.course.receipt+json"  # the mimetype of receipts, removed by execute.py
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
    checks = _Checks(sealed)
    problems = checks()

    def receipt(nonce, verdict, digest, found):
        publish_display_data({RECEIPT: {"nonce": nonce, "verdict": verdict, "source": digest,
                                        "problems": found, "mac": signed(key, nonce, verdict, digest, found)}})

    receipt("install", sealed.get("MODE", "unknown"), "", problems)
    sys.modules[__name__].run = _runner(namespace, sealed, checks, receipt)


def _runner(namespace, sealed, checks, receipt):
    started = set()
    tests = {}  # the globals of test cells: functions a test defines keep it as theirs
    api = [name for name, value in sealed.items() if isinstance(value, (FunctionType, type, ModuleType))]

    def run(nonce, source, name):
        __tracebackhide__ = True  # IPython leaves this frame out of tracebacks
        problems = checks()
        if nonce in started:
            problems.append("the test was started a second time")
        started.add(nonce)
        tests.clear()
        tests.update(namespace)
        tests.update(sealed)
        before = dict(tests)
        error = None
        try:
            _execute(source, name, tests)
        except BaseException as raised:  # a failed check, the student's own error, KeyboardInterrupt
            error = raised
        _copy_back(tests, before, namespace, sealed)
        problems += checks() + [f"{name} was rebound in the test's namespace" for name in api
                                if tests.get(name) is not sealed[name]]
        problems = list(dict.fromkeys(problems))  # found before the test and again after it: once
        tests.clear()
        tests.update(sealed)  # nothing of the student's kept alive between tests
        # Whether the course's own check raised the error, told apart by the class itself: a class the
        # student named CheckFailed is not it. Feedback shows the message of the course's errors only.
        verdict = "tampered" if problems else "passed" if error is None else \
            "check failed" if isinstance(error, sealed["CheckFailed"]) else "failed"
        receipt(nonce, verdict, source_hash(source), problems)
        if problems:
            raise sealed["CheckFailed"](
                f"This test cannot trust its checks: {'; '.join(problems)}, after the setup cell ran. "
                "The test fails, and a person will look at the notebook.") from None
        if error is not None:
            raise error
    return run


def _execute(source, name, into):
    """Run a test cell's source as IPython would: statements, then its last expression displayed."""
    filename = f"<test {name}>"
    line_cache[filename] = (len(source), None, source.splitlines(True), filename)  # for tracebacks
    tree = compile(source, filename, "exec", PyCF_ONLY_AST)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], Expr) else None
    exec(compile(tree, filename, "exec"), into)
    if last is not None:
        exec(compile(Interactive([last]), filename, "single"), into)


def _copy_back(tests, before, namespace, sealed):
    """What the test bound or deleted, into the student's namespace; never a sealed object."""
    missing = object()
    for name, value in tests.items():
        if sealed.get(name, missing) is value:
            continue
        if before.get(name, missing) is not value:
            namespace[name] = value
    for name in before.keys() - tests.keys():
        namespace.pop(name, None)


# Builtins that IPython and ipykernel set again for every cell: the last result, and input() (sent
# to the frontend of the request being run); and what Python caches on a class the first time one
# of its objects is copied or pickled (copyreg's __slotnames__: torch.compile copies Triton kernels).
RESET_PER_CELL = {"_", "input", "raw_input", "__slotnames__"}


def _watched(owner, name):
    """Whether a change of owner.name counts. Modules: their public names (private ones change as
    torch loads itself lazily); builtins and classes: every name but those set again for every cell."""
    if isinstance(owner, ModuleType) and owner is not builtins:
        return not name.startswith("_")
    return name not in RESET_PER_CELL


_CONTEXTMANAGER_CODE = contextlib.contextmanager(lambda: (yield)).__code__


def _rebound(value, into, home):
    """`value` for the sealed copy: a function defined in `home` (the namespace it was copied from)
    rebound to `into`, so that it looks up its helpers there; a container copied; else itself."""
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
    if type(value) in (dict, list, set):
        return type(value)(value)
    return value


class _Checks:
    """What the tests rely on, as it was when the seal was made; calling it lists what changed."""

    def __init__(self, sealed):
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

"""What tests cannot catch, flagged for a person: edited test cells and suspicious answer code.

`tampering` compares the student's notebook with the release the student was given (not with
source/, whose test cells hold hidden tests and so always differ: jupyter/nbgrader#1961); nbgrader
restores those cells for grading, and the flag says it happened. `audit` reads the code the
student wrote (answer cells and any cell they added) and names each line that reaches around the
tests: monkeypatching, IPython hooks, redirected stderr, files, network, processes, exits, a torch
expression where a kernel should run, or a look at the grader's environment (NBGRADER_EXECUTION,
COURSE_GPU_TURN).
"""
import ast
import contextlib
import re

GUARDED_MODULES = {"torch", "triton", "tl", "np", "numpy", "math", "builtins", "sys", "os", "IPython",
                   "unittest", "pytest", "warnings", "functools"}
KIT_CHECKS = {"check_output", "expect_launched", "count_launches", "call_answer", "guarded_empty",
              "guarded_allocations", "rand", "check_bandwidth", "CheckFailed", "bench_ms", "copy_bandwidth"}
HOOKS = {"input_transformers_cleanup", "input_transformers_post", "ast_transformers", "showtraceback", "_showtraceback",
         "showsyntaxerror", "set_custom_exc", "excepthook", "settrace", "setprofile", "register_magic_function",
         "events", "displayhook", "run_cell", "CustomTB"}
CALLS = {
    "open": "opens a file", "exec": "runs generated code (exec)", "eval": "runs generated code (eval)",
    "__import__": "imports by name", "setattr": None, "exit": "exits the kernel", "quit": "exits the kernel",
    "get_ipython": "uses the IPython shell object",
    "globals": "reaches names through globals()", "vars": "reaches names through vars()",
}
# IPython's input history and the interpreter's frames and source cache hold the hidden tests that ran.
HISTORY = {"In": "reads IPython's input history (In)", "Out": "reads IPython's output history (Out)",
           "_ih": "reads IPython's input history (_ih)", "_oh": "reads IPython's output history (_oh)",
           "_i": "reads IPython's input history (_i)", "_ii": "reads IPython's input history (_ii)",
           "linecache": "reads the source cache (linecache)"}
MODULE_CALLS = {
    "os": {"system": "runs a shell command", "popen": "runs a shell command", "fork": "forks processes",
           "_exit": "exits the kernel", "kill": "sends signals", "remove": "deletes files",
           "unlink": "deletes files", "listdir": "lists folders", "walk": "lists folders",
           "scandir": "lists folders", "chdir": "changes folder", "rename": "renames files"},
    "sys": {"exit": "exits the kernel", "settrace": "installs a tracer", "setprofile": "installs a profiler",
            "_getframe": "inspects the caller's frames"},
    "shutil": {"*": "copies or deletes files"}, "subprocess": {"*": "runs processes"},
    "socket": {"*": "uses the network"}, "urllib": {"*": "uses the network"}, "requests": {"*": "uses the network"},
    "http": {"*": "uses the network"}, "ctypes": {"*": "calls C directly (ctypes)"},
    "contextlib": {"redirect_stderr": "redirects stderr", "redirect_stdout": "redirects stdout"},
    "multiprocessing": {"*": "starts processes"}, "threading": {"*": "starts threads"},
    "torch": {"set_per_process_memory_fraction": "changes its share of GPU memory"},
}
SUSPECT_IMPORTS = {"subprocess", "socket", "urllib", "requests", "http", "ctypes", "shutil", "multiprocessing",
                   "pickle", "importlib", "inspect", "gc", "nbgrader", "IPython", "linecache", "traceback"}
TORCH_COMPUTE = {"add", "sub", "mul", "div", "softmax", "log_softmax", "sum", "mean", "exp", "maximum",
                 "minimum", "where", "matmul", "mm", "bmm", "relu", "sigmoid", "tanh", "layer_norm",
                 "clone", "copy_", "addmm", "einsum", "transpose", "t", "amax", "max", "cumsum"}
COMPARATORS = {"__eq__", "__ne__", "__bool__", "__lt__", "__le__", "__gt__", "__ge__", "__float__"}


def _root(node):
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _is_launch(node):
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)


def _is_jit(function):
    return any("jit" in _dotted(d.func if isinstance(d, ast.Call) else d) for d in function.decorator_list)


class _Auditor(ast.NodeVisitor):
    def __init__(self, wrappers=()):
        self.wrappers = set(wrappers)  # the functions the lesson means to launch a kernel
        self.found = []  # (line, what)
        self.guarded = set(GUARDED_MODULES)  # and the names they are imported as (import torch as T)

    def flag(self, node, what):
        self.found.append((node.lineno, what))

    def visit_Import(self, node):
        for alias in node.names:
            if alias.name.split(".")[0] in SUSPECT_IMPORTS:
                self.flag(node, f"imports {alias.name}")
            if alias.name.split(".")[0] in GUARDED_MODULES and alias.asname:
                self.guarded.add(alias.asname)
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        if (node.module or "").split(".")[0] in SUSPECT_IMPORTS:
            self.flag(node, f"imports from {node.module}")
        if (node.module or "").split(".")[0] in GUARDED_MODULES:  # from torch import Tensor
            self.guarded |= {alias.asname or alias.name for alias in node.names}
        self.generic_visit(node)

    def _assigned(self, target, node):
        if isinstance(target, (ast.Attribute, ast.Subscript)) and _root(target) in self.guarded:
            self.flag(node, f"assigns {_dotted(target) or _root(target)} (monkeypatching)")
        elif isinstance(target, ast.Attribute) and target.attr in HOOKS:
            self.flag(node, f"replaces {target.attr} (an IPython or interpreter hook)")
        elif isinstance(target, ast.Name) and target.id in KIT_CHECKS:
            self.flag(node, f"redefines the course's {target.id}")
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._assigned(element, node)

    def visit_Assign(self, node):
        for target in node.targets:
            self._assigned(target, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._assigned(node.target, node)
        self.generic_visit(node)

    def visit_FunctionDef(self, node):
        if node.name in KIT_CHECKS:
            self.flag(node, f"redefines the course's {node.name}")
        if node.name in COMPARATORS:
            self.flag(node, f"defines {node.name} (an object that compares equal to anything?)")
        if node.name in self.wrappers:
            self._torch_fallback(node, launches=any(_is_launch(n) for n in ast.walk(node)))
        self.generic_visit(node)

    def _torch_fallback(self, function, launches=False):
        params = {a.arg for a in function.args.args}
        for node in ast.walk(function):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.BinOp) \
                    and isinstance(node.value.left, ast.Name) and isinstance(node.value.right, ast.Name) \
                    and {node.value.left.id, node.value.right.id} <= params:
                self.flag(node, f"{function.name} returns a torch expression of its inputs"
                                + (", not what its kernel wrote" if launches else " and launches no kernel")
                                + " (torch fallback?)")
            elif not launches and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in TORCH_COMPUTE and _root(node.func) in {"torch", "F"} | params:
                self.flag(node, f"{function.name} computes with {_dotted(node.func) or node.func.attr} "
                                "and launches no kernel (torch fallback?)")

    def visit_Call(self, node):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name in CALLS:
            if name == "setattr" and node.args and _root(node.args[0]) in self.guarded:
                self.flag(node, f"setattr on {_dotted(node.args[0])} (monkeypatching)")
            elif CALLS[name]:
                self.flag(node, CALLS[name])
        if isinstance(node.func, ast.Attribute):
            module = _root(node.func)
            if module in MODULE_CALLS:
                table = MODULE_CALLS[module]
                what = table.get(node.func.attr) or table.get("*")
                if what:
                    self.flag(node, f"{what} ({_dotted(node.func)})")
        self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in HISTORY:
            self.flag(node, HISTORY[node.id])
        self.generic_visit(node)

    def visit_Attribute(self, node):
        if node.attr == "modules" and _root(node) == "sys":
            self.flag(node, "reaches modules through sys.modules")
        self.generic_visit(node)

    def visit_Constant(self, node):
        # The grader's environment: nbgrader's, and the GPU turn socket only the grader sets.
        found = isinstance(node.value, str) and re.search(r"NBGRADER\w*|COURSE_GPU\w*", node.value)
        if found:
            self.flag(node, f"reads {found.group()} (behaves differently when graded?)")


def _python(source):
    """Cell source as Python: IPython magics and shell escapes become flags, not syntax errors."""
    lines, escapes = [], []
    for number, line in enumerate(source.splitlines(), 1):
        if re.match(r"\s*[!%]", line):
            escapes.append((number, f"uses an IPython escape ({line.strip()[:30]})"))
            lines.append("")
        else:
            lines.append(line)
    return "\n".join(lines), escapes


def _meta(cell):
    """A cell's nbgrader metadata; {} when it is missing or damaged ("nbgrader": null)."""
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta if isinstance(meta, dict) else {}


def grade_id(cell):
    """A cell's nbgrader grade_id, or None (no metadata, or damaged metadata)."""
    return _meta(cell).get("grade_id")


def _cells_by_id(nb):
    return {grade_id(cell): cell for cell in nb.cells if grade_id(cell)}


def _normalise(source):
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def tampering(submitted, release):
    """Read-only and test cells the student changed, deleted or retyped (nbgrader restores them)."""
    flags, theirs = [], _cells_by_id(submitted)
    ids = [grade_id(cell) for cell in submitted.cells if grade_id(cell)]
    flags += [f"cell {i!r} appears {ids.count(i)} times" for i in sorted(set(ids)) if ids.count(i) > 1]
    for name, cell in _cells_by_id(release).items():
        meta = cell.metadata["nbgrader"]
        if meta.get("solution") or not (meta.get("locked") or meta.get("grade")):
            continue
        mine = theirs.get(name)
        if mine is None:
            flags.append(f"deleted the read-only cell {name!r} (restored for grading)")
        elif mine.cell_type != cell.cell_type:
            flags.append(f"changed cell {name!r} from {cell.cell_type} to {mine.cell_type} (restored)")
        elif _normalise(mine.source) != _normalise(cell.source):
            flags.append(f"edited the read-only cell {name!r} (restored for grading)")
    return flags


def kernel_wrappers(source):
    """The functions whose reference answer (in the source notebook) launches a Triton kernel: only
    these are expected not to compute with torch (arithmetic_intensity may well return a / b)."""
    names = set()
    for cell in source.cells:
        if cell.cell_type == "code" and _meta(cell).get("solution"):
            with contextlib.suppress(SyntaxError):
                names |= {node.name for node in ast.walk(ast.parse(_python(cell.source)[0]))
                          if isinstance(node, ast.FunctionDef) and not _is_jit(node)
                          and any(_is_launch(n) for n in ast.walk(node))}
    return names


def audit(submitted, release, wrappers=()):
    """Lines of the student's own code that a person should look at; `wrappers` as kernel_wrappers()."""
    locked = {name for name, cell in _cells_by_id(release).items()
              if not cell.metadata["nbgrader"].get("solution")}
    released = {cell.get("id"): _normalise(cell.source) for cell in release.cells if cell.get("id")}
    flags = []
    for index, cell in enumerate(submitted.cells, 1):
        name = grade_id(cell)
        if cell.cell_type != "code" or name in locked:
            continue
        if not name and released.get(cell.get("id")) == _normalise(cell.source):
            continue  # the course's own code, as released (a demo cell, an eager reference)
        where = f"cell {name!r}" if name else \
            f"cell {index}" + (" (edited by the student)" if cell.get("id") in released else " (added by the student)")
        code, found = _python(cell.source)
        try:
            auditor = _Auditor(wrappers)
            auditor.visit(ast.parse(code))
            found += auditor.found
        except SyntaxError:
            continue  # it fails when run, and the tests say so
        flags += [f"{where}, line {line}: {what}" for line, what in sorted(set(found))]
    return flags

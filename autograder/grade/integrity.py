"""What tests cannot catch, flagged for a person: edited test cells and code outside the course's language.

`tampering` compares the student's notebook with the release the student was given (not with
source/, whose test cells hold hidden tests and so always differ: jupyter/nbgrader#1961); nbgrader
restores those cells for grading, and the flag says it happened.

`audit` reads the code the student wrote (answer cells, cells they edited, cells they added) against
an allowlist. The tests run in the student's process, so code there can reach around them; but the
answers of this course are a small language, and whatever lies outside it is flagged, with its line
and a plain reason. The line between honest and flagged:

Honest (never flagged):
- imports of torch, triton, triton.language, numpy, math, matplotlib, time, statistics and a few
  pure helpers of the standard library (MODULES); of os only the environment variables that choose
  or debug Triton's mode (ENVIRONMENT) and cpu_count; of sys only its version and its streams;
  a module the grading environment does not have (its import fails when run, and the tests say so);
- @triton.jit kernels (Triton's language is public attributes of triton.language: all allowed);
- functions that validate inputs, allocate outputs, launch kernels (`kernel[grid](...)`) and return;
  constants, loops, comprehensions, f-strings, type hints, docstrings, asserts, raises, prints,
  plots; small classes (a timer, a torch.autograd.Function) with the everyday dunder methods;
- calling the course's helpers (rand, check_output, bench_ms, ...), public torch, triton and numpy
  functions, and methods of the student's own objects and tensors;
- in IPython: %timeit and %time (the code they run is audited like any other line), %%timeit and
  %%time cells (their body likewise), %matplotlib, %env for the variables above, `name?`, and
  `!nvidia-smi`;
- lines copied unchanged from the release's own unlocked cells (a demo cell the student edited or
  copied): they are the course's code, not the student's.
Flagged (no exercise needs it, and each can change what the tests see):
- Python's internals: dunder attributes and names (__globals__, __dict__, __class__, __builtins__,
  __setattr__, ...), frames and tracebacks (sys._getframe, f_globals, tb_frame), module objects
  (sys.modules, __main__, importlib, builtins, torch.sys), classes built by type(name, bases, dict),
  metaclasses, dunder methods beyond the everyday ones (__eq__, __torch_function__, ...);
- names reached indirectly: getattr/setattr/delattr with a computed name (or handed on to be called
  elsewhere), globals(), vars(), locals(), exec, eval, compile, IPython's input and output history;
- the private parts and back doors of the course's packages (any `_name`, torch.ops, torch.library,
  torch.overrides, torch.utils.cpp_extension), and subclasses of their classes (torch.Tensor);
- changing what the tests use: assigning or deleting attributes of modules or of their classes
  (torch.allclose = ..., torch.Tensor.all = ..., np.testing.assert_allclose = ...), rebinding or
  mutating a name the setup cell defines (check_output, rand, FLOAT_DTYPES, ...), changing torch's
  defaults or settings (set_default_dtype, torch.backends), replacing IPython's or the interpreter's
  hooks, caching results (functools.cache);
- the world outside the notebook: files, folders, the network, processes, signals, threads, exits,
  the rest of the environment, and any mention of the grader's own variables (NBGRADER_*,
  COURSE_GPU_*); other IPython magics and shell commands, and get_ipython() itself;
- in a function whose reference answer launches a kernel, a torch computation in its place
  ("torch fallback?").
Cells that are not valid Python (once IPython's syntax is turned into Python) are not audited:
they fail when run, and the tests say so. What the audit does not judge: the methods of objects
(tensors, arrays, figures) and the public functions of the allowed packages, beyond the back doors
named in REACHES: what they do is for the tests' own checks to catch when the notebook runs.
"""
import ast
import builtins
import contextlib
import functools
import importlib.util
import re
import sys

from autograder.grade.seal import is_constant  # what grading keeps for the course: one rule for both


# The course's language: the modules answers import, and which of their attributes they use
# (None: every public one). A module that is not here is flagged where it is imported.
MODULES = {
    "torch": None, "triton": None, "numpy": None, "math": None, "matplotlib": None, "time": None,
    "statistics": None, "random": None, "typing": None, "itertools": None, "collections": None,
    "dataclasses": None, "operator": None, "numbers": None, "enum": None, "__future__": None,
    "functools": {"partial", "reduce", "wraps"},
    "contextlib": {"contextmanager", "suppress", "nullcontext"},
    "warnings": {"warn", "filterwarnings", "simplefilter", "catch_warnings"},
    "os": {"environ", "getenv", "cpu_count"},
    "sys": {"version", "version_info", "platform", "maxsize", "float_info", "stdout", "stderr"},
}
# The environment variables an answer may read or set: Triton's interpreter on a laptop, and debugging.
ENVIRONMENT = {"TRITON_INTERPRET", "TRITON_DEBUG", "TRITON_PRINT_AUTOTUNING", "CUDA_LAUNCH_BLOCKING"}
# The grader's own variables: reading them can only serve to behave differently when graded.
GRADER_VARIABLES = re.compile(r"NBGRADER\w*|COURSE_GPU\w*")
# Public parts of those modules that still reach around the tests or out of the notebook (a dotted
# path or its prefix), and why.
REACHES = {
    "torch.ops": "calls torch's operators directly", "torch.library": "defines or replaces torch operators",
    "torch.overrides": "intercepts torch functions", "torch.utils.cpp_extension": "compiles C++ into the notebook",
    "torch.hub": "downloads code", "torch.multiprocessing": "starts processes", "torch.distributed": "uses the network",
    "torch.load": "reads a file", "torch.save": "writes a file", "torch.from_file": "reads a file",
    "torch.cuda.set_per_process_memory_fraction": "changes its share of GPU memory",
    "torch.cuda.memory.set_per_process_memory_fraction": "changes its share of GPU memory",
    "torch.set_default_dtype": "changes torch's defaults, for the tests too",
    "torch.set_default_device": "changes torch's defaults, for the tests too",
    "torch.set_default_tensor_type": "changes torch's defaults, for the tests too",
    "numpy.load": "reads a file", "numpy.save": "writes a file", "numpy.savez": "writes a file",
    "numpy.savez_compressed": "writes a file", "numpy.savetxt": "writes a file", "numpy.loadtxt": "reads a file",
    "numpy.genfromtxt": "reads a file", "numpy.fromfile": "reads a file", "numpy.memmap": "maps a file",
    "numpy.ctypeslib": "calls C directly (ctypes)", "numpy.fromregex": "reads a file",
    "numpy.DataSource": "opens files and addresses", "numpy.lib.format": "reads and writes files",
    "numpy.lib.npyio": "reads and writes files",
    "typing.get_type_hints": "evaluates strings as code",
    "operator.attrgetter": "reads attributes by name", "operator.methodcaller": "calls methods by name",
    "functools.cache": "caches results (a timed call must do its work)",
    "functools.lru_cache": "caches results (a timed call must do its work)",
    "contextlib.redirect_stderr": "redirects stderr", "contextlib.redirect_stdout": "redirects stdout",
    "os.system": "runs a shell command", "os.popen": "runs a shell command", "os.fork": "forks processes",
    "os._exit": "exits the kernel", "os.kill": "sends signals", "os.killpg": "sends signals",
    "os.remove": "deletes files", "os.unlink": "deletes files", "os.listdir": "lists folders",
    "os.walk": "lists folders", "os.scandir": "lists folders", "os.chdir": "changes folder",
    "os.rename": "renames files",
    "sys.exit": "exits the kernel", "sys.settrace": "installs a tracer", "sys.setprofile": "installs a profiler",
    "sys._getframe": "inspects the caller's frames", "sys.modules": "reaches every loaded module",
}
# Modules that packages carry as attributes (torch.sys, matplotlib.subprocess): another way in.
FOREIGN_MODULES = {"os", "sys", "builtins", "importlib", "inspect", "ctypes", "subprocess", "shutil", "threading",
                   "multiprocessing", "gc", "io", "pathlib", "types", "socket", "signal", "traceback",
                   "linecache", "pickle", "glob", "tempfile", "atexit", "code", "runpy", "marshal"}
PACKAGE_SUBMODULES = {"torch.signal", "torch.types"}  # torch's own, named like the standard library's
# Why a module outside MODULES is flagged, where a plain reason helps.
IMPORTS = {
    "subprocess": "runs processes", "multiprocessing": "starts processes", "concurrent": "starts threads or processes",
    "threading": "starts threads", "signal": "sends or catches signals", "socket": "uses the network",
    "urllib": "uses the network", "requests": "uses the network", "http": "uses the network",
    "ctypes": "calls C directly", "shutil": "copies or deletes files", "pathlib": "reads and writes files",
    "glob": "lists files", "tempfile": "makes files", "io": "makes file-like streams",
    "pickle": "runs code while loading data", "importlib": "imports modules by name",
    "builtins": "reaches Python's built-in names, which every test uses",
    "__main__": "reaches the notebook's own namespace, where the tests find the course's helpers",
    "inspect": "inspects frames and source", "traceback": "reads tracebacks, which hold the tests' frames",
    "linecache": "reads the source cache, which holds the hidden tests", "gc": "reaches every live object",
    "types": "builds functions and modules by hand", "code": "runs code", "runpy": "runs code",
    "IPython": "reaches the IPython shell", "nbgrader": "reaches the grader", "atexit": "runs code at exit",
}
# Built-in names an answer uses (and every exception class); other built-ins are flagged.
BUILTINS = {
    "abs", "all", "any", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr", "classmethod",
    "complex", "dict", "dir", "divmod", "enumerate", "filter", "float", "format", "frozenset", "getattr",
    "hasattr", "hash", "help", "hex", "id", "int", "isinstance", "issubclass", "iter", "len", "list", "map",
    "max", "min", "next", "object", "oct", "ord", "pow", "print", "property", "range", "repr", "reversed",
    "round", "set", "setattr", "delattr", "slice", "sorted", "staticmethod", "str", "sum", "super", "tuple",
    "type", "zip", "Ellipsis", "NotImplemented",
}
# Allowed where they are called (their arguments are audited) or named (isinstance(x, type), hints), not
# handed on to call them elsewhere: g = getattr; g(x, "__globals__").
CALLED_ONLY = {"getattr", "setattr", "delattr", "type"}
NAMES = {
    "open": "opens a file", "exec": "runs generated code (exec)", "eval": "runs generated code (eval)",
    "compile": "compiles generated code (compile)", "__import__": "imports by name (__import__)",
    "globals": "reaches names through globals()", "vars": "reaches names through vars()",
    "locals": "reaches names through locals()", "exit": "exits the kernel", "quit": "exits the kernel",
    "breakpoint": "stops in a debugger", "input": "waits for keyboard input, which a grader never types",
    "get_ipython": "uses the IPython shell object",
}
# IPython's input and output history: it holds the hidden tests that ran before.
HISTORY = {"In": "input", "_ih": "input", "_i": "input", "_ii": "input", "_iii": "input",
           "Out": "output", "_oh": "output", "_": "output", "__": "output", "___": "output", "_dh": "folder"}
NUMBERED_HISTORY = re.compile(r"_i?\d+")
SAFE_DUNDERS = {"__name__", "__doc__", "__qualname__", "__version__"}
DUNDER_METHODS = {"__init__", "__repr__", "__str__", "__call__", "__len__", "__getitem__", "__setitem__",
                  "__contains__", "__iter__", "__next__", "__enter__", "__exit__", "__post_init__"}
COMPARATORS = {"__eq__", "__ne__", "__bool__", "__lt__", "__le__", "__gt__", "__ge__", "__float__"}
DUNDER_DEFINITIONS = {
    "__torch_function__": "intercepts torch functions", "__torch_dispatch__": "intercepts torch's operators",
    "__array_function__": "intercepts numpy functions", "__array_ufunc__": "intercepts numpy functions",
    "__getattr__": "makes up attributes", "__getattribute__": "intercepts every attribute",
    "__del__": "runs code when objects are freed",
}
FRAME_ATTRIBUTES = {"f_globals", "f_locals", "f_builtins", "f_back", "f_code", "f_trace", "tb_frame", "tb_next",
                    "gi_frame", "cr_frame", "ag_frame", "gi_code", "cr_code", "co_code", "co_consts", "co_names"}
SAFE_PRIVATE = {"_replace", "_asdict", "_fields", "_make"}  # a namedtuple's public methods
BASES = {"torch.autograd.Function", "torch.nn.Module", "typing.NamedTuple", "enum.Enum"}
MUTATORS = {"append", "extend", "insert", "remove", "pop", "popitem", "clear", "update", "setdefault", "add",
            "discard", "sort", "reverse"}
HOOKS = {"input_transformers_cleanup", "input_transformers_post", "ast_transformers", "showtraceback", "_showtraceback",
         "showsyntaxerror", "set_custom_exc", "excepthook", "settrace", "setprofile", "register_magic_function",
         "events", "displayhook", "run_cell", "CustomTB"}
TIMING_MAGICS = {"timeit", "time"}
TIMEIT_OPTIONS = re.compile(r"(\s*-(?:[nrp]\s*\d+|[tcqo]+)(?=\s))*\s*")
SHELL_COMMANDS = re.compile(r"nvidia-smi(\s+[\w.=,-]+)*")
TORCH_COMPUTE = {"add", "sub", "mul", "div", "softmax", "log_softmax", "sum", "mean", "exp", "maximum",
                 "minimum", "where", "matmul", "mm", "bmm", "relu", "sigmoid", "tanh", "layer_norm",
                 "clone", "copy_", "addmm", "einsum", "transpose", "t", "amax", "max", "cumsum",
                 # what 05-06 (layer norm, matmul) invite
                 "linear", "var", "var_mean", "std", "rms_norm", "sqrt", "rsqrt", "pow", "norm", "dot",
                 "mv", "addmv", "baddbmm", "tensordot", "scaled_dot_product_attention"}


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


def _is_dunder(name):
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _is_launch(node):
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)


def _is_jit(function):
    return any("jit" in _dotted(d.func if isinstance(d, ast.Call) else d) for d in function.decorator_list)


def _is_exception(name):
    value = getattr(builtins, name, None)
    return isinstance(value, type) and issubclass(value, BaseException)


def _handed_on(node):
    """Whether a name's value is passed, stored or returned (not called, not merely named)."""
    parent = node.parent
    if isinstance(parent, ast.Call):
        return node in parent.args and _root(parent.func) not in ("isinstance", "issubclass")
    return isinstance(parent, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.keyword, ast.Return,
                               ast.Starred, ast.Tuple, ast.List, ast.Set, ast.Dict, ast.Lambda, ast.IfExp,
                               ast.BoolOp, ast.Yield)) and getattr(parent, "annotation", None) is not node


def _text(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _bindings(nodes):
    """The names these statements bind in their own scope (not inside the functions and classes they define)."""
    names, stack = set(), list(nodes)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {alias.asname or alias.name.split(".")[0] for alias in node.names if alias.name != "*"}
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        stack.extend(ast.iter_child_nodes(node))
    return names


def _declared_global(node):
    return {name for child in ast.walk(node) if isinstance(child, ast.Global) for name in child.names}


def _python_tree(code):
    try:
        return ast.parse(code)
    except (RecursionError, ValueError) as error:  # too deeply nested, or null bytes: Python cannot run it either
        raise SyntaxError(str(error)) from error


@functools.lru_cache(maxsize=1024)  # a class's notebooks share most cells (the setup cell is 700 lines)
def _parse(source, offset=0):
    """The syntax tree of the Python that IPython runs for a cell, its line numbers the cell's (plus
    offset), and the cell's lines that were IPython's own syntax: %magics, !commands, `name?`.
    Shared between calls: read it, never change it."""
    try:
        tree, escapes = _python_tree(source), set()  # plain Python: IPython runs it as it is
    except SyntaxError:
        lines = source.splitlines()
        skipped = next((number for number, line in enumerate(lines) if line.strip()), len(lines))
        # Imported here: execute.py runs in every sandbox and needs only grade_id from this module.
        from IPython.core.inputtransformer2 import TransformerManager
        try:
            code = TransformerManager().transform_cell(source)  # it drops leading blank lines
        except Exception as error:  # IPython cannot read it either
            raise SyntaxError(f"IPython cannot read it: {error}") from error
        tree = _python_tree(code)
        ast.increment_lineno(tree, skipped)
        escapes = {number for number, (before, after) in enumerate(zip(lines[skipped:], code.splitlines()), skipped + 1)
                   if before.strip() != after.strip()}
    if offset:
        ast.increment_lineno(tree, offset)
    return tree, frozenset(line + offset for line in escapes)


def _installed(module):
    """Whether the grading environment has this top-level module (an import of one it lacks just fails)."""
    if module in sys.modules or module in sys.builtin_module_names:
        return True
    with contextlib.suppress(ImportError, ValueError):
        return importlib.util.find_spec(module) is not None
    return False


def _definitions(statements):
    """{name: the module it is, or None} for what these top-level statements define for later cells:
    functions, classes, imports and assignments (not loop variables or `except ... as` names, which are
    passing)."""
    names = {}
    for node in statements:
        if isinstance(node, ast.Import):
            names |= {alias.asname or alias.name.split(".")[0]: alias.name if alias.asname else alias.name.split(".")[0]
                      for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names |= {alias.asname or alias.name: f"{node.module}.{alias.name}" if node.module and not node.level
                      else None for alias in node.names if alias.name != "*"}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign,
                               ast.AugAssign)):
            names |= dict.fromkeys(_bindings([node]))
        else:
            handlers = [statement for handler in getattr(node, "handlers", []) for statement in handler.body]
            names |= _definitions([child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt)]
                                  + handlers)
    return names


class _Scope:
    """A function, lambda, comprehension or class body: the names it binds, and the modules among them."""

    def __init__(self, local, declared_global=()):
        self.local, self.declared_global, self.aliases = set(local), set(declared_global), {}


class _Auditor(ast.NodeVisitor):
    """Reads the student's cells of one notebook, in order; `audit` returns (line, reason) for each thing
    in one cell that lies outside the course's language."""

    def __init__(self, kit, bound, modules, wrappers=()):
        self.kit = kit  # {name: module path, or None}: what the setup cell defines
        self.bound = bound  # the names the notebook's cells bind at their top level (they may shadow built-ins)
        self.wrappers = set(wrappers)  # the functions the lesson means to launch a kernel
        self.aliases = dict(modules)  # name -> module path, for the modules the notebook's cells import
        self.scopes = []  # the functions, lambdas, comprehensions and classes around the node being read
        self.escapes = set()  # the cell's lines that were IPython's syntax: their get_ipython() calls are magics
        self.found = []

    def audit(self, tree, escapes):
        """(line, reason) for each thing in one cell's code (as _parse gives it) outside the language."""
        self.found, self.escapes = [], set()
        self._visit(tree, escapes)
        return self.found

    def _visit(self, tree, escapes):
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                child.parent = node
        self.escapes |= escapes
        self.visit(tree)

    def flag(self, node, what):
        self.found.append((node.lineno, what))

    # Names and scopes.

    def _local(self, name):
        return any(name in scope.local for scope in self.scopes)

    def _at_top(self, name):
        """Whether binding `name` here binds it in the notebook's namespace (where the tests look)."""
        return not self.scopes or name in self.scopes[-1].declared_global

    def _module(self, name):
        """The module that `name` stands for where it is read, or None."""
        for scope in reversed(self.scopes):
            if name in scope.local:
                return scope.aliases.get(name)
        return self.aliases.get(name)

    def _bind(self, node, name, module=None):
        """`name` bound here, to `module` (a dotted path) or to anything else."""
        top = self._at_top(name)
        if top and name in self.kit and (module is None or self.kit[name] != module):
            self.flag(node, f"redefines the course's {name}, which the tests use (give yours another name)")
        aliases = self.aliases if top else self.scopes[-1].aliases
        if module:
            aliases[name] = module
        else:
            aliases.pop(name, None)

    def _scoped(self, node, scope):
        self.scopes.append(scope)
        self.generic_visit(node)
        self.scopes.pop()

    def _path(self, node):
        """`T.cuda.synchronize` -> "torch.cuda.synchronize", through the names modules go by; None when
        node is not an attribute of a module."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        module = self._module(node.id) if isinstance(node, ast.Name) else None
        return ".".join([module, *reversed(parts)]) if module else None

    # What lies outside the language, and why.

    def _reach(self, path):
        """Why a module's dotted path is outside the language, or None."""
        parts = path.split(".")
        if parts[0] not in MODULES:
            return IMPORTS.get(parts[0], "a module this course's answers never need")
        for end in range(2, len(parts) + 1):
            prefix = ".".join(parts[:end])
            if prefix in REACHES:
                return REACHES[prefix]
            part = parts[end - 1]
            if _is_dunder(part):
                if part not in SAFE_DUNDERS:
                    return f"uses {part}, one of Python's internals"
            elif part.startswith("_"):
                return f"reaches a private part of {parts[0]}"
            if part in FOREIGN_MODULES and prefix not in PACKAGE_SUBMODULES:
                return f"reaches the {part} module through {'.'.join(parts[:end - 1])}"
        allowed = MODULES[parts[0]]
        if allowed is not None and len(parts) > 1 and parts[1] not in allowed:
            return f"uses a part of {parts[0]} that this course's answers never need"
        return None

    def _attribute(self, node):
        """Why an attribute of an object (not of a module) is outside the language, or None."""
        attr = node.attr
        if _is_dunder(attr):
            if attr in SAFE_DUNDERS or (attr == "__init__" and isinstance(node.value, ast.Call)
                                        and _root(node.value) == "super"):
                return None
            return f"uses {attr}, one of Python's internals"
        if attr in FRAME_ATTRIBUTES:
            return "reaches into a frame, which holds the tests' names"
        if attr.startswith("_") and attr not in SAFE_PRIVATE and _root(node) not in ("self", "cls"):
            return "reaches a private attribute"
        return None

    def _name(self, node):
        """Why reading a name that the notebook does not bind is outside the language, or None."""
        name = node.id
        if name in HISTORY or NUMBERED_HISTORY.fullmatch(name):
            kind = HISTORY.get(name) or ("input" if name.startswith("_i") else "output")
            return f"reads IPython's {kind} history ({name})"
        if name in NAMES:
            return NAMES[name]
        if _is_dunder(name):
            return None if name in SAFE_DUNDERS else f"uses {name}, one of Python's internals"
        if name in CALLED_ONLY and _handed_on(node):
            return f"hands {name} on to be called elsewhere (which hides what it is called with)"
        if hasattr(builtins, name) and name not in BUILTINS and not _is_exception(name):
            return f"uses the built-in {name}, which this course's answers never need"
        return None

    def _variable(self, node, key):
        """An environment variable read or set: only Triton's own."""
        name = _text(key)
        if name is None:
            self.flag(node, "uses an environment variable whose name is computed")
        elif GRADER_VARIABLES.search(name):
            self._grader_variable(node, name)
        elif name not in ENVIRONMENT:
            self.flag(node, f"uses the environment variable {name} (answers may use only "
                            f"{', '.join(sorted(ENVIRONMENT))})")

    def _grader_variable(self, node, text):
        found = GRADER_VARIABLES.search(text)
        if found:
            self.flag(node, f"reads {found.group()} (behaves differently when graded?)")

    def _environment(self, node):
        """os.environ, reached as `node`: one named variable at a time, or flagged."""
        parent = node.parent
        if isinstance(parent, ast.Subscript) and parent.value is node:
            return self._variable(node, parent.slice)
        if isinstance(parent, ast.Attribute) and parent.attr in ("get", "setdefault", "pop") \
                and isinstance(parent.parent, ast.Call) and parent.parent.func is parent and parent.parent.args:
            return self._variable(node, parent.parent.args[0])
        if isinstance(parent, ast.Compare) and node in parent.comparators \
                and all(isinstance(op, (ast.In, ast.NotIn)) for op in parent.ops):
            return self._variable(node, parent.left)
        self.flag(node, f"reads the whole environment ({_dotted(node) or 'os.environ'})")

    def _assigned(self, target, node, verb="assigns"):
        """An attribute or item assigned or deleted: of a module, a hook, or the course's own objects."""
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._assigned(element, node, verb)
            return
        if isinstance(target, ast.Starred):
            return self._assigned(target.value, node, verb)
        if not isinstance(target, (ast.Attribute, ast.Subscript)):
            return  # a plain name: visit_Name judges it
        root, written = _root(target), ast.unparse(target)[:60]
        if isinstance(target, ast.Attribute) and target.attr in HOOKS:
            self.flag(node, f"replaces {target.attr} (an IPython or interpreter hook)")
        elif isinstance(target, ast.Subscript) and self._path(target.value) == "os.environ":
            return  # one variable: _environment judges its name
        elif (self._path(target) or "").startswith("torch.backends."):
            self.flag(node, f"{verb} {written} (changes torch's settings, for the tests too)")
        elif self._module(root):
            self.flag(node, f"{verb} {written} (monkeypatching)")
        elif root in self.kit and not self._local(root):
            self.flag(node, f"changes the course's {root}")
        elif root == "type" and not self._local(root):
            self.flag(node, f"{verb} an attribute of a class (monkeypatching)")

    # IPython's syntax, as TransformerManager turns it into calls of get_ipython().

    def _magic(self, node):
        """Audit the code a %magic, %%magic or !command runs; False when node is not one."""
        func = node.func
        if not (node.lineno in self.escapes and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call)
                and _root(func.value) == "get_ipython" and node.args and all(_text(a) is not None for a in node.args)):
            return False
        args = [a.value for a in node.args]
        if func.attr == "run_line_magic" and len(args) == 2:
            self._line_magic(node, *args)
        elif func.attr == "run_cell_magic" and len(args) == 3:
            name, line, body = args
            if name in TIMING_MAGICS:
                self._runs(node, f"%%{name}", TIMEIT_OPTIONS.sub("", line, count=1))  # %%timeit's setup line
                self._runs(node, f"%%{name}", body, offset=node.lineno)
            else:
                self.flag(node, f"runs the cell through the IPython magic %%{name}, whose code the audit cannot read")
        elif func.attr in ("system", "getoutput") and len(args) == 1:
            if not SHELL_COMMANDS.fullmatch(args[0].strip()):
                self.flag(node, f"runs a shell command (!{args[0].strip()[:40]})")
        else:
            return False
        return True

    def _line_magic(self, node, name, line):
        if name in TIMING_MAGICS:
            self._runs(node, f"%{name}", TIMEIT_OPTIONS.sub("", line, count=1))
        elif re.search(r"[{$]", line):  # IPython expands {expression} and $name in other magics' lines
            self.flag(node, f"runs code in the line of %{name} ({{...}} or $name, which IPython evaluates)")
        elif name in ("pinfo", "pinfo2"):  # `name?` looks the object up: an expression like any other
            self._runs(node, "?", line)
        elif name == "env":
            variable = re.split(r"[\s=]", line.strip(), maxsplit=1)[0]
            if variable:
                self._variable(node, ast.Constant(variable))
            else:
                self.flag(node, "reads the whole environment (%env)")
        elif name != "matplotlib":
            self.flag(node, f"uses the IPython magic %{name}, whose code the audit cannot read")

    def _runs(self, node, magic, code, offset=None):
        """Audit code that a magic runs, as lines of the cell around it."""
        if not code.strip():
            return
        try:
            self._visit(*_parse(code, node.lineno - 1 if offset is None else offset))
        except SyntaxError:
            self.flag(node, f"runs code through {magic} that is not Python the audit can read")

    # The visitor.

    def visit_Import(self, node):
        for alias in node.names:
            top = alias.name.split(".")[0]
            if not (top in MODULES or _installed(top)):  # the import fails when run
                self._bind(node, alias.asname or top)
                continue
            why = self._reach(alias.name)
            if why:
                self.flag(node, f"imports {alias.name} ({why})")
            self._bind(node, alias.asname or top, alias.name if alias.asname else top)

    def visit_ImportFrom(self, node):
        module = node.module or ""
        if node.level or not (module.split(".")[0] in MODULES or _installed(module.split(".")[0])):
            return  # relative, or a module the grading environment lacks: the import fails when run
        for alias in node.names:
            if alias.name == "*":
                self.flag(node, f"imports every name of {module} (import *)")
                continue
            why = self._reach(f"{module}.{alias.name}")
            if why:
                self.flag(node, f"imports {module}.{alias.name} ({why})")
            self._bind(node, alias.asname or alias.name, f"{module}.{alias.name}")

    def visit_Name(self, node):
        if not isinstance(node.ctx, ast.Load):
            self._bind(node, node.id)
        elif node.id in self.kit and node.id.startswith("_") and not self._local(node.id):
            self.flag(node, f"reaches the course's private {node.id}")
        elif self._module(node.id) == "os.environ":
            self._environment(node)
        elif not (node.id in self.bound or self._local(node.id)):
            why = self._name(node)
            if why:
                self.flag(node, why)

    def visit_Attribute(self, node):
        path = self._path(node)
        if path == "os.environ":
            self._environment(node)
        if path and isinstance(node.parent, ast.Attribute):
            why = None  # a link of a longer path (torch.ops in torch.ops.aten.add): the whole path is judged
        else:
            why = self._reach(path) if path else self._attribute(node)
        if why:
            self.flag(node, f"{why} ({_dotted(node) or node.attr})")
        self.generic_visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, str):  # the grader's variables, by any route
            self._grader_variable(node, node.value)

    def visit_Assign(self, node):
        for target in node.targets:
            self._assigned(target, node)
        self.generic_visit(node)
        path = self._path(node.value)
        if path and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self._bind(node, node.targets[0].id, path)  # T = torch: T is torch from here on

    def visit_AugAssign(self, node):
        self._assigned(node.target, node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        self._assigned(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node):
        for target in node.targets:
            self._assigned(target, node, "deletes")
        self.generic_visit(node)

    def visit_ExceptHandler(self, node):
        if node.name:
            self._bind(node, node.name)
        self.generic_visit(node)

    def visit_Call(self, node):
        if self._magic(node):
            return
        func = node.func
        name = func.id if isinstance(func, ast.Name) and not (func.id in self.bound or self._local(func.id)) else None
        if name in ("getattr", "setattr", "delattr") and len(node.args) >= 2:
            self._by_name(node, name)
        elif name == "type" and len(node.args) == 3:
            self.flag(node, "builds a class with type(name, bases, namespace)")
        elif isinstance(func, ast.Attribute) and func.attr in MUTATORS and isinstance(func.value, ast.Name) \
                and func.value.id in self.kit and self.kit[func.value.id] is None and not self._local(func.value.id):
            self.flag(node, f"changes the course's {func.value.id}")
        elif self._path(func) == "os.getenv" and node.args:
            self._variable(node, node.args[0])
        self.generic_visit(node)

    def _by_name(self, node, name):
        """getattr(x, "name") is x.name (and setattr an assignment); with a computed name, flagged."""
        attribute = _text(node.args[1])
        if attribute is None:
            verb = {"getattr": "reads", "setattr": "sets", "delattr": "deletes"}[name]
            return self.flag(node, f"{verb} an attribute whose name is computed ({name})")
        stand_in = ast.copy_location(ast.Attribute(node.args[0], attribute, ast.Load()), node)
        stand_in.parent = node
        if name != "getattr":
            self._assigned(stand_in, node, "assigns" if name == "setattr" else "deletes")
        why = self._reach(self._path(stand_in)) if self._path(stand_in) else self._attribute(stand_in)
        if why:
            self.flag(node, f"{why} ({_dotted(stand_in) or attribute})")

    def visit_FunctionDef(self, node):
        self._bind(node, node.name)
        if node.name in COMPARATORS:
            self.flag(node, f"defines {node.name} (an object that compares equal to anything?)")
        elif _is_dunder(node.name) and node.name not in DUNDER_METHODS:
            self.flag(node, f"defines {node.name} "
                            f"({DUNDER_DEFINITIONS.get(node.name, 'changes how Python treats its objects')})")
        if node.name in self.wrappers and not self.scopes:
            self._torch_fallback(node, launches=any(_is_launch(n) for n in ast.walk(node)))
        arguments = node.args
        params = {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}
        params |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a}
        declared = _declared_global(node)
        self._scoped(node, _Scope((params | _bindings(node.body)) - declared, declared))

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        arguments = node.args
        params = {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}
        self._scoped(node, _Scope(params | {a.arg for a in (arguments.vararg, arguments.kwarg) if a}))

    def _comprehension(self, node):
        self._scoped(node, _Scope(_bindings(g.target for g in node.generators)))

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_ClassDef(self, node):
        self._bind(node, node.name)
        for base in node.bases:
            path = self._path(base)
            if not isinstance(base, (ast.Name, ast.Attribute)):
                self.flag(node, "subclasses a class computed at run time")
            elif path and path not in BASES:
                self.flag(node, f"subclasses {_dotted(base)}, which this course's answers never do")
        for keyword in node.keywords:
            self.flag(node, f"sets the class's {keyword.arg} (how Python builds it)")
        self._scoped(node, _Scope(_bindings(node.body)))

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
                    and node.func.attr in TORCH_COMPUTE \
                    and ((self._path(node.func) or "").startswith("torch.") or _root(node.func) in params):
                self.flag(node, f"{function.name} computes with {_dotted(node.func) or node.func.attr} "
                                "and launches no kernel (torch fallback?)")


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


def _kit(release):
    """{name: the module it is, or None} for what the course defines that tests rely on: everything the
    release's setup cell defines (the kit, and the modules it uses), and the functions and classes of
    the lesson's read-only cells (its own checks and references, 06's check_product). The tests reach
    them through the seal, whatever a notebook binds; a student's definition of one is flagged."""
    kit = {}
    for cell in release.cells:
        if cell.cell_type != "code" or _meta(cell).get("solution") or not _meta(cell).get("locked"):
            continue
        with contextlib.suppress(SyntaxError):
            statements = _parse(cell.source)[0].body
            if grade_id(cell) == "setup":  # the kit, placed and named by the build
                kit |= _definitions(statements)
            else:
                kit |= dict.fromkeys(node.name for node in statements if isinstance(
                    node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))
    return kit


def cell_names(source):
    """(the names a cell binds at its top level, the names it reads that it binds nowhere: what it
    takes from other cells), for the build's check that tests rely on no name a student can change
    (autograder/generate/source.py)."""
    tree = _parse(source)[0]
    nodes = list(ast.walk(tree))
    read = {node.id for node in nodes if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    anywhere = _bindings(nodes) | {node.arg for node in nodes if isinstance(node, ast.arg)}
    return _bindings(tree.body), read - anywhere


def module_data(source):
    """How a cell uses its module's names, for the build's check that the course reads no data the
    grader leaves to the student (autograder/generate/source.py): ({name: whether it is a literal
    constant} for each name the cell's top level binds to data, {name: the names it reads from the
    module when it is called} for each name it defines (functions, classes, imports: what grading
    keeps for the course))."""
    data, defined = {}, {}
    for statement in _parse(source)[0].body:
        names = _bindings([statement])
        definition = isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or (
            isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Lambda))
        if definition or isinstance(statement, (ast.Import, ast.ImportFrom)):
            reads = _read_when_called(statement) if definition else set()
            defined.update(dict.fromkeys(names, reads))
            for name in names:
                data.pop(name, None)
            continue
        literal = isinstance(statement, ast.Assign) and all(isinstance(t, ast.Name) for t in statement.targets) \
            and _is_literal(statement.value)
        for name in names:
            data[name] = literal
            defined.pop(name, None)
    return data, defined


def _read_when_called(definition):
    """The names the functions of a definition read from their module (at call time): the names they
    load that no function around the load binds."""
    functions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
    read = set()

    def visit(node, local):
        if isinstance(node, functions):
            inside = list(ast.walk(node))
            local = local | (_bindings(inside[1:]) | {n.arg for n in inside if isinstance(n, ast.arg)}) \
                - _declared_global(node)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in local:
            read.add(node.id)
        for child in ast.iter_child_nodes(node):
            visit(child, local)
    visit(definition, frozenset())
    return read


def _is_literal(node):
    """A literal whose value grading keeps for the course (seal.is_constant): a number, a string, a
    tuple of them; not a list or a dict, which stay the student's to rebind and change."""
    try:
        return is_constant(ast.literal_eval(node))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False


def interpreter_note(submitted):
    """What to tell a student whose own cells choose Triton's interpreter (a laptop's habit), when the
    notebook is graded on a GPU: the seal keeps its kernels there (seal.py), full marks."""
    cells = [grade_id(cell) or f"cell {index}" for index, cell in enumerate(submitted.cells, 1)
             if cell.cell_type == "code" and not _meta(cell).get("locked") and "TRITON_INTERPRET" in cell.source]
    if cells:
        return (f"Your notebook sets TRITON_INTERPRET ({', '.join(cells[:3])}), which runs kernels on Triton's "
                "interpreter on a machine without a GPU. It was graded on a GPU: the setting was ignored there, "
                "and your kernels ran on the GPU.")
    return None


def kernel_wrappers(source):
    """The functions whose reference answer (in the source notebook) launches a Triton kernel: only
    these are expected not to compute with torch (arithmetic_intensity may well return a / b)."""
    names = set()
    for cell in source.cells:
        if cell.cell_type == "code" and _meta(cell).get("solution"):
            with contextlib.suppress(SyntaxError):
                names |= {node.name for node in ast.walk(_parse(cell.source)[0])
                          if isinstance(node, ast.FunctionDef) and not _is_jit(node)
                          and any(_is_launch(n) for n in ast.walk(node))}
    return names


def audit(submitted, release, wrappers=()):
    """Lines of the student's own code outside the course's language; `wrappers` as kernel_wrappers()."""
    locked = {name for name, cell in _cells_by_id(release).items()
              if not cell.metadata["nbgrader"].get("solution")}
    released = {cell.get("id"): _normalise(cell.source) for cell in release.cells if cell.get("id")}
    course_lines = {line.strip() for cell in release.cells if cell.cell_type == "code" and not _meta(cell).get("locked")
                    for line in cell.source.splitlines()}
    parsed = {}
    for index, cell in enumerate(submitted.cells, 1):
        if cell.cell_type == "code":
            with contextlib.suppress(SyntaxError):  # it fails when run, and the tests say so
                parsed[index] = _parse(cell.source)
    kit, bound, modules = _kit(release), set(), {}
    for tree, _ in parsed.values():  # the notebook's names, whichever order its cells run in
        bound |= _bindings(tree.body) | _declared_global(tree)
        modules |= {name: module for name, module in _definitions(tree.body).items() if module}
    auditor, flags = _Auditor(kit, bound, {**modules, **{n: m for n, m in kit.items() if m}}, wrappers), []
    for index, (tree, escapes) in parsed.items():
        cell, name = submitted.cells[index - 1], grade_id(submitted.cells[index - 1])
        if name in locked or (not name and released.get(cell.get("id")) == _normalise(cell.source)):
            continue  # the course's own code, as released (or restored for grading: `tampering` says so)
        where = f"cell {name!r}" if name else \
            f"cell {index}" + (" (edited by the student)" if cell.get("id") in released else " (added by the student)")
        try:
            found = auditor.audit(tree, escapes)
        except RecursionError:
            found = [(1, "is nested too deeply for the audit to read")]
        lines = cell.source.splitlines()
        found = {(line, what) for line, what in found  # lines copied from the course's own cells are not flagged
                 if not (0 < line <= len(lines) and lines[line - 1].strip() in course_lines)}
        flags += [f"{where}, line {line}: {what}" for line, what in sorted(found)]
    return flags

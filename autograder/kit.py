# @title Course setup: run this cell first { display-mode: "form" }
# This cell is the same in every lesson. It picks where kernels run (a CUDA GPU, or Triton's
# interpreter on the CPU when there is none) and defines the helpers the tests use to explain
# what went wrong. You do not need to read it to do the exercises.
import contextlib
import dataclasses
import math
import os
import sys
import time
import types

import numpy as np
import torch


def _pick_mode():
    # TRITON_INTERPRET must be set before any @triton.jit runs, so this comes before `import triton`.
    if os.environ.get("TRITON_INTERPRET") == "1":
        return "interpreter"
    if torch.cuda.is_available():
        return "cuda"
    os.environ["TRITON_INTERPRET"] = "1"
    return "interpreter"


MODE = _pick_mode()
ON_GPU = MODE == "cuda"
DEVICE = torch.device("cuda" if ON_GPU else "cpu")
# What the course's grader tells a notebook it grades (its GPU's turn socket, this notebook's share of
# GPU memory), read once and taken out of the environment: the code after this cell sees the same
# environment graded or not. Elsewhere it is empty.
_GRADER = {name: os.environ.pop(name) for name in ("COURSE_GPU_TURN", "COURSE_GPU_MEMORY_GB") if name in os.environ}
if ON_GPU and "COURSE_GPU_MEMORY_GB" in _GRADER:
    # Under the course's grader many notebooks share a GPU: each may allocate its share and no more,
    # so that none runs out of memory because of another.
    torch.cuda.set_per_process_memory_fraction(min(1.0, float(_GRADER["COURSE_GPU_MEMORY_GB"]) * 2**30
                                                   / torch.cuda.get_device_properties(0).total_memory))
try:
    import triton
    import triton.language as tl
except ImportError as error:  # a laptop without Triton (Windows, macOS)
    raise ImportError(
        "Triton is not installed. On Linux or Colab run `pip install triton`; on Windows or macOS "
        "use Colab (Runtime > Change runtime type > T4 GPU) or a Linux machine."
    ) from error

# bf16 needs compute capability 8.0 (Ampere) or newer; the interpreter cannot do it at all.
CAPABILITY = torch.cuda.get_device_capability() if ON_GPU else None
BF16_OK = ON_GPU and CAPABILITY >= (8, 0)
FLOAT_DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if BF16_OK else [])


def dot_dtypes(capability, interpreter=False):
    """The input dtypes that tl.dot runs reliably with on this device, and a sentence saying why.
    Recent Triton releases use tensor cores (MMA) only from compute capability 8.0 (Ampere) on; below
    it (a T4 is 7.5) tl.dot falls back to plain multiply-adds, checked by the course in fp32 only."""
    if interpreter:
        return [torch.float32, torch.float16], (
            "tl.dot under Triton's interpreter: NumPy computes it in IEEE fp32 (fp16 inputs too; no bf16).")
    where = f"compute capability {capability[0]}.{capability[1]}"
    if capability >= (8, 0):
        return [torch.float32, torch.float16, torch.bfloat16], (
            f"tl.dot on {where}: tensor cores for fp16 and bf16 inputs, and TF32 for fp32 inputs.")
    return [torch.float32], (
        f"tl.dot on {where} (a T4 is 7.5): recent Triton has no tensor-core path below 8.0 (it officially "
        "supports 8.0 and up); fp16 and bf16 tl.dot compile here as plain multiply-adds on values converted "
        "to fp32, a path the course has not checked on this GPU. This notebook uses fp32 inputs "
        "for tl.dot on this GPU (exact fp32, no TF32, and slow: performance tests are advisory). To try fp16 "
        "as well, use Triton's interpreter: Runtime > Change runtime type > CPU, or run "
        "`%env TRITON_INTERPRET=1` before the setup cell after restarting.")


DOT_DTYPES, DOT_NOTE = dot_dtypes(CAPABILITY, interpreter=not ON_GPU)


def sized(gpu, cpu):
    """A problem size the current mode can afford: the interpreter runs one program at a time."""
    return gpu if ON_GPU else cpu


def doctor():
    """One line on where kernels run, then the versions a bug report needs."""
    if ON_GPU:
        name = torch.cuda.get_device_name()
        print(f"Mode: CUDA on {name} (compute capability {CAPABILITY[0]}.{CAPABILITY[1]}).")
    elif torch.cuda.is_available():
        print("Mode: Triton's interpreter (TRITON_INTERPRET=1 was set by you): kernels run on the CPU.")
    else:
        print("Mode: Triton's interpreter (no CUDA GPU found): kernels run on the CPU, one program at a time.\n"
              "Sizes are small here, and timings say nothing about GPUs.")
    print(f"torch {torch.__version__}, triton {triton.__version__}, numpy {np.__version__}, "
          f"bf16 {'supported' if BF16_OK else 'not supported here'}")


# ---------------------------------------------------------------------------------------------
# Checks that teach. Each failure names what went wrong, where, and the likely mistake.

class CheckFailed(AssertionError):
    """A test found a wrong answer; the message says what to look at."""


# Captured now, so that later redefinitions in a notebook cannot change how answers are compared.
_isclose, _equal, _nonzero = torch.isclose, torch.equal, torch.nonzero
_empty = torch.empty


def _fail(message):
    __tracebackhide__ = True
    raise CheckFailed(message) from None  # the message says it all; no chained traceback


def _show_failed_checks_briefly():
    """In a notebook a failed check prints one line, its message, not a traceback through the
    test's helpers. It is still an error: the cell fails and the grader sees it. Other errors (in
    your own code) keep their full traceback: that is where you need it."""
    with contextlib.suppress(NameError):
        shell = get_ipython()  # noqa: F821 (IPython defines it in notebooks)
        shell.set_custom_exc((CheckFailed,), lambda shell, etype, value, tb, tb_offset=None:
                             shell._showtraceback(etype, value, [f"{etype.__name__}: {value}"]))


# Guard bands: tensors the tests make sit inside a larger buffer. Inputs are padded with poison
# (inf and NaN), so that a read past either end stays in memory we own and, where what it
# read reaches the output, shows there; outputs are padded with random bytes, so that a write past
# either end is seen (instead of crashing the notebook or corrupting another tensor), and filled
# with random bytes, so that an element the kernel never wrote is seen too.
GUARD = 4096
_GUARDED = {}


def _padded(shape, dtype, device):
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    numel = math.prod(shape)
    buffer = _empty(numel + 2 * GUARD, dtype=dtype, device=device or DEVICE)
    return buffer, buffer[GUARD:GUARD + numel].view(shape), numel


def _poison(dtype, device):
    """An input's guard band, nearest the input first: +inf, NaN, +inf, NaN, ... (for integers and
    booleans their largest value). On a GPU, where nothing sees a load, this is what shows an
    unmasked one: whatever reduction the stray lanes feed, the output turns inf or NaN (a sum, a
    softmax; a maximum, which on a GPU may skip NaN, meets the inf). What it cannot show: a lane
    whose value never reaches the output (an element-wise kernel that masks only its store, which
    drops the lane), a minimum that skips NaN, a read more than GUARD elements out, and a read
    between the rows of a strided view (real numbers there, which a wrong sum shows anyway). Under
    the interpreter call_answer sees every load (_loads_in_bounds). No -inf: inf - inf makes NumPy
    warn."""
    if dtype.is_floating_point or dtype.is_complex:
        cycle = [math.inf, math.nan]
    else:
        cycle = [torch.iinfo(dtype).max if dtype != torch.bool else True]
    return torch.tensor(cycle, dtype=dtype, device=device).repeat(GUARD // len(cycle))


def rand(*shape, dtype=torch.float32, device=None):
    """Fresh random inputs, a new draw every call: an answer cannot be tuned to one input. Guard
    bands of poison lie on both sides (see _poison)."""
    buffer, values, numel = _padded(shape, dtype, device)
    # Drawn where the tensor lives: a CPU draw of 2^26 numbers takes seconds, a GPU's milliseconds.
    generator = _fresh_generator(buffer.device)
    values.copy_(torch.randn(values.shape, generator=generator, device=buffer.device).to(dtype))
    poison = _poison(dtype, buffer.device)
    buffer[GUARD + numel:] = poison
    buffer[:GUARD] = poison.flip(0)
    return values


def guarded_empty(shape, dtype=torch.float32, device=None, fill=None):
    """An output tensor with guard bands on both sides and poison in it, to catch stray writes."""
    buffer, out, numel = _padded(shape, dtype, device)
    raw = buffer.view(torch.uint8)
    raw.random_()  # in place: inside count_launches a fill is allocation, not arithmetic
    if fill is not None:  # torch.zeros and friends: the answer may rely on the initial value
        out.fill_(fill)
    _GUARDED[out.data_ptr()] = (buffer, raw.clone(), numel)
    return out


# What an answer may allocate its output with; inside guarded_allocations() each gets guard bands.
_ALLOCATORS = {"empty": None, "empty_like": None, "zeros": 0, "zeros_like": 0, "ones": 1, "ones_like": 1}


@contextlib.contextmanager
def guarded_allocations():
    """Inside the block, torch.empty, torch.zeros, torch.ones (and their _like forms) return guarded
    tensors, so that an answer's own output buffer is watched too:
    `with guarded_allocations(): out = add(x, y)`."""
    originals = {name: getattr(torch, name) for name in _ALLOCATORS}

    def guarded(original, fill):
        def allocate(*args, **kwargs):
            like = original(*args, **kwargs)
            if like.dim() == 0 or not like.is_contiguous() or _in_library(sys._getframe(1)):
                return like
            return guarded_empty(like.shape, like.dtype, like.device, fill)
        return allocate

    for name, original in originals.items():
        setattr(torch, name, guarded(original, _ALLOCATORS[name]))
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(torch, name, original)


def _package(frame):
    """The top-level package whose code the frame runs ("torch", "triton", "__main__" for a notebook)."""
    return frame.f_globals.get("__name__", "").partition(".")[0]


def _in_library(frame):
    """Whether Triton or torch itself is allocating: an autotuner benchmarking its configurations (a
    256 MB buffer each, to flush the cache) is not the answer making its output. A guarded tensor is
    kept, with a copy, until its check, so guarding those would hold gigabytes for nothing."""
    return _package(frame) in ("triton", "torch")


def _issued_by_triton(frame):
    """Whether the torch call being dispatched (its caller's frame given) comes from Triton's own code,
    torch's Python layers (F.layer_norm, Tensor.__rsub__, ...) looked through. Inside a launch,
    Triton calls back into the notebook's code: a heuristic, an autotune hook or pruner, a grid
    function, a tensor's data_ptr. Those are the student's code, watched like any other."""
    while frame is not None and _package(frame) == "torch":
        frame = frame.f_back
    return frame is not None and _package(frame) == "triton"


def _element_bits(tensor):
    # One integer per element, so that "unchanged" means bit-for-bit, NaNs included.
    as_int = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[tensor.element_size()]
    return tensor.contiguous().view(as_int).flatten()


def _check_guards(out, name):
    __tracebackhide__ = True
    entry = _GUARDED.pop(out.data_ptr(), None)
    if entry is None:
        return None
    buffer, before, numel = entry
    now = _element_bits(buffer)
    was = _element_bits(before.view(buffer.dtype))
    changed = now != was
    below = int(changed[:GUARD].sum())
    above = int(changed[GUARD + numel:].sum())
    if above:
        last = int(_nonzero(changed[GUARD + numel:])[-1]) + 1
        _fail(f"{name}: {above} element(s) were written past the end, up to index {numel - 1 + last} "
              f"of a tensor with {numel} elements: did you mask the store ({_mask_for(out.dim())})?")
    if below:
        _fail(f"{name}: {below} element(s) were written before index 0: {_SHIFTED}")
    return changed[GUARD:GUARD + numel]


def _mask_for(dims):
    """The mask to suggest for a block of `dims` dimensions."""
    return "mask=offsets < n" if dims < 2 else \
        "in both dimensions: mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)"


_SHIFTED = "are your offsets negative or shifted (offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE))?"


class _ReadOutside(Exception):
    """Stops a kernel under the interpreter at its first load outside the tensors it was given."""


# Captured now, like the checks' torch functions: a replay runs Triton's own interpreter, whatever a
# notebook patches later.
_INTERPRETED_RUN = None
with contextlib.suppress(ImportError):
    from triton.runtime.interpreter import InterpretedFunction as _InterpretedFunction
    _INTERPRETED_RUN = _InterpretedFunction.run


def _index_with_any_numpy():
    """Triton 3.6's interpreter makes an index of a scalar with int() of a one-element array, which
    NumPy 2.4 refuses ("only 0-dimensional arrays can be converted to Python scalars"): every loop
    whose bound is not a constant (`for start in range(0, n_cols, BLOCK_SIZE)`) then fails, on a
    laptop and in a GPU's replays alike. Triton 3.7 squeezes the array first; with an older Triton
    the kit does the same."""
    import inspect

    from triton.runtime import interpreter
    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None or "int(self.handle.data)" not in inspect.getsource(original):
        return

    def patched(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))
    interpreter._patch_lang_tensor = patched


with contextlib.suppress(ImportError, OSError, TypeError):  # no interpreter, or no source to read
    _index_with_any_numpy()


def _launch_spans(arg_names, args, kwargs):
    """(name, tensor, first byte, end byte) for each tensor a launch was given, from its first element
    to its last; None when the launch holds memory we cannot place (a tensor off the CPU, a tensor
    descriptor, a reinterpreted tensor)."""
    named, spans = [*zip(arg_names, args), *kwargs.items()], []
    while named:
        name, value = named.pop()
        if isinstance(value, tuple):
            named += [(f"{name}[{i}]", v) for i, v in enumerate(value)]
        elif isinstance(value, torch.Tensor) and value.device.type == "cpu":
            if value.numel():
                start = value.data_ptr()
                last = sum((size - 1) * stride for size, stride in zip(value.shape, value.stride()))
                spans.append((name, value, start, start + (last + 1) * value.element_size()))
        elif hasattr(value, "data_ptr") or hasattr(value, "base"):
            return None
    return spans


def _read_outside(kernel, spans, addresses, loaded):
    """Where a load's block of addresses (of which the lanes `loaded` are read) leaves every span of
    _launch_spans, said for a student; None when all are inside one."""
    inside = ~loaded
    for _, _, start, end in spans:
        inside |= (addresses >= start) & (addresses < end)
    if inside.all() or not spans:
        return None
    stray = addresses[~inside]

    def distance(span):
        _, _, start, end = span
        return np.where(stray >= end, stray - end, start - stray).min()

    name, tensor, start, end = min(spans, key=distance)
    size = tensor.element_size()
    what = f"{name} (a tensor of {tensor.numel()} elements)" if tensor.dim() < 2 else \
        f"{name} (shape {tuple(tensor.shape)}, strides {tuple(tensor.stride())})"
    after = stray[stray >= end]
    if len(after):
        return (f"{kernel} read past the end of {what}: {len(stray)} lane(s) of a load, up to "
                f"{int(after.max() - end) // size + 1} element(s) beyond its last. Did you mask the load "
                f"({_mask_for(addresses.ndim)})? A masked-off lane reads nothing (give it a value with "
                "other= if the block is reduced); on a GPU an unmasked one reads whatever lies there.")
    return (f"{kernel} read before the start of {what}: {len(stray)} lane(s) of a load, up to "
            f"{int(start - stray.min()) // size} element(s) before element 0: {_SHIFTED}")


@contextlib.contextmanager
def _loads_in_bounds():
    """A kernel launched in the block that loads from memory outside the tensors it was given is
    stopped there, and the block fails saying where it read (even if the answer caught the error).
    Under Triton's interpreter every launch is watched; on a GPU, where nothing sees a load, small
    launches are run once more by the interpreter first (_replay_on_the_interpreter). Not seen: a
    read that lands in another tensor the kernel was given, or between the rows of a strided view
    (inside its span); the tests' guard bands keep tensors apart, and a view's last row runs past its
    end. On a GPU the poison in the inputs' guard bands also shows a stray load of a launch too large
    to replay, where its values reach the output (see _poison)."""
    __tracebackhide__ = True
    if ON_GPU and _REPLAYED["timing"]:  # nothing is replayed there (see _timing): no cost either
        yield
        return
    try:
        from triton.runtime.interpreter import InterpretedFunction, InterpreterBuilder
    except ImportError:  # a Triton without an interpreter
        yield
        return
    load, store = InterpreterBuilder.create_masked_load, InterpreterBuilder.create_masked_store
    launch, strays = {}, []

    def load_checked(builder, ptrs, mask, *rest, **kwargs):
        if launch.get("spans") is not None:
            # int64: addresses fit, and distances below a tensor's start must not wrap around
            stray = _read_outside(launch["kernel"], launch["spans"], ptrs.data.astype(np.int64),
                                  np.broadcast_to(mask.data, ptrs.data.shape))
            if stray:
                strays.append(stray)
                raise _ReadOutside(stray)
        _count(launch, "loaded", ptrs, mask)
        return load(builder, ptrs, mask, *rest, **kwargs)

    def store_counted(builder, ptrs, value, mask, *rest, **kwargs):
        _count(launch, "stored", ptrs, mask)
        return store(builder, ptrs, value, mask, *rest, **kwargs)

    if ON_GPU:
        from triton.runtime.jit import JITFunction as launched

        def run_watched(self, *args, grid, warmup, **kwargs):
            if not warmup:
                _replay_on_the_interpreter(self, args, kwargs, grid, launch, strays)
            return run(self, *args, grid=grid, warmup=warmup, **kwargs)
    else:
        launched = InterpretedFunction

        def run_watched(self, *args, **kwargs):
            launch.update(kernel=self.__name__, spans=_launch_spans(self.arg_names, args, kwargs), loaded=0, stored=0)
            result = run(self, *args, **kwargs)
            _counted_in_traffic(launch)
            return result

    run = launched.run
    launched.run, InterpreterBuilder.create_masked_load, InterpreterBuilder.create_masked_store = \
        run_watched, load_checked, store_counted
    try:
        yield
    finally:
        launched.run, InterpreterBuilder.create_masked_load, InterpreterBuilder.create_masked_store = \
            run, load, store
        if strays:
            _fail(strays[0])


class Traffic:
    """The bytes that kernels launched inside memory_traffic() loaded and stored (lanes masked off
    not counted), as Triton's interpreter counts them: under the interpreter every launch that
    call_answer made; on a GPU the launches it replayed (small ones, each distinct launch once: see
    _replay_on_the_interpreter). `counted`
    is False when no launch was counted: then the numbers say nothing."""

    def __init__(self):
        self.loaded = self.stored = 0
        self.counted = False


_TRAFFIC = []  # the Traffic of each memory_traffic() block open


@contextlib.contextmanager
def memory_traffic():
    """`with memory_traffic() as moved: out = call_answer(f, x)`: moved.loaded and moved.stored are the
    bytes its kernels read and wrote, so that a test can ask for one read and one write (see Traffic)."""
    traffic = Traffic()
    _TRAFFIC.append(traffic)
    try:
        yield traffic
    finally:
        _TRAFFIC.remove(traffic)


def _count(launch, what, ptrs, mask):
    if what in launch:
        lanes = int(np.broadcast_to(mask.data, ptrs.data.shape).sum())
        launch[what] += lanes * ptrs.get_element_ty().primitive_bitwidth // 8


def _counted_in_traffic(launch):
    """A launch the interpreter ran to its end: its bytes go to every memory_traffic() block open."""
    for traffic in _TRAFFIC:
        traffic.loaded += launch.get("loaded", 0)
        traffic.stored += launch.get("stored", 0)
        traffic.counted = True


# What a GPU replays under the interpreter: launches of at most this many programs, whose tensors'
# memory is at most this many bytes, each distinct launch (kernel, layouts, values, options) once (its
# verdict is kept: the same launch again reads where it read before), for at most this many seconds
# of CPU in a notebook. The tests' edge cases (a length of 1, a prime, a
# shape not a multiple of any block) are small, and they are where a missing mask reads past the end.
_REPLAY_PROGRAMS, _REPLAY_BYTES, _REPLAY_SECONDS = 128, 2**26, 60.0
_REPLAYED = {"launches": {}, "seconds": 0.0, "running": False, "timing": 0}


class _TooLargeToReplay(Exception):
    pass


def _launch_key(kernel, args, kwargs, grid):
    """What decides where a launch's loads go: its kernel, the layout of each tensor, every other value."""
    def key(value):
        if isinstance(value, torch.Tensor):
            return ("tensor", tuple(value.shape), value.stride(), value.dtype, value.storage_offset())
        if isinstance(value, (tuple, list)):
            return tuple(key(v) for v in value)
        return repr(value)[:200]
    return (id(kernel.fn), key(args), tuple((name, key(value)) for name, value in sorted(kwargs.items())),
            "grid function" if callable(grid) else key(grid))


def _host_copies(args, kwargs):
    """The launch's arguments with each tensor copied to the CPU in the same layout (its whole storage,
    guard bands included, and tensors that share memory still sharing it), or None when they are too
    large to replay."""
    tensors, storages = list(_tensors_in((*args, *kwargs.values()))), {}
    unique = {t.untyped_storage().data_ptr(): t.untyped_storage() for t in tensors}
    if sum(storage.nbytes() for storage in unique.values()) > _REPLAY_BYTES:
        return None
    for ptr, storage in unique.items():
        storages[ptr] = _empty(storage.nbytes(), dtype=torch.uint8).untyped_storage()
        storages[ptr].copy_(storage)

    def host(value):
        if isinstance(value, tuple):
            return type(value)(*map(host, value)) if hasattr(value, "_fields") else tuple(map(host, value))
        if _is_host_descriptor(value):
            return dataclasses.replace(value, base=host(value.base))
        if not isinstance(value, torch.Tensor):
            return value
        copy = _empty(0, dtype=value.dtype, device="cpu")
        return copy.set_(storages[value.untyped_storage().data_ptr()], value.storage_offset(), value.shape,
                         value.stride())
    return [host(v) for v in args], {name: host(v) for name, v in kwargs.items()}


def _interpreted_call(self, *args, **kwargs):
    """A @triton.jit helper called from a kernel being replayed (the student's, or one of Triton's
    own, such as tl.sigmoid): interpreted too."""
    from triton.runtime.interpreter import InterpretedFunction
    return InterpretedFunction(self.fn)(*args, **kwargs)


@contextlib.contextmanager
def _language_kept():
    """Inside the block Triton's interpreter points triton.language (its functions, tl.tensor's and
    tl.dtype's methods) at its own versions, and a helper's interpreted call leaves them there (in
    interpreter mode nothing is compiled): here they are all put back afterwards, since the GPU
    compiles the next kernel with them."""
    core = tl.core
    objects = [tl, core, tl.math, core.tensor, core.dtype] + [getattr(core, name) for name in
                                                              ("condition", "tensor_descriptor_base") if hasattr(core, name)]
    saved = [dict(vars(thing)) for thing in objects]
    try:
        yield
    finally:
        for thing, was in zip(objects, saved):
            now = vars(thing)
            for name in [name for name in now if name not in was]:
                delattr(thing, name)
            for name, value in was.items():
                if now.get(name, _language_kept) is not value:
                    setattr(thing, name, value)


def _replay_on_the_interpreter(kernel, args, kwargs, grid, launch, strays):
    """Run a small GPU launch first under Triton's interpreter, on host copies of its arguments, where
    _loads_in_bounds sees every load: a kernel that masks its store but not its loads is found on a
    GPU too. What the interpreter cannot run (bf16, an operation it lacks, a grid of more than
    _REPLAY_PROGRAMS programs) it does not judge: the launch on the GPU is what the tests check.
    A stray load found is added to `strays` (by _loads_in_bounds' load), and again each time the same
    launch comes back. Nothing the replay does is the answer's work (count_launches does not see it)."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction
    if _REPLAYED["running"] or _REPLAYED["timing"] or _REPLAYED["seconds"] > _REPLAY_SECONDS or \
            not hasattr(kernel, "fn"):
        return
    key = _launch_key(kernel, args, kwargs, grid)
    if key in _REPLAYED["launches"]:
        if _REPLAYED["launches"][key]:
            strays.append(_REPLAYED["launches"][key])
        return
    _REPLAYED["launches"][key], found = None, len(strays)

    def few_programs(meta):
        shape = tuple(grid(meta) if callable(grid) else grid)
        if math.prod(shape) > _REPLAY_PROGRAMS:
            raise _TooLargeToReplay
        return shape

    start, call = _clock(), JITFunction.__call__
    _REPLAYED["running"], JITFunction.__call__ = True, _interpreted_call
    try:
        host = _host_copies(args, kwargs)
        spans = host and _launch_spans(kernel.arg_names, *host)
        if spans:
            launch.update(kernel=kernel.__name__, spans=spans, loaded=0, stored=0)
            with _language_kept():
                _INTERPRETED_RUN(InterpretedFunction(kernel.fn), *host[0], grid=few_programs, warmup=False,
                                 **host[1])
            _counted_in_traffic(launch)
    except Exception:  # a stray load is in _loads_in_bounds' list already; anything else is no verdict
        pass
    finally:
        _REPLAYED["running"], JITFunction.__call__ = False, call
        _REPLAYED["launches"][key] = strays[found] if len(strays) > found else None
        launch.clear()
        _REPLAYED["seconds"] += _clock() - start


_COMPARED_AT_ONCE = 2**24


def check_output(out, expected, name="output", inputs=(), atol=None, rtol=None, hint=None):
    """Compare a kernel's output with torch's, explaining the first difference found.

    `inputs` are (tensor, copy-taken-before-the-call) pairs: an answer must not change its inputs.
    `hint` replaces the general guess at the end of a wrong-values message with the test's own.
    """
    __tracebackhide__ = True
    if not isinstance(out, torch.Tensor):
        _fail(f"{name} is a {type(out).__name__}, not a tensor: did you forget to return the output?")
    if out.shape != expected.shape:
        _fail(f"{name} has shape {tuple(out.shape)}, expected {tuple(expected.shape)}: "
              "allocate the output like the input (torch.empty_like).")
    if out.dtype != expected.dtype:
        _fail(f"{name} has dtype {out.dtype}, expected {expected.dtype}: keep the input's dtype.")
    if out.device != expected.device:
        _fail(f"{name} is on {out.device}, expected {expected.device}: allocate it on the input's device.")
    for tensor, before in inputs:
        if not _equal(_element_bits(tensor), _element_bits(before)):
            _fail(f"{name}: an input was modified in place; write results only to the output.")
    written = _check_guards(out, name)
    n = out.numel()
    # Compared on the tensors' device (on the CPU, 2^26 elements take seconds), in fp32 for floats
    # of 4 bytes or fewer (half precision would round the tolerance test itself), else in fp64; a
    # slice of _COMPARED_AT_ONCE elements at a time, so that a big output's comparison needs little
    # memory beside it (a notebook under the grader has a share of the GPU's memory).
    compare_in = torch.float32 if out.dtype.is_floating_point and out.element_size() <= 4 else torch.float64
    tol = {torch.float16: 1e-2, torch.bfloat16: 5e-2}.get(out.dtype, 1e-5)
    # No test asks for more than the output's dtype holds: a correct answer that adds in another
    # order may round to the neighbouring value, one step of the dtype (at most eps, relative).
    rtol = max(tol if rtol is None else rtol, torch.finfo(out.dtype).eps if out.dtype.is_floating_point else 0.0)
    atol = tol if atol is None else atol
    flat_out, flat_expected = out.detach().flatten(), expected.detach().flatten()
    wrong, first, unwritten = 0, None, True
    for start in range(0, n, _COMPARED_AT_ONCE):
        got = flat_out[start:start + _COMPARED_AT_ONCE].to(compare_in)
        want = flat_expected[start:start + _COMPARED_AT_ONCE].to(compare_in)
        ok = _isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        if bool(ok.all()):
            continue
        bad = _nonzero(~ok).flatten()
        wrong += len(bad)
        if first is None:
            first = (start + int(bad[0]), got[bad[0]].item(), want[bad[0]].item())
        if written is not None:
            unwritten = unwritten and not bool(written[bad + start].any())
    if first is None:
        return
    i, value, wanted = first
    where = f"element {i} of {n}" if out.dim() == 1 else \
        f"element {tuple(int(k) for k in np.unravel_index(i, tuple(out.shape)))} of shape {tuple(out.shape)}"
    detail = f"{where} is {value:.6g}, expected {wanted:.6g} ({wrong} of {n} wrong)"
    if written is not None and unwritten:
        _fail(f"{name}: {detail}. None of the wrong elements was ever written: does the grid cover "
              "every element (grid = (triton.cdiv(n, BLOCK_SIZE),))?")
    if not math.isfinite(value) and math.isfinite(wanted):
        overflow = ("the arithmetic overflowed or is undefined (exp of a large number is inf; inf - inf "
                    "is NaN)")
        if ON_GPU:  # under the interpreter call_answer has seen every load already
            _fail(f"{name}: {detail}. Either a load read past the end of an input (the test surrounds its "
                  "inputs with inf and NaN, so that such a read shows: mask every load, and give "
                  f"masked-off lanes the neutral value of a reduction with other=), or {overflow}.")
        _fail(f"{name}: {detail}: {overflow}.")
    if hint:
        _fail(f"{name}: {detail}. {hint}")
    if any(not tensor.is_contiguous() for tensor, _ in inputs):
        _fail(f"{name}: {detail}. An input is not contiguous: did you call .contiguous() before "
              "launching a kernel that assumes element i sits at ptr + i?")
    _fail(f"{name}: {detail}. Check the offsets each program computes and the arithmetic.")


# What an answer's wrapper may do with torch, by the aten op that runs: count_launches watches
# torch's dispatcher, which every torch call reaches whatever its Python entry point (a function, a
# method, an operator, an overload, torch.ops, torch.func; torch.compile runs eagerly under it).
# Making tensors, filling them with a constant or random bytes, and views are fine; so are copies
# of inputs into a layout a kernel can use (x.contiguous(), .to(dtype), .clone()), but not into the
# output, which the kernel must write. Every other op computes, and belongs in the kernel.
_TORCH_ALLOCATIONS = {
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like",
    "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full", "fill_", "zero_",
    "random_", "uniform_", "normal_",
}
_TORCH_VIEWS = {"_unsafe_view", "set_", "detach", "alias", "lift_fresh"}  # and every op aten marks a view
_TORCH_COPIES = {"clone", "copy_", "_to_copy", "lift_fresh_copy", "_copy_from", "_copy_from_and_resize"}
# Where values leave torch for NumPy or Python, past the dispatcher (item() and float() reach it).
_TORCH_EXITS = {"numpy", "tolist", "__array__", "__dlpack__", "untyped_storage", "storage"}
# What Triton itself does with torch inside a launch; any other op there is a callback's (see count_launches).
_TRITON_MACHINERY = _TORCH_ALLOCATIONS | _TORCH_COPIES | {"untyped_storage", "storage"}


class Launches(list):
    """The names of the Triton kernels launched inside count_launches(), plus what an honest answer
    leaves as evidence: the storage of every tensor handed to a kernel, and what torch did besides."""

    def __init__(self):
        super().__init__()
        self.storages = set()
        self.torch_ops = []  # ops that compute ("aten.add"), or values taken out of torch ("Tensor.numpy")
        self.copied_into = {}  # storage -> the copy that wrote it
        self.inside = 0  # > 0 while a kernel's launch runs
        self.books = 0  # > 0 while these books are kept (which uses torch too)


def _storage(tensor):
    return tensor.untyped_storage().data_ptr()


def _tensors_in(values):
    """The tensors a launch was given among `values`: its tensor arguments, the tensor behind each
    host-side tensor descriptor (triton.tools.tensor_descriptor.TensorDescriptor, whose `base` the
    kernel reads and writes through the copy engine), and those inside tuples (a kernel may take a
    tuple of pointers or descriptors), at any depth."""
    for value in values:
        if isinstance(value, torch.Tensor):
            yield value
        elif _is_host_descriptor(value):
            yield value.base
        elif isinstance(value, tuple):
            yield from _tensors_in(value)


def _is_host_descriptor(value):
    return type(value).__name__ == "TensorDescriptor" and dataclasses.is_dataclass(value) and \
        isinstance(getattr(value, "base", None), torch.Tensor)


def _kernel_classes():
    """What `kernel[grid](...)` runs: jitted (or interpreted) functions, and the autotuners and
    heuristics that wrap them."""
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction
    classes = [JITFunction, Autotuner, Heuristics]
    with contextlib.suppress(ImportError):
        from triton.runtime.interpreter import InterpretedFunction
        classes.append(InterpretedFunction)
    return classes


@contextlib.contextmanager
def count_launches():
    """Count Triton kernel launches inside the block: `with count_launches() as launches: ...`.
    It also records what torch did outside kernels meanwhile (see _TORCH_ALLOCATIONS)."""
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode
    launches = Launches()
    originals = {cls: cls.run for cls in _kernel_classes()}

    def counting(original):
        def run(self, *args, **kwargs):
            if not launches.inside:  # an autotuner's trial runs are part of its one launch
                kernel = self
                while not hasattr(kernel, "__name__") and hasattr(kernel, "fn"):  # autotuner, heuristics
                    kernel = kernel.fn
                launches.append(getattr(kernel, "__name__", "kernel"))
            launches.books += 1
            try:
                launches.storages.update(_storage(t) for t in _tensors_in((*args, *kwargs.values())))
            finally:
                launches.books -= 1
            launches.inside += 1
            try:
                return original(self, *args, **kwargs)
            finally:
                launches.inside -= 1
        return run

    def launch_machinery(name):
        """Whether a torch call inside a launch is Triton's own: making, filling, copying and viewing
        memory (the interpreter's copies of the arguments, an autotuner's cache flush, restore_value
        and reset_to_zero) from Triton's code. What the student's callbacks do is theirs."""
        return launches.inside and name in _TRITON_MACHINERY and _issued_by_triton(sys._getframe(2))

    class WatchExits(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            name = getattr(func, "__name__", "")
            if not (launches.books or _REPLAYED["running"]) and name in _TORCH_EXITS and not launch_machinery(name):
                launches.torch_ops.append(f"Tensor.{name}")
            return func(*args, **(kwargs or {}))

    class WatchOps(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls):
            # Else torch (2.11 on) wraps __torch_dispatch__ so as to import torch._dynamo on the first
            # op: seconds per notebook. Nothing is compiled in here.
            return False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            result = func(*args, **(kwargs or {}))
            name = func.overloadpacket.__name__
            if launches.books or _REPLAYED["running"] or func.is_view or name in _TORCH_VIEWS or (
                    name in _TORCH_ALLOCATIONS and name.endswith("_")) or launch_machinery(name):
                return result
            launches.books += 1
            try:
                if name in _TORCH_ALLOCATIONS:  # new memory, maybe where a freed copy lay
                    launches.copied_into.pop(_storage(result), None)
                elif name in _TORCH_COPIES:
                    launches.copied_into[_storage(result)] = f"aten.{name}"
                else:  # item() and float() read a value out through _local_scalar_dense
                    launches.torch_ops.append("Tensor.item" if name == "_local_scalar_dense"
                                              else f"aten.{name}")
            finally:
                launches.books -= 1
            return result

    for cls, original in originals.items():
        cls.run = counting(original)
    try:
        with WatchExits(), WatchOps():
            yield launches
    finally:
        for cls, original in originals.items():
            cls.run = original


def expect_launched(launches, what, out=None):
    """The answer launched a Triton kernel, computed nothing with torch, and (given `out`, what it
    returned) handed that output to a kernel, which wrote it: a torch result behind a token launch
    earns nothing."""
    __tracebackhide__ = True
    if not launches:
        _fail(f"{what} launched no Triton kernel. Compute the answer in your kernel "
              "(kernel[grid](...)): a torch expression earns no points here.")
    ops = sorted(set(getattr(launches, "torch_ops", ())))
    if ops:
        _fail(f"{what} computed with torch ({', '.join(ops)}) besides launching a kernel: do the "
              "arithmetic inside your Triton kernel; the Python function only checks its arguments, "
              "allocates the output and launches the kernel.")
    if not isinstance(out, torch.Tensor):
        return
    if _storage(out) not in getattr(launches, "storages", {_storage(out)}):
        _fail(f"{what} returned a tensor that none of its kernels was given: pass the output tensor "
              "to your kernel and tl.store the results into it.")
    copy = getattr(launches, "copied_into", {}).get(_storage(out))
    if copy:
        _fail(f"{what} returned a tensor that torch copied values into ({copy}): allocate the output "
              "empty (torch.empty_like) and let your kernel write every element of it.")


def _instrument(name):
    """The kit's instruments (bench_ms, copy_bandwidth) measure answers: one called by an answer under
    test (a time_gpu that returns bench_ms(fn)) has left its exercise to the kit. The call_answer
    running it is found on the stack, so that the notebook's copy of the kit tells the graded tests'
    sealed copy (autograder/grade/seal.py), which shares its code, and the answer stops there."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is _CALL_ANSWER:
            frame.f_locals["instruments"].append(name)
            raise _InstrumentCalled(name)  # at once: the answer measures nothing, asks for no GPU turn
        frame = frame.f_back


class _InstrumentCalled(BaseException):
    """Stops an answer at its call of one of the kit's instruments (see _instrument); call_answer then
    says why. Not an Exception, so that the answer's own `except Exception` does not carry on."""


def name_of(answer):
    """An answer's name, also when the notebook bound it to a functools.partial of its function."""
    return getattr(answer, "__name__", None) or getattr(getattr(answer, "func", None), "__name__", "your function")


def call_answer(fn, *args, name=None, **kwargs):
    """Call a student's function; a stub or a kernel that cannot run becomes a message about what to do."""
    __tracebackhide__ = True
    name = name or name_of(fn)
    instruments = []  # the kit's instruments the answer calls (see _instrument)
    try:
        with _loads_in_bounds():
            return fn(*args, **kwargs)
    except Exception as error:
        if isinstance(error, NotImplementedError) or "NotImplementedError" in str(error):
            _fail(f"{name} is still the exercise stub: replace `raise NotImplementedError()` with your code.")
        if type(error).__name__ in ("CompilationError", "InterpreterError"):
            last = str(error).strip().splitlines()[-1]
            if "power of 2" in last:
                last += " (block sizes must be powers of two: round up with triton.next_power_of_2(n) and mask)"
            _fail(f"{name}: Triton could not run your kernel: {last}")
        if isinstance(error, torch.cuda.OutOfMemoryError):
            share = _GRADER.get("COURSE_GPU_MEMORY_GB")
            _fail(f"{name} ran out of memory on the GPU{f' (a notebook has {share} GiB under the grader)' if share else ''}: "
                  "does it make tensors much larger than its inputs and output (an N x N matrix of scores, a "
                  "copy of an input per call)? A kernel of this course needs little memory beyond its output.")
        raise
    finally:
        if instruments:  # said whatever else happened: it is why the answer's results mean nothing
            _fail(f"{name} calls the kit's {instruments[0]}, the instrument the course measures answers "
                  "with: an answer does its own work. Write it yourself, as its exercise describes.")


_CALL_ANSWER = call_answer.__code__


def check_choice(answer, name, choices="abcd", expected=None, why=""):
    """A multiple-choice answer: one of `choices`, in any case, spaces around it ignored. Without
    `expected` it only checks that the answer is a valid choice (a visible test); with it, that it
    is the right one, and `why` says why when it is not. Only a real str counts, so that an object
    with its own __eq__, __str__ or lower cannot pass for a letter."""
    __tracebackhide__ = True
    valid = ", ".join(f'"{c}"' for c in choices)
    if answer is None:
        _fail(f'{name} is not set: in the cell above, write {name} = "{choices[0]}" (one of {valid}) and run it.')
    if type(answer) is not str or answer.strip().lower() not in tuple(choices):
        shown = repr(answer[:20]) if type(answer) is str else f"of type {type(answer).__name__}, not a str"
        _fail(f"{name} is {shown}: set it to one letter in quotes, one of {valid}; for example "
              f"{name} = \"{choices[0]}\".")
    if expected is not None and answer.strip().lower() != expected:
        _fail(f"{name} = {answer!r} is not the right answer. {why}".strip())


# ---------------------------------------------------------------------------------------------
# Measuring. On a GPU, times are medians of many runs timed with CUDA events (triton.testing);
# under the interpreter they are a few wall-clock runs and say nothing about GPUs.

_TURN = {"held": False}  # this copy's turn (a dict: the graded tests' sealed copy gets its own)
# Whether the graded tests' copy holds a turn, for the notebook's copy to read: a student's function
# that a test times inside its turn (a time_gpu written `with exclusive_gpu():`) must not queue for a
# second turn behind the held one until the grader takes it back. Not a dict, so that the seal shares
# it between the copies instead of copying it; only the tests' copy writes it, and only the
# notebook's copy reads it, so a notebook that sets it changes none of its graded measurements.
_TESTS_TURN = types.SimpleNamespace(held=False)


@contextlib.contextmanager
def _grader_turn(kind):
    """A turn on the grader's GPU (autograder/grade/turns.py): b"t" exclusive (every other notebook
    is paused), b"s" shared (measurements take turns, so that they do not thrash the GPU between
    processes). Without the grader: nothing."""
    __tracebackhide__ = True
    path = _GRADER.get("COURSE_GPU_TURN")
    graded = _GRADED_IN is not None  # the tests' sealed copy (seal.py sets it there)
    if not path or _TURN["held"] or (_TESTS_TURN.held and not graded):
        yield
        return
    import socket
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as turn:
        turn.settimeout(300)  # the wait for our turn, behind other notebooks' measurements
        try:
            turn.connect(path)
            turn.sendall(kind)
            answer = turn.recv(1)
        except OSError as error:
            answer = f"no answer ({error})"
        if answer == b"n" and kind == b"s":  # a plotted measurement past its share goes ahead
            yield                             # without a turn (turns.py)
            return
        if answer == b"n":
            _fail("The grader gave this notebook no more GPU time for measurements: its timed sections "
                  "have used their share. Time each kernel once, not in a loop of measurements.")
        if answer != b"g":
            _fail(f"The grader's GPU turn failed: {answer}. Ask your instructor: this is not your code.")
        _TURN["held"] = kind == b"t"
        if graded:
            _TESTS_TURN.held = _TURN["held"]
        try:
            yield
        finally:
            _TURN["held"] = False
            if graded:
                _TESTS_TURN.held = False
        turn.setblocking(False)
        with contextlib.suppress(OSError):
            if turn.recv(1) == b"r":
                _fail("This timed section held the GPU for too long (the grader took it back so that "
                      "other notebooks could run): measure one kernel at a time.")


def exclusive_gpu():
    """Graded timing: `with exclusive_gpu(): ...`. When the course's grader runs many notebooks on
    one GPU, it pauses all the others while this block runs, so the measurement shares the GPU with
    nothing. Every graded reading of a clock belongs in one (or in the kit's timers, which take
    turns themselves), even of work that does not use the GPU: outside a turn, another notebook's
    turn may pause this one between its two readings. On your own machine it changes nothing."""
    return _grader_turn(b"t")


def bench_ms(fn, *inputs, expect=None, atol=None, rtol=None):
    """Median time of one call in milliseconds. `bench_ms(lambda: f(x))` times f(x) as it is.

    A performance test passes the inputs instead, `bench_ms(add, x, y, expect=torch.add)`: then
    every timed call gets new random values in its inputs and lasts until the whole GPU is idle,
    and (given `expect`) its result is checked against expect(*inputs). So a timed call does all
    the work it is credited for: no result kept from an earlier call, no work left running on
    another stream, no second call that skips the work. `atol` and `rtol` go to check_output."""
    __tracebackhide__ = True
    _instrument("bench_ms")
    with _timing():
        return _bench(fn, inputs, expect, atol, rtol)


@contextlib.contextmanager
def _timing():
    """While a call is timed, call_answer does not replay its launches under the interpreter (see
    _replay_on_the_interpreter): the replay's CPU time would be timed with it, and a small kernel's
    launch would wait on the CPU. The tests' untimed calls are replayed."""
    _REPLAYED["timing"] += 1
    try:
        yield
    finally:
        _REPLAYED["timing"] -= 1


def _bench(fn, inputs, expect, atol, rtol):
    __tracebackhide__ = True
    if inputs:
        return _bench_fresh(fn, inputs, expect, atol, rtol)
    if ON_GPU:
        fn()  # compile (the first call with new arguments) outside the measurement
        if not _GRADER.get("COURSE_GPU_TURN"):
            return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")
        # Under the grader many notebooks share the GPU. A graded measurement (in exclusive_gpu) is
        # a median over 20 ms of runs, hundreds of runs at these sizes; one that is only plotted
        # takes a short shared turn.
        warmup, rep = (5, 20) if _TURN["held"] else (1, 4)
        with _grader_turn(b"s"):
            return triton.testing.do_bench(fn, warmup=warmup, rep=rep, return_mode="median")
    fn()

    def timed_call():
        start = _clock()
        fn()
        return (_clock() - start) * 1e3
    return _median_of_runs(timed_call)


_clock = time.perf_counter  # the kit's own: a notebook that replaces time.perf_counter does not reach it


def _median_of_runs(timed_call):
    """The median of at least 5 timed calls, and of up to 0.3 s of them, so that one stall of a busy
    machine does not become the result. timed_call() returns the milliseconds it measured. Under the
    interpreter, whose timings describe only the CPU and grade nothing, one call: every lesson's
    sweeps run there in a fraction of the time."""
    return _medians_of_runs([timed_call])[0]


def _medians_of_runs(timed_calls):
    """_median_of_runs of each timed call, the calls taken in turns (one run of each per round), so
    that whatever drifts during the measurement (the GPU's clocks, the machine's load) moves all of
    them alike."""
    least, seconds = (5, 0.3 * len(timed_calls)) if ON_GPU else (1, 0.0)
    runs, until = [[] for _ in timed_calls], _clock() + seconds
    while len(runs[0]) < least or (len(runs[0]) < 25 and _clock() < until):
        for timed_call, times in zip(timed_calls, runs):
            times.append(timed_call())
    return [float(np.median(times)) for times in runs]


def _fresh_generator(device):
    """A random generator seeded by the operating system: values no answer can predict."""
    return torch.Generator(device).manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)


def _idle():
    """Wait until every GPU has finished all its work, on every stream (an event on the current
    stream would not wait for work left running on another)."""
    if ON_GPU:
        for device in range(torch.cuda.device_count()):
            torch.cuda.synchronize(device)


def _same_layout(tensor):
    """A new tensor with the shape, strides, dtype and device of `tensor` (a transposed view stays
    transposed), for a second set of inputs to time."""
    if not isinstance(tensor, torch.Tensor):
        return tensor
    return torch.empty_strided(tensor.shape, tensor.stride(), dtype=tensor.dtype, device=tensor.device)


# Extra input sets a timed round may allocate: three sets of 02's 2^26-element inputs fit in it.
_ROUND_BYTES = 2 * 2**30


def _bench_fresh(fn, inputs, expect, atol, rtol):
    __tracebackhide__ = True
    timed_call = _fresh_timer(fn, inputs, expect, atol, rtol)
    with _grader_turn(b"s"):
        return max(_median_of_runs(timed_call), 1e-6)


def bench_against(fn, reference, *inputs, expect=None, atol=None, rtol=None):
    """(ours, theirs): bench_ms(fn, *inputs, expect=...) and bench_ms(reference, *inputs), timed in
    turns, one run of each per round, so that a GPU whose clocks drift during the test slows (or
    speeds) both alike: a performance test's ratio compares the two under the same conditions."""
    __tracebackhide__ = True
    _instrument("bench_against")
    with _timing():
        timed_calls = [_fresh_timer(fn, inputs, expect, atol, rtol), _fresh_timer(reference, inputs, None, None, None)]
        with _grader_turn(b"s"):
            return tuple(max(ms, 1e-6) for ms in _medians_of_runs(timed_calls))


def _fresh_timer(fn, inputs, expect, atol, rtol):
    """bench_ms with inputs: fresh values before every call, every result checked, the calls timed
    until the GPU is idle (wall clock). A round times one call, then K calls on K input sets (the
    given inputs and copies of their layout) launched back to back: the time of one call is the
    difference over K - 1. So the fixed cost of starting and waiting for the GPU (tens of
    microseconds, as long as a small kernel) cancels out, and the wall clock still covers every
    stream. Refilling and checking happen outside the timed part. Returns the round, compiled."""
    __tracebackhide__ = True
    name = getattr(fn, "__name__", "<lambda>").replace("<lambda>", "the timed function")
    nbytes = sum(t.untyped_storage().nbytes() for t in inputs if isinstance(t, torch.Tensor))
    sets = [inputs] + [[_same_layout(t) for t in inputs]
                       for _ in range(max(1, min(3, _ROUND_BYTES // max(1, 2 * nbytes))))]

    def timed(chosen):
        """Milliseconds for fn on each chosen set, launched back to back, and their results."""
        for tensor in (t for s in chosen for t in s):
            if isinstance(tensor, torch.Tensor) and tensor.is_floating_point():
                tensor.normal_(generator=_fresh_generator(tensor.device))  # in place: its layout stays
        _idle()
        start = _clock()
        outs = [fn(*s) for s in chosen]
        _idle()
        ms = (_clock() - start) * 1e3
        for s, out in zip(chosen, outs) if expect is not None else ():
            check_output(out, expect(*s), name=f"{name} in a timed run", atol=atol, rtol=rtol,
                         hint="Each timed call gets new inputs, and its result must be computed from them "
                              "by that call: not kept from an earlier call, and finished when it returns.")
        return ms

    def timed_call():
        __tracebackhide__ = True
        one = timed(sets[:1])
        return (timed(sets) - one) / (len(sets) - 1)

    with _kernels_on_the_gpu(name):
        timed(sets)  # compile (the first call with new arguments) outside the measurement
    return timed_call


@contextlib.contextmanager
def _kernels_on_the_gpu(name):
    """On a GPU, a kernel launched on Triton's interpreter (defined while TRITON_INTERPRET=1 was set)
    fails a performance test at once: it times GPU kernels, and the interpreter would take minutes."""
    __tracebackhide__ = True
    interpreted = None
    with contextlib.suppress(ImportError):
        from triton.runtime.interpreter import InterpretedFunction as interpreted
    if not ON_GPU or interpreted is None:
        yield
        return

    def refuse(self, *args, **kwargs):
        _fail(f"{name} launched {getattr(self, '__name__', 'a kernel')} on Triton's interpreter, on a "
              "machine with a GPU: was TRITON_INTERPRET=1 set when the kernel was defined? A performance "
              "test times kernels on the GPU; set TRITON_INTERPRET only where there is no GPU.")
    original, interpreted.run = interpreted.run, refuse
    try:
        yield
    finally:
        interpreted.run = original


def gbps(nbytes, ms):
    return nbytes / (ms * 1e-3) / 1e9


_COPY_BANDWIDTH = {}


def copy_bandwidth(n=None):
    """This device's measured copy bandwidth in GB/s (bytes read + bytes written): our roofline."""
    _instrument("copy_bandwidth")
    n = n or sized(2**26, 2**16)
    # Graded checks measure their roof inside an exclusive turn (see exclusive_gpu), and from then on
    # that measurement is the one to trust.
    key = (n, _TURN["held"] or (n, True) in _COPY_BANDWIDTH)
    if key not in _COPY_BANDWIDTH:
        src = torch.empty(n, dtype=torch.float32, device=DEVICE)
        # Timed as the performance tests time kernels (bench_ms with inputs: new values before each
        # call, calls back to back, the fixed cost of a round differenced out), so that a kernel
        # that moves its bytes as fast as a copy reads 100% of it, not more.
        _COPY_BANDWIDTH[key] = gbps(2 * src.numel() * src.element_size(), bench_ms(_copied, src))
    return _COPY_BANDWIDTH[key]


def _copied(src):
    return src.clone()


# The mode the course's grader ran this notebook in. Graded tests use a copy of this kit that the
# grader made right after this cell (autograder/grade/seal.py), and it sets this there; elsewhere None.
_GRADED_IN = None


def advisory(requirement):
    """What a performance test asks where it is not graded, said instead of a verdict: under the
    interpreter (CPU timings say nothing about GPUs), and on a GPU the test does not grade (say, a
    compute-bound test of Hopper's on an A100). Only a notebook the grader ran with a GPU whose kernels
    ran on the interpreter fails here: that run's performance was never measured."""
    __tracebackhide__ = True
    if ON_GPU:
        print(f"Advisory only on this GPU ({torch.cuda.get_device_name()}, compute capability "
              f"{CAPABILITY[0]}.{CAPABILITY[1]}): where it is graded this test asks {requirement}.\n"
              "It passes here.")
        return
    if _GRADED_IN == "cuda":
        _fail(f"The grader ran this notebook with a GPU, but its kernels ran on Triton's interpreter "
              f"(MODE is {MODE!r}), so this test cannot be advisory: on a GPU it asks {requirement}. "
              "Was TRITON_INTERPRET=1 or CUDA_VISIBLE_DEVICES set before the setup cell ran? A person "
              "will look at this notebook.")
    print(f"Advisory only (interpreter): on a GPU this test asks {requirement}. CPU timings say nothing\n"
          "about that, so it passes here.")


def check_bandwidth(achieved, fraction, what,
                    hint="Is BLOCK_SIZE large enough (try 1024), and is each element read once?"):
    """Graded on a GPU against this GPU's own copy bandwidth; advisory under the interpreter. `hint`
    names the likely causes of a miss."""
    __tracebackhide__ = True
    if not ON_GPU:
        advisory(f"{what} for {fraction:.0%} of the card's\nmeasured copy bandwidth")
        return
    roof = copy_bandwidth()
    verdict = f"{what} reached {achieved:.0f} GB/s, {achieved / roof:.0%} of this device's copy bandwidth " \
              f"({roof:.0f} GB/s); the target is {fraction:.0%}."
    if achieved < fraction * roof:
        _fail(f"{verdict} {hint}")
    print(verdict)


def check_speed_against(theirs, ours, target, verdict, requirement, hint, graded):
    """A compute-bound test: `ours` (ms) must take at most 1/target of `theirs`, the vendor's library
    timed in the same notebook. Graded where `graded` (a GPU whose tl.dot takes fp16), advisory
    elsewhere: `requirement` says what a GPU asks, `hint` names the likely causes of a miss."""
    __tracebackhide__ = True
    if not graded:
        print(verdict)
        if ON_GPU:
            print(DOT_NOTE)
        advisory(requirement)
    elif theirs < target * ours:
        _fail(f"{verdict} {hint}")
    else:
        print(verdict)


def torch_compiled(fn, *example):
    """torch.compile(fn) for the shapes of `example`, run once on it, or None where it cannot run:
    under the interpreter (on the CPU it generates C++, not Triton) or on a GPU whose compiler fails.
    dynamic=False: a function compiled for one shape and called with another is compiled again for
    that shape, as a program would be, instead of once more for every shape (dynamic shapes), which
    runs slower (a softmax 4096 wide on an H200: 1934 GB/s against 3290 compiled for its shape)."""
    if not ON_GPU:
        return None
    try:
        function = torch.compile(fn, dynamic=False)
        function(*example)
        return function
    except Exception as error:  # e.g. an old GPU that the bundled Triton no longer supports
        print(f"torch.compile does not work here ({type(error).__name__}); it is left out.")
        return None


def describe_matmul(a, b):
    """How a test names a product's operands: shapes, dtype, and strides when not contiguous."""
    layout = "contiguous" if a.is_contiguous() and b.is_contiguous() else f"strides {a.stride()} and {b.stride()}"
    return (f"({a.shape[0]}, {a.shape[1]}) @ ({b.shape[0]}, {b.shape[1]}), "
            f"{str(a.dtype).removeprefix('torch.')}, {layout}")


def _plot(sizes, series, title, ylabel, xlabel, roof=None, logy=False):
    """One line per implementation against problem size (log 2 axis), with an optional roof line."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, values in series.items():
        ax.plot(sizes, values, marker="o", label=label)
    if roof:
        ax.axhline(roof, color="grey", linestyle="--", label=f"copy bandwidth ({roof:.0f} GB/s)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    if logy or not ON_GPU:  # the interpreter is far slower than torch on the CPU: a log axis shows both
        ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.set_title(title + ("" if ON_GPU else " (interpreter: not GPU numbers)"))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    plt.show()


def plot_bandwidth(sizes, series, title, roof=None, xlabel="elements", logy=False):
    """GB/s against problem size, one line per implementation, with the copy bandwidth as the roof."""
    _plot(sizes, series, title, "GB/s", xlabel, roof=roof, logy=logy)


def plot_tflops(sizes, series, title, xlabel="M = N = K"):
    """TFLOP/s against problem size, one line per implementation."""
    _plot(sizes, series, title, "TFLOP/s", xlabel)


_show_failed_checks_briefly()
doctor()

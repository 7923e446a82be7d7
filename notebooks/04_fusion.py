# %% [markdown]
# # Lesson 4: Fusion: breaking the memory wall
#
# Lesson 2 ended on a sobering result: your `add` kernel ran about as fast as `torch.add`. For one
# element-wise operation there is nothing to win, because both kernels spend their time moving
# bytes, and both move them as fast as the memory allows. This lesson is about the case where
# Triton *does* win, often by a factor of ten: a chain of operations that eager PyTorch runs as
# many kernels, each one a round trip to memory, and that one Triton kernel can do in a single
# pass.
#
# It starts from a case study. *A researcher is developing a novel Transformer. Inside it, a
# sequence of ten element-wise operations runs, in standard PyTorch (eager mode), as ten different
# kernels. Each kernel reads from and writes to the GPU's global memory (VRAM), which is relatively
# slow. The researcher wants to use Triton to improve performance.*
#
# By the end of this lesson you will be able to:
#
# - count the bytes a chain of kernels moves, and predict its time from the memory's bandwidth
#   (the **memory wall**);
# - **fuse** ten operations into one kernel that reads its input once and writes its output once,
#   and measure it against eager PyTorch, `torch.compile` and the bytes floor;
# - read the Triton code that `torch.compile` writes for you;
# - fuse a **reduction** too: a numerically stable row-wise **softmax** in one kernel, working on
#   2-D blocks of several rows when rows are narrow;
# - place Triton on the performance ladder, and say when climbing it is worth the effort.
#
# | exercise | what you write | points |
# |---|---|---|
# | 1 | `eager_bytes`, `fused_bytes`: count the bytes | 3 |
# | 2 | `ten_ops_kernel`: ten operations, one kernel | 4 |
# | 3 | `ten_ops`: the function that launches it | 4 |
# | 4 | (no new code) `ten_ops` runs at the speed of memory | 2 |
# | 5 | `softmax_kernel`: a fused softmax on a block of rows | 5 |
# | 6 | `softmax`: choosing the block, the rows and the warps | 5 |
# | 7 | (no new code) `softmax` is as fast as `torch.softmax` | 2 |
# | questions | three multiple-choice questions, three written answers | 3 + 6 |
#
# **Where to run it.** On Colab choose *Runtime > Change runtime type > GPU* (a T4 is fine). With
# no GPU, the setup cell switches Triton to its *interpreter*, which runs kernels on the CPU:
# everything works, sizes are small, and timings say nothing about GPUs.

# %% tags=["setup"]
from autograder.kit import *  # noqa: F403 (the build places autograder/kit.py here)


# %% [markdown]
# ## 1. The researcher's ten operations
#
# Here is the researcher's new activation function: ten element-wise steps, written the way anyone
# writes PyTorch. You are given it; it is the reference your kernels must match.

# %% nbgrader={"grade_id": "ten_ops_reference", "locked": true}
# The reference the tests compare with (read-only: grading restores it).
def ten_ops_torch(x):
    """The researcher's activation: ten element-wise operations, each one a separate torch call."""
    y = x * 1.5                    # 1. scale
    y = y + 0.25                   # 2. shift
    y = torch.relu(y)              # 3. relu
    y = y - 0.5                    # 4. shift back
    y = torch.abs(y)               # 5. absolute value
    y = torch.clamp(y, max=3.0)    # 6. clip large values
    y = torch.sigmoid(y)           # 7. sigmoid
    y = y * 2.0                    # 8. scale
    y = y + x                      # 9. residual: add the input back
    y = y * x                      # 10. gate by the input
    return y


# %% [markdown]
# In eager mode PyTorch runs each line as soon as Python reaches it, and it knows nothing about the
# next line. So every line is **one kernel launch**, and every kernel writes its result `y` to the
# GPU's main memory, where the next kernel reads it back. Let's list the torch calls the function
# makes (a `TorchFunctionMode` sees every torch call, on any device):

# %%
from torch.overrides import TorchFunctionMode


class ListTorchCalls(TorchFunctionMode):
    """Records the name of every torch function called inside `with ListTorchCalls() as calls:`."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.names.append(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


x = rand(1000)
with ListTorchCalls() as calls:
    ten_ops_torch(x)
count = len(calls.names)
print(f"{count} torch calls, so {count} kernels on a GPU:", ", ".join(calls.names))


# %% [markdown]
# ## 2. Where the time goes: the memory wall
#
# Each of these kernels does almost no arithmetic: one multiplication, or one comparison, per
# element. An H200 can do about 67 trillion fp32 operations per second (without its tensor
# cores), but its memory delivers "only" about 4.1 trillion bytes per second (4126 GB/s for a copy,
# measured). An fp32 element is 4 bytes, so in the time it takes to bring one element to the chip
# and send one back, the chip could have done about a hundred operations. A kernel that does one
# operation per element therefore waits for memory nearly all of the time: it is
# **memory-bound**, and its time is simply
#
# $$\text{time} \approx \frac{\text{bytes moved between memory and the chip}}{\text{bandwidth}}.$$
#
# This gap between how fast a GPU computes and how fast it can feed itself is the **memory
# wall**. It is the researcher's real bottleneck: not the arithmetic of the ten operations, but
# the ten round trips to global memory.
#
# So, to predict the time of `ten_ops_torch`, count the bytes. The rule for one kernel: **it reads
# each of its input tensors once and writes its output tensor once** (reading a tensor of `n`
# elements of `s` bytes moves `n * s` bytes, and so does writing one). A scalar like `1.5` costs
# nothing: it travels with the launch. Look again at the ten lines: most have one input tensor,
# but a few have two.
#
# ## Exercise 1: count the bytes (3 points)
#
# Write two functions of `n` (the number of elements of `x`) and `element_size` (bytes per element:
# 4 for fp32, 2 for fp16):
#
# - `eager_bytes(n, element_size)`: the bytes that `ten_ops_torch` moves in eager mode, all ten
#   kernels together;
# - `fused_bytes(n, element_size)`: the bytes that **one** kernel computing the same function moves
#   when it reads `x` once, keeps every intermediate value in registers, and writes the output once.
#
# Both return integers.

# %% nbgrader={"grade_id": "count_bytes", "solution": true}
def eager_bytes(n, element_size=4):
    """Bytes read plus bytes written by the ten kernels of ten_ops_torch on n elements."""
    ### BEGIN SOLUTION
    one_input, two_inputs = 8, 2  # ops 1-8 read y (or x); ops 9 and 10 read y and x
    return (one_input * 2 + two_inputs * 3) * n * element_size
    ### END SOLUTION


def fused_bytes(n, element_size=4):
    """Bytes read plus bytes written by one fused kernel: x read once, the output written once."""
    ### BEGIN SOLUTION
    return 2 * n * element_size
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_count_bytes", "locked": true, "points": 1}
def _check_counts():
    for fn in (eager_bytes, fused_bytes):
        for n, size in [(1000, 4), (2**26, 4), (1000, 2)]:
            value = call_answer(fn, n, size)
            if not isinstance(value, int) or isinstance(value, bool):
                raise CheckFailed(f"{fn.__name__}({n}, {size}) returned {value!r}: return an integer "
                                  "number of bytes (use int(...) if you divided).")
        if fn(2000, 4) != 2 * fn(1000, 4) or fn(1000, 4) != 2 * fn(1000, 2):
            raise CheckFailed(f"{fn.__name__} should be proportional to n and to element_size: "
                              "every pass over a tensor moves n * element_size bytes.")
    if not fused_bytes(1000, 4) < eager_bytes(1000, 4):
        raise CheckFailed("the fused kernel should move fewer bytes than the ten eager kernels.")


_check_counts()
n = 2**26
eager, fused = eager_bytes(n, 4), fused_bytes(n, 4)
print(f"n = 2^26 fp32 elements: eager {eager / 1e9:.2f} GB, fused {fused / 1e9:.2f} GB, "
      f"so fusion should be about {eager / fused:.1f} times faster.")

# %% nbgrader={"grade": true, "grade_id": "test_count_bytes_hidden", "locked": true, "points": 2}
# Hidden tests check the exact counts when your notebook is graded.
### BEGIN HIDDEN TESTS
for n, size in [(1, 4), (1000, 4), (2**26, 4), (12345, 2)]:
    got = call_answer(fused_bytes, n, size)
    if got != 2 * n * size:
        raise CheckFailed(f"fused_bytes({n}, {size}) is {got}, expected {2 * n * size}: the fused "
                          "kernel reads x once and writes the output once, two passes of "
                          "n * element_size bytes.")
    got = call_answer(eager_bytes, n, size)
    if got != 22 * n * size:
        hint = ("you counted one read per kernel: ops 9 (y + x) and 10 (y * x) read two tensors each"
                if got == 20 * n * size else
                "count each kernel's reads (one per input tensor) and its write; scalars are free")
        raise CheckFailed(f"eager_bytes({n}, {size}) is {got}, expected {22 * n * size}: {hint}.")
print("eager_bytes and fused_bytes are right.")
### END HIDDEN TESTS

# %% [markdown]
# With your counts and this device's copy bandwidth (the kit measures it: `copy_bandwidth()`, in
# GB/s) we can predict both times on 2^26 fp32 elements (2^16 under the interpreter) before running
# anything:

# %%
n, bandwidth = sized(2**26, 2**16), copy_bandwidth() * 1e9  # bytes per second
try:
    eager_ms = eager_bytes(n, 4) / bandwidth * 1e3
    fused_ms = fused_bytes(n, 4) / bandwidth * 1e3
    print(f"predicted here ({bandwidth / 1e9:.4g} GB/s) for 2^{n.bit_length() - 1} elements: eager "
          f"{eager_ms:.4g} ms, fused {fused_ms:.4g} ms, speed-up {eager_ms / fused_ms:.1f}x")
except NotImplementedError:
    print("Do exercise 1 first.")

# %% [markdown]
# Section 4 measures both, and prints your measurements next to these predictions. (For reference,
# on an H200: predicted 1.43 and 0.130 ms, measured 1.41 and 0.131 ms.) Counting bytes is all it
# takes to understand this workload: arithmetic does not appear anywhere in the estimate, and it
# does not need to.
#
# **Multiple choice (1 point).** A T4 (Colab's usual GPU) measures about 250 GB/s for a copy. On it,
# `ten_ops_torch` runs eagerly on 2^24 fp32 elements (64 MiB per pass over the data). Predict its
# time from the byte count. Set `answer_q_predict` to one letter in the cell below.
#
# - a) about 0.54 ms
# - b) about 2.7 ms
# - c) about 5.4 ms
# - d) about 5.9 ms

# %% nbgrader={"grade_id": "q_predict", "solution": true}
# Replace the two lines below with one line: answer_q_predict = "<your letter>"
### BEGIN SOLUTION
answer_q_predict = "d"  # one of "a", "b", "c", "d"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_q_predict", "locked": true, "points": 1}
check_choice(globals().get("answer_q_predict"), "answer_q_predict")
print("Your answer is recorded; it is checked when your notebook is graded.")
### BEGIN HIDDEN TESTS
check_choice(answer_q_predict, "answer_q_predict", expected="d",
             why="Eager moves 22 passes of 2^24 x 4 bytes = 1.48 GB, and 1.48 GB / 250 GB/s = 5.9 ms. "
                 "0.54 ms is the fused kernel's 2 passes; 2.7 ms counts only the reads of one input per "
                 "kernel; 5.4 ms forgets that steps 9 and 10 read two tensors.")
### END HIDDEN TESTS

# %% [markdown]
# ## 3. Fusion: one load, ten operations in registers, one store
#
# The fix follows from the count. Write **one** kernel in which each program loads its block of
# `x` once, applies all ten operations to the block while it sits in registers on the chip, and
# stores the final result once. The nine intermediate tensors never exist in memory at all. This
# is **kernel fusion**. The picture shows the traffic, one arrow per pass over the data:

# %%
import matplotlib.pyplot as plt


def draw_traffic():
    """Memory traffic of ten eager kernels and of one fused kernel. (Only a drawing.)"""
    fig, axes = plt.subplots(2, 1, figsize=(10, 5.5))
    for ax, fused in zip(axes, (False, True)):
        ax.axhspan(1.6, 2.2, color="tab:red", alpha=0.15)
        ax.axhspan(-0.2, 0.4, color="tab:green", alpha=0.15)
        ax.text(-0.2, 1.9, "global memory (HBM): slow", va="center", fontsize=9)
        ax.text(-0.2, -0.35, "on the chip (registers): fast", va="top", fontsize=9)

        def arrow(xpos, down, color):
            ends = (xpos, 0.25), (xpos, 1.6)
            ax.annotate("", xy=ends[0] if down else ends[1], xytext=ends[1] if down else ends[0],
                        arrowprops=dict(arrowstyle="->", color=color, lw=1.5))

        for op in range(10):
            xpos = op * 1.1 + 0.3
            ax.add_patch(plt.Rectangle((xpos, -0.05), 0.7, 0.3, color="tab:blue", alpha=0.7))
            ax.text(xpos + 0.35, 0.1, f"op {op + 1}", ha="center", va="center", color="white",
                    fontsize=8)
            if not fused:  # every kernel reads its input tensor(s) and writes its output
                for r in range(2 if op >= 8 else 1):
                    arrow(xpos + 0.12 + 0.2 * r, True, "tab:red")
                arrow(xpos + 0.6, False, "black")
        if fused:
            arrow(0.42, True, "tab:red")
            arrow(9 * 1.1 + 0.9, False, "black")
        ax.set_xlim(-0.3, 11.2)
        ax.set_ylim(-0.7, 2.3)
        ax.axis("off")
        ax.set_title("one fused kernel: read x once, keep every intermediate on the chip, write once"
                     if fused else
                     "eager: ten kernels, each a round trip to memory (red: a read, black: a write)")
    plt.tight_layout()
    plt.show()


draw_traffic()


# %% [markdown]
# Two things make this work. First, element-wise operations are independent across elements, so a
# program that owns elements `offsets` can run the whole chain on them without talking to any other
# program. Second, registers are plentiful for this: a block of 1024 fp32 values and a few
# temporaries fit easily.
#
# Every step of `ten_ops_torch` has a Triton counterpart that works on a whole block:
#
# | torch | Triton |
# |---|---|
# | `y * 1.5`, `y + 0.25`, `y - 0.5`, `y + x`, `y * x` | the same operators |
# | `torch.relu(y)` | `tl.maximum(y, 0.0)` |
# | `torch.abs(y)` | `tl.abs(y)` |
# | `torch.clamp(y, max=3.0)` | `tl.minimum(y, 3.0)` |
# | `torch.sigmoid(y)` | `tl.sigmoid(y)` |
#
# **Compute in fp32.** Triton's math functions (`tl.exp`, `tl.sigmoid`, ...) accept only fp32 and
# fp64 blocks: on fp16 data they fail with *Expected dtype ['fp32', 'fp64'] but got fp16*. The
# usual pattern is to convert right after the load, compute in fp32, and convert back to the
# output's dtype at the store:
#
# ```python
# x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
# ...
# tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)
# ```
#
# The conversions happen in registers and cost no memory traffic; an fp16 input still moves 2
# bytes per element each way. (And fp32 arithmetic is more accurate than ten rounded fp16 steps.)
#
# ## Exercise 2: `ten_ops_kernel` (4 points)
#
# Write the fused kernel: `out[i] = ten_ops_torch(x)[i]` for every `i < n_elements`. It is
# lesson 2's copy kernel with ten lines between the load and the store. Keep `x`: steps 9 and 10
# use the original input again, and it is still in registers.

# %% nbgrader={"grade_id": "ten_ops_kernel", "solution": true}
@triton.jit
def ten_ops_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """out = ten_ops_torch(x), in one pass: each program loads its block once and stores it once."""
    ### BEGIN SOLUTION
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = x * 1.5
    y = y + 0.25
    y = tl.maximum(y, 0.0)
    y = y - 0.5
    y = tl.abs(y)
    y = tl.minimum(y, 3.0)
    y = tl.sigmoid(y)
    y = y * 2.0
    y = y + x
    y = y * x
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)
    ### END SOLUTION


# %% [markdown]
# The test runs your kernel on 1000 fp32 elements in blocks of 256 (the last block is partial),
# compares with `ten_ops_torch`, and counts the bytes it loads and stores: one load of `x` and one
# store of `out`, 4000 bytes each.

# %% nbgrader={"grade": true, "grade_id": "test_ten_ops_kernel", "locked": true, "points": 2}
n, BLOCK_SIZE = 1000, 256
x = rand(n)
x_before = x.clone()
out = guarded_empty(n)
with memory_traffic() as moved:  # the bytes the kernel loads and stores, as Triton's interpreter counts them
    call_answer(lambda: ten_ops_kernel[(triton.cdiv(n, BLOCK_SIZE),)](x, out, n, BLOCK_SIZE=BLOCK_SIZE),
                name="ten_ops_kernel")
try:
    check_output(out, ten_ops_torch(x), name="ten_ops_kernel", inputs=[(x, x_before)])
except CheckFailed as failure:
    if "wrong)" not in str(failure):  # a stray write, a wrong dtype: the message says it all
        raise
    raise CheckFailed(f"{failure} Compare your ten lines with ten_ops_torch one by one: relu is "
                      "tl.maximum(y, 0.0), the clamp is tl.minimum(y, 3.0), and steps 9 and 10 use the "
                      "original x.") from None
if moved.counted and (moved.loaded, moved.stored) != (4 * n, 4 * n):
    raise CheckFailed(f"ten_ops_kernel loaded {moved.loaded} bytes and stored {moved.stored} for {n} fp32 "
                      f"elements: a fused kernel loads x once and stores out once ({4 * n} bytes each). An "
                      "intermediate stored and loaded back is the traffic fusion removes (a GPU's cache can "
                      "hide its time at some sizes, not its bytes): keep y in registers from the load to the "
                      "store.")
print("ten_ops_kernel matches ten_ops_torch on 1000 elements, with one load and one store.")


# %% nbgrader={"grade": true, "grade_id": "test_ten_ops_kernel_hidden", "locked": true, "points": 2}
# Hidden tests launch your ten_ops_kernel on more sizes, block sizes and dtypes when your notebook
# is graded.
### BEGIN HIDDEN TESTS
def _check_ten_ops_kernel(n, block, dtype=torch.float32):
    x = rand(n, dtype=dtype)
    x_before = x.clone()
    out = guarded_empty(n, dtype=dtype)
    what = f"ten_ops_kernel with n={n}, BLOCK_SIZE={block}, {dtype}"
    try:
        call_answer(lambda: ten_ops_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK_SIZE=block),
                    name=what)
    except CheckFailed as failure:
        if "Expected dtype" in str(failure):
            raise CheckFailed(f"{failure}. Likely: tl.sigmoid and tl.exp accept only fp32 "
                              "(and fp64): load with .to(tl.float32).") from None
        raise
    try:
        check_output(out, ten_ops_torch(x.float()).to(dtype), name=what, inputs=[(x, x_before)])
    except CheckFailed as failure:
        if "wrong)" not in str(failure):
            raise
        hint = ("compute in fp32 and store y.to(out_ptr.dtype.element_ty)" if dtype != torch.float32
                else "compare your ten lines with ten_ops_torch one by one")
        raise CheckFailed(f"{failure} Likely: {hint}.") from None


for n in [1, 2, 17, 127, 1021, 1024, 1025, 4099]:
    for block in [64, 256, 1024]:
        _check_ten_ops_kernel(n, block)
for dtype in FLOAT_DTYPES:
    for n in [1, 129, 4099]:
        _check_ten_ops_kernel(n, 256, dtype)
print("ten_ops_kernel passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## Exercise 3: `ten_ops`, one launch (4 points)
#
# Now the function users call, `ten_ops(x)`, a drop-in replacement for `ten_ops_torch(x)`. It is
# lesson 2's `add` with one input: make `x` contiguous, allocate the output with
# `torch.empty_like`, launch `ten_ops_kernel` over `triton.cdiv(n_elements, BLOCK_SIZE)` programs
# with `BLOCK_SIZE = 1024`, return the output. Any shape and any dtype of `FLOAT_DTYPES`; `x` is
# left unchanged.
#
# The test counts your launches: a fused function launches **exactly one** kernel. (Ten Triton
# kernels, one per step, would be correct and exactly as slow as eager PyTorch.)

# %% nbgrader={"grade_id": "ten_ops", "solution": true}
def ten_ops(x: torch.Tensor) -> torch.Tensor:
    """ten_ops_torch(x) computed by one launch of ten_ops_kernel; same shape and dtype as x."""
    ### BEGIN SOLUTION
    x = x.contiguous()
    out = torch.empty_like(x)
    n_elements = x.numel()
    BLOCK_SIZE = 1024
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    ten_ops_kernel[grid](x, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)
    return out
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_ten_ops", "locked": true, "points": 2}
for n, dtype in [(98432, torch.float32), (4099, torch.float16)]:
    x = rand(n, dtype=dtype)
    x_before = x.clone()
    with guarded_allocations(), count_launches() as launches:
        try:
            out = call_answer(ten_ops, x)
        except CheckFailed as failure:
            if "Expected dtype" in str(failure):
                raise CheckFailed(f"{failure}. On {dtype} input: tl.sigmoid and tl.exp "
                                  "accept only fp32 (and fp64): load with .to(tl.float32).") from None
            raise
    expect_launched(launches, "ten_ops", out)
    if len(launches) != 1:
        raise CheckFailed(f"ten_ops launched {len(launches)} kernels ({', '.join(launches)}): a fused "
                          "function launches exactly one, which does all ten steps.")
    check_output(out, ten_ops_torch(x.float()).to(dtype), name=f"ten_ops on {n} elements of {dtype}",
                 inputs=[(x, x_before)])
print("ten_ops is right, with one kernel launch.")


# %% nbgrader={"grade": true, "grade_id": "test_ten_ops_hidden", "locked": true, "points": 2}
# Hidden tests check ten_ops on more sizes, dtypes and layouts when your notebook is graded.
### BEGIN HIDDEN TESTS
def _check_ten_ops(x, what):
    x_before = x.clone()
    with guarded_allocations(), count_launches() as launches:
        try:
            out = call_answer(ten_ops, x, name=f"ten_ops on {what}")
        except CheckFailed as failure:
            if "Expected dtype" in str(failure):
                raise CheckFailed(f"{failure}. Likely: tl.sigmoid and tl.exp accept only "
                                  "fp32 (and fp64): load with .to(tl.float32).") from None
            raise
    expect_launched(launches, f"ten_ops on {what}", out)
    if len(launches) != 1:
        raise CheckFailed(f"ten_ops on {what} launched {len(launches)} kernels: a fused function "
                          "launches exactly one.")
    check_output(out, ten_ops_torch(x.float()).to(x.dtype), name=f"ten_ops on {what}",
                 inputs=[(x, x_before)])


for n in [1, 2, 3, 1021, 1024, 1025, 4099] + sized([1_000_003], []):
    _check_ten_ops(rand(n), f"{n} elements")
for dtype in FLOAT_DTYPES:
    _check_ten_ops(rand(4099, dtype=dtype), f"4099 elements of {dtype}")
    _check_ten_ops(rand(37, 53, dtype=dtype), f"a (37, 53) tensor of {dtype}")
_check_ten_ops(rand(2 * 4099)[::2], "a non-contiguous x = x[::2]")
_check_ten_ops(rand(53, 37).t(), "a transposed x = x.t() of shape (37, 53)")
print("ten_ops passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## 4. Measuring: eager, `torch.compile`, your kernel, and the floor
#
# Time to check the prediction. We time three implementations over sizes from 2^12 to 2^26
# elements (2^10 to 2^16 under the interpreter):
#
# - **eager**: `ten_ops_torch`, ten kernels;
# - **`torch.compile(ten_ops_torch)`**: PyTorch's compiler, which we look at in the next section,
#   compiled for each size it meets (the setup cell's `torch_compiled`; GPU only: on the CPU it
#   generates C++, not Triton);
# - **`ten_ops`**: your fused kernel.
#
# and draw two **floors**, the time that the bytes alone need at this device's copy bandwidth:
# `fused_bytes / copy_bandwidth()` (no implementation of this function can beat it, since it must
# read `x` and write the result) and `eager_bytes / copy_bandwidth()` (the best ten separate kernels
# can do). Times, not GB/s, this time: the three implementations compute the same function but move
# different amounts of data, and time is what the researcher cares about.

# %%
def plot_times(sizes, times, floors, title):
    """Time against problem size (log-log): one line per implementation, the floors dashed."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, values in times.items():
        ax.plot(sizes, values, marker="o", label=label)
    for (label, values), color in zip(floors.items(), ("darkgrey", "dimgrey")):
        ax.plot(sizes, values, linestyle="--", color=color, label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("elements")
    ax.set_ylabel("time (ms)")
    ax.set_title(title + ("" if ON_GPU else " (interpreter: not GPU numbers)"))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    plt.show()


sizes = sized([2**k for k in range(12, 27, 2)], [2**k for k in range(10, 17, 2)])
roof = copy_bandwidth() * 1e9  # bytes per second
x = rand(1000)
with guarded_allocations():  # first make sure that ten_ops is right: a stub or a bug stops here
    check_output(call_answer(ten_ops, x), ten_ops_torch(x), name="ten_ops")
ten_ops_compiled = torch_compiled(ten_ops_torch, rand(sizes[0]))  # compiled for each size it meets
times = {"eager (10 kernels)": [], "ten_ops (your fused kernel)": []}
if ten_ops_compiled is not None:
    times["torch.compile"] = []
for n in sizes:
    x = rand(n)
    times["eager (10 kernels)"].append(bench_ms(lambda: ten_ops_torch(x)))
    times["ten_ops (your fused kernel)"].append(bench_ms(lambda: ten_ops(x)))
    if ten_ops_compiled is not None:
        times["torch.compile"].append(bench_ms(lambda: ten_ops_compiled(x)))
    del x
eager_floor = [eager_bytes(n, 4) / roof * 1e3 for n in sizes]
fused_floor = [fused_bytes(n, 4) / roof * 1e3 for n in sizes]
for i, n in enumerate(sizes):
    print(f"n = 2^{n.bit_length() - 1:2}: " + ", ".join(f"{label.split(' (')[0]} {values[i]:.4g} ms"
                                                       for label, values in times.items())
          + f"; floors: eager {eager_floor[i]:.4g} ms, fused {fused_floor[i]:.4g} ms")
if not ON_GPU:
    print("Interpreter: these times measure Python on the CPU and mean nothing about GPUs.")
plot_times(sizes, times, {"eager floor: eager_bytes / copy bandwidth": eager_floor,
                          "fused floor: fused_bytes / copy bandwidth": fused_floor},
           "Ten element-wise operations, fp32")
# Your own ratios, the ones the reading below is about.
for i, where in [(0, "smallest"), (-1, "largest")]:
    eager, fused = times["eager (10 kernels)"][i], times["ten_ops (your fused kernel)"][i]
    print(f"At the {where} size: fused {eager / fused:.3g}x faster than eager; eager at "
          f"{eager_floor[i] / eager:.0%} of its floor's speed, fused at {fused_floor[i] / fused:.0%}"
          + (f"; torch.compile {times['torch.compile'][i] / fused:.3g}x your kernel's time"
             if "torch.compile" in times else ""))

# %% [markdown]
# **Reading the plot.** Check each point against your printed ratios. (Under the interpreter they
# time Python on the CPU and mean nothing about GPUs.)
#
# - **Large sizes: the memory wall.** Eager runs close to its floor of 22 passes over the data,
#   and your fused kernel close to the fused floor of 2 passes: about ten times faster, as the
#   byte count predicted, and no faster, since the fused kernel is now limited by the one read and
#   one write it cannot avoid. (For reference, on an H200 at 2^26 elements: eager 1.41 ms,
#   fused 0.131 ms, `torch.compile` 0.130 ms, fused floor 0.130 ms.)
# - **Small sizes: launch overhead.** At the left every kernel takes a few microseconds whatever
#   it does, so eager costs ten launches and the fused kernel one. Fusion wins there too, for a
#   different reason: fewer launches.
# - **`torch.compile` matches the hand-written kernel.** For a chain of element-wise operations the
#   compiler finds the same fusion you wrote by hand. Section 5 shows what it generates.
#
# ## Exercise 4: `ten_ops` at the speed of memory (2 points)
#
# No new code: this test measures `ten_ops` on 2^26 fp32 elements on a GPU, counting the bytes of
# the fused version (one read, one write), and expects at least **60% of this device's copy
# bandwidth**. A kernel that reads `x` once and writes once with `BLOCK_SIZE = 1024` passes easily.
# Under the interpreter the result is advisory. (Why any GPU can pass: the target is a fraction of
# the same device's copy, and the fused kernel stays memory-bound everywhere: about 20 operations,
# one exponential among them, per 8 bytes moved is 2.5 FLOP/byte, far left of even a T4's ridge
# point, 8.1 TFLOP/s / 320 GB/s = 25 FLOP/byte.)

# %% nbgrader={"grade": true, "grade_id": "test_ten_ops_performance", "locked": true, "points": 2}
n = sized(2**26, 2**12)
x = rand(n)
with count_launches() as launches:
    out = call_answer(ten_ops, x)
expect_launched(launches, "ten_ops", out)
check_output(out, ten_ops_torch(x), name="ten_ops")
del out
with exclusive_gpu():  # under the grader, no other notebook runs on the GPU meanwhile
    fused_ms, eager_ms = bench_ms(ten_ops, x, expect=ten_ops_torch), bench_ms(ten_ops_torch, x)
    if ON_GPU:
        print(f"ten_ops {fused_ms:.4g} ms, eager {eager_ms:.4g} ms: {eager_ms / fused_ms:.1f}x faster.")
    check_bandwidth(gbps(2 * n * x.element_size(), fused_ms), 0.6, "ten_ops")


# %% [markdown]
# ## 5. What `torch.compile` writes for you
#
# How did `torch.compile` match your kernel without anyone writing one? It works in three steps:
#
# 1. **Capture.** TorchDynamo runs your Python function once, records the torch operations it
#    calls into a graph (the ten steps, with their inputs and outputs), and puts a guard on the
#    assumptions it made (shapes, dtypes, device), to recompile if they change.
# 2. **Fuse.** TorchInductor, the compiler behind it, sees the whole graph at once, which eager mode
#    never does. It notices that the ten operations are element-wise on the same elements and that
#    nobody outside needs the intermediate tensors, so it schedules them into one loop.
# 3. **Generate.** On a GPU it writes that loop as a **Triton kernel**, picks block sizes (with a
#    little autotuning), and compiles it with Triton. On the CPU it writes C++ instead.
#
# So most people benefit from Triton without writing a line of it: `torch.compile` is a program
# that writes Triton kernels. The cell below prints the kernel it generated for `ten_ops_torch`
# (on a GPU). Look for the same structure as yours: a `program_id`, offsets, a mask, one `tl.load`,
# ten operations, one `tl.store`.

# %%
def generated_triton_code(fn, *args):
    """The Triton kernel(s) that torch.compile generates for fn(*args), as text (GPU only)."""
    from torch._inductor.utils import run_and_get_code
    _, codes = run_and_get_code(torch.compile(fn), *args)
    code = "\n".join(codes)
    kernels = []
    start = code.find("@triton.jit")
    while start >= 0:
        end = code.find("'''", start)  # Inductor keeps each kernel's source in a ''' string
        kernels.append(code[start:end if end >= 0 else None].rstrip())
        start = code.find("@triton.jit", start + 1)
    return "\n\n".join(kernels) or code


if ON_GPU:
    try:
        print(generated_triton_code(ten_ops_torch, rand(2**20)))
    except Exception as error:  # a compiler that does not work on this GPU, an API that moved
        print(f"Could not show torch.compile's code here ({type(error).__name__}: {error}).")
else:
    print("Interpreter mode: torch.compile on the CPU generates C++ (with OpenMP), not Triton, so "
          "there is no Triton kernel to show. On a GPU this cell prints the Triton kernel that "
          "torch.compile writes for ten_ops_torch: one load, the ten operations, one store.")

# %% [markdown]
# (The names are generated: `in_ptr0`, `tmp0`, `tmp1`, ... and `xnumel`, `XBLOCK` for your
# `n_elements` and `BLOCK_SIZE`. Some steps may look different, e.g. the sigmoid written out with
# `tl.exp`, but it is the same computation in the same single pass.)
#
# If the compiler does this automatically, why learn to write kernels? What it does today is a lot:
# TorchInductor fuses chains of element-wise operations and reductions (a softmax among them) into
# Triton kernels; with `mode="max-autotune"` it also generates matrix multiplications from Triton
# templates, benchmarks them against cuBLAS, and fuses the element-wise work that follows a matmul
# (a bias, an activation: the *epilogue*) into the template's kernel; it rewrites attention
# written out as `softmax(q @ k.T) @ v` into PyTorch's fused `scaled_dot_product_attention`
# (FlashAttention-style kernels); and FlexAttention (`torch.nn.attention.flex_attention`) compiles
# attention variants written as small Python functions into flash-style Triton kernels.
#
# Notice where those templates come from: people wrote them, by hand, in Triton. A compiler
# generates what its rules and templates cover and does not invent algorithms. Hand-written
# kernels still win for a new algorithm (FlashAttention, which fused the online softmax into tiled
# matrix products, was one, before any compiler knew it), a custom data format (a new
# quantisation, a sparse layout), work whose shape depends on the data (a mixture of experts
# sending each token to different weights), and shapes where the generated kernel is slow.
# Section 7 measures the last case for you: your softmax against `torch.softmax` and
# `torch.compile` on wide rows. Knowing what the generated code does is also what tells you when to
# trust it.

# %% [markdown] nbgrader={"grade": true, "grade_id": "written_fusion", "points": 2, "solution": true}
# **Written answer (2 points).** Back to the researcher's ten kernels. In a few sentences:
# (1) what is the primary hardware bottleneck they face, and why; (2) what kernel fusion is, and
# why it reduces memory traffic; (3) how the Triton path solves the researcher's problem. Use your
# byte counts and the measured times.
#
# ### BEGIN SOLUTION
# (1) The memory wall: the memory-bandwidth bottleneck. Each of the ten kernels does about one
# operation per element but must read its input(s) from global memory (HBM/VRAM) and write its
# output back; the GPU computes about a hundred times faster than memory can deliver fp32 elements,
# so it spends almost all its time moving data: 22 passes over the array (5.9 GB at 2^26 fp32,
# about 1.41 ms on an H200), not computing.
# (2) Kernel fusion combines several operations into one kernel: each program loads its block
# once, applies all the operations while the data sits in registers (or on-chip SRAM), and stores
# only the final result. The intermediate results are never written to and read back from global
# memory, so the traffic drops to what the function fundamentally needs: here one read and one
# write, 2 passes instead of 22.
# (3) With Triton the researcher writes that fused kernel in a few lines (load, ten operations,
# store) instead of waiting for the framework to provide it: it runs at the speed of memory,
# 0.131 ms against 1.41 ms, the roughly 10x predicted by the byte count. (torch.compile finds
# this particular fusion automatically, also by generating a Triton kernel.)
# ### END SOLUTION

# %% [markdown] nbgrader={"grade": true, "grade_id": "written_torch_compile", "points": 2, "solution": true}
# **Written answer (2 points).** Explain how `torch.compile` lets a PyTorch user benefit from
# Triton without writing any kernel. What does it do with `ten_ops_torch`, and what kind of
# computation can it *not* give you?
#
# ### BEGIN SOLUTION
# torch.compile captures the Python function as a graph of torch operations (TorchDynamo, with
# guards that trigger a recompile when shapes or dtypes change), and hands the graph to its
# compiler, TorchInductor. Seeing the whole graph, Inductor fuses operations that eager mode runs
# one by one (here the ten element-wise steps, whose intermediates nobody else uses) into one
# loop, and on a GPU it generates that loop as Triton code, chooses block sizes (autotuning), and
# lets Triton compile it. The user changes one line, `torch.compile(fn)`, and gets a fused Triton
# kernel as fast as the hand-written one (0.130 ms vs 1.41 ms eager on an H200). It cannot give
# you what its rules and templates do not cover: it maps attention to SDPA or FlexAttention
# because people wrote those flash-style kernels by hand, but a genuinely new algorithm, a custom
# data format, or a better kernel for a shape where its generated code is slow (the wide-row
# softmax of section 7) is still yours to write in Triton.
# ### END SOLUTION

# %% [markdown]
# ## 6. Fusion with a reduction inside: softmax
#
# Element-wise chains are the easy case: every element is on its own. Most layers of a network
# also **reduce**: a sum, a maximum, a mean over a row. The most famous is the softmax, applied to
# every row of a matrix (the attention scores of a Transformer, the logits of a classifier):
#
# $$\text{softmax}(x)_j = \frac{e^{x_j}}{\sum_k e^{x_k}} \qquad \text{for each row } x.$$
#
# Each output needs the sum over its whole row, so programs can no longer work on arbitrary
# slices of a flat array: **a program must own whole rows**. Then it can do everything for its rows
# in one pass: load them, reduce, compute, store them.
#
# **Numerical stability first.** `exp` overflows fp32 above about 88.7 (`e^89` is larger than the
# largest fp32 number, 3.4e38), so the formula as written breaks down on perfectly ordinary inputs:

# %%
row = torch.tensor([[10.0, 20.0, 30.0], [100.0, 200.0, 300.0]])
print("exp(row)                  :", torch.exp(row).tolist())
naive = torch.exp(row) / torch.exp(row).sum(dim=1, keepdim=True)
print("naive softmax             :", naive.tolist())
shifted = row - row.max(dim=1, keepdim=True).values
stable = torch.exp(shifted) / torch.exp(shifted).sum(dim=1, keepdim=True)
print("softmax of x - max(x)     :", stable.tolist())
print("torch.softmax             :", torch.softmax(row, dim=1).tolist())

# %% [markdown]
# The second row overflows: `inf / inf` is NaN. The cure is the identity
#
# $$\frac{e^{x_j}}{\sum_k e^{x_k}} = \frac{e^{x_j - m}}{\sum_k e^{x_k - m}} \qquad \text{for any } m,$$
#
# (multiply top and bottom by $e^{-m}$). Choosing $m = \max_k x_k$ makes every exponent $\le 0$:
# each `exp` is at most 1, and the largest is exactly 1, so the sum is at least 1 and never
# overflows or divides by zero. Every serious softmax subtracts the row maximum; so will yours.
#
# A softmax step by step, in torch, is five kernels (max, subtract, exp, sum, divide) and about
# eight passes over the matrix. `torch.softmax` is already a single fused kernel, so the target here
# is not to crush eager PyTorch by 10x; it is to build the fused kernel yourself, with a reduction
# in the middle, and to match or beat a carefully engineered library kernel.
#
# ### One program, a block of rows
#
# A row of `n_cols` elements lives in one block of `BLOCK_N = triton.next_power_of_2(n_cols)`
# columns (block sizes are powers of two); the lanes past `n_cols` are masked off. What should a
# masked lane hold? Not 0: the maximum of a row of negative numbers would become 0, and each masked
# lane would add `exp(0 - max)` to the sum. Load masked lanes with `other=-float("inf")`: they
# never win the maximum, and `exp(-inf) = 0` adds nothing to the sum.
#
# **Warps.** A program does not run on one thread. Triton runs each program on `num_warps` warps of
# 32 threads, a launch option that every kernel takes (`kernel[grid](..., num_warps=8)`; the
# default is 4 warps, 128 threads), and spreads the program's block over those threads: a block
# of 1024 elements on 4 warps gives each thread 8 elements, held in its registers.
#
# One row per program is the simplest plan, and for wide rows (thousands of columns) it is the
# right one. For narrow rows it loses speed. Section 7 measures why: beside the one-row softmax it
# times a kernel that only copies one row per program, with the same grid, block and warps. On an
# H200 at 128 columns (2^24 elements) that copy was as slow as the softmax, 1608 against 1586 GB/s
# (`torch.softmax`: 3504): the loss is the size of each program's work, not its arithmetic. A row
# of 128 fp32 numbers is 512 bytes in and 512 out, a third of what lesson 2's block of 256 moves
# (two inputs of 1 KiB and an output of 1 KiB), and every program pays a fixed cost to start, work
# out its addresses and finish. At 256 columns the copy reached 2992 GB/s and the softmax 2740, 92%
# of it: there the two reductions (`tl.max`, then `tl.sum`) cost the rest. A reduction combines
# each thread's own elements, then the threads of a warp (which swap registers directly), then the
# warps, which meet only in the chip's shared memory behind a barrier where every warp waits for
# the slowest; meanwhile the program issues no loads.
#
# The fix for both: give each program **several rows**, a 2-D block of `ROWS` x `BLOCK_N`
# elements. Each load then moves `ROWS` times as many bytes, and one round of reductions (one
# barrier) serves `ROWS` rows. Everything is written on that 2-D block, with lesson 3's 2-D masks and row strides:
#
# ```python
# rows = pid * ROWS + tl.arange(0, ROWS)              # the rows of this program, shape (ROWS,)
# cols = tl.arange(0, BLOCK_N)                        # shape (BLOCK_N,)
# mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)     # shape (ROWS, BLOCK_N)
# x = tl.load(x_ptr + rows[:, None] * x_row_stride + cols[None, :], mask=mask, other=-float("inf"))
# row_max = tl.max(x, axis=1)                         # one maximum per row, shape (ROWS,)
# x - row_max[:, None]                                # broadcast back over the columns
# ```
#
# `tl.max(x, axis=1)` and `tl.sum(x, axis=1)` reduce along the columns, giving one value per row;
# `[:, None]` turns a `(ROWS,)` block into a `(ROWS, 1)` column that broadcasts against
# `(ROWS, BLOCK_N)`, exactly as in NumPy. The **row stride** is the distance in elements between
# the starts of two consecutive rows: `n_cols` for a contiguous matrix, more for a slice such as
# `big[:, :n_cols]`. Passing it lets the kernel read such views without a copy.
#
# The last program's block may hang past the last row: its extra rows are fully masked, load
# `-inf` everywhere and compute NaN (`-inf - (-inf)`). That is harmless, since they are never
# stored (under the interpreter NumPy may print a `RuntimeWarning` about it; ignore it).

# %% [markdown]
# **Multiple choice (1 point).** The softmax kernel works on a 2-D *tile* of rows and columns, not
# on single threads. Why is Triton's programming model especially relevant for deep-learning
# kernels? Set `answer_q_blocks` to one letter in the cell below.
#
# - a) Because it only supports fp32.
# - b) Because it disables the GPU's thermal throttling.
# - c) Because it simplifies user-interface development.
# - d) Because deep-learning data (matrices, batches of rows, attention maps) is naturally
#   structured in blocks, and a Triton program works on a whole block at a time.

# %% nbgrader={"grade_id": "q_blocks", "solution": true}
# Replace the two lines below with one line: answer_q_blocks = "<your letter>"
### BEGIN SOLUTION
answer_q_blocks = "d"  # one of "a", "b", "c", "d"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_q_blocks", "locked": true, "points": 1}
check_choice(globals().get("answer_q_blocks"), "answer_q_blocks")
print("Your answer is recorded; it is checked when your notebook is graded.")
### BEGIN HIDDEN TESTS
check_choice(answer_q_blocks, "answer_q_blocks", expected="d",
             why="Think about the shape of the data a Transformer works on.")
### END HIDDEN TESTS

# %% [markdown]
# ## Exercise 5: `softmax_kernel` (5 points)
#
# Write the kernel: each program computes the softmax of `ROWS` consecutive rows (program `pid`
# owns rows `pid * ROWS` to `pid * ROWS + ROWS - 1`), for a matrix of `n_rows` x `n_cols` whose
# columns are contiguous and whose rows start `x_row_stride` elements apart (`out_row_stride` for
# the output). `BLOCK_N` is a power of two `>= n_cols`. Steps:
#
# 1. the rows, the columns, the 2-D mask and the pointers, as above;
# 2. load with `other=-float("inf")`, and convert to fp32 (`tl.exp` needs it);
# 3. subtract each row's maximum; `tl.exp`; sum each row; divide;
# 4. store, masked, converted to the output's dtype.
#
# One load and one store: the row never leaves the chip in between. (Triton has a `tl.softmax`;
# the test checks that you write the steps yourself.) Write `tl.exp` plainly: on NVIDIA GPUs
# Triton already compiles an fp32 `tl.exp(x)` to a multiplication by log2(e) and the hardware's
# fast `ex2.approx` instruction, so rewriting it with `tl.exp2` gains nothing.

# %% nbgrader={"grade_id": "softmax_kernel", "solution": true}
@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_rows, n_cols, x_row_stride, out_row_stride,
                   ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    """Softmax of each row, ROWS rows per program, in one load and one store."""
    ### BEGIN SOLUTION
    pid = tl.program_id(axis=0)
    rows = pid * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * x_row_stride + cols[None, :], mask=mask, other=-float("inf"))
    x = x.to(tl.float32)
    x = x - tl.max(x, axis=1)[:, None]
    numerator = tl.exp(x)
    y = numerator / tl.sum(numerator, axis=1)[:, None]
    tl.store(out_ptr + rows[:, None] * out_row_stride + cols[None, :], y.to(out_ptr.dtype.element_ty),
             mask=mask)
    ### END SOLUTION


# %% [markdown]
# The test launches your kernel on a 7 x 129 fp32 matrix with `BLOCK_N = 256`, once with one row
# per program and once with 4 rows per program (the second program's last row is past the end),
# with values scaled by 100 so that a softmax without the maximum subtraction overflows.

# %% nbgrader={"grade": true, "grade_id": "test_softmax_kernel", "locked": true, "points": 2}
code = getattr(getattr(softmax_kernel, "fn", None), "__code__", None)  # the Python function inside
if code is not None and "softmax" in code.co_names:
    raise CheckFailed("softmax_kernel calls tl.softmax: write the steps yourself "
                      "(max, exp, sum, divide).")
n_rows, n_cols, BLOCK_N = 7, 129, 256
for ROWS, scale in [(1, 1.0), (4, 1.0), (4, 100.0)]:
    x = rand(n_rows, n_cols).mul_(scale)  # in place: keeps the guard bands around x
    x_before = x.clone()
    out = guarded_empty((n_rows, n_cols))
    grid = (triton.cdiv(n_rows, ROWS),)
    with np.errstate(invalid="ignore"):  # rows past the end may compute NaN; they are not stored
        call_answer(lambda: softmax_kernel[grid](x, out, n_rows, n_cols, x.stride(0), out.stride(0),
                                                 ROWS=ROWS, BLOCK_N=BLOCK_N), name="softmax_kernel")
    try:
        check_output(out, torch.softmax(x, dim=-1), name=f"softmax_kernel with ROWS={ROWS}, inputs "
                     f"scaled by {scale}", inputs=[(x, x_before)])
    except CheckFailed as failure:
        if "wrong)" not in str(failure):  # a stray write, a wrong dtype: the message says it all
            raise
        if scale > 1 and not bool(torch.isfinite(out).all()):
            raise CheckFailed(f"{failure} With large inputs exp overflows to inf: did you subtract "
                              "each row's maximum before tl.exp?") from None
        raise CheckFailed(f"{failure} Did you load masked lanes with other=-float('inf') (129 columns "
                          "in a block of 256), use the row stride, and reduce along axis=1?") from None
print("softmax_kernel is right on 7 x 129, with 1 and 4 rows per program, and on large inputs.")


# %% nbgrader={"grade": true, "grade_id": "test_softmax_kernel_hidden", "locked": true, "points": 3}
# Hidden tests launch your softmax_kernel on more shapes, strides, block shapes and dtypes when
# your notebook is graded.
### BEGIN HIDDEN TESTS
def _check_softmax_kernel(n_rows, n_cols, rows, wider=1, pad=0, scale=1.0, dtype=torch.float32):
    block_n = triton.next_power_of_2(n_cols) * wider
    x = rand(n_rows, n_cols + pad, dtype=dtype).mul_(scale)[:, :n_cols]
    x_before = x.clone()
    out = guarded_empty((n_rows, n_cols), dtype=dtype)
    grid = (triton.cdiv(n_rows, rows),)
    with np.errstate(invalid="ignore"):
        call_answer(lambda: softmax_kernel[grid](x, out, n_rows, n_cols, x.stride(0), out.stride(0),
                                                 ROWS=rows, BLOCK_N=block_n), name="softmax_kernel")
    what = (f"softmax_kernel on {n_rows} x {n_cols} ({dtype}, row stride {x.stride(0)}), ROWS={rows}, "
            f"BLOCK_N={block_n}" + (f", inputs scaled by {scale}" if scale != 1.0 else ""))
    try:
        check_output(out, torch.softmax(x.float(), dim=-1).to(dtype), name=what, inputs=[(x, x_before)])
    except CheckFailed as failure:
        if "wrong)" not in str(failure):
            raise
        if not bool(torch.isfinite(out).all()) and scale > 1:
            hint = "exp overflowed: subtract each row's maximum before tl.exp."
        elif pad:
            hint = "the rows are not contiguous: row r starts at x_ptr + r * x_row_stride."
        elif n_cols < block_n:
            hint = "masked lanes must load other=-float('inf') so that they add nothing to the sum."
        else:
            hint = "check the 2-D offsets, and reduce along axis=1."
        raise CheckFailed(f"{failure} Likely: {hint}") from None


for n_rows, n_cols in [(1, 1), (1, 1000), (7, 129), (1000, 3), (33, 64), (5, 2049)]:
    for rows in (1, 2, 8):
        _check_softmax_kernel(n_rows, n_cols, rows)
_check_softmax_kernel(7, 129, 4, wider=2)
_check_softmax_kernel(37, 100, 4, pad=28)
_check_softmax_kernel(37, 100, 1, pad=5)
_check_softmax_kernel(50, 300, 2, scale=100.0)
_check_softmax_kernel(3, 4096, 1, scale=100.0)
for dtype in FLOAT_DTYPES:
    _check_softmax_kernel(19, 77, 4, dtype=dtype)
    _check_softmax_kernel(19, 77, 4, scale=50.0, dtype=dtype)
print("softmax_kernel passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## Exercise 6: `softmax`, choosing the block shape (5 points)
#
# Now `softmax(x)` for a 2-D tensor `x`, a drop-in replacement for `torch.softmax(x, dim=-1)`. The
# wrapper makes the decisions the kernel leaves open:
#
# 1. **Layout.** The kernel needs contiguous columns (`x.stride(1) == 1`); if they are not (a
#    transposed matrix), make `x` contiguous. Rows need not be contiguous: pass `x.stride(0)`.
#    Allocate the output as a new contiguous `(n_rows, n_cols)` tensor of `x`'s dtype and device
#    (`torch.empty`), and pass its row stride too.
# 2. **Block shape.** `BLOCK_N = triton.next_power_of_2(n_cols)`. Then a few rows per program,
#    so that a program handles a few KiB: `ROWS = min(4, max(1, 4096 // BLOCK_N))` (4 rows of up
#    to 1024 columns, 2 of 2048, one row of 4096 or more), but no more rows than the matrix has
#    (`min(ROWS, triton.next_power_of_2(n_rows))`, a power of two too). More is not better: on an
#    H200, 8 rows of 256 run about 3% slower than 4.
# 3. **Warps.** More elements per program need more threads, or each thread holds more elements
#    in its registers than it has. The rule, `warps_for` in the next cell: 4 warps up to 4096
#    elements per program (`ROWS * BLOCK_N`), 8 up to 8192, 16 beyond. Launch with the keyword
#    `num_warps=warps_for(ROWS * BLOCK_N)`.
# 4. **Launch** one program per `ROWS` rows: `triton.cdiv(n_rows, ROWS)` programs. One launch.
#
# Rows up to a few thousand columns fit in one block; for rows of 16384 columns or more a
# one-block-per-row kernel starts to run out of registers, and the next step is a loop over
# chunks of the row: lesson 5 writes one for layer norm's row reductions, and lesson 7 one for the
# softmax (the "online softmax"). Here rows up to 16384 columns are enough.

# %%
def warps_for(elements):
    """num_warps for a program that holds `elements` values: 4 warps (128 threads) up to 4096,
    8 up to 8192, 16 beyond, so that no thread holds more than 32 of them."""
    return 4 if elements <= 4096 else 8 if elements <= 8192 else 16


# %% nbgrader={"grade_id": "softmax", "solution": true}
def softmax(x: torch.Tensor) -> torch.Tensor:
    """torch.softmax(x, dim=-1) for a 2-D x, computed by one launch of softmax_kernel."""
    ### BEGIN SOLUTION
    assert x.dim() == 2, f"softmax expects a 2-D tensor, got shape {tuple(x.shape)}"
    if x.stride(1) != 1:
        x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    BLOCK_N = triton.next_power_of_2(n_cols)
    # Narrow rows: up to 4 rows a program, so that each moves a few KiB per load and one round of
    # reductions serves several rows; wide rows: one row a program, with more warps.
    ROWS = min(max(1, min(4, 4096 // BLOCK_N)), triton.next_power_of_2(n_rows))
    grid = (triton.cdiv(n_rows, ROWS),)
    softmax_kernel[grid](x, out, n_rows, n_cols, x.stride(0), out.stride(0),
                         ROWS=ROWS, BLOCK_N=BLOCK_N, num_warps=warps_for(ROWS * BLOCK_N))
    return out
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_softmax", "locked": true, "points": 2}
for shape, scale in [((300, 129), 1.0), ((64, 256), 100.0)]:
    x = rand(*shape).mul_(scale)  # in place: keeps the guard bands around x
    x_before = x.clone()
    with guarded_allocations(), count_launches() as launches, np.errstate(invalid="ignore"):
        out = call_answer(softmax, x)
    expect_launched(launches, "softmax", out)
    if len(launches) != 1:
        raise CheckFailed(f"softmax launched {len(launches)} kernels: the fused softmax is one launch.")
    try:
        check_output(out, torch.softmax(x, dim=-1), name=f"softmax on {shape}, scale {scale}",
                     inputs=[(x, x_before)])
    except CheckFailed as failure:
        if "wrong)" not in str(failure):
            raise
        if scale > 1 and not bool(torch.isfinite(out).all()):
            raise CheckFailed(f"{failure} exp overflowed: subtract each row's maximum.") from None
        raise CheckFailed(f"{failure} Check BLOCK_N = next_power_of_2(n_cols), the masked lanes "
                          "(other=-float('inf')), the grid (cdiv(n_rows, ROWS)) and the row "
                          "strides you pass.") from None
print("softmax is right on (300, 129) and (64, 256), with one kernel launch.")


# %% nbgrader={"grade": true, "grade_id": "test_softmax_hidden", "locked": true, "points": 3}
# Hidden tests check softmax on more shapes, layouts and dtypes when your notebook is graded.
### BEGIN HIDDEN TESTS
def _check_softmax(x, what, scaled=False):
    x_before = x.clone()
    with guarded_allocations(), count_launches() as launches, np.errstate(invalid="ignore"):
        out = call_answer(softmax, x, name=f"softmax on {what}")
    expect_launched(launches, f"softmax on {what}", out)
    if len(launches) != 1:
        raise CheckFailed(f"softmax on {what} launched {len(launches)} kernels: one launch, please.")
    try:
        check_output(out, torch.softmax(x.float(), dim=-1).to(x.dtype), name=f"softmax on {what}",
                     inputs=[(x, x_before)])
    except CheckFailed as failure:
        if "wrong)" not in str(failure):
            raise
        if scaled and not bool(torch.isfinite(out).all()):
            hint = "exp overflowed: subtract each row's maximum"
        elif x.stride(-1) != 1:
            hint = "the columns are not contiguous: make x contiguous when x.stride(1) != 1"
        elif x.stride(0) != x.shape[1]:
            hint = "the rows are not contiguous: pass x.stride(0) as the row stride"
        elif x.shape[1] > 1024:
            hint = "wide rows: BLOCK_N must be next_power_of_2(n_cols), with no cap"
        else:
            hint = "check BLOCK_N = next_power_of_2(n_cols), other=-float('inf') and the grid"
        raise CheckFailed(f"{failure} Likely: {hint}.") from None


for shape in [(1, 1), (1, 1000), (7, 129), (1000, 3), (2, 16384), (129, 64), (5, 2049)]:
    _check_softmax(rand(*shape), f"shape {shape}")
_check_softmax(rand(257, 96).mul_(100), "(257, 96) scaled by 100", scaled=True)
_check_softmax(rand(40, 300)[:, :200], "a slice x[:, :200] of a (40, 300) tensor")
_check_softmax(rand(70, 33).t(), "a transposed (33, 70) tensor")
_check_softmax(rand(9, 2 * 100)[:, ::2], "a column-strided x[:, ::2]")
for dtype in FLOAT_DTYPES:
    _check_softmax(rand(33, 250, dtype=dtype), f"(33, 250) of {dtype}")
    _check_softmax(rand(33, 250, dtype=dtype).mul_(50), f"(33, 250) of {dtype} scaled by 50",
                   scaled=True)
print("softmax passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## 7. Measuring the softmax
#
# Softmax reads the matrix once and writes it once: `2 * n_rows * n_cols * element_size` bytes,
# the same floor as any fused element-wise kernel. We measure GB/s for widths from 128 to 16384
# columns, keeping the matrix at 2^24 elements (2^12 under the interpreter), for:
#
# - `torch.softmax(x, dim=-1)`;
# - your `softmax` (several rows per program when rows are narrow);
# - your `softmax_kernel` forced to **one row per program** (`ROWS = 1`), to see what packing rows
#   buys;
# - a kernel that only **copies** one row per program, with the same grid, block and warps: the
#   memory traffic of the one-row softmax without its reductions, to test section 6's diagnosis;
# - `torch.compile` of `torch.softmax` (GPU only).

# %%
def one_row_per_program(x):
    """softmax_kernel with ROWS = 1, for comparison (x contiguous, 2-D)."""
    out = torch.empty_like(x)
    block_n = triton.next_power_of_2(x.shape[1])
    softmax_kernel[(x.shape[0],)](x, out, x.shape[0], x.shape[1], x.stride(0), out.stride(0),
                                  ROWS=1, BLOCK_N=block_n, num_warps=warps_for(block_n))
    return out


@triton.jit
def copy_rows_kernel(x_ptr, out_ptr, n_cols, BLOCK_N: tl.constexpr):
    """Copies row `program_id` of a contiguous matrix: a softmax program's loads and stores, nothing else."""
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    tl.store(out_ptr + row * n_cols + cols, tl.load(x_ptr + row * n_cols + cols, mask=mask), mask=mask)


def copy_one_row_per_program(x):
    """x copied by copy_rows_kernel, with one_row_per_program's grid, block and warps."""
    out = torch.empty_like(x)
    block_n = triton.next_power_of_2(x.shape[1])
    copy_rows_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK_N=block_n, num_warps=warps_for(block_n))
    return out


x = rand(100, 300)
with guarded_allocations():  # a stub or a bug stops here, before any timing
    check_output(call_answer(softmax, x), torch.softmax(x, dim=-1), name="softmax")
total = sized(2**24, 2**12)
widths = sized([2**k for k in range(7, 15)], [16, 64, 256, 1024])
# Compiled for each width it meets, as a program specialised to its shapes would be.
softmax_compiled = torch_compiled(lambda t: torch.softmax(t, dim=-1), rand(total // widths[0], widths[0]))
ways = {"torch.softmax": lambda x: torch.softmax(x, dim=-1), "softmax (yours)": softmax,
        "softmax_kernel, one row per program": one_row_per_program,
        "copy, one row per program (no reductions)": copy_one_row_per_program}
if softmax_compiled is not None:
    ways["torch.compile"] = softmax_compiled
speeds = {label: [] for label in ways}
for n_cols in widths:
    x = rand(total // n_cols, n_cols)
    nbytes = 2 * x.numel() * x.element_size()
    for label, way in ways.items():
        speeds[label].append(gbps(nbytes, bench_ms(lambda: way(x))))
    del x
for i, n_cols in enumerate(widths):
    print(f"{total // n_cols:7} x {n_cols:5}: " + ", ".join(f"{label.split(',')[0].split(' (')[0]} "
                                                           f"{values[i]:.4g}" for label, values in speeds.items())
          + " GB/s")
plot_bandwidth(widths, speeds, f"Row softmax, fp32, {total} elements", roof=copy_bandwidth(),
               xlabel="columns (n_cols), at a fixed number of elements")
# Your own ratios, the ones the reading below is about: the narrowest and the widest rows.
for i in (0, -1):
    mine, torchs = speeds["softmax (yours)"][i], speeds["torch.softmax"][i]
    one_row, copy_rows = speeds["softmax_kernel, one row per program"][i], \
        speeds["copy, one row per program (no reductions)"][i]
    print(f"{widths[i]} columns: yours {mine / torchs:.2f}x torch.softmax's speed; one row per program "
          f"{one_row / copy_rows:.0%} of the same copy without reductions, packed rows "
          f"{mine / one_row:.2f}x one row per program"
          + (f"; torch.compile {speeds['torch.compile'][i] / torchs:.2f}x torch.softmax"
             if "torch.compile" in speeds else ""))

# %% [markdown]
# **Reading the plot** (on a GPU; under the interpreter the numbers time Python and mean nothing).
# Check each point against your printed ratios.
#
# - **Wide rows.** At 4096 columns and more a row is plenty of work for one program; one row per
#   program is the right plan, and your kernel should beat `torch.softmax` clearly (a library
#   kernel must handle every shape; yours is compiled, by `BLOCK_N`, for this one).
# - **Narrow rows.** One row per program falls behind. Compare it with the copy that has the same
#   grid, block and warps (your printed percentage): where the copy is just as slow, the program
#   has too little work; where the copy keeps up and the softmax does not, the reductions cost the
#   difference (section 6). Packing a few rows into each program (4 rows of 256: 4 KiB) fixes both
#   and should bring your `softmax` near the speed of memory, like torch.
# - **`torch.compile`**, compiled for each width, generates its own Triton softmax (a "reduction"
#   kernel specialised to that width, like yours): on wide rows it beats `torch.softmax`, and a
#   hand-written kernel that keeps the row in registers can still be ahead of it.
#
# For reference, on an H200 (fp32, GB/s, this section's sizes): at 4096 x 4096, your `softmax` 2785,
# `torch.softmax` 2301, `torch.compile` 2941; at 131072 x 128, 2823, 3504 and 2154, with one row per
# program 1586 and its copy 1608. These plots time one call at a time, on 64 MB, and such figures
# move by a fifth from run to run (in that run your `softmax` measured 2785 GB/s as `softmax` and
# 3772 as the same launch of `softmax_kernel`); timed on 2^26 elements, as `make bench` in the
# course's repository does, the same kernel moved 4163 GB/s at 524288 x 128 and 4004 at 16384 x 4096,
# level with or ahead of both.
#
# ## Exercise 7: as fast as `torch.softmax` (2 points)
#
# No new code: on a GPU this test times your `softmax` and `torch.softmax` on a 4096 x 4096 fp32
# matrix, and expects yours to be at least **0.8 times as fast** as torch's (it should be as fast or
# faster: on an H200 the course's own kernel measured 0.89x to 1.24x of torch's from one run of this
# test to the next, so the target leaves that spread room).
# Under the interpreter it prints the times and passes. (The target is relative to torch's kernel,
# timed in the same test on the same GPU, so no other GPU's figure enters it: a T4 is held to its
# own torch. Both kernels move the same bytes, one read and one write of the matrix, so a softmax
# that runs at the speed of that GPU's memory meets it anywhere.)

# %% nbgrader={"grade": true, "grade_id": "test_softmax_performance", "locked": true, "points": 2}
n_rows, n_cols = sized((4096, 4096), (64, 256))
x = rand(n_rows, n_cols)
with count_launches() as launches:
    out = call_answer(softmax, x)
expect_launched(launches, "softmax", out)
check_output(out, torch.softmax(x, dim=-1), name="softmax")
del out
with exclusive_gpu():  # under the grader, no other notebook runs on the GPU meanwhile
    ours, theirs = bench_against(softmax, lambda x: torch.softmax(x, dim=-1), x,
                                 expect=lambda x: torch.softmax(x, dim=-1))
nbytes = 2 * x.numel() * x.element_size()
verdict = (f"softmax on {n_rows} x {n_cols}: yours {ours:.4g} ms ({gbps(nbytes, ours):.0f} GB/s), "
           f"torch.softmax {theirs:.4g} ms ({gbps(nbytes, theirs):.0f} GB/s): "
           f"{theirs / ours:.2f}x torch's speed; the target is 0.8x.")
if not ON_GPU:
    advisory("softmax for at least 0.8x the speed of\ntorch.softmax")
elif ours * 0.8 > theirs:
    raise CheckFailed(f"{verdict} Does each program load its row once and keep it in registers "
                      "(one tl.load, one tl.store)? Is BLOCK_N = next_power_of_2(n_cols), and "
                      "num_warps=warps_for(ROWS * BLOCK_N)?")
else:
    print(verdict)

# %% [markdown]
# ## 8. Where Triton sits: the performance ladder
#
# You have now seen every rung of the ladder that GPU code climbs:
#
# 1. **Eager PyTorch.** One kernel per operation, written by experts and fast on its own, but
#    every operation is a round trip to memory. Easy to write, easy to debug. Start here, always.
# 2. **`torch.compile`.** One line. The compiler fuses what it can see (element-wise chains, many
#    reductions) and writes Triton kernels for you. Often the whole 10x of this lesson, for free.
# 3. **Triton.** You write the kernel, in Python, thinking in blocks: what one program does with
#    its tile. The compiler still handles threads, memory coalescing, vectorization and the use of
#    shared memory inside a block. You climb here when a profiler shows that an operation is far
#    from its bytes (or compute) floor and `torch.compile` does not fix it: a new algorithm, a
#    custom data format, work whose shape depends on the data, or a shape where the generated
#    kernel is slow (section 7's wide rows). Check first what the compiler already covers
#    (section 5): fused epilogues on its matmul templates, attention through SDPA and
#    FlexAttention.
# 4. **CUDA C++.** You write the code of one *thread*, and manage shared memory, synchronization,
#    warp-level instructions and the newest hardware features yourself. Maximum control, for the
#    last few percent on the hottest kernels of a library, at a much higher cost in effort and
#    bugs.
#
# Each rung up costs more of your time, so climb only as far as a measurement tells you to. Note
# what does *not* make Triton fast: rewriting `x * 1.5` as a Triton kernel gains nothing (lesson
# 2's `add` ran at about torch's speed). Triton is a different way of programming, not a faster
# PyTorch; the speed comes from what you do with it, here removing round trips to memory.

# %% [markdown]
# **Multiple choice (1 point).** Which of these is the common misconception about Triton that this
# lesson warns about? Set `answer_q_misconception` to one letter in the cell below.
#
# - a) "It cannot run on NVIDIA GPUs."
# - b) "It replaces the Python interpreter."
# - c) "It is just PyTorch but faster, automatically."
# - d) "It requires writing C++ code."

# %% nbgrader={"grade_id": "q_misconception", "solution": true}
# Replace the two lines below with one line: answer_q_misconception = "<your letter>"
### BEGIN SOLUTION
answer_q_misconception = "c"  # one of "a", "b", "c", "d"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_q_misconception", "locked": true, "points": 1}
check_choice(globals().get("answer_q_misconception"), "answer_q_misconception")
print("Your answer is recorded; it is checked when your notebook is graded.")
### BEGIN HIDDEN TESTS
check_choice(answer_q_misconception, "answer_q_misconception", expected="c",
             why="Reread the end of section 8.")
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": true, "grade_id": "written_ladder", "points": 2, "solution": true}
# **Written answer (2 points).** Place Triton on the performance ladder (eager PyTorch,
# `torch.compile`, Triton, CUDA C++) and describe what kind of problem justifies climbing to it.
# Then say why Triton's Python syntax and block model are an advantage for a researcher like the
# one in the case study, compared with writing the kernel in CUDA C++.
#
# ### BEGIN SOLUTION
# Triton sits between torch.compile and CUDA C++. Eager PyTorch is the easiest but runs one kernel
# per operation with a memory round trip each; torch.compile fuses what it recognises and generates
# Triton for you; Triton lets you write the kernel yourself at the level of blocks; CUDA C++ gives
# thread-level control at the highest cost. Climbing to Triton is justified when measurement shows
# an operation far from its hardware floor (for a memory-bound op: time much larger than
# bytes / bandwidth, typically because of intermediate round trips to memory) and neither eager
# PyTorch nor torch.compile removes the gap: a new algorithm or custom operation the compiler has
# no rule or template for, a custom data format, or a shape where its generated kernel is slow
# (the wide-row softmax, where a hand-written kernel beat both torch and torch.compile), on the
# hot path of a model.
# Python syntax and the block model lower the barrier for a researcher: the fused kernel is a dozen
# lines of NumPy-like code, written and tested in a notebook (even on a CPU with the interpreter),
# integrated with torch tensors directly; they think about what one program does with a tile of
# data, while Triton's compiler handles threads, memory coalescing, vectorization, shared memory and
# synchronization, which in CUDA C++ they would have to manage by hand (and debug). They reach close
# to the same performance (here the bytes floor) for a fraction of the effort, and can iterate on
# new ideas quickly.
# ### END SOLUTION

# %% [markdown]
# ## What you learned
#
# - Most deep-learning operations do little arithmetic per byte: they are **memory-bound**, and
#   their time is the bytes they move divided by the bandwidth. Counting bytes predicts the time
#   (22 passes against 2: 1.41 ms against 0.13 ms on an H200).
# - The **memory wall**: eager PyTorch runs one kernel per operation, and each one is a round trip
#   to global memory. **Fusion** keeps the intermediate values in registers: one read, one write,
#   and one launch instead of ten.
# - A fused element-wise kernel is lesson 2's copy kernel with the computation between the load and
#   the store; compute in fp32 (`.to(tl.float32)`), store in the output's dtype.
# - `torch.compile` finds such fusions itself and **writes Triton kernels** for you: try it first.
# - Fusing a **reduction**: a program owns whole rows; masked lanes load `other=-inf`; subtracting
#   the row maximum keeps `exp` from overflowing; narrow rows are packed several to a program in a
#   2-D block (`rows[:, None]`, `cols[None, :]`, `tl.max(x, axis=1)`), with more warps for bigger
#   blocks.
# - The ladder: eager, `torch.compile`, Triton, CUDA C++. Climb when a measurement says so.
#
# **Next:** **layer norm** (lesson 5: a fused reduction with a backward pass, rows wider than a
# block, and sums that must be accurate), tiled **matrix multiplication** with `tl.dot` (lesson 6:
# where the arithmetic, not the memory, becomes the limit), and **FlashAttention** (lesson 7: the
# online softmax, and a whole attention layer fused so that its huge score matrix never touches
# memory).

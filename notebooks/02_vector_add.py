# %% [markdown]
# # Lesson 2: Vector add, your first Triton kernel
#
# Lesson 1 showed why a GPU wins when one small operation is applied to a huge amount of data.
# Here you write such an operation yourself: `out = x + y` over vectors of millions of elements,
# as a Triton kernel. Vector add is the "hello world" of GPU programming, and every later lesson
# (masking, fusion, softmax, matrix multiplication) builds on the ideas in this one.
#
# By the end of this lesson you will be able to:
#
# - explain what a **program** is, and how Triton splits an array into **blocks**, one per program;
# - use `tl.program_id`, `tl.arange`, pointer arithmetic, `tl.load` and `tl.store`;
# - launch a kernel on a **grid** sized with `triton.cdiv`, and **mask** the last, partial block;
# - choose a `BLOCK_SIZE`, and measure a kernel in **GB/s** against PyTorch and against your GPU's
#   copy bandwidth.
#
# | exercise | what you write | points |
# |---|---|---|
# | 1 | `copy_kernel`: your first kernel | 3 |
# | 2 | `add_kernel`: the vector-add kernel | 3 |
# | 3 | `add`: the Python function that launches it | 5 |
# | 4 | (no new code) `add` runs at the speed of memory | 2 |
#
# **Where to run it.** On Colab choose *Runtime > Change runtime type > GPU* (a T4 is fine). With
# no GPU, the setup cell below switches Triton to its *interpreter*, which runs kernels on the CPU
# with NumPy: everything in this notebook works, but slowly, so sizes are small, and timings say
# nothing about GPUs. Run the setup cell first; it prints which mode you are in.

# %% tags=["setup"]
from autograder.kit import *  # noqa: F403 (the build places autograder/kit.py here)

# %% [markdown]
# The setup cell also defined the helpers the tests use (`rand`, `check_output`, ...). You do not
# need to read it; each test explains what it checks, and a failure says what to look at. Note
# that `rand(n)` draws from a **normal** distribution (mean 0, standard deviation 1: negative
# numbers too), unlike `torch.rand(n)`, which draws from [0, 1).
#
# ## 1. The same operation on lots of data
#
# A CPU has a few powerful cores, each racing through its own stream of instructions. A GPU has
# thousands of simpler ones, organised so that **one instruction is applied to many data elements
# at once**. NVIDIA calls this SIMT (single instruction, multiple threads): threads run in groups of
# 32 (a *warp*) that execute in lockstep, and an H200 keeps thousands of warps busy on its 132
# multiprocessors. Vector add is the ideal case: `out[i] = x[i] + y[i]` is the same tiny job for
# every `i`, and no element depends on any other.
#
# In CUDA you write the code of **one thread**: "I am thread number `i`; I add element `i`". Triton
# works one level up: you write the code of **one program**, which handles a whole **block** of
# elements (say 1024) with array operations, much like NumPy. Triton's compiler then decides how
# to spread that block over threads and warps, and how to load memory efficiently (coalescing,
# vectorised loads): the fiddly part of CUDA.
#
# So a Triton kernel answers one question: *what does one program do with its block?* The launch
# answers another: *how many programs run?* Here is the picture for an array of 14 elements in
# blocks of 4.

# %%
import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle


def draw_blocks(n=14, block_size=4):
    """An array of n elements split into blocks, one color per program. (Only a drawing.)"""
    programs = triton.cdiv(n, block_size)
    colors = plt.cm.tab10.colors
    fig, ax = plt.subplots(figsize=(10, 2.6))
    for i in range(programs * block_size):
        pid = i // block_size
        inside = i < n
        ax.add_patch(Rectangle((i, 0), 1, 1, facecolor=colors[pid] if inside else "white",
                               edgecolor="black" if inside else colors[pid],
                               hatch=None if inside else "//", alpha=0.8 if inside else 1.0))
        ax.text(i + 0.5, 0.5, str(i), ha="center", va="center", color="black" if inside else "grey")
    for pid in range(programs):
        ax.text(pid * block_size + block_size / 2, -0.3, f"program {pid}\npid = {pid}",
                ha="center", va="top", color=colors[pid], fontweight="bold")
    ax.plot([n, n], [-0.05, 1.45], color="red", linewidth=2)
    ax.text(n, 1.5, f"end of the array (n = {n})", color="red", ha="center", va="bottom")
    ax.text(programs * block_size + 0.3, 0.5, "past the end:\nmasked off", va="center", color="grey")
    ax.set_xlim(-0.2, programs * block_size + 3)
    ax.set_ylim(-1.2, 1.9)
    ax.axis("off")
    ax.set_title(f"n = {n} elements, BLOCK_SIZE = {block_size}: "
                 f"triton.cdiv({n}, {block_size}) = {programs} programs")
    plt.show()


draw_blocks()


# %% [markdown]
# Every program runs **the same code**; the only thing that differs is its number, its *program
# id*. Program 0 handles elements 0 to 3, program 1 elements 4 to 7, and so on. Program 3's block
# covers indices 12 to 15, but the array ends at 13: indices 14 and 15 do not exist, and program 3
# must not touch them. That is the job of the *mask* (section 7).
#
# Programs run in no fixed order, many at the same time, so a program must never depend on what
# another one computes. (Under the interpreter they run one after another, which hides such bugs.)
#
# Each program answers three questions, and Triton gives one tool for each:
#
# 1. Which block am I? `tl.program_id`.
# 2. Which elements are in my block? `tl.arange`.
# 3. Where are those elements in memory? pointers plus offsets.
#
# Then it moves data: `tl.load`, compute, `tl.store`.
#
# ## 2. Which block am I? `tl.program_id`
#
# Inside a kernel, `tl.program_id(axis=0)` returns the number of the running program: 0, 1, 2, ...
# up to the number of programs launched, minus one. A launch can arrange programs along up to three
# axes (useful for matrices, later); a vector needs one, axis 0.
#
# ## 3. Which elements? `tl.arange`
#
# `tl.arange(0, BLOCK_SIZE)` is the block `[0, 1, ..., BLOCK_SIZE - 1]`. It is a Triton *tensor*,
# not a Python list: arithmetic on it works element by element, like NumPy. So
#
# ```python
# offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
# ```
#
# gives program `pid` the indices of its block: program 3 with `BLOCK_SIZE = 4` gets
# `[12, 13, 14, 15]`. Two rules: the length must be a **power of two**, and it must be known when
# the kernel is compiled, which is why `BLOCK_SIZE` is declared `tl.constexpr` (section 8).
#
# Let's watch programs and blocks at work. This little kernel writes, into every element, the
# number of the program that handled it, and the element's position (*lane*) inside the block. (The
# launch syntax `whoami_kernel[(4,)](...)` and the pointers are explained in the next sections.)

# %%
@triton.jit
def whoami_kernel(pid_ptr, lane_ptr, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)  # which block am I?
    lanes = tl.arange(0, BLOCK_SIZE)  # [0, 1, ..., BLOCK_SIZE - 1]
    offsets = pid * BLOCK_SIZE + lanes  # the indices of my block
    tl.store(pid_ptr + offsets, pid)  # one number, written into my whole block
    tl.store(lane_ptr + offsets, lanes)


program_of = torch.empty(16, dtype=torch.int32, device=DEVICE)
lane_of = torch.empty(16, dtype=torch.int32, device=DEVICE)
whoami_kernel[(4,)](program_of, lane_of, BLOCK_SIZE=4)  # 4 programs, blocks of 4
print("element:", list(range(16)))
print("program:", program_of.tolist())
print("lane:   ", lane_of.tolist())

# %% [markdown]
# Read it column by column: element 9 was handled by program 2, as lane 1 of its block, and indeed
# `2 * 4 + 1 = 9`. Every element was written by exactly one program. Note `tl.store(pid_ptr +
# offsets, pid)`: one number stored into a whole block is copied (*broadcast*) to every lane.
#
# ## 4. Where are the elements? Pointers and offsets
#
# A kernel cannot receive a tensor. When you pass a torch tensor to a kernel, Triton passes a
# **pointer**: the memory address of its first element, tagged with the element type (a pointer to
# fp32, say). Arithmetic on a pointer counts in *elements*, not bytes: `x_ptr + 5` is the address
# of `x[5]`, 20 bytes further for fp32. And adding a block of offsets gives a **block of
# addresses**:
#
# ```python
# x_ptr + offsets    # BLOCK_SIZE addresses: &x[offsets[0]], &x[offsets[1]], ...
# ```
#
# That `x[i]` lives at `x_ptr + i` is true when the tensor is *contiguous*, its elements packed one
# after another in memory. Most tensors are, but not all: exercise 3 deals with the others.
#
# The kernel also knows nothing about the tensor's length, so you pass it too, as a plain integer
# (`n_elements`). Integers are passed by value; tensors become pointers.
#
# ## 5. Moving data: `tl.load` and `tl.store`
#
# `tl.load(x_ptr + offsets)` reads the addressed elements from the GPU's main memory (DRAM, called
# HBM on an H200) into the program's registers, and returns them as a block of values. You compute
# on blocks like on NumPy arrays: `x + y`, `x * 2`, `tl.maximum(x, 0.0)`. Then
# `tl.store(out_ptr + offsets, values)` writes a block of values to the addressed elements.
#
# Between the load and the store, the data sits in registers on the chip, where arithmetic is
# nearly free; going to DRAM and back is what costs time. Vector add is therefore the whole pattern
# in four lines: load `x`, load `y`, add, store. (The fusion lesson is about doing *more* between
# one load and one store.)
#
# ## 6. Launching: the grid and `triton.cdiv`
#
# A kernel is launched by indexing it with a **grid**, the number of programs to run, then calling
# it with the arguments. By convention `tl.constexpr` arguments are passed by keyword, so that a
# launch says which numbers are compiled into the kernel (positionally works too):
#
# ```python
# copy_kernel[grid](src, dst, n, BLOCK_SIZE=1024)    # grid = (number of programs,)
# ```
#
# To cover `n` elements in blocks of `BLOCK_SIZE` you need `n / BLOCK_SIZE` programs, **rounded
# up**: `triton.cdiv(n, BLOCK_SIZE)`, the "ceiling division" `(n + BLOCK_SIZE - 1) // BLOCK_SIZE`.
# Plain `n // BLOCK_SIZE` rounds down and silently leaves the tail of the array untouched.

# %%
for n, block in [(14, 4), (16, 4), (1000, 256), (98432, 1024)]:
    print(f"n = {n:6}, BLOCK_SIZE = {block:5}: triton.cdiv = {triton.cdiv(n, block):3} programs "
          f"(n // BLOCK_SIZE = {n // block})")

# %% [markdown]
# On a GPU a launch returns at once: the kernel runs *asynchronously* while Python goes on. You
# rarely notice, because torch waits for the kernel before it reads the result (to print it, say).
#
# ## 7. The mask: the last, partial block
#
# When `n` is not a multiple of `BLOCK_SIZE`, the last program's offsets run past the end of the
# array, like program 3 in the picture. Reading there returns garbage from whatever lies beyond
# the array; writing there overwrites someone else's data. On a GPU that is either silent
# corruption or an "illegal memory access" that kills the CUDA context for the rest of the session;
# under the interpreter it can crash Python.
#
# The fix is one line: a **mask**, a block of booleans saying which lanes are real elements, given
# to every load and store. Masked-off lanes are neither read nor written.
#
# ```python
# mask = offsets < n_elements
# x = tl.load(x_ptr + offsets, mask=mask)
# tl.store(out_ptr + offsets, x, mask=mask)
# ```
#
# Every program computes its mask; for all but the last it is all `True`, and it costs almost
# nothing. Here is the same computation in NumPy for the picture's 14 elements:

# %%
n, BLOCK_SIZE = 14, 4
for pid in range(triton.cdiv(n, BLOCK_SIZE)):
    offsets = pid * BLOCK_SIZE + np.arange(BLOCK_SIZE)
    print(f"program {pid}: offsets {offsets}, mask {offsets < n}")


# %% [markdown]
# Lesson 03 is all about masks (two-dimensional ones, the `other=` value of masked loads, and what
# goes wrong without them). For now, remember: **mask every load and store** unless you know the
# size is a multiple of the block. The tests in this notebook place your outputs between guard
# bands of random bytes, so a write past the end is caught and reported, not silently forgiven.
#
# ## Exercise 1: a copy kernel (3 points)
#
# Your first kernel copies one vector into another: `dst[i] = src[i]` for every `i <
# n_elements`. Each program copies its own block:
#
# 1. find your block: `pid`, then `offsets`;
# 2. build the mask;
# 3. load the block from `src_ptr + offsets`, and store it to `dst_ptr + offsets`, both masked.
#
# Copying is the simplest useful kernel, and the fastest possible one that touches every element:
# later we use the speed of a copy as the yardstick for every other kernel.

# %% nbgrader={"grade_id": "copy_kernel", "solution": true}
@triton.jit
def copy_kernel(src_ptr, dst_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """Copy src to dst: dst[i] = src[i] for every i < n_elements. Each program copies one block."""
    ### BEGIN SOLUTION
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    values = tl.load(src_ptr + offsets, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)
    ### END SOLUTION


# %% [markdown]
# The test copies 1000 elements in blocks of 256: four programs, the last one with only 232 real
# elements in its block of 256.

# %% nbgrader={"grade": true, "grade_id": "test_copy_kernel", "locked": true, "points": 1}
n, BLOCK_SIZE = 1000, 256
src = rand(n)
src_before = src.clone()
dst = guarded_empty(n)  # sits between guard bands: a write past either end is seen
grid = (triton.cdiv(n, BLOCK_SIZE),)
call_answer(lambda: copy_kernel[grid](src, dst, n, BLOCK_SIZE=BLOCK_SIZE), name="copy_kernel")
check_output(dst, src, name="copy_kernel", inputs=[(src, src_before)])
print("copy_kernel copied 1000 elements exactly, and wrote nothing outside them.")


# %% nbgrader={"grade": true, "grade_id": "test_copy_kernel_hidden", "locked": true, "points": 2}
# Hidden tests check this exercise on more sizes, block sizes and dtypes when your notebook is graded.
### BEGIN HIDDEN TESTS
def _check_copy_kernel(n, block, dtype=torch.float32):
    src = rand(n, dtype=dtype)
    src_before = src.clone()
    dst = guarded_empty(n, dtype=dtype)
    grid = (triton.cdiv(n, block),)
    call_answer(lambda: copy_kernel[grid](src, dst, n, BLOCK_SIZE=block), name="copy_kernel")
    check_output(dst, src, name=f"copy_kernel with n={n}, BLOCK_SIZE={block}, {dtype}",
                 inputs=[(src, src_before)])


for n in [1, 2, 3, 17, 127, 128, 129, 1021, 4099] + sized([1_000_003], []):
    for block in [16, 64, 256, 1024]:
        _check_copy_kernel(n, block)
for dtype in FLOAT_DTYPES:
    for n in [1, 129, 4099]:
        _check_copy_kernel(n, 256, dtype)
print("copy_kernel passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## Exercise 2: the vector-add kernel (3 points)
#
# Now the real thing: `out[i] = x[i] + y[i]` for every `i < n_elements`. It is your copy kernel
# with two loads and an addition. The arguments are the three pointers, the number of elements,
# and the block size.
#
# You need not handle dtypes: `tl.load` returns values of the pointer's element type, so the same
# kernel adds fp32, fp16 or bf16 vectors (Triton compiles one version per dtype).

# %% nbgrader={"grade_id": "add_kernel", "solution": true}
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """out[i] = x[i] + y[i] for every i < n_elements. Each program adds one block."""
    ### BEGIN SOLUTION
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
    ### END SOLUTION


# %% [markdown]
# Try your kernel before the tests do (this cell is not graded). Change `n` and `BLOCK_SIZE` and
# run it again: every combination should work.

# %%
n, BLOCK_SIZE = 1000, 256
x, y = rand(n), rand(n)
out = guarded_empty(n)
call_answer(lambda: add_kernel[(triton.cdiv(n, BLOCK_SIZE),)](x, y, out, n, BLOCK_SIZE=BLOCK_SIZE),
            name="add_kernel")
check_output(out, x + y, name="add_kernel")
print(f"add_kernel is right for n = {n}, BLOCK_SIZE = {BLOCK_SIZE}. First elements:")
print("x + y     ", (x + y)[:4].tolist())
print("add_kernel", out[:4].tolist())


# %% nbgrader={"grade": true, "grade_id": "test_add_kernel_hidden", "locked": true, "points": 3}
# Hidden tests launch your add_kernel themselves, on many sizes, block sizes and dtypes, when your
# notebook is graded.
### BEGIN HIDDEN TESTS
def _check_add_kernel(n, block, dtype=torch.float32):
    x, y = rand(n, dtype=dtype), rand(n, dtype=dtype)
    x_before, y_before = x.clone(), y.clone()
    out = guarded_empty(n, dtype=dtype)
    grid = (triton.cdiv(n, block),)
    call_answer(lambda: add_kernel[grid](x, y, out, n, BLOCK_SIZE=block), name="add_kernel")
    check_output(out, x + y, name=f"add_kernel with n={n}, BLOCK_SIZE={block}, {dtype}",
                 inputs=[(x, x_before), (y, y_before)])


for n in [1, 2, 3, 17, 127, 128, 129, 1021, 4099] + sized([1_000_003], []):
    for block in [16, 64, 256, 1024]:
        _check_add_kernel(n, block)
for dtype in FLOAT_DTYPES:
    for n in [1, 129, 4099]:
        _check_add_kernel(n, 256, dtype)
print("add_kernel passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## 8. Choosing `BLOCK_SIZE`
#
# Before wrapping the kernel in a function, one decision: how many elements per program?
#
# - **A power of two**, because `tl.arange` requires it (and the hardware likes it: 32 threads to a
#   warp, memory moved in aligned chunks).
# - **A `tl.constexpr`**: its value is baked into the compiled kernel. Triton compiles one version
#   for each value you use (the first call with a new value takes a moment), and in exchange knows
#   the block's shape at compile time, so it can lay the block out over threads, unroll loops and
#   assign registers.
# - **Too small** (16, 32, 64): each program does too little work for what it costs to schedule,
#   most threads of its warps idle, and too few bytes are in flight at once to keep the memory busy.
# - **Too large** (32768, 65536): each program must hold its whole block in registers; past what
#   the registers can hold, values spill to slow memory, and speed collapses.
#   Huge blocks also leave multiprocessors idle on small arrays: 2^16 elements in blocks of 16384
#   are only 4 programs for an H200's 132 multiprocessors (a T4 has 40).
# - **In between** the speed is flat, at the speed of memory. 1024 is the usual default, and the
#   one we use. You will measure where the flat part begins and ends on your GPU in section 9.
#
# ## Exercise 3: the `add` function (5 points)
#
# A kernel is half the job. Users want `add(x, y)` that behaves like `x + y`; your function
# prepares the launch:
#
# 1. **Check the inputs.** The kernel sees only pointers: it cannot know whether `x` and `y` have
#    the same number of elements, or live on the same device. Check that they have the same shape,
#    device and dtype (an `assert` with a clear message is enough).
# 2. **Make them contiguous.** The kernel assumes that element `i` is at `x_ptr + i`. A *view* such
#    as `x[::2]` shares `x`'s memory and takes every second element: element `i` of the view is at
#    `x_ptr + 2 * i`, so the kernel would add the wrong numbers. `x.contiguous()` returns `x` itself
#    when it is already contiguous (free), and otherwise a packed copy. See below.
# 3. **Allocate the output** like the (contiguous) input: `torch.empty_like(x)` has the same
#    shape, dtype and device. `empty` leaves the memory uninitialised, which is fine: the kernel
#    writes every element. Never write into `x` or `y`: callers expect their inputs unchanged.
# 4. **Launch** `add_kernel` on a grid of `triton.cdiv(n_elements, BLOCK_SIZE)` programs, with
#    `n_elements = x.numel()` and `BLOCK_SIZE = 1024`, and **return** the output.
#
# Multi-dimensional inputs need nothing special: a contiguous `(37, 53)` tensor is 1961 numbers
# one after another, and element-wise addition does not care about rows. The output made by
# `empty_like` has the input's shape. Here is what a non-contiguous view looks like:

# %%
base = torch.arange(10.0)
view = base[::2]
print("view:", view.tolist())
print("stride:", view.stride(), "contiguous:", view.is_contiguous(),
      "starts at the same address as base:", view.data_ptr() == base.data_ptr())
packed = view.contiguous()
print("after .contiguous(): stride", packed.stride(), "contiguous:", packed.is_contiguous())


# %% [markdown]
# The view's *stride* is 2: to go from one element to the next, skip 2 elements of memory. A kernel
# given `view` would read `base[0], base[1], base[2], ...`, not `base[0], base[2], base[4], ...`.
# A transposed matrix `m.t()` is the same story in two dimensions.

# %% nbgrader={"grade_id": "add", "solution": true}
def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """x + y, computed by add_kernel. Same shape, dtype and device as x; x and y are left unchanged."""
    ### BEGIN SOLUTION
    assert x.shape == y.shape, f"x and y must have the same shape, got {x.shape} and {y.shape}"
    assert x.device == y.device, f"x and y must be on the same device, got {x.device} and {y.device}"
    assert x.dtype == y.dtype, f"x and y must have the same dtype, got {x.dtype} and {y.dtype}"
    x, y = x.contiguous(), y.contiguous()
    out = torch.empty_like(x)
    n_elements = out.numel()
    BLOCK_SIZE = 1024
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)
    return out
    ### END SOLUTION


# %% [markdown]
# The test adds two vectors of 98432 elements (not a multiple of 1024), counts the kernels your
# function launches (a torch expression in place of a kernel earns nothing here), and places the
# output that your function allocates with `torch.empty_like` between guard bands.

# %% nbgrader={"grade": true, "grade_id": "test_add", "locked": true, "points": 2}
n = 98432
x, y = rand(n), rand(n)
x_before, y_before = x.clone(), y.clone()
with guarded_allocations(), count_launches() as launches:
    out = call_answer(add, x, y)
expect_launched(launches, "add", out)
check_output(out, x + y, name="add(x, y)", inputs=[(x, x_before), (y, y_before)])
print(f"add(x, y) is right for {n} elements, with {len(launches)} kernel launch(es).")


# %% nbgrader={"grade": true, "grade_id": "test_add_hidden", "locked": true, "points": 3}
# Hidden tests check add on more sizes, dtypes and layouts when your notebook is graded.
### BEGIN HIDDEN TESTS
def _check_add(x, y, what):
    x_before, y_before = x.clone(), y.clone()
    with guarded_allocations(), count_launches() as launches:
        out = call_answer(add, x, y)
    expect_launched(launches, f"add on {what}", out)
    check_output(out, x + y, name=f"add(x, y) on {what}", inputs=[(x, x_before), (y, y_before)])


for n in [1, 2, 3, 17, 127, 1021, 1024, 1025, 4099, 98431] + sized([1_000_003], []):
    _check_add(rand(n), rand(n), f"{n} elements")
for dtype in FLOAT_DTYPES:
    _check_add(rand(4099, dtype=dtype), rand(4099, dtype=dtype), f"4099 elements of {dtype}")
_check_add(rand(2 * 4099)[::2], rand(4099), "a non-contiguous x = x[::2]")
_check_add(rand(4099), rand(3 * 4099)[1::3], "a non-contiguous y = y[1::3]")
_check_add(rand(37, 53), rand(37, 53), "2-D inputs of shape (37, 53)")
_check_add(rand(53, 37).t(), rand(37, 53), "a transposed x = x.t() of shape (37, 53)")
print("add passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## 9. How fast is it? Measuring in GB/s
#
# Vector add does one addition for every 12 bytes it moves (two fp32 reads, one fp32 write). A GPU
# can add far faster than its memory can deliver numbers, so the time is the time to move the
# bytes: the kernel is **memory-bound**. The right measure of such a kernel is therefore its
# **bandwidth**, bytes moved per second:
#
# $$\text{GB/s} = \frac{3 \cdot n \cdot \text{element size}}{\text{time}} \qquad
# \text{(read } x\text{, read } y\text{, write out)}$$
#
# And the right yardstick is the fastest any kernel can move memory on this device: a plain
# device-to-device copy, `copy_bandwidth()` (bytes read plus bytes written, measured once here). A
# memory-bound kernel that reaches it cannot get faster; only moving fewer bytes can help.
#
# `bench_ms` times a function: on a GPU it runs it many times, timing with CUDA events, and returns
# the median in milliseconds. We measure `add` and `torch.add` (`x + y`) on every other power of
# two from 2^12 to 2^26 elements on a GPU (2^10 to 2^16 under the interpreter). 2^26 fp32 elements
# are 256 MiB per vector: enough to reach the memory's speed, and little enough for any GPU.

# %%
sizes = sized([2**k for k in range(12, 27, 2)], [2**k for k in range(10, 17, 2)])
roof = copy_bandwidth()
x, y = rand(1000), rand(1000)
with guarded_allocations():  # first make sure that add is right: a stub or a bug stops here
    check_output(call_answer(add, x, y), x + y, name="add(x, y)")
results = {"add (your Triton kernel)": [], "torch.add (x + y)": []}
for n in sizes:
    x, y = rand(n), rand(n)
    nbytes = 3 * n * x.element_size()
    results["add (your Triton kernel)"].append(gbps(nbytes, bench_ms(lambda: add(x, y))))
    results["torch.add (x + y)"].append(gbps(nbytes, bench_ms(lambda: x + y)))
    del x, y
for n, ours, theirs in zip(sizes, *results.values()):
    print(f"n = 2^{n.bit_length() - 1:2}: add {ours:9.4g} GB/s ({3 * n * 4 / ours / 1e3:8.4g} us), "
          f"torch {theirs:9.4g} GB/s")
if not ON_GPU:
    print("Interpreter: these numbers time Python on the CPU and mean nothing about GPUs.")
plot_bandwidth(sizes, results, "Vector add, fp32", roof=roof)
ours, theirs = results["add (your Triton kernel)"], results["torch.add (x + y)"]
print(f"From 2^{sizes[0].bit_length() - 1} to 2^{sizes[1].bit_length() - 1} elements your add's "
      f"bandwidth grew {ours[1] / ours[0]:.2g}x for 4x the bytes; at 2^{sizes[-1].bit_length() - 1} "
      f"it reaches {ours[-1] / roof:.0%} of the copy bandwidth ({roof:.4g} GB/s), and "
      f"{ours[-1] / theirs[-1]:.2f}x torch's speed.")

# %% [markdown]
# **Reading the plot** (on a GPU; under the interpreter the numbers time NumPy on your CPU and mean
# nothing). Check each point against your printed figures.
#
# - **Small sizes are launch-bound.** Starting a kernel costs a few microseconds whatever it does,
#   so the time (in the table, in µs) hardly changes from one small size to the next while the
#   bytes quadruple: the bandwidth grows about fourfold per line, and the left of the plot hugs
#   zero.
# - **Large sizes are bandwidth-bound.** At the right the launch cost is small next to the time
#   spent moving data, and both lines flatten near the roof. (Reaching, or even slightly passing,
#   the copy line is not a miracle: the copy is measured once, and a kernel that reads twice as
#   much as it writes can use the memory bus a little more efficiently than one that reads and
#   writes equally.)
# - **Your kernel and torch run at about the same speed.** For one element-wise operation there
#   is nothing to win: both are limited by memory, and torch's own kernel is good. Triton pays off
#   when a kernel does something torch cannot do in one pass, such as fusing several operations so
#   that intermediate results never travel to memory: that is lesson 04.
#
# For reference, on an H200: 3.7 to 5.3 µs for every size up to 2^18 elements, and at 2^26 about
# 4240 GB/s for both, where a copy measures 4100 to 4200 GB/s.
#
# Now the claims of section 8, measured: `add_kernel` on 2^24 elements (2^14 under the
# interpreter) with block sizes from 16 to 65536.

# %%
n = sized(2**24, 2**14)
blocks = sized([2**k for k in range(4, 17, 2)], [64, 256, 1024, 4096, 16384])
x, y = rand(n), rand(n)
out = guarded_empty(n)
speeds = []
for block in blocks:
    grid = (triton.cdiv(n, block),)

    def launch():
        add_kernel[grid](x, y, out, n, BLOCK_SIZE=block)

    call_answer(launch, name="add_kernel")
    speeds.append(gbps(3 * n * x.element_size(), bench_ms(launch)))
    print(f"BLOCK_SIZE {block:6}: {speeds[-1]:9.4g} GB/s")
check_output(out, x + y, name="add_kernel")  # the last run's result, as a sanity check
plot_bandwidth(blocks, {"add_kernel": speeds}, f"add_kernel on {n} fp32 elements", roof=copy_bandwidth(),
               xlabel="BLOCK_SIZE")
best = max(speeds)
flat = [block for block, speed in zip(blocks, speeds) if speed >= 0.9 * best]
print(f"Within 10% of the best speed ({best:.4g} GB/s): BLOCK_SIZE {flat[0]} to {flat[-1]}. "
      f"BLOCK_SIZE {blocks[0]} reaches {speeds[0] / best:.0%} of it, {blocks[-1]} {speeds[-1] / best:.0%}.")

# %% [markdown]
# Read the curve with section 8's claims: it grows with the block while blocks are too small,
# stays flat over a wide middle (your printout says where), and falls for the largest blocks,
# which no longer fit in registers. A T4 or another GPU gives other numbers but the same shape.
# Under the interpreter the curve means nothing about GPUs: it only shows that Python pays a
# price for every program it runs. (For reference, on an H200: about 317 GB/s at 16, flat near
# 3800 GB/s from 256 to 16384, about 570 GB/s at 65536.)
#
# ## Exercise 4: `add` at the speed of memory (2 points)
#
# No new code: this test measures your `add` on 2^26 fp32 elements on a GPU and expects at least
# **70% of this device's copy bandwidth**. It first checks that `add` launches a kernel and gives
# the right answer (a fast wrong answer earns nothing). With `BLOCK_SIZE = 1024` a correct kernel
# passes easily; a very small block, or a wrapper that does extra work (an extra copy, a second
# kernel, a torch computation on the side), does not. Under the interpreter the result is
# advisory: it prints the numbers and passes. (Why any GPU can pass: the target is a fraction of
# the same device's copy, and keeping memory busy takes bandwidth x latency bytes in flight. A T4
# moves at most 320 GB/s with a latency near half a microsecond: about 160 KB in flight, 4 KB per
# each of its 40 multiprocessors, which a few blocks of 1024 fp32 elements per multiprocessor
# provide.)

# %% nbgrader={"grade": true, "grade_id": "test_add_performance", "locked": true, "points": 2}
n = sized(2**26, 2**12)
x, y = rand(n), rand(n)
with count_launches() as launches:
    out = call_answer(add, x, y)
expect_launched(launches, "add", out)
check_output(out, x + y, name="add(x, y)")
with exclusive_gpu():  # under the grader, no other notebook runs on the GPU meanwhile
    achieved = gbps(3 * n * x.element_size(), bench_ms(add, x, y, expect=torch.add))
    check_bandwidth(achieved, 0.7, "add")

# %% [markdown]
# ## What you learned
#
# - A GPU applies the same operation to lots of data at once (SIMT). Triton lets you think in
#   **blocks**, not threads: you write what one **program** does with its block, and launch a
#   **grid** of programs that together cover the array.
# - Inside a kernel: `pid = tl.program_id(0)`, `offsets = pid * BLOCK_SIZE + tl.arange(0,
#   BLOCK_SIZE)`, a block of addresses `x_ptr + offsets`, then `tl.load`, compute, `tl.store`.
# - The grid has `triton.cdiv(n, BLOCK_SIZE)` programs; the last block usually runs past the end,
#   so `mask = offsets < n` guards every load and store against out-of-bounds reads and writes.
# - `BLOCK_SIZE` is a power-of-two `tl.constexpr`; too small wastes the GPU, too large spills
#   registers; 1024 is a good default for element-wise kernels.
# - A wrapper checks shapes and devices, makes inputs contiguous (the kernel assumes element `i` is
#   at `ptr + i`), allocates the output and never modifies its inputs.
# - Element-wise kernels are memory-bound: measure them in GB/s against the copy bandwidth. Small
#   arrays are launch-bound (a few microseconds per kernel); large ones reach the memory's speed,
#   and so does torch, so a lone `add` gains nothing from Triton.
#
# **Next, lesson 03 (masking):** what exactly happens without a mask, masked loads with `other=`,
# and two-dimensional masks for rows and columns that do not fill a block.

# %% [markdown]
# # Lesson 3: Masking: tails, neutral values and 2-D tiles
#
# In lesson 2 one line, `mask = offsets < n_elements`, kept the last block of a vector from running
# past the end of the array. This lesson is about that line and everything around it, because
# almost every real kernel needs it, and the bugs it prevents are the worst kind: silent.
#
# By the end of this lesson you will be able to:
#
# - say what happens without a mask: where an unmasked store writes, what an unmasked load reads,
#   and why a GPU or the interpreter may not tell you;
# - choose the **`other=`** value of a masked load so that a reduction stays right: 0 for a sum,
#   -inf for a max, +inf for a min;
# - write a kernel that gives **one program to each row** of a matrix, in a power-of-two block at
#   least as wide as the row;
# - address a matrix through its **strides**, so that the same kernel reads transposed and sliced
#   views without copying them;
# - cover a matrix with **2-D tiles** and a 2-D mask, and measure such a kernel in GB/s.
#
# | exercise | what you write | points |
# |---|---|---|
# | Q1 | (multiple choice) what a grid of `n // BLOCK_SIZE` programs misses | 1 |
# | W | (written) what `mask = offsets < n` prevents | 2 |
# | Q2, Q3 | (multiple choice) `other=` for a maximum, and for a minimum | 2 |
# | 1 | `row_sum_kernel` and `row_sum`: a masked reduction per row, through strides | 6 |
# | 2 | `row_max_kernel` and `row_max`: the same with the right `other=` | 3 |
# | 3 | `copy_2d_kernel` and `copy_2d`: 2-D tiles, 2-D masks, any layout | 6 |
# | 4 | (no new code) `copy_2d` on a transposed matrix at the speed of memory | 2 |
#
# **Where to run it.** On Colab choose *Runtime > Change runtime type > GPU* (a T4 is fine). With
# no GPU, the setup cell below switches Triton to its *interpreter*, which runs kernels on the CPU
# with NumPy: everything in this notebook works, but slowly, so sizes are small, and timings say
# nothing about GPUs. Run the setup cell first; it prints which mode you are in.

# %% tags=["setup"]
from autograder.kit import *  # noqa: F403 (the build places autograder/kit.py here)

# %% [markdown]
# ## 1. Tails: the block that does not fit
#
# A kernel works in blocks whose length is a power of two (`tl.arange` insists), and real data
# comes in any length. So the last block overhangs the data: with `n` elements and blocks of
# `BLOCK_SIZE`, the grid has `triton.cdiv(n, BLOCK_SIZE)` programs, and the last one has only
# `n - (programs - 1) * BLOCK_SIZE` real elements. The rest of its lanes, the **tail**, point past
# the end of the array. A mask switches them off.
#
# Tails get more common, not less, once a kernel works on rows. A softmax or a layer norm gives one
# program to each row of a matrix and holds the whole row in one block, so the block is the row
# length rounded up to a power of two, `triton.next_power_of_2(n_cols)`, and *every* row ends in a
# tail:

# %%
for n_cols in [1, 5, 100, 768, 1000, 1025, 4096]:
    block = triton.next_power_of_2(n_cols)
    print(f"rows of {n_cols:4} numbers: BLOCK_SIZE = {block:4}, {block - n_cols:4} masked-off lanes "
          f"per row ({(block - n_cols) / block:4.0%} of the block)")

# %% [markdown]
# Two things to notice. A row length that is already a power of two (4096) has no tail, which is
# why bugs in masks hide behind "nice" test sizes: always test with sizes like 1, 100 and 1025.
# And a row just past a power of two (1025) wastes half its block; kernels for very long rows
# therefore often loop over the row in several blocks instead of holding it in one.
#
# ### Question Q1 (1 point)
#
# A correct, masked kernel (lesson 2's `add_kernel`) is launched on `n = 1000` elements with
# `BLOCK_SIZE = 256`, but on a grid of `(n // BLOCK_SIZE,)` programs instead of
# `(triton.cdiv(n, BLOCK_SIZE),)`. Which elements of the output are never written?
#
# - **a.** None: the mask takes care of the tail.
# - **b.** Elements 768 to 999.
# - **c.** Element 999 only.
# - **d.** Elements 0 to 231.
#
# Replace the two lines in the next cell with `answer_grid = "..."`, your letter between the
# quotes, and run it.

# %% nbgrader={"grade_id": "q_grid", "solution": true}
### BEGIN SOLUTION
answer_grid = "b"  # one of "a", "b", "c", "d"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_q_grid", "locked": true, "points": 1}
check_choice(globals().get("answer_grid"), "answer_grid")
print("Your answer is recorded; it is checked when your notebook is graded.")
### BEGIN HIDDEN TESTS
check_choice(answer_grid, "answer_grid", expected="b",
             why="1000 // 256 = 3 programs cover elements 0 to 767; the fourth block, 768 to 999, "
                 "has no program at all, so no mask can help it. triton.cdiv(1000, 256) = 4 "
                 "programs cover everything, and the mask trims the fourth.")
### END HIDDEN TESTS

# %% [markdown]
# ## 2. Without a mask: where the tail writes, safely
#
# What exactly goes wrong without a mask? We can look, safely, because the course's helpers put
# every test output between **guard bands**: `guarded_empty(n)` returns a tensor of `n` elements
# that sits in the middle of a larger buffer, with a few thousand spare elements of random bytes on
# each side. A write past the end lands in the guard band, where we can see it, instead of in
# somebody else's memory.
#
# Here is a copy kernel with the mask left out. We copy 20 elements in blocks of 16: two programs,
# 32 lanes, so 12 lanes run past the end.

# %%
import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle


@triton.jit
def copy_unmasked_kernel(src_ptr, dst_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """A copy kernel WITHOUT a mask: do not write kernels like this one."""
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    values = tl.load(src_ptr + offsets)  # reads BLOCK_SIZE elements, whatever n_elements is
    tl.store(dst_ptr + offsets, values)  # ... and writes them all


def whole_buffer(t):
    """The whole allocation that t is a view of, as raw 32-bit integers, and where t starts in it."""
    raw = torch.empty(0, dtype=torch.int32, device=t.device).set_(t.untyped_storage())
    return raw, t.storage_offset()


n, BLOCK_SIZE = 20, 16
src = rand(n)
dst = guarded_empty(n)  # 20 elements, with guard bands of random bytes on both sides
raw, start = whole_buffer(dst)
before = raw.clone()
copy_unmasked_kernel[(triton.cdiv(n, BLOCK_SIZE),)](src, dst, n, BLOCK_SIZE=BLOCK_SIZE)
changed = (torch.nonzero(raw != before).flatten() - start).tolist()  # indices relative to dst[0]
outside = [i for i in changed if not 0 <= i < n]
print(f"The kernel changed {len(changed)} elements; {len(outside)} of them are outside dst: "
      f"indices {outside[0]} to {outside[-1]} of a tensor with {n} elements.")

fig, ax = plt.subplots(figsize=(11, 1.6))
for i in range(-4, 2 * BLOCK_SIZE + 4):
    color = "tab:blue" if 0 <= i < n else ("tab:red" if i in changed else "lightgrey")
    ax.add_patch(Rectangle((i, 0), 1, 1, facecolor=color, edgecolor="white"))
ax.text(n / 2, 1.15, f"dst: {n} elements", ha="center", color="tab:blue")
ax.text((n + 2 * BLOCK_SIZE) / 2, 1.15, "overwritten guard band", ha="center", color="tab:red")
ax.text(-2, 1.15, "guard", ha="center", color="grey")
ax.set_xlim(-4, 2 * BLOCK_SIZE + 4)
ax.set_ylim(-0.2, 1.6)
ax.axis("off")
ax.set_title(f"An unmasked store: n = {n}, BLOCK_SIZE = {BLOCK_SIZE}, {triton.cdiv(n, BLOCK_SIZE)} programs")
plt.show()

# %% [markdown]
# The second program wrote its whole block, elements 16 to 31, and 12 of them are not ours. The
# tests of this course compare every guard band after your kernel runs, and say what they found:

# %%
try:
    check_output(dst, src, name="copy_unmasked_kernel")
except CheckFailed as error:
    print(error)


# %% [markdown]
# Here the overrun was harmless only because the guard band was there to catch it. Without one:
#
# - **On a GPU**, PyTorch's caching allocator carves tensors out of large segments of memory it
#   reserved earlier, and rounds each tensor up (to a multiple of 512 bytes). So a store a little
#   past the end of a tensor usually lands in that rounding, memory nobody uses: no error, no
#   warning, no visible damage, the most silent bug of all, until the sizes change. A bigger
#   overrun lands in the *next tensor* of the segment: a wrong number somewhere else, maybe much
#   later. A store far enough out to leave memory that the process owns is an *illegal memory
#   access*: the kernel is killed, and the CUDA context with it. Every later CUDA call in the process fails with the same error, and the only cure is
#   to restart the Python kernel (on Colab: *Runtime > Restart session*) and lose every tensor you
#   had.
# - **Under the interpreter**, the kernel runs on the CPU with NumPy and writes straight into the
#   process's memory: past the end of a tensor lies Python's own heap. A small overrun corrupts
#   it quietly; the crash (a segmentation fault, or `free(): invalid pointer` and an abort) comes
#   later, somewhere unrelated, and takes the notebook down with it.
#
# Loads are sneakier still, because a read does not damage anything that would reveal it. An
# unmasked load past the end simply returns **whatever is there**, and the kernel computes with it.
# This kernel sums a vector of 20 numbers with one program and a block of 32, once without and
# once with a mask:

# %%
@triton.jit
def block_sum_kernel(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr, USE_MASK: tl.constexpr):
    """out[0] = x[0] + ... + x[n - 1], by one program whose block must hold all of x."""
    offsets = tl.arange(0, BLOCK_SIZE)
    if USE_MASK:  # a tl.constexpr: Triton compiles one version of the kernel for each value
        x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    else:
        x = tl.load(x_ptr + offsets)  # lanes 20 to 31 read past the end of x
    tl.store(out_ptr, tl.sum(x, axis=0))


x = rand(20)
total = torch.empty(1, device=DEVICE)
for use_mask in [False, True]:
    block_sum_kernel[(1,)](x, total, x.numel(), BLOCK_SIZE=32, USE_MASK=use_mask)
    print(f"USE_MASK={use_mask!s:5}: kernel sum {total.item():9.4f}, torch sum {x.sum().item():9.4f}")

# %% [markdown]
# The unmasked sum is wrong, and nothing complained. The 12 extra numbers came from the memory
# after `x`: here the infinities and NaNs that the course puts around test inputs, so that such a
# read shows in the result; in a real program the next tensor, or, in a matrix, the first numbers
# of the *next row*, and a wrong sum that looks like any other. On a GPU a load far enough out
# faults like a store; a load just past the end usually does not, which is what makes it
# dangerous. (When the tests call your kernels under the interpreter, they watch every load and
# name the first one outside your tensors.)
#
# So: **mask every load and every store** whose block can overhang the data. The mask costs one
# comparison per lane, nothing next to the memory traffic.
#
# ### Written question W (2 points)
#
# In the vector-add kernel of lesson 2,
#
# ```python
# offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
# mask = offsets < n
# x = tl.load(x_ptr + offsets, mask=mask)
# y = tl.load(y_ptr + offsets, mask=mask)
# tl.store(out_ptr + offsets, x + y, mask=mask)
# ```
#
# explain what `mask = offsets < n` prevents. Say which programs and which lanes it affects, and
# why they exist at all; what would happen to the **loads** and to the **store** without it (on a
# GPU, and under the interpreter); and why the mask does not change the result for the other
# lanes. A short paragraph is enough.

# %% [markdown] nbgrader={"grade": true, "grade_id": "written_mask", "points": 2, "solution": true}
# ### BEGIN SOLUTION
# The grid has `triton.cdiv(n, BLOCK_SIZE)` programs, rounded up so that every element is covered.
# When `n` is not a multiple of `BLOCK_SIZE`, the last program's block overhangs the array: its
# lanes with `offsets >= n` have no element. The mask is `False` exactly for those lanes (for
# every other program it is all `True`), and a masked-off lane is neither read nor written.
# Without it the two loads would read past the end of `x` and `y`, returning whatever lies there
# (another tensor's data, garbage) or, far enough out, faulting; and the store would write
# `x + y` past the end of `out`, silently overwriting other data (another tensor, or Python's
# heap under the interpreter, which can crash the process later) or, on a GPU, triggering an
# illegal memory access that kills the CUDA context for the rest of the process. Lanes with
# `offsets < n` are loaded, added and stored exactly as before, so the result is unchanged; the
# garbage values a masked load gives its off lanes are never stored.
# ### END SOLUTION

# %% [markdown]
# ## 3. `other=`: what a masked-off lane holds
#
# A masked load does not make the off lanes disappear: the block still has `BLOCK_SIZE` lanes, and
# the off ones must hold *some* value. `tl.load(ptrs, mask=mask, other=v)` fills them with `v`.
# Without `other=`, Triton promises nothing about them (the interpreter puts 0 there; a GPU
# compiler may put anything).
#
# For an element-wise kernel that does not matter: off lanes are computed on and then not stored.
# A **reduction** is different. `tl.sum(x, axis=0)` adds up *every* lane of the block, the off
# ones included. So the off lanes must hold a value that cannot change the result: the *neutral
# element* of the reduction. For a sum that is 0, since `s + 0 = s`: that is why `block_sum_kernel`
# above loads with `other=0.0`.
#
# Before reading on, decide what the neutral element of a *maximum* is, and answer question Q2.
#
# ### Question Q2 (1 point)
#
# A kernel computes the maximum of each row of a matrix with 100 columns, in blocks of 128:
#
# ```python
# cols = tl.arange(0, 128)
# x = tl.load(row_ptr + cols, mask=cols < 100, other=0.0)
# row_max = tl.max(x, axis=0)
# ```
#
# Which statement is true?
#
# - **a.** It is right for every row: masked-off lanes are never read, so `other=` cannot change
#   the result.
# - **b.** It returns a wrong maximum exactly for the rows whose 100 entries are all negative;
#   with `other=-float("inf")` it would be right for every row.
# - **c.** It returns a wrong maximum for the rows whose entries are all positive; `other=float("inf")`
#   would be right for every row.
# - **d.** `other=` only matters when the number of columns is a power of two.
#
# Replace the two lines in the next cell with `answer_max_other = "..."`, your letter between the
# quotes, and run it.

# %% nbgrader={"grade_id": "q_max_other", "solution": true}
### BEGIN SOLUTION
answer_max_other = "b"  # one of "a", "b", "c", "d"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_q_max_other", "locked": true, "points": 1}
check_choice(globals().get("answer_max_other"), "answer_max_other")
print("Your answer is recorded; it is checked when your notebook is graded.")
### BEGIN HIDDEN TESTS
check_choice(answer_max_other, "answer_max_other", expected="b",
             why="The 28 masked-off lanes take part in tl.max with the value of other=. With "
                 "other=0.0, a row whose entries are all negative gets the maximum 0.0, which is not "
                 "in the row; -inf can never win a maximum, so other=-float('inf') is right for every row.")
### END HIDDEN TESTS

# %% [markdown]
# Let's see it. This kernel takes the maximum of one block, with the `other=` value passed in, on
# a vector of 20 numbers that are all negative:

# %%
@triton.jit
def block_max_kernel(x_ptr, out_ptr, n, other, BLOCK_SIZE: tl.constexpr):
    """out[0] = max(x[0], ..., x[n - 1]), by one program; masked-off lanes hold `other`."""
    offsets = tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=other)
    tl.store(out_ptr, tl.max(x, axis=0))


x = -rand(20).abs() - 0.1  # every entry negative
result = torch.empty(1, device=DEVICE)
for other in [0.0, -float("inf")]:
    block_max_kernel[(1,)](x, result, x.numel(), other, BLOCK_SIZE=32)
    print(f"other={other:5}: kernel max {result.item():8.4f}, torch max {x.max().item():8.4f}")

# %% [markdown]
# With `other=0.0` the twelve off lanes hold 0, and 0 beats every real entry: the "maximum" is a
# number that is not in the data. `-inf` loses to everything, so it is the neutral element of a
# maximum.
#
# ### Question Q3 (1 point)
#
# Now a row **minimum** of the same matrix (100 columns in blocks of 128), with
# `tl.min(x, axis=0)`. Which `other=` is right for every row?
#
# - **a.** `other=0.0`
# - **b.** `other=-float("inf")`, as for the maximum
# - **c.** `other=float("inf")`
# - **d.** Any value: the minimum of a masked load ignores the masked-off lanes.
#
# Set `answer_min_other` to your letter in the next cell, and run it.

# %% nbgrader={"grade_id": "q_min_other", "solution": true}
### BEGIN SOLUTION
answer_min_other = "c"  # one of "a", "b", "c", "d"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_q_min_other", "locked": true, "points": 1}
check_choice(globals().get("answer_min_other"), "answer_min_other")
print("Your answer is recorded; it is checked when your notebook is graded.")
### BEGIN HIDDEN TESTS
check_choice(answer_min_other, "answer_min_other", expected="c",
             why="The masked-off lanes take part in tl.min with the value of other=, so it must be a "
                 "value that can never win a minimum: +inf. With -inf every row's minimum would be "
                 "-inf; with 0.0, every row of positive numbers would get 0.0.")
### END HIDDEN TESTS

# %% [markdown]
# The rule, for the reductions you will meet:
#
# | reduction | `tl.` function | neutral `other=` | why |
# |---|---|---|---|
# | sum | `tl.sum` | `0.0` | `s + 0 = s` |
# | maximum | `tl.max` | `-float("inf")` | nothing is smaller |
# | minimum | `tl.min` | `float("inf")` | nothing is larger |
# | product | (`tl.reduce`) | `1.0` | `p * 1 = p` |
#
# (The softmax of the next lesson needs the max rule: it subtracts each row's maximum, and its
# exponentials then turn the `-inf` lanes into `exp(-inf) = 0`, neutral for the sum that follows.)
# Another way to the same end is `x = tl.where(mask, x, neutral)` after the load; `other=` says it
# in one place, and in a matrix product (lesson 6) it is also the fast way.
#
# ## 4. One program per row, through strides
#
# A reduction over each row of a matrix is the bread and butter of deep learning kernels (softmax,
# layer norm, losses). The simplest plan gives **one program to each row**: program `row` loads the
# whole row as one block, reduces it, and stores one number. The grid is `(n_rows,)`, and the block
# is the row length rounded up to a power of two, with a mask for the tail.
#
# Where is element `(row, col)` in memory? For a contiguous matrix with `n_cols` columns it is at
# `row * n_cols + col`, but a matrix you are given is often a **view**: a transposed matrix, a
# slice, every second column. PyTorch describes every layout the same way, with one **stride** per
# dimension: element `(i, j)` of `x` is at
#
# $$\texttt{x\_ptr} + i \cdot \texttt{x.stride(0)} + j \cdot \texttt{x.stride(1)}$$
#
# where `x_ptr` is the address of `x[0, 0]` (what a kernel receives for `x`, even for a slice
# that starts in the middle of a buffer). The strides count elements, not bytes:

# %%
base = torch.arange(12.0).view(3, 4)
print(base)
for name, view in [("base", base), ("base.t()", base.t()), ("base[:, ::2]", base[:, ::2]),
                   ("base[1:, 1:3]", base[1:, 1:3])]:
    print(f"{name:14} shape {tuple(view.shape)}, stride {view.stride()}, starts at base element "
          f"{view.storage_offset()}, contiguous: {view.is_contiguous()}")


# %% [markdown]
# `base.t()` copies nothing: it is the same 12 numbers with the strides swapped, so that stepping
# along a row of the transpose (`j`) jumps 4 elements in memory. `base[:, ::2]` has a column
# stride of 2, and `base[1:, 1:3]` starts at element 5 with the row stride of `base`.
#
# A kernel that receives the two strides as arguments and computes
# `x_ptr + row * stride_row + cols * stride_col` reads *any* of these layouts in place. The
# alternative, `x.contiguous()` in the wrapper, costs a full extra read and write of the matrix
# whenever `x` is a view: for a kernel limited by memory, up to three times the traffic. Counting
# bytes is not the whole story, though; after exercise 1 you will measure when the extra copy
# pays for itself.
#
# ## Exercise 1: the sum of each row (6 points)
#
# Write `row_sum_kernel`: program `row` computes `out[row] = x[row, 0] + ... + x[row, n_cols - 1]`.
#
# 1. `row = tl.program_id(0)` and `cols = tl.arange(0, BLOCK_SIZE)`; `BLOCK_SIZE >= n_cols` is
#    guaranteed by the caller.
# 2. Load the row through the strides, with the mask `cols < n_cols` and the neutral element of a
#    sum for the off lanes.
# 3. **Add in fp32.** For fp16 or bf16 inputs, `tl.sum` would otherwise add in 16 bits, and a
#    long row loses precision: convert the loaded block with `.to(tl.float32)` first.
# 4. Store the sum at `out_ptr + row` (`out` is a contiguous vector; `tl.store` converts the fp32
#    sum to `out`'s dtype).
#
# Then write `row_sum(x)`, the function that launches it for a 2-D tensor `x` of any layout: it
# returns a new vector of `n_rows` sums in `x`'s dtype, on `x`'s device, like `x.sum(dim=1)`. Pass
# `x.stride(0)` and `x.stride(1)`, and do **not** call `x.contiguous()`. Use
# `BLOCK_SIZE = triton.next_power_of_2(n_cols)`.

# %% nbgrader={"grade_id": "row_sum_kernel", "solution": true}
@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, stride_row, stride_col, BLOCK_SIZE: tl.constexpr):
    """out[row] = sum of x[row, :n_cols], accumulated in fp32. One program per row."""
    ### BEGIN SOLUTION
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols * stride_col, mask=mask, other=0.0)
    total = tl.sum(x.to(tl.float32), axis=0)
    tl.store(out_ptr + row, total)
    ### END SOLUTION


# %% [markdown]
# The first test launches your kernel itself, on a contiguous (37, 100) matrix and on a slice of a
# wider one, whose row stride (150) is not its row length (100).

# %% nbgrader={"grade": true, "grade_id": "test_row_sum_kernel", "locked": true, "points": 1}
def _whole(t):  # all the memory t is a view of, as one contiguous tensor: it must stay unchanged
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage())


def _run_row_sum_kernel(x, block, what):
    n_rows, n_cols = x.shape
    x_all = _whole(x)
    x_all_before = x_all.clone()
    out = guarded_empty(n_rows, dtype=x.dtype)
    call_answer(lambda: row_sum_kernel[(n_rows,)](x, out, n_cols, x.stride(0), x.stride(1),
                                                  BLOCK_SIZE=block), name="row_sum_kernel")
    check_output(out, x.float().sum(dim=1).to(x.dtype), name=f"row_sum_kernel on {what}",
                 inputs=[(x_all, x_all_before)], atol=1e-4 if x.dtype == torch.float32 else None,
                 hint=f"Each row has {n_cols} numbers in a block of {block} lanes. "
                      f"Are lanes {n_cols} and up masked (cols < n_cols) and loaded as 0.0 "
                      "(other=0.0)? Is x[row, col] read at x_ptr + row * stride_row + col * "
                      "stride_col?")


_run_row_sum_kernel(rand(37, 100), 128, "a contiguous (37, 100) matrix")
_run_row_sum_kernel(rand(37, 150)[:, :100], 128, "x[:, :100] of a (37, 150) matrix (row stride 150)")
print("row_sum_kernel summed both matrices right, row by row.")


# %% nbgrader={"grade": true, "grade_id": "test_row_sum_kernel_hidden", "locked": true, "points": 2}
# Hidden tests launch row_sum_kernel on more row lengths, block sizes, layouts and dtypes when your
# notebook is graded.
### BEGIN HIDDEN TESTS
def _whole(t):  # all the memory t is a view of, as one contiguous tensor: it must stay unchanged
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage())


def _matrix(n_rows, n_cols, layout, dtype, spare):
    # Views with `spare` elements of real memory past each row's end, so that a missing mask reads
    # numbers, not memory the process does not own.
    if layout == "contiguous":
        return rand(n_rows, n_cols, dtype=dtype)
    if layout == "a slice of wider rows":
        return rand(n_rows, n_cols + spare, dtype=dtype)[:, :n_cols]
    if layout == "transposed":
        return rand(n_cols + spare, n_rows, dtype=dtype)[:n_cols].t()
    if layout == "every other column":
        return rand(n_rows, 2 * (n_cols + spare), dtype=dtype)[:, ::2][:, :n_cols]
    if layout == "every other row":
        return rand(2 * n_rows, n_cols, dtype=dtype)[::2]
    raise ValueError(layout)


def _check_row_sum_kernel(n_rows, n_cols, block, layout="contiguous", dtype=torch.float32):
    x = _matrix(n_rows, n_cols, layout, dtype, block)
    x_all = _whole(x)
    x_all_before = x_all.clone()
    out = guarded_empty(n_rows, dtype=dtype)
    call_answer(lambda: row_sum_kernel[(n_rows,)](x, out, n_cols, x.stride(0), x.stride(1),
                                                  BLOCK_SIZE=block), name="row_sum_kernel")
    what = (f"row_sum_kernel on a {layout} ({n_rows}, {n_cols}) matrix of {dtype} with strides "
            f"{x.stride()}, BLOCK_SIZE={block}")
    check_output(out, x.float().sum(dim=1).to(dtype), name=what, inputs=[(x_all, x_all_before)],
                 atol=1e-4 if dtype == torch.float32 else None,
                 hint="Mask the lanes past the row's end (cols < n_cols), load "
                      "them as 0.0 (other=0.0), read x[row, col] at x_ptr + row * stride_row + "
                      "col * stride_col (both strides!), and add in fp32 "
                      "(x.to(tl.float32)).")


for n_cols in [1, 2, 3, 5, 17, 97, 100, 127, 128, 129, 1000, 1021]:
    for block in [triton.next_power_of_2(n_cols), 2 * triton.next_power_of_2(n_cols)]:
        _check_row_sum_kernel(5, n_cols, block)
for n_rows in [1, 2, 13]:
    _check_row_sum_kernel(n_rows, 97, 128)
for layout in ["a slice of wider rows", "transposed", "every other column", "every other row"]:
    for n_cols in [1, 31, 100, 257]:
        _check_row_sum_kernel(7, n_cols, triton.next_power_of_2(n_cols), layout)
for dtype in FLOAT_DTYPES:
    for n_cols in [1, 100, 1021]:
        _check_row_sum_kernel(6, n_cols, triton.next_power_of_2(n_cols), dtype=dtype)
    _check_row_sum_kernel(6, 300, 512, "transposed", dtype)
# Rows of 64 x 40000.0 then 64 x -40000.0 sum to 0, but any two of the first half added in fp16
# overflow (the largest fp16 is 65504): only an fp32 accumulator gets 0. (The interpreter's tl.sum
# is NumPy's, which adds fp16 in fp32 anyway: this catches an fp16 accumulator on a GPU.)
x = rand(4, 128, dtype=torch.float16)
x.copy_(torch.tensor([40000.0] * 64 + [-40000.0] * 64).to(x.device, x.dtype).expand(4, 128))
out = guarded_empty(4, dtype=torch.float16)
call_answer(lambda: row_sum_kernel[(4,)](x, out, 128, x.stride(0), x.stride(1), BLOCK_SIZE=128),
            name="row_sum_kernel")
if not bool((out == 0).all()):
    raise CheckFailed(f"row_sum_kernel on fp16 rows of 64 x 40000.0 and 64 x -40000.0 returned "
                      f"{out[0].item()}, expected 0.0: the sum was added in fp16, whose largest value "
                      "is 65504. Convert the loaded block with x.to(tl.float32) before tl.sum.")
print("row_sum_kernel passed the hidden tests.")
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "row_sum", "solution": true}
def row_sum(x: torch.Tensor) -> torch.Tensor:
    """x.sum(dim=1) for a 2-D tensor of any layout, computed by row_sum_kernel without copying x."""
    ### BEGIN SOLUTION
    assert x.dim() == 2, f"row_sum takes a 2-D tensor, got {x.dim()} dimensions"
    n_rows, n_cols = x.shape
    out = torch.empty(n_rows, dtype=x.dtype, device=x.device)
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    row_sum_kernel[(n_rows,)](x, out, n_cols, x.stride(0), x.stride(1), BLOCK_SIZE=BLOCK_SIZE)
    return out
    ### END SOLUTION


# %% [markdown]
# The test calls `row_sum` on a (37, 100) matrix and on a transposed one, counts the kernels it
# launches (a torch expression in place of a kernel earns nothing), and places the output your
# function allocates between guard bands.

# %% nbgrader={"grade": true, "grade_id": "test_row_sum", "locked": true, "points": 1}
def _whole(t):  # all the memory t is a view of, as one contiguous tensor: it must stay unchanged
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage())


def _run_row_sum(x, what):
    x_all = _whole(x)
    x_all_before = x_all.clone()
    with guarded_allocations(), count_launches() as launches:
        out = call_answer(row_sum, x)
    expect_launched(launches, "row_sum", out)
    check_output(out, x.sum(dim=1), name=f"row_sum on {what}", inputs=[(x_all, x_all_before)], atol=1e-4,
                 hint="Does row_sum launch one program per row (grid = "
                      "(n_rows,)) with BLOCK_SIZE = triton.next_power_of_2(n_cols), and pass "
                      "x.stride(0) and x.stride(1)? Does row_sum_kernel pass its own test?")
    return len(launches)


_run_row_sum(rand(37, 100), "a contiguous (37, 100) matrix")
launched = _run_row_sum(rand(100, 37).t(), "a transposed (37, 100) matrix, strides (1, 37)")
print(f"row_sum is right on both layouts, with {launched} kernel launch(es).")


# %% nbgrader={"grade": true, "grade_id": "test_row_sum_hidden", "locked": true, "points": 2}
# Hidden tests check row_sum on more shapes, layouts and dtypes when your notebook is graded.
### BEGIN HIDDEN TESTS
def _whole(t):  # all the memory t is a view of, as one contiguous tensor: it must stay unchanged
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage())


def _check_row_sum(x, what):
    x_all = _whole(x)
    x_all_before = x_all.clone()
    with guarded_allocations(), count_launches() as launches:
        out = call_answer(row_sum, x)
    expect_launched(launches, f"row_sum on {what}", out)
    if isinstance(out, torch.Tensor) and out.shape != (x.shape[0],):
        raise CheckFailed(f"row_sum on {what} returned shape {tuple(out.shape)}, expected "
                          f"({x.shape[0]},): one sum per row.")
    check_output(out, x.float().sum(dim=1).to(x.dtype), name=f"row_sum on {what}",
                 inputs=[(x_all, x_all_before)], atol=1e-4 if x.dtype == torch.float32 else None,
                 hint="One program per row (grid = (n_rows,)), BLOCK_SIZE = "
                      "triton.next_power_of_2(n_cols) (a fixed block misses the columns past "
                      "it), x.stride(0) and x.stride(1) passed to the kernel.")


for n_rows, n_cols in [(1, 1), (1, 97), (97, 1), (3, 5), (8, 128), (8, 129), (5, 1021), (3, 2000)]:
    _check_row_sum(rand(n_rows, n_cols), f"a ({n_rows}, {n_cols}) matrix")
_check_row_sum(rand(300 + 512, 7)[:300].t(), "a transposed (7, 300) matrix")
_check_row_sum(rand(9, 2 * (100 + 128))[:, ::2][:, :100], "every other column of a matrix")
_check_row_sum(rand(5, 400)[:, 50:150], "a slice x[:, 50:150]")
_check_row_sum(rand(2 * 9, 77)[::2], "every other row of a matrix")
for dtype in FLOAT_DTYPES:
    _check_row_sum(rand(6, 1000, dtype=dtype), f"a (6, 1000) matrix of {dtype}")
    _check_row_sum(rand(100 + 128, 6, dtype=dtype)[:100].t(), f"a transposed (6, 100) matrix of {dtype}")
print("row_sum passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# **In place, or copied first?** Memory cares about the *order* of the reads, not only their
# number. In a transposed matrix the elements of one row are `x.stride(1)` elements apart, so the
# lanes of one program read addresses far apart, and the memory delivers at least 32 bytes
# (a *sector*) for each 4-byte number: the reads are **uncoalesced**, and up to 8 times as many
# bytes cross the memory bus as the kernel uses. Whether that is worse than copying first depends
# on the caches: the program for the next row reads the neighbouring 4 bytes of the same sectors,
# and if it runs soon enough they are still in the L2 cache. Copying first is no cure either:
# `x.contiguous()` copies a transposed matrix with PyTorch's general element-wise kernel, not with
# tiles, so its own reads or writes are strided (section 6 measures it, and shows the tiled way).
# Measure both ways on a transposed matrix, this device's answer (on an H200 at 4096 x 4096: in
# place 0.119 ms; `.contiguous()` first 0.146 ms, of which the row sum took 0.025):

# %%
x = rand(100, 37).t()
with guarded_allocations():  # a stub or a bug stops here, before any timing
    check_output(call_answer(row_sum, x), x.sum(dim=1), name="row_sum on a transposed matrix", atol=1e-4)
side = sized(4096, 64)
x_t = rand(side, side).t()  # row i of x_t is column i of the matrix in memory
x_c = x_t.contiguous()
in_place, copied = bench_ms(lambda: row_sum(x_t)), bench_ms(lambda: row_sum(x_t.contiguous()))
print(f"row_sum on a transposed {side} x {side} matrix: read in place through the strides "
      f"{in_place:.4g} ms; .contiguous() first, then row_sum {copied:.4g} ms (row_sum alone on the "
      f"copy: {bench_ms(lambda: row_sum(x_c)):.4g} ms). In place is {copied / in_place:.2f}x as fast.")
if not ON_GPU:
    print("Interpreter: these numbers time Python on the CPU and mean nothing about GPUs.")
del x_t, x_c


# %% [markdown]
# If copying first wins on your GPU, the strided reads cost more than the copy's extra traffic;
# if reading in place wins, the caches rescued the uncoalesced reads. Either way, the lesson is
# the one of this course: measure. (A row reduction can also read a transposed matrix whole, with
# 2-D tiles that cover several rows and walk along them: the layout of section 6.)
#
# ## Exercise 2: the maximum of each row (3 points)
#
# Now `row_max_kernel` and `row_max(x)`, like `x.amax(dim=1)`: the same plan as exercise 1, with
# `tl.max` and the neutral element of a maximum for the off lanes. A maximum is exact in any dtype,
# so no conversion is needed. The test feeds rows whose entries are all negative.

# %% nbgrader={"grade_id": "row_max_kernel", "solution": true}
@triton.jit
def row_max_kernel(x_ptr, out_ptr, n_cols, stride_row, stride_col, BLOCK_SIZE: tl.constexpr):
    """out[row] = max of x[row, :n_cols]. One program per row."""
    ### BEGIN SOLUTION
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols * stride_col, mask=mask, other=-float("inf"))
    tl.store(out_ptr + row, tl.max(x, axis=0))
    ### END SOLUTION


# %% nbgrader={"grade_id": "row_max", "solution": true}
def row_max(x: torch.Tensor) -> torch.Tensor:
    """x.amax(dim=1) for a 2-D tensor of any layout, computed by row_max_kernel without copying x."""
    ### BEGIN SOLUTION
    assert x.dim() == 2, f"row_max takes a 2-D tensor, got {x.dim()} dimensions"
    n_rows, n_cols = x.shape
    out = torch.empty(n_rows, dtype=x.dtype, device=x.device)
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    row_max_kernel[(n_rows,)](x, out, n_cols, x.stride(0), x.stride(1), BLOCK_SIZE=BLOCK_SIZE)
    return out
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_row_max", "locked": true, "points": 1}
def _whole(t):  # all the memory t is a view of, as one contiguous tensor: it must stay unchanged
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage())


def _run_row_max(x, what):
    x_all = _whole(x)
    x_all_before = x_all.clone()
    with guarded_allocations(), count_launches() as launches:
        out = call_answer(row_max, x)
    expect_launched(launches, "row_max", out)
    expected = x.amax(dim=1)
    zero_won = isinstance(out, torch.Tensor) and out.shape == expected.shape and \
        bool(((out == 0) & (expected < 0)).any())
    check_output(out, expected, name=f"row_max on {what}", inputs=[(x_all, x_all_before)],
                 hint="A row whose entries are all negative got the maximum 0.0: the masked-off lanes "
                      "held 0.0 and won tl.max. Load them with other=-float('inf')." if zero_won else
                      "Mask the lanes past the row's end (cols < n_cols) and read x[row, col] at "
                      "x_ptr + row * stride_row + col * stride_col.")


x = rand(37, 100)
x.copy_(-x.abs() - 0.01)  # every entry negative
_run_row_max(x, "a (37, 100) matrix whose entries are all negative")
_run_row_max(rand(100, 37).t(), "a transposed (37, 100) matrix")
print("row_max is right, negative rows included.")


# %% nbgrader={"grade": true, "grade_id": "test_row_max_hidden", "locked": true, "points": 2}
# Hidden tests check row_max_kernel and row_max on more shapes, signs, layouts and dtypes when your
# notebook is graded.
### BEGIN HIDDEN TESTS
def _whole(t):  # all the memory t is a view of, as one contiguous tensor: it must stay unchanged
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage())


def _check_row_max(x, what, block=None):
    x_all = _whole(x)
    x_all_before = x_all.clone()
    if block is None:  # through the student's wrapper
        with guarded_allocations(), count_launches() as launches:
            out = call_answer(row_max, x)
        expect_launched(launches, f"row_max on {what}", out)
        name = f"row_max on {what}"
    else:  # the kernel alone, with a block size of our choosing
        out = guarded_empty(x.shape[0], dtype=x.dtype)
        call_answer(lambda: row_max_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), x.stride(1),
                                                          BLOCK_SIZE=block), name="row_max_kernel")
        name = f"row_max_kernel on {what}, BLOCK_SIZE={block}"
    expected = x.amax(dim=1)
    zero_won = isinstance(out, torch.Tensor) and out.shape == expected.shape and \
        bool(((out == 0) & (expected < 0)).any())
    check_output(out, expected, name=name, inputs=[(x_all, x_all_before)],
                 hint="A row of negative numbers got the maximum 0.0: load the masked-off lanes with "
                      "other=-float('inf')." if zero_won else
                      "Mask the lanes past the row's end (cols < n_cols), use other=-float('inf'), and "
                      "read x[row, col] at x_ptr + row * stride_row + col * stride_col.")


def _negative(*shape, dtype=torch.float32):
    x = rand(*shape, dtype=dtype)
    x.copy_(-x.abs() - 0.01)  # in place, so that the guard band around x stays
    return x


for n_cols in [1, 2, 3, 17, 100, 127, 128, 129, 1021]:
    for block in [triton.next_power_of_2(n_cols), 2 * triton.next_power_of_2(n_cols)]:
        _check_row_max(_negative(5, n_cols), f"a negative (5, {n_cols}) matrix", block)
        _check_row_max(rand(5, n_cols), f"a (5, {n_cols}) matrix", block)
_check_row_max(rand(300 + 512, 7)[:300].t(), "a transposed (7, 300) matrix", 512)
_check_row_max(rand(7, 2 * (100 + 128))[:, ::2][:, :100], "every other column of a matrix", 128)
for n_rows, n_cols in [(1, 1), (97, 1), (1, 97), (8, 129), (3, 2000)]:
    _check_row_max(_negative(n_rows, n_cols), f"a negative ({n_rows}, {n_cols}) matrix")
_check_row_max(rand(100 + 128, 7)[:100].t(), "a transposed (7, 100) matrix")
_check_row_max(_negative(2 * 9, 77)[::2], "every other row of a negative matrix")
_check_row_max(rand(5, 400)[:, 50:150], "a slice x[:, 50:150]")
for dtype in FLOAT_DTYPES:
    _check_row_max(_negative(6, 1000, dtype=dtype), f"a negative (6, 1000) matrix of {dtype}")
    _check_row_max(rand(100 + 128, 6, dtype=dtype)[:100].t(), f"a transposed (6, 100) matrix of {dtype}")
print("row_max_kernel and row_max passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## 5. Two-dimensional tiles
#
# One program per row works when a row fits in one block. For element-wise work on a matrix (a
# copy, a transpose, an add) the natural unit is a **tile**: a `BLOCK_M x BLOCK_N` rectangle of the
# matrix. The grid becomes two-dimensional, one program per tile:
#
# ```python
# grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
# pid_m = tl.program_id(0)   # which band of rows
# pid_n = tl.program_id(1)   # which band of columns
# ```
#
# Each program builds its row and column indices as two 1-D blocks, and combines them into a 2-D
# block by **broadcasting**, exactly like NumPy: `offs_m[:, None]` is a column (shape
# `BLOCK_M x 1`), `offs_n[None, :]` a row (`1 x BLOCK_N`), and any arithmetic between them gives
# the full `BLOCK_M x BLOCK_N` tile:
#
# ```python
# offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
# offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
# ptrs = x_ptr + offs_m[:, None] * stride_m + offs_n[None, :] * stride_n    # BLOCK_M x BLOCK_N addresses
# mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)                      # BLOCK_M x BLOCK_N booleans
# ```
#
# The mask has two tails now: tiles in the last band of rows overhang the bottom of the matrix,
# tiles in the last band of columns overhang its right side, and the corner tile both. Here is a
# 10 x 13 matrix covered by 4 x 4 tiles:

# %%
def draw_tiles(M=10, N=13, BLOCK_M=4, BLOCK_N=4):
    """A matrix covered by a grid of tiles, one color per program; masked-off lanes hatched."""
    grid_m, grid_n = triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N)
    colors = plt.cm.tab20.colors
    fig, ax = plt.subplots(figsize=(9, 7.5))
    for i in range(grid_m * BLOCK_M):
        for j in range(grid_n * BLOCK_N):
            color = colors[((i // BLOCK_M) * grid_n + j // BLOCK_N) % len(colors)]
            inside = i < M and j < N
            ax.add_patch(Rectangle((j, i), 1, 1, facecolor=color if inside else "white",
                                   edgecolor=color if not inside else "white",
                                   hatch=None if inside else "///"))
    for pid_m in range(grid_m):
        for pid_n in range(grid_n):
            ax.add_patch(Rectangle((pid_n * BLOCK_N, pid_m * BLOCK_M), BLOCK_N, BLOCK_M,
                                   fill=False, edgecolor="black", linewidth=1.5))
            ax.text(pid_n * BLOCK_N + BLOCK_N / 2, pid_m * BLOCK_M + BLOCK_M * 0.3,
                    f"pid ({pid_m}, {pid_n})", ha="center", va="center", fontsize=9,
                    bbox={"facecolor": "white", "alpha": 0.8, "linewidth": 0})
    ax.add_patch(Rectangle((0, 0), N, M, fill=False, edgecolor="red", linewidth=3))
    ax.text(grid_n * BLOCK_N + 0.3, M, f"the matrix\nends at the\nred line\n({M} x {N})",
            color="red", va="center")
    ax.set_xlim(0, grid_n * BLOCK_N + 4)
    ax.set_ylim(grid_m * BLOCK_M + 0.5, -0.5)  # row 0 at the top, like a matrix
    ax.set_aspect("equal")
    ax.set_xticks([j + 0.5 for j in range(grid_n * BLOCK_N)], range(grid_n * BLOCK_N), fontsize=7)
    ax.set_yticks([i + 0.5 for i in range(grid_m * BLOCK_M)], range(grid_m * BLOCK_M), fontsize=7)
    ax.tick_params(top=True, labeltop=True, bottom=False, labelbottom=False)
    ax.set_xlabel("column j")
    ax.set_ylabel("row i")
    lanes = grid_m * BLOCK_M * grid_n * BLOCK_N
    ax.set_title(f"grid = ({grid_m}, {grid_n}): {grid_m * grid_n} programs, {lanes} lanes, "
                 f"{lanes - M * N} masked off (hatched)")
    plt.show()


draw_tiles()

# %% [markdown]
# Only the six programs with `pid_m <= 1` and `pid_n <= 2` have full tiles; the right column of
# programs loses 3 of its 4 columns, the bottom row of programs 2 of its 4 rows, and the corner program `(2, 3)` keeps just
# 2 of its 16 lanes. Here is that corner program's mask, computed the way the kernel computes it
# (in NumPy, which broadcasts the same way):

# %%
M, N, BLOCK_M, BLOCK_N = 10, 13, 4, 4
pid_m, pid_n = 2, 3
offs_m = pid_m * BLOCK_M + np.arange(BLOCK_M)
offs_n = pid_n * BLOCK_N + np.arange(BLOCK_N)
print("offs_m:", offs_m, " offs_n:", offs_n)
print("mask = (offs_m[:, None] < M) & (offs_n[None, :] < N):")
print((offs_m[:, None] < M) & (offs_n[None, :] < N))
stride_m, stride_n = N, 1  # a contiguous M x N matrix
print("offsets into a contiguous matrix, offs_m[:, None] * stride_m + offs_n[None, :] * stride_n:")
print(offs_m[:, None] * stride_m + offs_n[None, :] * stride_n)


# %% [markdown]
# Why two tests, and not one comparison of the flat offset with `M * N`? Look at lane `(8, 13)`
# of this tile: its offset, `8 * 13 + 13 = 117`, is less than `M * N = 130`, so a flat test would
# let it through, yet column 13 does not exist: offset 117 is the address of element `(9, 0)`, a
# real element under the wrong coordinates. And in a slice of a bigger matrix, `(8, 13)` would be
# the address of a neighbour's number in the same row. Each dimension needs its own test.
#
# ## Exercise 3: a 2-D copy through strides (6 points)
#
# Write `copy_2d_kernel`, which copies an `M x N` matrix `x` into an `M x N` matrix `out`, each
# program one `BLOCK_M x BLOCK_N` tile. Both matrices are given by a pointer and two strides, so
# the kernel reads and writes any layout:
#
# `out[i, j]`, at `out_ptr + i * stride_om + j * stride_on`, gets `x[i, j]`, at
# `x_ptr + i * stride_xm + j * stride_xn`, for every `i < M` and `j < N`.
#
# Then write `copy_2d(x)`: it returns a new, **contiguous** `M x N` tensor with `x`'s values, dtype
# and device, whatever `x`'s layout (what `x.contiguous()` does when `x` is a view). Two details:
#
# - `torch.empty_like(x)` copies `x`'s strides when it can: for a transposed `x` you would get a
#   transposed output. Allocate with `torch.empty((M, N), dtype=x.dtype, device=x.device)`.
# - Use 64 x 64 tiles (`BLOCK_M = BLOCK_N = 64`): large enough to keep a GPU's memory busy, small
#   enough to fit in registers.

# %% nbgrader={"grade_id": "copy_2d_kernel", "solution": true}
@triton.jit
def copy_2d_kernel(x_ptr, out_ptr, M, N, stride_xm, stride_xn, stride_om, stride_on,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """out[i, j] = x[i, j] for i < M, j < N. Program (pid_m, pid_n) copies one BLOCK_M x BLOCK_N tile."""
    ### BEGIN SOLUTION
    pid_m = tl.program_id(axis=0)
    pid_n = tl.program_id(axis=1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    x = tl.load(x_ptr + offs_m[:, None] * stride_xm + offs_n[None, :] * stride_xn, mask=mask)
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on, x, mask=mask)
    ### END SOLUTION


# %% [markdown]
# The first test launches your kernel on a contiguous 33 x 65 matrix and on the transpose of a
# 65 x 33 one, in tiles of 16 x 32: both dimensions have a tail.

# %% nbgrader={"grade": true, "grade_id": "test_copy_2d_kernel", "locked": true, "points": 1}
def _whole(t):  # all the memory t is a view of, as one contiguous tensor: it must stay unchanged
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage())


def _run_copy_2d_kernel(x, block_m, block_n, what):
    M, N = x.shape
    x_all = _whole(x)
    x_all_before = x_all.clone()
    out = guarded_empty((M, N), dtype=x.dtype)
    grid = (triton.cdiv(M, block_m), triton.cdiv(N, block_n))
    call_answer(lambda: copy_2d_kernel[grid](x, out, M, N, x.stride(0), x.stride(1), out.stride(0),
                                             out.stride(1), BLOCK_M=block_m, BLOCK_N=block_n),
                name="copy_2d_kernel")
    check_output(out, x, name=f"copy_2d_kernel on {what}", inputs=[(x_all, x_all_before)],
                 hint="Offsets are offs_m[:, None] * stride + offs_n[None, :] * "
                      "stride (x's strides for the load, out's for the store), and the mask "
                      "needs both tests: (offs_m[:, None] < M) & (offs_n[None, :] < N).")


_run_copy_2d_kernel(rand(33, 65), 16, 32, "a contiguous (33, 65) matrix, 16 x 32 tiles")
_run_copy_2d_kernel(rand(65, 33).t(), 16, 32, "a transposed (33, 65) matrix, 16 x 32 tiles")
print("copy_2d_kernel copied both matrices exactly, and wrote nothing outside them.")


# %% nbgrader={"grade": true, "grade_id": "test_copy_2d_kernel_hidden", "locked": true, "points": 2}
# Hidden tests launch copy_2d_kernel on more shapes, tile shapes, layouts and dtypes when your
# notebook is graded.
### BEGIN HIDDEN TESTS
def _whole(t):  # all the memory t is a view of, as one contiguous tensor: it must stay unchanged
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage())


def _matrix_2d(M, N, layout, dtype, spare_m, spare_n):
    # Views with spare rows and columns of real memory around them, so that a missing load mask
    # reads numbers, not memory the process does not own.
    if layout == "contiguous":
        return rand(M + spare_m, N, dtype=dtype)[:M]
    if layout == "transposed":
        return rand(N + spare_n, M + spare_m, dtype=dtype)[:N, :M].t()
    if layout == "every other column":
        return rand(M + spare_m, 2 * (N + spare_n), dtype=dtype)[:M, ::2][:, :N]
    if layout == "a slice":
        return rand(M + spare_m + 3, N + spare_n + 5, dtype=dtype)[3:3 + M, 5:5 + N]
    raise ValueError(layout)


def _check_copy_2d_kernel(M, N, block_m, block_n, layout="contiguous", dtype=torch.float32):
    x = _matrix_2d(M, N, layout, dtype, block_m, block_n)
    x_all = _whole(x)
    x_all_before = x_all.clone()
    out = guarded_empty((M, N), dtype=dtype)
    grid = (triton.cdiv(M, block_m), triton.cdiv(N, block_n))
    call_answer(lambda: copy_2d_kernel[grid](x, out, M, N, x.stride(0), x.stride(1), out.stride(0),
                                             out.stride(1), BLOCK_M=block_m, BLOCK_N=block_n),
                name="copy_2d_kernel")
    what = (f"copy_2d_kernel on a {layout} ({M}, {N}) matrix of {dtype} with strides {x.stride()}, "
            f"tiles of {block_m} x {block_n}")
    check_output(out, x, name=what, inputs=[(x_all, x_all_before)],
                 hint="Mask = (offs_m[:, None] < M) & (offs_n[None, :] < N) on "
                      "the load and the store; x's strides for the load, out's for the "
                      "store.")


# Small matrices of every layout first: a kernel that forgets a mask or mixes up the strides fails
# here, while its stray writes still land in the guard bands.
for layout in ["contiguous", "transposed", "every other column", "a slice"]:
    _check_copy_2d_kernel(2, 3, 16, 16, layout)
for M, N in [(1, 1), (1, 97), (97, 1), (2, 3), (33, 65), (64, 64), (130, 257)]:
    for block_m, block_n in [(16, 16), (32, 64), (64, 32), (8, 64), (64, 8)]:
        _check_copy_2d_kernel(M, N, block_m, block_n)
for layout in ["transposed", "every other column", "a slice"]:
    for M, N in [(1, 1), (1, 97), (97, 1), (33, 65), (130, 257)]:
        _check_copy_2d_kernel(M, N, 32, 64, layout)
# The output through its strides too: a transposed output turns the copy into a transpose.
for M, N in [(1, 97), (33, 65)]:
    x = rand(M, N)
    x_all = _whole(x)
    x_all_before = x_all.clone()
    out_t = guarded_empty((N, M))
    call_answer(lambda: copy_2d_kernel[(triton.cdiv(M, 16), triton.cdiv(N, 32))](
        x, out_t, M, N, x.stride(0), x.stride(1), out_t.stride(1), out_t.stride(0),
        BLOCK_M=16, BLOCK_N=32), name="copy_2d_kernel")
    check_output(out_t, x.t().contiguous(), name=f"copy_2d_kernel writing the transpose of a ({M}, {N}) "
                 "matrix (out's strides swapped): use stride_om and stride_on for the store",
                 inputs=[(x_all, x_all_before)])
for dtype in FLOAT_DTYPES:
    _check_copy_2d_kernel(33, 65, 16, 32, "contiguous", dtype)
    _check_copy_2d_kernel(33, 65, 16, 32, "transposed", dtype)
print("copy_2d_kernel passed the hidden tests.")
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "copy_2d", "solution": true}
def copy_2d(x: torch.Tensor) -> torch.Tensor:
    """A new contiguous tensor with x's values, for a 2-D x of any layout, copied by copy_2d_kernel."""
    ### BEGIN SOLUTION
    assert x.dim() == 2, f"copy_2d takes a 2-D tensor, got {x.dim()} dimensions"
    M, N = x.shape
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    BLOCK_M, BLOCK_N = 64, 64
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    copy_2d_kernel[grid](x, out, M, N, x.stride(0), x.stride(1), out.stride(0), out.stride(1),
                         BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    return out
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_copy_2d", "locked": true, "points": 1}
def _whole(t):  # all the memory t is a view of, as one contiguous tensor: it must stay unchanged
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage())


def _run_copy_2d(x, what):
    x_all = _whole(x)
    x_all_before = x_all.clone()
    with guarded_allocations(), count_launches() as launches:
        out = call_answer(copy_2d, x)
    expect_launched(launches, "copy_2d", out)
    check_output(out, x.contiguous(), name=f"copy_2d on {what}", inputs=[(x_all, x_all_before)],
                 hint="Does copy_2d_kernel pass its own test? Does copy_2d launch "
                      "a grid of (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N)) programs and "
                      "pass x.stride(0), x.stride(1), out.stride(0), out.stride(1)?")
    if not out.is_contiguous():
        raise CheckFailed(f"copy_2d on {what} returned a tensor with strides {out.stride()}, which is "
                          "not contiguous: torch.empty_like(x) copies x's layout; allocate with "
                          "torch.empty((M, N), dtype=x.dtype, device=x.device).")


_run_copy_2d(rand(1, 1), "a (1, 1) matrix")
_run_copy_2d(rand(33, 65), "a contiguous (33, 65) matrix")
_run_copy_2d(rand(65, 33).t(), "a transposed (33, 65) matrix")
print("copy_2d returns right, contiguous copies.")


# %% nbgrader={"grade": true, "grade_id": "test_copy_2d_hidden", "locked": true, "points": 2}
# Hidden tests check copy_2d on more shapes, layouts and dtypes when your notebook is graded.
### BEGIN HIDDEN TESTS
def _whole(t):  # all the memory t is a view of, as one contiguous tensor: it must stay unchanged
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage())


def _check_copy_2d(x, what):
    x_all = _whole(x)
    x_all_before = x_all.clone()
    with guarded_allocations(), count_launches() as launches:
        out = call_answer(copy_2d, x)
    expect_launched(launches, f"copy_2d on {what}", out)
    check_output(out, x.contiguous(), name=f"copy_2d on {what}", inputs=[(x_all, x_all_before)],
                 hint="Grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N)), "
                      "x's strides for the load, out's for the store, and a mask with both "
                      "tests.")
    if not out.is_contiguous():
        raise CheckFailed(f"copy_2d on {what} returned strides {out.stride()}, not a contiguous "
                          "tensor: allocate with torch.empty((M, N), dtype=x.dtype, device=x.device).")
    if out.data_ptr() == x.data_ptr():
        raise CheckFailed(f"copy_2d on {what} returned x itself: return a new tensor.")


# Small matrices of every layout first: a kernel that forgets a mask or mixes up the strides fails
# here, while its stray writes still land in the guard bands.
_check_copy_2d(rand(1, 1), "a (1, 1) matrix")
_check_copy_2d(rand(3, 2).t(), "a transposed (2, 3) matrix")
_check_copy_2d(rand(2, 6)[:, ::2], "every other column of a (2, 6) matrix")
_check_copy_2d(rand(4, 5)[1:3, 1:4], "a (2, 3) slice of a (4, 5) matrix")
for M, N in [(1, 1), (1, 97), (97, 1), (2, 3), (64, 64), (65, 63), (130, 257)]:
    _check_copy_2d(rand(M + 64, N)[:M], f"a contiguous ({M}, {N}) matrix")
for M, N in [(1, 97), (97, 1), (33, 65), (130, 257)]:
    _check_copy_2d(rand(N + 64, M + 64)[:N, :M].t(), f"a transposed ({M}, {N}) matrix")
    _check_copy_2d(rand(M + 64, 2 * (N + 64))[:M, ::2][:, :N], f"every other column, ({M}, {N})")
    _check_copy_2d(rand(M + 67, N + 69)[3:3 + M, 5:5 + N], f"a slice of shape ({M}, {N})")
for dtype in FLOAT_DTYPES:
    _check_copy_2d(rand(33 + 64, 65, dtype=dtype)[:33], f"a (33, 65) matrix of {dtype}")
    _check_copy_2d(rand(65 + 64, 33 + 64, dtype=dtype)[:65, :33].t(), f"a transposed (33, 65) matrix of {dtype}")
print("copy_2d passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# Because your kernel addresses *both* matrices through strides, it can do more than copy. Swap the
# output's two strides, and `x[i, j]` lands at `out[j, i]`: the same kernel is a **transpose**
# into a contiguous `N x M` result (what `x.t().contiguous()` computes), with no new code:

# %%
def transpose(x):
    """x.t() as a new contiguous tensor: copy_2d_kernel with the output's strides swapped."""
    M, N = x.shape
    out = torch.empty((N, M), dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    copy_2d_kernel[grid](x, out, M, N, x.stride(0), x.stride(1), out.stride(1), out.stride(0),
                         BLOCK_M=64, BLOCK_N=64)
    return out


with guarded_allocations():  # outputs between guard bands: a small shape first, so that a kernel
    for shape in [(1, 1), (5, 3), (100, 70)]:  # without a mask is caught before it writes far out
        x = rand(*shape)
        check_output(call_answer(transpose, x, name="copy_2d_kernel"), x.t().contiguous(),
                     name=f"transpose of a {shape} matrix")
print("transpose(x) equals x.t().contiguous() for (1, 1), (5, 3) and (100, 70) matrices.")

# %% [markdown]
# ## 6. How fast is a 2-D copy?
#
# Copying is the yardstick of memory speed, and `copy_2d` moves `2 * M * N * element size` bytes
# (one read, one write), so we measure it in GB/s against this device's copy bandwidth, for a
# contiguous input (a plain copy) and a **transposed** one, where the kernel reads down columns
# and writes along rows. We compare with torch's own kernel for the same job,
# `x.contiguous()` on the transposed input.
#
# Reading a column of a row-major matrix is the classic slow memory pattern: neighbouring lanes of
# a load are a whole row apart in memory, and DRAM delivers data in chunks of 32 or more bytes, of
# which one lane uses 4. A 2-D tile rescues it: a 64 x 64 tile of a transposed matrix is still 64
# short contiguous runs of 64 elements (its columns), so the load can read whole chunks, and Triton
# rearranges the tile on the chip (through shared memory) before the store writes whole rows. On a
# GPU both `copy_2d` lines should come close to the copy bandwidth for large matrices.
#
# How does Triton know which way the tile is contiguous, when the strides are ordinary integer
# arguments? It **specialises** integer arguments: when you launch a kernel with an integer equal
# to 1, Triton compiles (and caches) a version of the kernel in which that argument *is* the
# constant 1, and it marks integers that are multiples of 16 as such. For a transposed `x`,
# `stride_xm` is 1, so in that version `offs_m[:, None] * stride_xm` is plainly `offs_m`:
# consecutive rows of the tile are consecutive in memory, and the compiler can lay the load out
# along them and read whole sectors, with wide vector loads. For the contiguous output,
# `stride_on` is 1, and the stores go along rows. Had the strides been unknown numbers, the
# compiler could not have proved either, and would have had to read one element at a time.

# %%
sides = sized([2**k for k in range(8, 14)], [32, 64, 128])
with guarded_allocations():  # first make sure that copy_2d is right: a stub or a bug stops here
    for shape in [(1, 1), (3, 5), (100, 70)]:  # small first: a missing mask stops in the guard bands
        x = rand(*shape).t()
        check_output(call_answer(copy_2d, x), x.contiguous(), name=f"copy_2d of a transposed {shape} matrix")
results = {"copy_2d, contiguous input": [], "copy_2d, transposed input": [],
           "torch x.contiguous(), transposed input": []}
for side in sides:
    x = rand(side, side)
    x_t = x.t()
    nbytes = 2 * x.numel() * x.element_size()
    results["copy_2d, contiguous input"].append(gbps(nbytes, bench_ms(lambda: copy_2d(x))))
    results["copy_2d, transposed input"].append(gbps(nbytes, bench_ms(lambda: copy_2d(x_t))))
    results["torch x.contiguous(), transposed input"].append(
        gbps(nbytes, bench_ms(lambda: x_t.contiguous())))
    del x, x_t
for side, *speeds in zip(sides, *results.values()):
    print(f"{side:5} x {side:<5}: " + ", ".join(f"{label} {s:8.4g} GB/s"
                                               for label, s in zip(["contiguous", "transposed", "torch"], speeds)))
if not ON_GPU:
    print("Interpreter: these numbers time Python on the CPU and mean nothing about GPUs.")
plot_bandwidth([s * s for s in sides], results, "copy_2d, fp32 square matrices", roof=copy_bandwidth())

# Your own ratios at the largest size, the ones the reading below is about.
roof = copy_bandwidth()
contiguous, transposed, torchs = (speeds[-1] for speeds in results.values())
print(f"{sides[-1]} x {sides[-1]}: copy_2d reaches {contiguous / roof:.0%} of this device's copy bandwidth "
      f"on a contiguous input and {transposed / roof:.0%} on a transposed one ({transposed / contiguous:.2f}x "
      f"the contiguous speed); torch's x.contiguous() {torchs / roof:.0%}.")

# %% [markdown]
# **Reading the plot** (on a GPU; under the interpreter the numbers time Python and mean nothing).
# Small matrices are launch-bound, as in lesson 2: a few microseconds whatever the size. From a few
# million elements on, the contiguous copy runs near the copy bandwidth, and the transposed one
# should follow close behind (your printed ratio): the tile turned a column read into row-sized
# pieces. Torch's `x.contiguous()` on the transposed matrix stays far below both: an element-wise
# copy, without tiles. (Masks cost next to nothing: try a side of 8000, not a multiple of 64, and
# compare.) For reference, on an H200 at 8192 x 8192 (fp32, GB/s): your `copy_2d` 3855 contiguous
# and 3873 transposed, 93% and 94% of that device's copy bandwidth; `x.contiguous()` 1157, 28%.
#
# ## Exercise 4: a transposed copy at the speed of memory (2 points)
#
# No new code: this test measures your `copy_2d` on the transpose of an 8192 x 8192 fp32 matrix
# (2^26 elements, 512 MB moved) on a GPU, and expects at least **50% of this device's copy
# bandwidth**. It first checks that `copy_2d` launches a kernel and gives the right answer. Tiles
# that are too small (8 x 8) or a wrapper that calls `x.contiguous()` first (an extra copy) fall
# short. Under the interpreter the test uses a small matrix and is advisory: it prints the numbers
# and passes. (Why any GPU can pass: the target is a fraction of the same device's copy, and a
# tiled transpose moves the same bytes as a copy. A 64 x 64 fp32 tile changes direction through
# 16 KiB of shared memory, well within the 64 KiB per multiprocessor of even a T4, and its column
# reads come in whole runs of 64 elements, 256 bytes.)

# %% nbgrader={"grade": true, "grade_id": "test_copy_2d_performance", "locked": true, "points": 2}
x = rand(1, 1)  # a tiny matrix first: a missing mask is caught here, inside the guard bands
with guarded_allocations():
    check_output(call_answer(copy_2d, x), x, name="copy_2d on a (1, 1) matrix")
side = sized(8192, 128)
x = rand(side, side).t()
with count_launches() as launches:
    out = call_answer(copy_2d, x)
expect_launched(launches, "copy_2d", out)
check_output(out, x.contiguous(), name="copy_2d on a transposed matrix")
del out
with exclusive_gpu():  # under the grader, no other notebook runs on the GPU meanwhile
    achieved = gbps(2 * x.numel() * x.element_size(), bench_ms(copy_2d, x, expect=torch.clone))
    check_bandwidth(achieved, 0.5, f"copy_2d on a transposed {side} x {side} fp32 matrix")

# %% [markdown]
# ## What you learned
#
# - A block is a power of two and data is not, so the last block of a vector, every row held in
#   `next_power_of_2(n_cols)` lanes, and the edge tiles of a matrix all have **tails**: lanes with
#   no element. Test with sizes like 1, 100 and 1025, never only with powers of two.
# - Without a mask, a store past the end overwrites whatever lies there (on a GPU the allocator's
#   rounding, silently, or the next tensor, or an illegal address that kills the CUDA context;
#   under the interpreter, Python's heap), and a load past the end silently returns garbage that
#   flows into the result. A grid of `n // BLOCK_SIZE` programs misses the tail altogether: no
#   mask can save a block that has no program.
# - A masked load fills the off lanes with `other=`. For element-wise work it does not matter; for
#   a **reduction** it must be the neutral element: `0` for a sum, `-inf` for a max, `+inf` for a
#   min. Accumulate fp16 and bf16 sums in fp32.
# - Element `(i, j)` of any PyTorch view is at `ptr + i * stride(0) + j * stride(1)`. A kernel that
#   takes strides reads transposed and sliced views in place, without the extra traffic of
#   `.contiguous()`, and with the output's strides swapped, a copy becomes a transpose. Reading in
#   place is not always faster: a row read along a transposed matrix is uncoalesced, so measure.
# - Triton specialises integer arguments equal to 1 (and notes multiples of 16): a stride of 1
#   tells the compiler which way a tile is contiguous, so it can read and write whole sectors.
# - 2-D tiles: a 2-D grid, `offs_m[:, None]` and `offs_n[None, :]` broadcast into a tile of
#   addresses, and the mask `(offs_m[:, None] < M) & (offs_n[None, :] < N)`, one test per dimension.
#
# **Next, lesson 04 (fusion):** the memory wall. Ten element-wise kernels in a row move ten times
# the data of one; you fuse them into one kernel, then write a row softmax that keeps each row on
# the chip, with the row-per-program plan, the `-inf` tail and the fp32 arithmetic of this lesson.

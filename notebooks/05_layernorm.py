# %% [markdown]
# # Lesson 5: Layer norm: a reduction that feeds an element-wise pass, forward and backward
#
# Lesson 4 fused a reduction into a kernel: a softmax that owns whole rows, reduces them and writes
# them back in one pass. This lesson does the same for the operation that sits twice in every
# Transformer block: **layer normalization**. It looks like a small variation of the softmax, and
# the forward pass nearly is. But it brings three new ideas that every serious kernel writer meets:
#
# - **Statistics that must be accurate.** A mean and a variance per row, in fp32 whatever the
#   input's dtype, and a variance formula that does not fall apart when the mean is large.
# - **Rows wider than a block**: a loop over the row inside one program.
# - **A backward pass.** Training needs gradients. The gradient of the input is a row-wise
#   reduction again, but the gradients of the weight and the bias sum over *all rows*, which belong
#   to different programs: a reduction *across* programs, in two launches.
#
# By the end of this lesson you will be able to:
#
# - write a layer norm forward kernel, one program per row, looping over rows of any width, with
#   the mean and variance in fp32 and a numerically safe variance;
# - explain why `E[x^2] - E[x]^2` is a trap, and what two passes (or Welford's update) do instead;
# - fuse a residual addition into the layer norm, and count and measure the bytes it saves;
# - write the backward kernels, wire them into a `torch.autograd.Function`, and check your
#   gradients against PyTorch's;
# - turn the same kernel into an **RMSNorm** with one compile-time flag.
#
# | exercise | what you write | points |
# |---|---|---|
# | W | (written) why the one-pass variance fails | 2 |
# | 1 | `layer_norm_fwd_kernel`: one read of a row that fits, a loop over a wider one, statistics in fp32 | 5 |
# | 2 | `layer_norm_forward`: block size, warps, any shape | 4 |
# | 3 | (no new code) the forward pass at the speed of memory | 2 |
# | 4 | `add_then_norm_bytes`, `add_norm_fused_bytes`: count the bytes of a residual add | 2 |
# | 5 | `add_layer_norm_kernel`: residual add and layer norm in one kernel | 4 |
# | Q | (multiple choice) why `dw` needs a second launch | 1 |
# | 6 | `layer_norm_bwd_kernel`: `dx`, and partial sums of `dw` and `db` | 5 |
# | 7 | `column_sum_kernel`: adding up the partial sums | 3 |
# | 8 | `layer_norm_backward` and `LayerNorm`, a `torch.autograd.Function` | 5 |
# | 9 | RMSNorm: one flag in your kernel, and `rms_norm` | 3 |
#
# **Where to run it.** On Colab choose *Runtime > Change runtime type > GPU* (a T4 is fine; bf16
# is tested only where the GPU supports it). With no GPU, the setup cell switches Triton to its
# *interpreter*, which runs kernels on the CPU: everything works, sizes are small, and timings say
# nothing about GPUs.

# %% tags=["setup"]
from autograder.kit import *  # noqa: F403 (the build places autograder/kit.py here)

# %% [markdown]
# ## 1. What layer norm computes
#
# Layer norm takes each row `x` of `N` numbers (one token's features, in a Transformer) and
# rescales it to mean 0 and variance 1, then applies a learned scale `w` and shift `b`, one per
# column:
#
# $$\mu = \frac{1}{N}\sum_j x_j, \qquad \sigma^2 = \frac{1}{N}\sum_j (x_j - \mu)^2, \qquad
# y_j = \frac{x_j - \mu}{\sqrt{\sigma^2 + \varepsilon}}\, w_j + b_j .$$
#
# `eps` (often `1e-5`) keeps the division finite for a constant row. In PyTorch this is
# `F.layer_norm(x, (N,), w, b, eps)`, normalizing over the last dimension. Here it is step by step,
# computed in fp64 from whatever dtype `x` has: this function is the reference your kernels are
# compared with.

# %% nbgrader={"grade_id": "layer_norm_reference", "locked": true}
# The reference the tests compare with (read-only: grading restores it).
import torch.nn.functional as F


def layer_norm_torch(x, weight, bias, eps=1e-5):
    """Layer norm over the last dimension, step by step, in fp64; the result in x's dtype."""
    x64 = x.double()
    mean = x64.mean(dim=-1, keepdim=True)
    var = ((x64 - mean) ** 2).mean(dim=-1, keepdim=True)
    rstd = 1 / torch.sqrt(var + eps)  # "reciprocal standard deviation": one division per row
    return ((x64 - mean) * rstd * weight.double() + bias.double()).to(x.dtype)


x, w, b = rand(4, 1000), rand(1000), rand(1000)
print("largest difference from F.layer_norm:",
      (layer_norm_torch(x, w, b) - F.layer_norm(x, (1000,), w, b, 1e-5)).abs().max().item())

# %% [markdown]
# Like the softmax, layer norm does a handful of operations per element: it is memory-bound, and
# its floor is the bytes it must move. It must read `x` once and write `y` once; `w` and `b` are
# one row each, shared by every row of `x` (they stay in the GPU's cache), and the two statistics
# are one number each per row. So the floor is, like any fused element-wise kernel,
# `2 * n_rows * N * element_size` bytes.
#
# The plan is lesson 4's: **one program per row**. A program loads its row, reduces it to `mu` and
# `sigma`, and normalizes it, with the row on the chip the whole time. Two things are new: the
# statistics need care, and rows can be wider than one block.
#
# ## 2. Statistics in fp32
#
# Activations are often fp16 or bf16, and their sums must not be. fp16 has 11 bits of precision:
# above 2048 the gap between two neighbouring fp16 numbers is 2, above 256 it is 0.25. Each
# addition rounds to the nearest fp16 number, so a running sum in fp16 stops growing once half the
# gap is larger than what it adds:

# %%
values = np.full(4096, 0.1, dtype=np.float16)
print("sum of 4096 x 0.1, added up in fp16:", np.cumsum(values, dtype=np.float16)[-1])
print("the same sum in fp32:               ", np.cumsum(values, dtype=np.float32)[-1])

# %% [markdown]
# So every kernel of this lesson converts what it loads to fp32 (`.to(tl.float32)`), computes
# the statistics and the normalization in fp32, and converts only what it stores back to the
# output's dtype. As in lesson 4, the conversions cost registers, not memory traffic.
#
# ## 3. Rows wider than a block, and the variance trap
#
# Lesson 4's softmax held a whole row in one block of `next_power_of_2(N)` lanes. That is the
# fastest plan while the row fits in a program's registers. It does not scale: a block of 16384
# fp32 numbers is already 64 KB of registers for one program, a quarter of a multiprocessor's
# 256 KB register file; wider blocks leave room for fewer programs at once, or spill to memory; and
# Triton refuses blocks of more than 2^20 elements. The general plan is a **loop over the row**,
# `BLOCK_SIZE` columns at a time:
#
# ```python
# row_ptr = x_ptr + row * x_row_stride
# total = tl.zeros([BLOCK_SIZE], dtype=tl.float32)       # one running sum per lane
# for start in range(0, n_cols, BLOCK_SIZE):
#     cols = start + tl.arange(0, BLOCK_SIZE)
#     total += tl.load(row_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
# mean = tl.sum(total, axis=0) / n_cols                  # one reduction at the end
# ```
#
# Each lane keeps its own running sum, and the block is reduced once, after the loop. (Reducing
# every chunk with `tl.sum` and adding scalars works too; it just does more work per chunk.)
#
# The variance needs the mean first, and the normalization needs both: three passes over the row.
# That sounds like three times the memory traffic, but it is not: the row was just read, so the
# second and third passes find it in the GPU's caches (a row of 4096 fp16 numbers is 8 KB). The
# bytes that come from memory are still, nearly, one read of `x` and one write of `y`. The time is
# not: every pass waits for its own loads, and the cache is fast, not free. On an H200 the three
# loops moved 65% to 79% of the copy bandwidth, and the same kernel reading a row that fits one
# block only once, keeping it in registers, 86% to 90% (fp16 rows of 1024 to 16384 columns, both
# measured in one run for this course). So a row that fits one block is read once, and the loops
# are for the rows that do not: your kernel does both.
#
# **Why not one pass?** Algebra offers a shortcut: $\sigma^2 = E[x^2] - E[x]^2$, so one loop could
# accumulate both $\sum x$ and $\sum x^2$. It is exact with real numbers, and wrong with floats when
# the mean is large compared with the spread. Try it on rows with a mean of 10000 and a standard
# deviation of 1, in fp32:

# %%
rows = 10000 + torch.randn(6, 4096)
naive = (rows * rows).mean(dim=1) - rows.mean(dim=1) ** 2
two_pass = ((rows - rows.mean(dim=1, keepdim=True)) ** 2).mean(dim=1)
exact = rows.double().var(dim=1, unbiased=False)
print("E[x^2] - E[x]^2, fp32     :", [f"{v:8.4f}" for v in naive.tolist()])
print("two passes, fp32          :", [f"{v:8.4f}" for v in two_pass.tolist()])
print("exact (fp64)              :", [f"{v:8.4f}" for v in exact.tolist()])


# %% [markdown]
# The one-pass variances are multiples of 8: zero, 8, 16, some negative (and `sqrt` of a negative
# number is NaN), while the two-pass ones agree with fp64 to four decimals. The reason is
# **catastrophic cancellation**: $E[x^2]$ is about $10^8$, and fp32 carries 24 bits, about 7
# decimal digits, so near $10^8$ neighbouring fp32 numbers are 8 apart. Both $E[x^2]$ and
# $E[x]^2$ are rounded to such multiples, and their difference, truly about 1, is made of rounding
# error alone. Subtracting the mean first keeps the numbers small: $(x - \mu)^2$ is about 1, and
# its sum loses nothing.
#
# Real activations do have large means (a feature that is always around 100, a residual stream
# that grows with depth), so a layer norm must not use the shortcut. Two remedies:
#
# - **Two passes**, as above: the mean first, then the mean of $(x - \mu)^2$. On a GPU the second
#   pass reads the row from cache, so it costs almost nothing. This lesson uses it.
# - **Welford's update**, one pass: keep a running mean $m$ and a running sum of squared
#   deviations $M_2$, and for each new value $x_k$ set $m \leftarrow m + (x_k - m)/k$ and
#   $M_2 \leftarrow M_2 + (x_k - m_{old})(x_k - m)$; partial results of two chunks merge with a
#   similar formula (Chan's). It never forms a large number to subtract another from. Useful when
#   a second pass over the data is expensive (a row that does not stay in cache, a streaming
#   statistic).
#
# ### Written question W (2 points)
#
# In the cell below, explain in a few sentences: why does $E[x^2] - E[x]^2$ give wrong (even
# negative) variances in fp32 for rows with a mean of 10000 and a spread of 1, while it would be
# fine for rows with a mean of 0? Why does the two-pass formula not suffer from it? And why does
# the second pass cost little memory traffic in a kernel with one program per row?

# %% [markdown] nbgrader={"grade": true, "grade_id": "written_variance", "points": 2, "solution": true}
# ### BEGIN SOLUTION
# fp32 keeps about 7 significant decimal digits, so a number near 10^8 is rounded to a multiple of
# about 8. With a mean of 10000, E[x^2] and E[x]^2 are both about 10^8 and each carries a rounding
# error of several units, while their true difference, the variance, is about 1: the subtraction
# cancels all the correct leading digits and leaves only rounding error (catastrophic
# cancellation), which can be negative. With a mean of 0 both terms are about 1 and the error is
# about 1e-7 of that. The two-pass formula subtracts the mean from each element first, so the
# squares it adds are small (about the variance) and no large, nearly equal numbers are ever
# subtracted. The second pass reads the same row the program has just read: it is still in the
# cache (L1 or L2), so it costs on-chip bandwidth, not another trip to global memory; the bytes
# moved from memory are still about one read of x and one write of y.
# ### END SOLUTION

# %% [markdown]
# ## Exercise 1: `layer_norm_fwd_kernel` (5 points)
#
# Write the forward kernel. Program `row` normalizes row `row` of a matrix with `n_cols` columns,
# whose columns are contiguous and whose rows start `x_row_stride` elements apart (`y_row_stride`
# for the output). A wide row takes three loops over it, `BLOCK_SIZE` columns at a time:
#
# 1. the **mean**: accumulate the row in fp32 (masked lanes load `0.0`, the neutral element of a
#    sum), then `mean = tl.sum(...) / n_cols`;
# 2. the **variance**: accumulate `(x - mean)^2`. Careful: a masked lane loaded 0, and `0 - mean`
#    is not 0; use `tl.where(mask, x - mean, 0.0)`. Then `rstd = 1 / tl.sqrt(var + eps)`;
# 3. **normalize** and store: `y = (x - mean) * rstd * w + b`, converted to `y`'s dtype
#    (`y_ptr.dtype.element_ty`), masked.
#
# A row that fits one block (`n_cols <= BLOCK_SIZE`) is read **once**: load it (fp32, masked,
# `other=0.0`), keep it in registers, and do the same three steps on that one block, with no loop
# and no second load (section 3 says why it is faster). Both plans in one kernel: `if n_cols <=
# BLOCK_SIZE:` the one-block plan, `else:` the loops.
#
# Also store the row's `mean` and `rstd` at `mean_ptr + row` and `rstd_ptr + row` (two fp32
# vectors of `n_rows`): the backward pass reuses them instead of recomputing them.
#
# **A branch at run time.** Lesson 3's `if USE_MASK:` was decided when Triton compiled the
# kernel: `USE_MASK` is a `tl.constexpr`, so only the branch taken is compiled, one kernel for
# each value. `n_cols <= BLOCK_SIZE` is known only when the program runs (`n_cols` is an ordinary
# argument), so `if n_cols <= BLOCK_SIZE:` compiles to a real branch: both sides are compiled into
# the kernel, and each program takes one of them. The condition must be a scalar, one value for
# the whole program: an `if` on a block, such as `if cols < n_cols:`, is a compile error ("Boolean
# value of Tensor with more than one value is ambiguous"), because its lanes may disagree. Lane by
# lane, use a mask or `tl.where`.
#
# **Offsets past 2^31.** `row * x_row_stride` is an int32 product: `tl.program_id` is an int32,
# and so is an integer argument below 2^31 (Triton passes larger ones as int64). In a tensor of
# more than 2^31 elements, say 65536 rows of 65536 columns (8 GiB in fp16), some rows start past
# 2^31, and there the product wraps around: row 32768 starts at element 2^31, which int32 holds
# as -2^31, so the program reads and writes 4 GiB *before* `x`: wrong numbers, or an illegal
# memory access. The fix is to make the row number int64 before it is multiplied,
# `row = tl.program_id(0).to(tl.int64)` (or `row.to(tl.int64) * x_row_stride`): the product and
# the pointer arithmetic are then 64-bit, for one 64-bit multiplication per program. This
# lesson's tensors stay far below (the largest, 32768 x 4096, has 2^27 elements), so its kernels
# keep int32; lesson 7's take the int64 route.
#
# `RMS_NORM` is a compile-time flag for exercise 9. For now, ignore it: the tests pass
# `RMS_NORM=False`.

# %% nbgrader={"grade_id": "layer_norm_fwd_kernel", "solution": true}
@triton.jit
def layer_norm_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, x_row_stride, y_row_stride,
                          n_cols, eps, BLOCK_SIZE: tl.constexpr, RMS_NORM: tl.constexpr):
    """y = layer_norm(x) * w + b for row tl.program_id(0), BLOCK_SIZE columns at a time; stores the
    row's mean and rstd (1 / sqrt(var + eps)) for the backward pass."""
    ### BEGIN SOLUTION
    row = tl.program_id(axis=0)
    x_ptr += row * x_row_stride
    y_ptr += row * y_row_stride
    if n_cols <= BLOCK_SIZE:  # the row fits one block: read it once and keep it in registers
        cols = tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        if RMS_NORM:  # RMSNorm: no mean to subtract
            mean = 0.0
        else:
            mean = tl.sum(x, axis=0) / n_cols
        centered = tl.where(mask, x - mean, 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(centered * centered, axis=0) / n_cols + eps)
        y = centered * rstd * tl.load(w_ptr + cols, mask=mask).to(tl.float32)
        if not RMS_NORM:
            y += tl.load(b_ptr + cols, mask=mask).to(tl.float32)
        tl.store(y_ptr + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
    else:  # a wider row: three loops over it, the second and third reading it from cache
        if RMS_NORM:
            mean = 0.0
        else:
            total = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
            for start in range(0, n_cols, BLOCK_SIZE):
                cols = start + tl.arange(0, BLOCK_SIZE)
                total += tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
            mean = tl.sum(total, axis=0) / n_cols
        squares = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK_SIZE):
            cols = start + tl.arange(0, BLOCK_SIZE)
            mask = cols < n_cols
            x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
            centered = tl.where(mask, x - mean, 0.0)
            squares += centered * centered
        rstd = 1.0 / tl.sqrt(tl.sum(squares, axis=0) / n_cols + eps)
        for start in range(0, n_cols, BLOCK_SIZE):
            cols = start + tl.arange(0, BLOCK_SIZE)
            mask = cols < n_cols
            x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
            y = (x - mean) * rstd * tl.load(w_ptr + cols, mask=mask).to(tl.float32)
            if not RMS_NORM:
                y += tl.load(b_ptr + cols, mask=mask).to(tl.float32)
            tl.store(y_ptr + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    ### END SOLUTION


# %% [markdown]
# The test launches your kernel on 5 rows of 300 columns, once with `BLOCK_SIZE = 128` (the loops:
# three trips each, the last one partial) and once with `BLOCK_SIZE = 512` (the row fits: one
# read), and checks `y`, `mean` and `rstd`.

# %% nbgrader={"grade": true, "grade_id": "test_layer_norm_fwd_kernel", "locked": true, "points": 2}
def _run_fwd_kernel(x, weight, bias, block, eps=1e-5, what="layer_norm_fwd_kernel"):
    """Launch layer_norm_fwd_kernel on a 2-D x (columns contiguous) into guarded outputs and check
    y, mean and rstd against fp64."""
    n_rows, n_cols = x.shape
    before = [(t, t.clone()) for t in (x, weight, bias)]
    y = guarded_empty((n_rows, n_cols), dtype=x.dtype)
    mean, rstd = guarded_empty(n_rows), guarded_empty(n_rows)
    call_answer(lambda: layer_norm_fwd_kernel[(n_rows,)](
        x, y, weight, bias, mean, rstd, x.stride(0), y.stride(0), n_cols, eps,
        BLOCK_SIZE=block, RMS_NORM=False), name="layer_norm_fwd_kernel")
    x64 = x.double()
    check_output(mean, x64.mean(dim=1).float(), name=f"{what}: mean", atol=1e-4, rtol=1e-4,
                 hint="Accumulate the row in fp32 over every chunk (masked lanes load 0.0) and divide "
                      "by n_cols, not by BLOCK_SIZE.")
    check_output(rstd, (1 / torch.sqrt(x64.var(dim=1, unbiased=False) + eps)).float(), name=f"{what}: rstd",
                 atol=1e-3, rtol=1e-3,
                 hint=f"{variance_hint()}; masked lanes must add 0 (tl.where(mask, x - mean, 0.0)); "
                      "rstd = 1 / sqrt(var + eps).")
    check_output(y, layer_norm_torch(x, weight, bias, eps), name=f"{what}: y", inputs=before,
                 hint=f"y = (x - mean) * rstd * w + b, for every chunk of the row. A small error in rstd "
                      f"shows here first: {variance_hint(starts_a_sentence=False)}.")


def variance_hint(starts_a_sentence=True):
    """What a wrong variance is told, wherever it shows first (which case, and rstd or y, depends on
    the random inputs): the two-pass definition, and the one-pass formula's trap. A function, not a
    string: the course keeps its definitions, whatever a notebook binds to the name."""
    return (f"{'The' if starts_a_sentence else 'the'} variance is the mean of (x - mean)^2 over the n_cols "
            "real columns, taken after the mean (E[x^2] - E[x]^2 cancels catastrophically when the mean is large)")


for block in (128, 512):
    _run_fwd_kernel(rand(5, 300), rand(300), rand(300), block,
                    what=f"layer_norm_fwd_kernel on 5 x 300, BLOCK_SIZE={block}")
print("layer_norm_fwd_kernel is right on 5 x 300, in one block and in three.")


# %% nbgrader={"grade": true, "grade_id": "test_layer_norm_fwd_kernel_hidden", "locked": true, "points": 3}
# Hidden tests launch your kernel on more widths, block sizes, row strides and dtypes, and on rows
# with a large mean, when your notebook is graded.
### BEGIN HIDDEN TESTS
def _hidden_fwd_kernel(n_rows, n_cols, block, pad=0, dtype=torch.float32, offset=0.0):
    x = rand(n_rows, n_cols + pad, dtype=dtype)[:, :n_cols]
    if offset:
        x += offset  # in place: a view of the guarded buffer
    weight, bias = rand(n_cols, dtype=dtype), rand(n_cols, dtype=dtype)
    what = (f"layer_norm_fwd_kernel on {n_rows} x {n_cols} ({dtype}, row stride {x.stride(0)}), "
            f"BLOCK_SIZE={block}" + (f", rows with mean {offset:g}" if offset else ""))
    if not offset:
        _run_fwd_kernel(x, weight, bias, block, what=what)
        return
    y = guarded_empty((n_rows, n_cols), dtype=dtype)
    mean, rstd = guarded_empty(n_rows), guarded_empty(n_rows)
    with np.errstate(invalid="ignore"):
        call_answer(lambda: layer_norm_fwd_kernel[(n_rows,)](
            x, y, weight, bias, mean, rstd, x.stride(0), y.stride(0), n_cols, 1e-5,
            BLOCK_SIZE=block, RMS_NORM=False), name="layer_norm_fwd_kernel")
    check_output(y, layer_norm_torch(x, weight, bias), name=what, atol=2e-3, rtol=2e-3,
                 hint="With a large mean, E[x^2] - E[x]^2 cancels catastrophically: compute the mean "
                      "first, then the mean of (x - mean)^2 (two passes), or use Welford's update.")


for n_cols in [1, 2, 7, 129, 300, 1000, 2049]:
    for block in (16 if n_cols < 1000 else 256, 64, triton.next_power_of_2(n_cols)):
        _hidden_fwd_kernel(3, n_cols, block)
for n_cols in sized([4096, 8192, 16384], []):
    _hidden_fwd_kernel(64, n_cols, min(n_cols, 4096))
_hidden_fwd_kernel(37, 100, 32, pad=28)
_hidden_fwd_kernel(5, 257, 64, pad=3)
for dtype in FLOAT_DTYPES:
    _hidden_fwd_kernel(6, 333, 128, dtype=dtype)
    _hidden_fwd_kernel(6, 333, 512, dtype=dtype)
for n_cols, block in [(1000, 256), (1000, 1024), (sized(4096, 2048), 512)]:
    _hidden_fwd_kernel(8, n_cols, block, offset=1000.0)
print("layer_norm_fwd_kernel passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## Exercise 2: `layer_norm_forward`, the launch (4 points)
#
# Now the function that launches it, for an `x` of any shape `(..., N)`, normalized over its last
# dimension: it returns `(y, mean, rstd)`, where `y` has `x`'s shape and dtype and `mean`, `rstd`
# are fp32 vectors with one entry per row. The decisions:
#
# 1. **Rows.** View `x` as a matrix of rows: `x.reshape(-1, N)` (a view when it can be, a copy
#    when it must). If its columns are not contiguous (`stride(-1) != 1`), make it contiguous. Pass
#    its row stride; allocate `y` as a new contiguous `(n_rows, N)` tensor (`torch.empty`), and
#    return it viewed as `x.shape`.
# 2. **Block.** One block for the whole row while the row has at most 16384 elements (64 KB of
#    registers once converted to fp32, whatever the input's dtype: section 3), and the loop beyond:
#    `BLOCK_SIZE = min(triton.next_power_of_2(N), 16384)`.
# 3. **Warps.** About 16 of the block's elements per thread, and at most eight warps:
#    `num_warps = max(1, min(8, BLOCK_SIZE // 512))`: two warps (64 threads) for 1024 columns,
#    four for 2048, eight from 4096 on (64 elements per thread at 16384). A thread holds its
#    elements of the row in registers; with more per thread, fewer programs fit on a multiprocessor
#    (exercise 3 measures what registers cost), and with fewer, a block's threads spend more of
#    their time on the reductions. On an H200 this rule reached 86% to 90% of the copy bandwidth at
#    every width from 1024 to 16384 columns, where four warps everywhere ranged from 69% to 90%.
# 4. **Launch** one program per row, with `RMS_NORM=False`.
#
# `weight` and `bias` are vectors of `N` numbers (make them contiguous).

# %% nbgrader={"grade_id": "layer_norm_forward", "solution": true}
def layer_norm_forward(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5):
    """Layer norm of x over its last dimension with one launch of layer_norm_fwd_kernel:
    returns (y, mean, rstd), y shaped like x, mean and rstd fp32 with one entry per row."""
    ### BEGIN SOLUTION
    n_cols = x.shape[-1]
    rows = x.reshape(-1, n_cols)
    if rows.stride(-1) != 1:
        rows = rows.contiguous()
    n_rows = rows.shape[0]
    y = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    mean = torch.empty(n_rows, dtype=torch.float32, device=x.device)
    rstd = torch.empty(n_rows, dtype=torch.float32, device=x.device)
    BLOCK_SIZE = min(triton.next_power_of_2(n_cols), 16384)
    num_warps = max(1, min(8, BLOCK_SIZE // 512))
    layer_norm_fwd_kernel[(n_rows,)](rows, y, weight.contiguous(), bias.contiguous(), mean, rstd,
                                     rows.stride(0), y.stride(0), n_cols, eps,
                                     BLOCK_SIZE=BLOCK_SIZE, RMS_NORM=False, num_warps=num_warps)
    return y.view(x.shape), mean, rstd
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_layer_norm_forward", "locked": true, "points": 2}
def _run_forward(x, weight, bias, what, eps=1e-5, atol=None, rtol=None, hint=None):
    """Call layer_norm_forward under the launch counter and guard bands; check its three outputs."""
    before = [(t, t.clone()) for t in (x, weight, bias)]
    with guarded_allocations(), count_launches() as launches, np.errstate(invalid="ignore"):
        result = call_answer(layer_norm_forward, x, weight, bias, eps, name=f"layer_norm_forward on {what}")
    if not (isinstance(result, tuple) and len(result) == 3):
        raise CheckFailed(f"layer_norm_forward on {what} returned {type(result).__name__}: return the "
                          "tuple (y, mean, rstd).")
    y, mean, rstd = result
    for out in (y, mean, rstd):
        expect_launched(launches, f"layer_norm_forward on {what}", out)
    if len(launches) != 1:
        raise CheckFailed(f"layer_norm_forward on {what} launched {len(launches)} kernels: one launch "
                          "computes all the rows.")
    n_rows = x.numel() // x.shape[-1]
    rows64 = x.double().reshape(n_rows, x.shape[-1])
    check_output(mean, rows64.mean(dim=1).float(), name=f"mean from layer_norm_forward on {what}",
                 atol=atol or 1e-4, rtol=rtol or 1e-4)
    check_output(rstd, (1 / torch.sqrt(rows64.var(dim=1, unbiased=False) + eps)).float(),
                 name=f"rstd from layer_norm_forward on {what}", atol=atol or 1e-3, rtol=rtol or 1e-3,
                 hint=hint or f"{variance_hint()}.")
    check_output(y, layer_norm_torch(x, weight, bias, eps), name=f"layer_norm_forward on {what}",
                 inputs=before, atol=atol, rtol=rtol,
                 hint=hint or f"Check the launch (rows, strides, BLOCK_SIZE) and the statistics: {variance_hint()}.")


_run_forward(rand(8, 300), rand(300), rand(300), "(8, 300) fp32")
_run_forward(rand(2, 3, 100, dtype=torch.float16), rand(100, dtype=torch.float16),
             rand(100, dtype=torch.float16), "(2, 3, 100) fp16")
print("layer_norm_forward is right on (8, 300) fp32 and (2, 3, 100) fp16, with one launch.")


# %% nbgrader={"grade": true, "grade_id": "test_layer_norm_forward_hidden", "locked": true, "points": 2}
# Hidden tests check layer_norm_forward on more shapes, layouts, dtypes and inputs when your
# notebook is graded.
### BEGIN HIDDEN TESTS
def _hidden_forward(x, what, weight=None, bias=None, **kwargs):
    n_cols = x.shape[-1]
    weight = rand(n_cols, dtype=x.dtype) if weight is None else weight
    bias = rand(n_cols, dtype=x.dtype) if bias is None else bias
    _run_forward(x, weight, bias, what, **kwargs)


for n_rows, n_cols in [(1, 1), (3, 1), (1, 2), (5, 7), (17, 129), (4, 1000), (2, 3000)] + \
        sized([(64, 4096), (8, 12345), (16, 16384), (3, 40000)], [(2, 5000)]):
    _hidden_forward(rand(n_rows, n_cols), f"({n_rows}, {n_cols}) fp32")
for dtype in FLOAT_DTYPES:
    _hidden_forward(rand(9, 777, dtype=dtype), f"(9, 777) of {dtype}")
    _hidden_forward(rand(3, 2, 4099, dtype=dtype), f"(3, 2, 4099) of {dtype}")
_hidden_forward(rand(20, 333)[:, :300], "a slice x[:, :300] of a (20, 333) tensor")
_hidden_forward(rand(64, 20).t(), "a transposed (20, 64) tensor")
_hidden_forward(rand(7, 2 * 90)[:, ::2], "a column-strided x[:, ::2]")
_hidden_forward(rand(6, 500), "(6, 500) with eps = 0.1", eps=0.1)
_hidden_forward(rand(6, 500).mul_(0.0), "rows of zeros")
_hidden_forward(rand(8, sized(4096, 1000)).add_(1000.0), "rows with a mean of 1000", atol=2e-3, rtol=2e-3,
                hint="With a large mean, E[x^2] - E[x]^2 cancels catastrophically: subtract the mean "
                     "first (two passes), or use Welford's update.")
_hidden_forward(rand(8, 300, dtype=torch.float16).add_(100.0), "fp16 rows with a mean of 100",
                hint="Compute the statistics in fp32, with the mean subtracted before squaring.")
print("layer_norm_forward passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## Exercise 3: the forward pass at the speed of memory (2 points)
#
# No new code: on a GPU this test times your `layer_norm_forward` on 32768 fp16 rows of 4096
# columns (the hidden size of a large Transformer), counting one read of `x` and one write of `y`,
# and expects at least **75% of this device's copy bandwidth**. Under the interpreter the test is
# advisory. Why so many rows: a call must last long enough that the time is the kernel's. On an
# H200 one call moves 512 MB in about 130 us, while Python takes 40 to 80 us to allocate the outputs
# and launch the kernel; at half the rows the GPU would wait for the host about half the time, and
# the figure would measure the host's speed. (docs/calibration.md in the course's repository has the
# measurements.) Every timed call's result is checked, as in the lessons before.
#
# What decides the speed of a kernel that moves so little per element? Its loads must be in
# flight, many at once: a multiprocessor (an SM) hides the memory's latency by running several
# programs side by side, starting one program's loads while another waits for its own. How many
# programs fit on an SM at once is set, here, by **registers**: an SM has 65536 registers of 32
# bits, shared by the threads of the programs it runs, and a program of 4 warps needs
# 128 x (registers per thread) of them. Every value a loop carries from one trip to the next, for
# every lane of the block, is held in registers for the whole loop: with a block of 4096 lanes and
# 128 threads, each fp32 vector the loop carries costs 32 registers per thread, and so does a row
# of 4096 kept in registers. The next cell launches your kernel on rows of 4096 with two block
# sizes, 4096 (the row fits: one read) and 1024 (the loops), asks the compiled kernel how many
# registers a thread needs (`compiled.n_regs`; a launch returns the compiled kernel), and times it
# (on a GPU only: the interpreter has no registers). On an H200 the row kept in registers took
# more of them (56 per thread, so at most 9 programs per SM, against 32 and 16 for the loops) and
# still moved more (3947 against 3156 GB/s): it reads the row once, while the loops' programs wait
# for three reads each. Registers set how many programs can wait at once; what each program waits
# for matters as much.
#
# A plan that carries more than your loops do pays for it. Welford's update (section 3) carries
# two vectors across its loop, the running mean and $M_2$, and keeps the loaded row besides: in
# one block of 4096 lanes a thread needs more registers than with this lesson's loops, fewer
# programs fit on an SM, and on an H200 it moves about a third less (a Welford kernel written for
# this course: 54% to 59% of the copy bandwidth, against 83% to 90% for the three loops; the same
# kernel in blocks of 1024 columns, 83%; `benchmarks/calibrate.py --only 05_layernorm` in the
# course's repository measures them). When a kernel is slower than its bytes say, count its
# registers.

# %%
if ON_GPU:
    x = rand(32768, 4096, dtype=torch.float16)
    weight, bias = rand(4096, dtype=torch.float16), rand(4096, dtype=torch.float16)
    y, mean, rstd = torch.empty_like(x), torch.empty(32768, device=DEVICE), torch.empty(32768, device=DEVICE)
    registers = getattr(torch.cuda.get_device_properties(DEVICE), "regs_per_multiprocessor", 65536)
    for block in (4096, 1024):
        def norm(block=block):
            return layer_norm_fwd_kernel[(32768,)](x, y, weight, bias, mean, rstd, 4096, 4096, 4096, 1e-5,
                                                   BLOCK_SIZE=block, RMS_NORM=False, num_warps=4)
        compiled = norm()
        programs = min(16, registers // (128 * compiled.n_regs))  # 16: an SM runs at most 64 warps
        print(f"BLOCK_SIZE {block}: {compiled.n_regs} registers per thread, at most {programs} programs "
              f"per SM; {gbps(2 * x.numel() * 2, bench_ms(norm)):.0f} GB/s")
    del x, y
else:
    print("Interpreter: there are no registers to count; on a GPU this cell prints them.")

# %% nbgrader={"grade": true, "grade_id": "test_layer_norm_forward_performance", "locked": true, "points": 2}
n_rows, n_cols = sized((32768, 4096), (16, 512))
weight, bias = rand(n_cols, dtype=torch.float16), rand(n_cols, dtype=torch.float16)
x = rand(min(n_rows, 1024), n_cols, dtype=torch.float16)  # first the values and the launches, on fewer rows
with count_launches() as launches:
    y, _, _ = call_answer(layer_norm_forward, x, weight, bias)
expect_launched(launches, "layer_norm_forward", y)
check_output(y, layer_norm_torch(x, weight, bias), name="layer_norm_forward")
del x, y


def reference_by_rows(x, w, b):
    """The fp64 reference, 4096 rows at a time: in one piece its fp64 copies would not fit beside the
    timed calls' inputs and outputs in a notebook's share of GPU memory under the grader."""
    return torch.cat([layer_norm_torch(rows, w, b) for rows in x.split(4096)])


x = rand(n_rows, n_cols, dtype=torch.float16)
with exclusive_gpu():  # under the grader, no other notebook runs on the GPU meanwhile
    ours, theirs = bench_against(lambda x, w, b: layer_norm_forward(x, w, b)[0],
                                 lambda x, w, b: F.layer_norm(x, (n_cols,), w, b), x, weight, bias,
                                 expect=reference_by_rows)
    nbytes = 2 * x.numel() * x.element_size()
    if ON_GPU:
        print(f"layer_norm_forward {gbps(nbytes, ours):.0f} GB/s, F.layer_norm {gbps(nbytes, theirs):.0f} GB/s.")
    check_bandwidth(gbps(nbytes, ours), 0.75, f"layer_norm_forward on {n_rows} x {n_cols} fp16",
                    hint="Does each program read its row once? A row of up to 16384 columns fits one block "
                         "(BLOCK_SIZE = triton.next_power_of_2(n_cols)), as exercise 1 does it; blocks "
                         "narrower than the row read it three times, and small ones keep few loads in flight. "
                         "Where it loops, does the loop carry little from one trip to the next? Every vector it "
                         "carries (Welford's running mean and M2 are two) costs registers in every thread, and "
                         "fewer programs then fit on a multiprocessor: the cell above counts them.")


# %% [markdown]
# ## 4. Fusing the residual add
#
# In a Transformer, layer norm rarely comes alone. Each block adds its output back into the
# **residual stream**, `h = x + r`, and the next layer norm normalizes `h`; the model keeps `h` for
# the next residual add. Eagerly that is two kernels: an add (read `x` and `r`, write `h`), then a
# layer norm (read `h` back, write `y`). One kernel can load `x` and `r`, add them in registers,
# store `h` (still needed) and, without reading it back, normalize it and store `y`.
#
# ## Exercise 4: count the bytes (2 points)
#
# Write two functions of `n_rows`, `n_cols` and `element_size` that return the bytes moved
# between memory and the chip (ignore `w`, `b` and the statistics: one row each, or one number
# per row):
#
# - `add_then_norm_bytes`: the add kernel, then your layer norm reading `h`;
# - `add_norm_fused_bytes`: one kernel that reads `x` and `r` and writes `h` and `y`.
#
# Both return integers.

# %% nbgrader={"grade_id": "count_bytes", "solution": true}
def add_then_norm_bytes(n_rows, n_cols, element_size=2):
    """Bytes moved by h = x + r (one kernel) followed by y = layer_norm(h) (another)."""
    ### BEGIN SOLUTION
    add, norm = 3, 2  # the add reads x and r and writes h; the norm reads h and writes y
    return (add + norm) * n_rows * n_cols * element_size
    ### END SOLUTION


def add_norm_fused_bytes(n_rows, n_cols, element_size=2):
    """Bytes moved by one kernel that reads x and r and writes h = x + r and y = layer_norm(h)."""
    ### BEGIN SOLUTION
    return 4 * n_rows * n_cols * element_size
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_count_bytes", "locked": true, "points": 1}
for fn in (add_then_norm_bytes, add_norm_fused_bytes):
    for shape in [(8, 100, 2), (4096, 4096, 2), (8, 100, 4)]:
        value = call_answer(fn, *shape)
        if not isinstance(value, int) or isinstance(value, bool):
            raise CheckFailed(f"{fn.__name__}{shape} returned {value!r}: return an integer number of bytes.")
    if fn(16, 100, 2) != 2 * fn(8, 100, 2) or fn(8, 200, 2) != 2 * fn(8, 100, 2) or \
            fn(8, 100, 4) != 2 * fn(8, 100, 2):
        raise CheckFailed(f"{fn.__name__} should be proportional to n_rows, n_cols and element_size: "
                          "every pass over a tensor moves n_rows * n_cols * element_size bytes.")
if not add_norm_fused_bytes(8, 100) < add_then_norm_bytes(8, 100):
    raise CheckFailed("the fused kernel should move fewer bytes than the add and the norm apart.")
saving = 1 - add_norm_fused_bytes(4096, 4096) / add_then_norm_bytes(4096, 4096)
print(f"By your counts, fusing the residual add saves {saving:.0%} of the bytes.")

# %% nbgrader={"grade": true, "grade_id": "test_count_bytes_hidden", "locked": true, "points": 1}
# Hidden tests check the exact counts when your notebook is graded.
### BEGIN HIDDEN TESTS
for n_rows, n_cols, size in [(1, 1, 2), (8, 100, 2), (4096, 4096, 2), (3, 777, 4)]:
    one_pass = n_rows * n_cols * size
    got = call_answer(add_then_norm_bytes, n_rows, n_cols, size)
    if got != 5 * one_pass:
        raise CheckFailed(f"add_then_norm_bytes({n_rows}, {n_cols}, {size}) is {got}, expected "
                          f"{5 * one_pass}: the add reads x and r and writes h (3 passes), the norm reads "
                          "h and writes y (2 passes).")
    got = call_answer(add_norm_fused_bytes, n_rows, n_cols, size)
    if got != 4 * one_pass:
        raise CheckFailed(f"add_norm_fused_bytes({n_rows}, {n_cols}, {size}) is {got}, expected "
                          f"{4 * one_pass}: the fused kernel reads x and r and writes h and y (4 passes).")
print("add_then_norm_bytes and add_norm_fused_bytes are right.")
### END HIDDEN TESTS

# %% [markdown]
# Four passes instead of five: a 20% saving, 1.25 times faster if both ways run at the same
# bandwidth (the fused kernel, for rows that fit one block, reads each row once, so it can do a
# little better; an H200 measured 1.30x). Modest, but layer norm
# runs twice per Transformer block, and the add is free to fuse. (When `h` is not needed, the
# fused kernel skips its store: three passes instead of five.)
#
# ## Exercise 5: `add_layer_norm_kernel` (4 points)
#
# Write the fused kernel for rows that fit in **one block** (`BLOCK_SIZE >= n_cols`), so that no
# loop is needed: the row stays in registers from the load to the store, and both statistics are
# computed from registers (the two-pass variance costs nothing at all here). Program `row`:
#
# 1. loads its row of `x` and of `r` (masked, `other=0.0`), in fp32, and adds them: `h`;
# 2. stores `h` (converted to `h_ptr`'s dtype) at `h_ptr`;
# 3. computes the mean and variance of `h` (masked lanes must not count), and stores
#    `y = (h - mean) * rstd * w + b`.
#
# All four matrices are contiguous with `n_cols` columns. The function `add_layer_norm` below,
# given, launches it.

# %% nbgrader={"grade_id": "add_layer_norm_kernel", "solution": true}
@triton.jit
def add_layer_norm_kernel(x_ptr, r_ptr, h_ptr, y_ptr, w_ptr, b_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    """h = x + r and y = layer_norm(h) * w + b for row tl.program_id(0), whole row in one block."""
    ### BEGIN SOLUTION
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    offsets = row * n_cols + cols
    h = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32) + \
        tl.load(r_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(h_ptr + offsets, h.to(h_ptr.dtype.element_ty), mask=mask)
    mean = tl.sum(h, axis=0) / n_cols
    centered = tl.where(mask, h - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centered * centered, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask).to(tl.float32)
    tl.store(y_ptr + offsets, (centered * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)
    ### END SOLUTION


# %% nbgrader={"grade_id": "add_layer_norm_wrapper", "locked": true}
# Given: the tests call your kernel through it (read-only: grading restores it).
def add_layer_norm(x, residual, weight, bias, eps=1e-5):
    """(y, h): h = x + residual and y = layer norm of h over the last dimension, in one launch."""
    shape, n_cols = x.shape, x.shape[-1]
    x, residual = x.reshape(-1, n_cols).contiguous(), residual.reshape(-1, n_cols).contiguous()
    h, y = torch.empty_like(x), torch.empty_like(x)
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    add_layer_norm_kernel[(x.shape[0],)](x, residual, h, y, weight, bias, n_cols, eps, BLOCK_SIZE=BLOCK_SIZE,
                                         num_warps=max(1, min(8, BLOCK_SIZE // 512)))
    return y.view(shape), h.view(shape)


# %% nbgrader={"grade": true, "grade_id": "test_add_layer_norm_kernel", "locked": true, "points": 2}
def _run_add_layer_norm(n_rows, n_cols, dtype=torch.float32):
    x, residual = rand(n_rows, n_cols, dtype=dtype), rand(n_rows, n_cols, dtype=dtype)
    weight, bias = rand(n_cols, dtype=dtype), rand(n_cols, dtype=dtype)
    what = f"add_layer_norm_kernel on {n_rows} x {n_cols} {dtype}"
    before = [(t, t.clone()) for t in (x, residual, weight, bias)]
    with guarded_allocations(), count_launches() as launches:
        y, h = call_answer(add_layer_norm, x, residual, weight, bias, name="add_layer_norm_kernel")
    expect_launched(launches, what, y)
    h_expected = (x.double() + residual.double()).to(dtype)
    check_output(h, h_expected, name=f"{what}: h", inputs=before,
                 hint="Store h = x + r (loaded in fp32) at h_ptr, converted to h_ptr.dtype.element_ty.")
    check_output(y, layer_norm_torch(x.double() + residual.double(), weight, bias).to(dtype),
                 name=f"{what}: y", hint="Normalize h: its mean over the n_cols real columns, the mean "
                                         "of (h - mean)^2 with masked lanes set to 0, then * w + b.")


_run_add_layer_norm(6, 300)
print("add_layer_norm_kernel is right on 6 x 300: h and y, in one launch.")

# %% nbgrader={"grade": true, "grade_id": "test_add_layer_norm_kernel_hidden", "locked": true, "points": 2}
# Hidden tests check the fused kernel on more widths and dtypes when your notebook is graded.
### BEGIN HIDDEN TESTS
for n_rows, n_cols in [(1, 1), (3, 2), (5, 7), (17, 129), (2, 1000)] + sized([(64, 4096), (4, 16384)], []):
    _run_add_layer_norm(n_rows, n_cols)
for dtype in FLOAT_DTYPES:
    _run_add_layer_norm(9, 333, dtype)
print("add_layer_norm_kernel passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# Now measure it: the add in torch followed by your `layer_norm_forward`, against the fused
# kernel, on fp16 rows of 4096 columns (small rows under the interpreter), and compare with what
# your byte counts predict.

# %%
n_rows, n_cols = sized((16384, 4096), (16, 512))
x, residual = rand(n_rows, n_cols, dtype=torch.float16), rand(n_rows, n_cols, dtype=torch.float16)
weight, bias = rand(n_cols, dtype=torch.float16), rand(n_cols, dtype=torch.float16)
with guarded_allocations():  # first make sure both are right: a stub or a bug stops here
    check_output(call_answer(add_layer_norm, x, residual, weight, bias, name="add_layer_norm_kernel")[0],
                 layer_norm_torch(x + residual, weight, bias), name="add_layer_norm")
apart_ms = bench_ms(lambda: layer_norm_forward(x + residual, weight, bias))
fused_ms = bench_ms(lambda: add_layer_norm(x, residual, weight, bias))
predicted = add_then_norm_bytes(n_rows, n_cols) / add_norm_fused_bytes(n_rows, n_cols)
print(f"add, then layer_norm_forward: {apart_ms:.4g} ms; fused: {fused_ms:.4g} ms; "
      f"measured {apart_ms / fused_ms:.2f}x faster, your byte counts predict {predicted:.2f}x.")
if not ON_GPU:
    print("Interpreter: these times measure Python on the CPU and mean nothing about GPUs.")

# %% [markdown]
# On a GPU the measured ratio should come close to the predicted 1.25: both versions run at the
# speed of memory, so the time follows the bytes.
#
# ## 5. The backward pass
#
# To train with your layer norm, autograd needs its **backward**: given `dy`, the gradient of the
# loss with respect to `y`, compute `dx`, `dw` and `db`. Write $\hat{x} = (x - \mu) \cdot
# \text{rstd}$ for the normalized row, so that $y = \hat{x} w + b$. Then, per row:
#
# $$dx = \text{rstd} \cdot \Big( w\,dy \;-\; \frac{1}{N}\sum_j (w\,dy)_j \;-\;
#   \hat{x} \cdot \frac{1}{N}\sum_j (w\,dy \cdot \hat{x})_j \Big),$$
#
# and, summed over **all rows**:
#
# $$dw = \sum_{\text{rows}} dy \cdot \hat{x}, \qquad db = \sum_{\text{rows}} dy .$$
#
# (The two row sums in `dx` come from `mu` and `rstd` depending on every element of the row:
# moving one `x_j` moves the mean and the spread, and so every `y` of the row.)
#
# `dx` is lesson 4's pattern again: each row needs two sums over itself, so a program owns whole
# rows. We keep the row in one block here (rows up to 64 KB, like the forward pass's one-block
# case), so the sums come from registers. `mean` and `rstd` come from the forward pass: that is
# why it stored them.
#
# `dw` and `db` are different: column `j` sums over every row, and the rows belong to different
# programs. The programs of one launch run in no fixed order and cannot wait for one another, so
# no program can know when the others' contributions are complete. There are two ways out:
#
# - **Atomics.** Every program adds its rows' contribution straight into `dw` with
#   `tl.atomic_add(dw_ptr + cols, contribution, mask=mask)`: the memory system performs each
#   addition indivisibly, so none is lost, and one launch does it all. The price: the additions
#   happen in whatever order the programs reach them, which changes from run to run, and float
#   addition is not associative, so the same inputs give gradients that differ in their last bits
#   between runs (a training run is no longer reproducible bit for bit); and hundreds of programs
#   adding into the same `N` addresses queue behind one another. (Triton's own layer-norm tutorial
#   takes a middle way: programs add into a few partial rows, each guarded by a lock built from
#   `tl.atomic_cas`, and a second kernel adds up those rows.)
# - **Partial sums and a second launch**, which this lesson uses, deterministic:
#   1. each program handles a **group of rows** (`rows_per_program` consecutive rows), computes
#      `dx` for each, and accumulates `dy * x_hat` and `dy` for its rows in two fp32 vectors of
#      registers; at the end it writes them as **one row** of two partial-sum matrices,
#      `dw_partial` and `db_partial`, of shape `(n_programs, N)`;
#   2. a second, small kernel adds up the columns of each partial matrix: `dw = dw_partial.sum(0)`.
#      A launch starts after the previous one has finished, so it sees every partial sum, and it
#      adds them in the same order every time.

# %%
import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle


def draw_partial_sums(n_rows=12, rows_per_program=3, n_cols=8):
    """dw in two launches: each program sums its group of rows into one partial row, then a second
    kernel adds up the partial rows. (Only a drawing.)"""
    n_programs = triton.cdiv(n_rows, rows_per_program)
    colors = plt.cm.tab10.colors
    fig, ax = plt.subplots(figsize=(10, 4))

    def matrix(left, top, rows, label, color_of_row):
        for r in range(rows):
            for c in range(n_cols):
                ax.add_patch(Rectangle((left + c, top - r - 1), 1, 1, facecolor=color_of_row(r),
                                       edgecolor="white", alpha=0.85))
        ax.text(left + n_cols / 2, top + 0.4, label, ha="center", va="bottom", fontsize=9)

    matrix(0, n_rows, n_rows, "dy * x_hat: one row per row of x", lambda r: colors[r // rows_per_program])
    for p in range(n_programs):
        ax.text(-0.3, n_rows - (p + 0.5) * rows_per_program, f"program {p}", ha="right", va="center",
                color=colors[p], fontsize=8)
    top = n_rows / 2 + n_programs / 2
    matrix(n_cols + 4, top, n_programs, "dw_partial (launch 1)", lambda r: colors[r])
    matrix(2 * n_cols + 8, n_rows / 2 + 0.5, 1, "dw (launch 2: column sums)", lambda r: "dimgrey")
    for x0, x1, y in [(n_cols + 0.3, n_cols + 3.7, n_rows / 2), (2 * n_cols + 4.3, 2 * n_cols + 7.7, n_rows / 2)]:
        ax.annotate("", xy=(x1, y), xytext=(x0, y), arrowprops=dict(arrowstyle="->", lw=1.5))
    ax.set_xlim(-3, 3 * n_cols + 9)
    ax.set_ylim(-0.5, n_rows + 1.5)
    ax.axis("off")
    plt.show()


draw_partial_sums()

# %% [markdown]
# The group size is a trade: more rows per program means fewer partial rows to add up (less
# traffic in step 2), but fewer programs to keep the GPU busy. A few hundred programs suit a GPU
# with about a hundred multiprocessors.
#
# **Multiple choice (1 point).** Why does this lesson compute `dw` and `db` with a second launch,
# when `dx` needs none? Set `answer_q_partial_sums` to one letter in the cell below.
#
# - a) `tl.sum` cannot reduce more than one block at a time.
# - b) `dw[j]` sums over all rows, which different programs own; programs of one launch cannot
#   wait for each other, so each writes a partial sum and a later launch, started once they have
#   all finished, adds them up in a fixed order (atomics would add them within one launch, in an
#   order that changes from run to run).
# - c) `dw` must be computed in fp64, which needs a separate kernel.
# - d) The second launch makes the result more accurate, like the two-pass variance.

# %% nbgrader={"grade_id": "q_partial_sums", "solution": true}
# Replace the two lines below with one line: answer_q_partial_sums = "<your letter>"
### BEGIN SOLUTION
answer_q_partial_sums = "b"  # one of "a", "b", "c", "d"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_q_partial_sums", "locked": true, "points": 1}
check_choice(globals().get("answer_q_partial_sums"), "answer_q_partial_sums")
print("Your answer is recorded; it is checked when your notebook is graded.")
### BEGIN HIDDEN TESTS
check_choice(answer_q_partial_sums, "answer_q_partial_sums", expected="b",
             why="dx needs sums over its own row only, which one program owns; dw[j] needs a sum over "
                 "every row, and no program of a launch can wait for the others: a later launch adds "
                 "their partial sums, in a fixed order.")
### END HIDDEN TESTS

# %% [markdown]
# ## Exercise 6: `layer_norm_bwd_kernel` (5 points)
#
# Write the backward kernel. `x`, `dy` and `dx` are contiguous `(n_rows, n_cols)` matrices,
# `BLOCK_SIZE >= n_cols` holds a whole row, and program `pid` owns rows `pid * rows_per_program`
# to `pid * rows_per_program + rows_per_program - 1` (the last program's group may run past
# `n_rows`: skip those rows, e.g. with `if row < n_rows:`). For each of its rows:
#
# 1. load `x` and `dy` (fp32, masked, `other=0.0`) and the row's `mean` and `rstd`;
# 2. `x_hat = (x - mean) * rstd`, zero in masked lanes (`tl.where`), and `wdy = w * dy` (load `w`
#    once, before the loop over rows);
# 3. `dx = (wdy - (x_hat * c1 + c2)) * rstd`, with `c1 = sum(x_hat * wdy) / n_cols` and
#    `c2 = sum(wdy) / n_cols`; store it in `dx`'s dtype;
# 4. add `dy * x_hat` and `dy` to two fp32 accumulators of `BLOCK_SIZE` lanes.
#
# After the loop, store the two accumulators as row `pid` of `dw_partial` and `db_partial` (fp32
# matrices of shape `(n_programs, n_cols)`).
#
# `if row < n_rows:` is a branch at run time, as in exercise 1: `row` is a scalar, one number per
# program, so the whole program takes or skips it, and the rows past `n_rows` are neither loaded
# nor stored.

# %% nbgrader={"grade_id": "layer_norm_bwd_kernel", "solution": true}
@triton.jit
def layer_norm_bwd_kernel(x_ptr, dy_ptr, dx_ptr, w_ptr, mean_ptr, rstd_ptr, dw_partial_ptr, db_partial_ptr,
                          n_rows, n_cols, rows_per_program, BLOCK_SIZE: tl.constexpr):
    """dx for rows pid * rows_per_program ...; this group's sums of dy * x_hat and dy as row pid of
    dw_partial and db_partial."""
    ### BEGIN SOLUTION
    pid = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    dw = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    db = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for i in range(rows_per_program):
        row = pid * rows_per_program + i
        if row < n_rows:
            offsets = row * n_cols + cols
            x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
            dy = tl.load(dy_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
            rstd = tl.load(rstd_ptr + row)
            x_hat = tl.where(mask, (x - tl.load(mean_ptr + row)) * rstd, 0.0)
            wdy = w * dy
            c1 = tl.sum(x_hat * wdy, axis=0) / n_cols
            c2 = tl.sum(wdy, axis=0) / n_cols
            dx = (wdy - (x_hat * c1 + c2)) * rstd
            tl.store(dx_ptr + offsets, dx.to(dx_ptr.dtype.element_ty), mask=mask)
            dw += dy * x_hat
            db += dy
    tl.store(dw_partial_ptr + pid * n_cols + cols, dw, mask=mask)
    tl.store(db_partial_ptr + pid * n_cols + cols, db, mask=mask)
    ### END SOLUTION


# %% [markdown]
# The test runs it on 10 rows of 100 columns, 3 rows per program (4 programs, the last with one
# row), and checks `dx` against PyTorch's autograd and each partial row against the sums over its
# group.

# %% nbgrader={"grade": true, "grade_id": "test_layer_norm_bwd_kernel", "locked": true, "points": 2}
def layer_norm_grads_torch(x, weight, bias, dy, eps=1e-5):
    """(dx, dw, db) of F.layer_norm by PyTorch's autograd, in fp64."""
    x64, w64, b64 = (t.detach().double().requires_grad_() for t in (x, weight, bias))
    y64 = F.layer_norm(x64, (x.shape[-1],), w64, b64, eps)
    return torch.autograd.grad(y64, (x64, w64, b64), dy.double())


def _run_bwd_kernel(n_rows, n_cols, rows_per_program, dtype=torch.float32):
    x, dy = rand(n_rows, n_cols, dtype=dtype), rand(n_rows, n_cols, dtype=dtype)
    weight, bias = rand(n_cols, dtype=dtype), rand(n_cols, dtype=dtype)
    x64 = x.double()
    mean = x64.mean(dim=1).float()
    rstd = (1 / torch.sqrt(x64.var(dim=1, unbiased=False) + 1e-5)).float()
    n_programs = triton.cdiv(n_rows, rows_per_program)
    dx = guarded_empty((n_rows, n_cols), dtype=dtype)
    dw_partial, db_partial = guarded_empty((n_programs, n_cols)), guarded_empty((n_programs, n_cols))
    before = [(t, t.clone()) for t in (x, dy, weight, mean, rstd)]
    block = triton.next_power_of_2(n_cols)
    call_answer(lambda: layer_norm_bwd_kernel[(n_programs,)](
        x, dy, dx, weight, mean, rstd, dw_partial, db_partial, n_rows, n_cols, rows_per_program,
        BLOCK_SIZE=block, num_warps=min(max(block // 256, 1), 8)), name="layer_norm_bwd_kernel")
    what = f"layer_norm_bwd_kernel on {n_rows} x {n_cols} {dtype}, {rows_per_program} rows per program"
    dx_expected, _, _ = layer_norm_grads_torch(x, weight, bias, dy)
    tolerance = 1e-4 if dtype == torch.float32 else None
    check_output(dx, dx_expected.to(dtype), name=f"{what}: dx", inputs=before, atol=tolerance, rtol=tolerance,
                 hint="dx = (wdy - (x_hat * c1 + c2)) * rstd with c1 = sum(x_hat * wdy) / n_cols and "
                      "c2 = sum(wdy) / n_cols; x_hat must be 0 in masked lanes.")
    x_hat = (x64 - mean.double()[:, None]) * rstd.double()[:, None]
    groups = torch.arange(n_rows, device=x.device) // rows_per_program
    dw_expected = torch.zeros(n_programs, n_cols, dtype=torch.float64, device=x.device)
    db_expected = torch.zeros_like(dw_expected)
    dw_expected.index_add_(0, groups, dy.double() * x_hat)
    db_expected.index_add_(0, groups, dy.double())
    hint = ("Row pid of the partial matrices holds the sums over this program's own rows only: "
            "accumulate dy * x_hat and dy over them, then store once at dw_partial_ptr + pid * n_cols + cols.")
    check_output(dw_partial, dw_expected.float(), name=f"{what}: dw_partial", atol=1e-4, rtol=1e-4, hint=hint)
    check_output(db_partial, db_expected.float(), name=f"{what}: db_partial", atol=1e-4, rtol=1e-4, hint=hint)


_run_bwd_kernel(10, 100, 3)
print("layer_norm_bwd_kernel is right on 10 x 100: dx and the partial sums.")

# %% nbgrader={"grade": true, "grade_id": "test_layer_norm_bwd_kernel_hidden", "locked": true, "points": 3}
# Hidden tests check the backward kernel on more widths, groups and dtypes when your notebook is
# graded.
### BEGIN HIDDEN TESTS
for n_rows, n_cols, rows_per_program in [(1, 1, 1), (3, 1, 2), (5, 7, 1), (5, 7, 5), (9, 129, 4),
                                         (4, 1000, 3), (2, 2049, 1)] + sized([(256, 4096, 16), (32, 16384, 8)], []):
    _run_bwd_kernel(n_rows, n_cols, rows_per_program)
for dtype in FLOAT_DTYPES:
    _run_bwd_kernel(7, 333, 2, dtype)
print("layer_norm_bwd_kernel passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## Exercise 7: `column_sum_kernel` (3 points)
#
# The second step: `out[j] = partial[0, j] + partial[1, j] + ... + partial[n_partials - 1, j]` for
# a contiguous fp32 matrix `partial` of `n_partials` rows and `n_cols` columns. Each program owns
# `BLOCK_COLS` consecutive columns and loops down the rows, `BLOCK_ROWS` rows at a time, adding
# each 2-D tile (lesson 3's 2-D mask) into a `(BLOCK_ROWS, BLOCK_COLS)` fp32 accumulator; at the
# end, `tl.sum(..., axis=0)` gives the column sums. Store them in `out`'s dtype.

# %% nbgrader={"grade_id": "column_sum_kernel", "solution": true}
@triton.jit
def column_sum_kernel(partial_ptr, out_ptr, n_partials, n_cols, BLOCK_ROWS: tl.constexpr,
                      BLOCK_COLS: tl.constexpr):
    """out[j] = sum over i of partial[i, j], for the BLOCK_COLS columns of program tl.program_id(0)."""
    ### BEGIN SOLUTION
    cols = tl.program_id(axis=0) * BLOCK_COLS + tl.arange(0, BLOCK_COLS)
    total = tl.zeros([BLOCK_ROWS, BLOCK_COLS], dtype=tl.float32)
    for start in range(0, n_partials, BLOCK_ROWS):
        rows = start + tl.arange(0, BLOCK_ROWS)
        mask = (rows[:, None] < n_partials) & (cols[None, :] < n_cols)
        total += tl.load(partial_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + cols, tl.sum(total, axis=0).to(out_ptr.dtype.element_ty), mask=cols < n_cols)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_column_sum_kernel", "locked": true, "points": 1}
def _run_column_sum(n_partials, n_cols, block_rows, block_cols, dtype=torch.float32):
    partial = rand(n_partials, n_cols)
    before = [(partial, partial.clone())]
    out = guarded_empty(n_cols, dtype=dtype)
    call_answer(lambda: column_sum_kernel[(triton.cdiv(n_cols, block_cols),)](
        partial, out, n_partials, n_cols, BLOCK_ROWS=block_rows, BLOCK_COLS=block_cols),
        name="column_sum_kernel")
    check_output(out, partial.double().sum(dim=0).to(dtype), inputs=before, atol=1e-4, rtol=1e-4,
                 name=f"column_sum_kernel on {n_partials} x {n_cols} into {dtype}, tiles of "
                      f"{block_rows} x {block_cols}",
                 hint="Each program adds up all n_partials rows of its columns: loop over the rows in "
                      "steps of BLOCK_ROWS with the 2-D mask (rows < n_partials) & (cols < n_cols).")


_run_column_sum(10, 100, 4, 32)
print("column_sum_kernel is right on 10 x 100 in tiles of 4 x 32.")

# %% nbgrader={"grade": true, "grade_id": "test_column_sum_kernel_hidden", "locked": true, "points": 2}
# Hidden tests check column_sum_kernel on more shapes, tiles and output dtypes when your notebook
# is graded.
### BEGIN HIDDEN TESTS
for n_partials, n_cols in [(1, 1), (1, 100), (100, 1), (37, 129)]:
    for block_rows, block_cols in [(1, 16), (8, 64), (32, 128)]:
        _run_column_sum(n_partials, n_cols, block_rows, block_cols)
for n_partials, n_cols in [(256, 1000)] + sized([(256, 16384)], []):
    _run_column_sum(n_partials, n_cols, 32, 128)
for dtype in FLOAT_DTYPES:
    _run_column_sum(33, 77, 8, 32, dtype)
print("column_sum_kernel passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## Exercise 8: wiring it into autograd (5 points)
#
# PyTorch's autograd calls your kernels if you wrap them in a `torch.autograd.Function`: a class
# with two static methods. `forward(ctx, ...)` computes the output and saves on `ctx` what the
# backward will need; `backward(ctx, dy)` receives the gradient of the output and returns one
# gradient per input of `forward` (`None` for inputs that need none, like `eps`). The pattern:
#
# ```python
# class MyOp(torch.autograd.Function):
#     @staticmethod
#     def forward(ctx, x, weight):
#         ...
#         ctx.save_for_backward(x, weight, stats)   # tensors
#         ctx.some_number = 3                       # anything else
#         return y
#
#     @staticmethod
#     def backward(ctx, dy):
#         x, weight, stats = ctx.saved_tensors
#         ...
#         return dx, dweight
# ```
#
# and `MyOp.apply(x, weight)` runs it. Write:
#
# 1. `layer_norm_backward(dy, x, weight, mean, rstd)`, returning `(dx, dw, db)`: `dx` shaped like
#    `x` in its dtype, `dw` and `db` shaped like `weight` in its dtype. It views `x` and `dy` as
#    contiguous `(n_rows, N)` matrices (`reshape(-1, N).contiguous()`: the `dy` that autograd hands
#    you may be a broadcast view with stride 0, e.g. after `y.sum().backward()`), picks
#    `rows_per_program = min(64, triton.cdiv(n_rows, 256))` and
#    `n_programs = triton.cdiv(n_rows, rows_per_program)`, allocates the fp32 partial matrices,
#    launches `layer_norm_bwd_kernel` (`BLOCK_SIZE = triton.next_power_of_2(N)`, and
#    `num_warps = 4 if BLOCK_SIZE <= 2048 else 8`), then `column_sum_kernel` twice (tiles of
#    32 x 128, say). Three launches.
#
#    Why those numbers: a program works through its rows one after another, so the GPU needs many
#    programs to keep every multiprocessor's loads in flight: at least 256 (two per multiprocessor
#    of an H200) and no more than 64 rows in one. Each program adds one row of partial sums, `N`
#    fp32 numbers, small next to the 64 rows of `x`, `dy` and `dx` it handles. On an H200 this
#    moved up to 1.45x the bytes per second of "at most 256 programs" (65536 rows of 1024: 256
#    programs of 256 rows each left the multiprocessors waiting on memory).
# 2. `LayerNorm`, whose `forward(ctx, x, weight, bias, eps)` calls your `layer_norm_forward` and
#    saves `x`, `weight`, `mean` and `rstd`, and whose `backward` calls `layer_norm_backward`.
#
# The function `layer_norm` below the cell is what a model would call.

# %% nbgrader={"grade_id": "layer_norm_autograd", "solution": true}
def layer_norm_backward(dy, x, weight, mean, rstd):
    """(dx, dw, db) of the layer norm y = layer_norm_forward(x, weight, bias): three launches."""
    ### BEGIN SOLUTION
    n_cols = x.shape[-1]
    x_rows = x.reshape(-1, n_cols).contiguous()
    dy_rows = dy.reshape(-1, n_cols).contiguous()
    n_rows = x_rows.shape[0]
    rows_per_program = min(64, triton.cdiv(n_rows, 256))
    n_programs = triton.cdiv(n_rows, rows_per_program)
    dx = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    dw_partial = torch.empty((n_programs, n_cols), dtype=torch.float32, device=x.device)
    db_partial = torch.empty((n_programs, n_cols), dtype=torch.float32, device=x.device)
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    layer_norm_bwd_kernel[(n_programs,)](x_rows, dy_rows, dx, weight.contiguous(), mean, rstd, dw_partial,
                                         db_partial, n_rows, n_cols, rows_per_program, BLOCK_SIZE=BLOCK_SIZE,
                                         num_warps=4 if BLOCK_SIZE <= 2048 else 8)
    dw = torch.empty(n_cols, dtype=weight.dtype, device=x.device)
    db = torch.empty(n_cols, dtype=weight.dtype, device=x.device)
    for partial, out in ((dw_partial, dw), (db_partial, db)):
        column_sum_kernel[(triton.cdiv(n_cols, 128),)](partial, out, n_programs, n_cols, BLOCK_ROWS=32,
                                                      BLOCK_COLS=128)
    return dx.view(x.shape), dw.view(weight.shape), db.view(weight.shape)
    ### END SOLUTION


class LayerNorm(torch.autograd.Function):
    """Layer norm over the last dimension, forward and backward by your Triton kernels."""

    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        ### BEGIN SOLUTION
        y, mean, rstd = layer_norm_forward(x, weight, bias, eps)
        ctx.save_for_backward(x, weight, mean, rstd)
        return y
        ### END SOLUTION

    @staticmethod
    def backward(ctx, dy):
        ### BEGIN SOLUTION
        x, weight, mean, rstd = ctx.saved_tensors
        dx, dw, db = layer_norm_backward(dy, x, weight, mean, rstd)
        return dx, dw, db, None
        ### END SOLUTION


# %% nbgrader={"grade_id": "layer_norm_wrapper", "locked": true}
# Given: the tests call your kernel through it (read-only: grading restores it).
def layer_norm(x, weight, bias, eps=1e-5):
    """F.layer_norm(x, (x.shape[-1],), weight, bias, eps), forward and backward in Triton."""
    return LayerNorm.apply(x, weight, bias, eps)


# %% nbgrader={"grade": true, "grade_id": "test_layer_norm_autograd", "locked": true, "points": 2}
def _run_autograd(shape, what, dtype=torch.float32, summed=False):
    """layer_norm forward and backward through autograd, against PyTorch's gradients in fp64."""
    n_cols = shape[-1]
    x, weight, bias = rand(*shape, dtype=dtype), rand(n_cols, dtype=dtype), rand(n_cols, dtype=dtype)
    dy = torch.ones(shape, dtype=dtype, device=DEVICE) if summed else rand(*shape, dtype=dtype)
    leaves = [t.detach().clone().requires_grad_() for t in (x, weight, bias)]
    with count_launches() as forward_launches:
        y = call_answer(layer_norm, *leaves, name=f"LayerNorm.forward on {what}")
    expect_launched(forward_launches, f"LayerNorm.forward on {what}", y)
    check_output(y.detach(), layer_norm_torch(x, weight, bias), name=f"layer_norm on {what}")
    if y.grad_fn is None:
        raise CheckFailed(f"layer_norm on {what} returned a tensor without grad_fn: return y from "
                          "LayerNorm.forward, and call it through LayerNorm.apply.")
    loss = y.sum() if summed else None  # y.sum()'s backward hands LayerNorm a dy of ones with stride 0
    with count_launches() as backward_launches:
        call_answer(lambda: loss.backward() if summed else y.backward(dy), name=f"LayerNorm.backward on {what}")
    # (autograd may copy a gradient before it stores it in .grad, so the outputs are matched with
    # the kernels' in test_layer_norm_backward, on layer_norm_backward itself)
    expect_launched(backward_launches, f"LayerNorm.backward on {what}")
    grads = [leaf.grad for leaf in leaves]
    for name, grad in zip(("dx", "dw", "db"), grads):
        if grad is None:
            raise CheckFailed(f"LayerNorm.backward on {what} gave no {name}: return (dx, dw, db, None).")
    tolerance = 1e-4 if dtype == torch.float32 else None
    expected = [g.to(dtype) for g in layer_norm_grads_torch(x, weight, bias, dy)]
    hints = {"dw": "dw sums dy * x_hat over every row, db sums dy: are all the partial rows added "
                   "(n_partials = n_programs), and does each program cover its whole group?"}
    hints["db"] = hints["dw"]
    for name, grad, want in zip(("dx", "dw", "db"), grads, expected):
        check_output(grad, want, name=f"{name} of layer_norm on {what}", atol=tolerance, rtol=tolerance,
                     hint=hints.get(name))
    # layer_norm_backward on its own, given the statistics: its three outputs come from its kernels.
    rows64 = x.double().reshape(-1, n_cols)
    mean = rows64.mean(dim=1).float()
    rstd = (1 / torch.sqrt(rows64.var(dim=1, unbiased=False) + 1e-5)).float()
    before = [(t, t.clone()) for t in (x, weight, mean, rstd, dy)]
    with guarded_allocations(), count_launches() as launches:
        result = call_answer(layer_norm_backward, dy, x, weight, mean, rstd)
    if not (isinstance(result, tuple) and len(result) == 3):
        raise CheckFailed(f"layer_norm_backward on {what} returned {type(result).__name__}: return the "
                          "tuple (dx, dw, db).")
    for name, out, want in zip(("dx", "dw", "db"), result, expected):
        expect_launched(launches, f"layer_norm_backward on {what} ({name})", out)
        check_output(out, want, name=f"{name} from layer_norm_backward on {what}", inputs=before,
                     atol=tolerance, rtol=tolerance, hint=hints.get(name))


_run_autograd((6, 100), "(6, 100) fp32")
print("layer_norm's forward and backward match PyTorch's on (6, 100) fp32.")

# %% nbgrader={"grade": true, "grade_id": "test_layer_norm_autograd_hidden", "locked": true, "points": 3}
# Hidden tests check the gradients on more shapes and dtypes, and with the gradient of y.sum(),
# when your notebook is graded.
### BEGIN HIDDEN TESTS
# More than 256 rows: several rows per program in the backward.
for shape in [(1, 1), (3, 1), (1, 7), (2, 3, 129), (5, 1000), (257, 5)] + sized([(4096, 1024), (600, 4096),
                                                                                 (64, 16384)], []):
    _run_autograd(shape, f"{shape} fp32")
_run_autograd((9, 77), "(9, 77) fp32, the gradient of y.sum()", summed=True)
for dtype in FLOAT_DTYPES:
    _run_autograd((13, 333), f"(13, 333) {dtype}", dtype)
print("layer_norm passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## 6. RMSNorm: the same kernel, one flag
#
# Many recent models (Llama, Mistral, Gemma) use **RMSNorm** instead: no mean is subtracted and
# there is no bias, the row is only divided by its root mean square:
#
# $$y_j = \frac{x_j}{\sqrt{\frac{1}{N}\sum_k x_k^2 + \varepsilon}}\, w_j .$$
#
# That is your layer norm with the mean fixed at 0 and without `+ b`. Rather than a second kernel,
# the `RMS_NORM` flag you have ignored so far selects it. Because it is a `tl.constexpr`, Triton
# compiles one version of the kernel for each value (as `USE_MASK` in lesson 3): the `if` costs
# nothing at run time, and the layer norm version is unchanged.
#
# ## Exercise 9: RMSNorm (3 points)
#
# 1. Go back to your `layer_norm_fwd_kernel` (exercise 1) and handle `RMS_NORM`: when it is set,
#    skip the mean pass and use `mean = 0.0` (the variance pass then computes the mean of `x^2`),
#    and do not add the bias. Re-run that cell and its tests.
# 2. Write `rms_norm(x, weight, eps)` like `layer_norm_forward`, launching the same kernel with
#    `RMS_NORM=True`; it returns `y` only. The kernel still stores a mean and an rstd per row, so
#    allocate them; and as the kernel never reads the bias, pass `weight` in its place.

# %% nbgrader={"grade_id": "rms_norm", "solution": true}
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm of x over its last dimension, by layer_norm_fwd_kernel with RMS_NORM=True."""
    ### BEGIN SOLUTION
    n_cols = x.shape[-1]
    rows = x.reshape(-1, n_cols)
    if rows.stride(-1) != 1:
        rows = rows.contiguous()
    n_rows = rows.shape[0]
    y = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    mean = torch.empty(n_rows, dtype=torch.float32, device=x.device)
    rstd = torch.empty(n_rows, dtype=torch.float32, device=x.device)
    BLOCK_SIZE = min(triton.next_power_of_2(n_cols), 16384)
    weight = weight.contiguous()
    layer_norm_fwd_kernel[(n_rows,)](rows, y, weight, weight, mean, rstd, rows.stride(0), y.stride(0), n_cols,
                                     eps, BLOCK_SIZE=BLOCK_SIZE, RMS_NORM=True,
                                     num_warps=max(1, min(8, BLOCK_SIZE // 512)))
    return y.view(x.shape)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_rms_norm", "locked": true, "points": 1}
def rms_norm_torch(x, weight, eps=1e-6):
    """RMSNorm over the last dimension in fp64; the result in x's dtype."""
    x64 = x.double()
    return (x64 * torch.rsqrt((x64 * x64).mean(dim=-1, keepdim=True) + eps) * weight.double()).to(x.dtype)


def _run_rms_norm(x, what, eps=1e-6):
    weight = rand(x.shape[-1], dtype=x.dtype)
    before = [(x, x.clone()), (weight, weight.clone())]
    with guarded_allocations(), count_launches() as launches:
        y = call_answer(rms_norm, x, weight, eps, name=f"rms_norm on {what}")
    expect_launched(launches, f"rms_norm on {what}", y)
    if list(launches) != [getattr(layer_norm_fwd_kernel, "__name__", "kernel")]:
        raise CheckFailed(f"rms_norm on {what} launched {', '.join(launches)}: launch "
                          "layer_norm_fwd_kernel once, with RMS_NORM=True.")
    check_output(y, rms_norm_torch(x, weight, eps), name=f"rms_norm on {what}", inputs=before,
                 hint="With RMS_NORM, the mean is 0 (no mean pass), rstd = 1 / sqrt(mean(x^2) + eps), "
                      "and no bias is added: y = x * rstd * w.")


_run_rms_norm(rand(8, 300).add_(2.0), "(8, 300) fp32 with a mean of 2")
print("rms_norm is right on (8, 300) fp32.")

# %% nbgrader={"grade": true, "grade_id": "test_rms_norm_hidden", "locked": true, "points": 2}
# Hidden tests check rms_norm on more shapes and dtypes when your notebook is graded.
### BEGIN HIDDEN TESTS
for shape in [(1, 1), (3, 7), (17, 129), (2, 3, 1000)] + sized([(64, 4096), (8, 16384), (2, 40000)], [(2, 3000)]):
    _run_rms_norm(rand(*shape), f"{shape} fp32")
for dtype in FLOAT_DTYPES:
    _run_rms_norm(rand(9, 333, dtype=dtype), f"(9, 333) {dtype}")
_run_rms_norm(rand(20, 333)[:, :300], "a slice x[:, :300] of a (20, 333) tensor")
print("rms_norm passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## 7. Measuring: your layer norm against PyTorch
#
# Last, the whole picture. For fp16 rows of 1024 to 16384 columns (a fixed number of elements;
# small sizes under the interpreter) we measure GB/s, counting the bytes that must move:
#
# - forward (one read of `x`, one write of `y`): `F.layer_norm`, your `layer_norm_forward`, and on
#   a GPU `torch.compile` of `F.layer_norm`, compiled for each shape (`dynamic=False`: a function
#   compiled once and reused across shapes is recompiled for dynamic shapes, and runs slower);
# - forward and backward together (the forward's two passes, then reading `x` and `dy` and writing
#   `dx`: five passes), through autograd: `F.layer_norm` against your `layer_norm`.

# %%
def forward_backward(norm, x, weight, bias, dy):
    """One training step of a layer norm: forward, then backward from dy."""
    x.grad = weight.grad = bias.grad = None
    norm(x, weight, bias).backward(dy)


x, weight, bias = rand(4, 1000), rand(1000), rand(1000)
with guarded_allocations():  # first make sure that your layer norm is right: a stub or a bug stops here
    check_output(call_answer(layer_norm_forward, x, weight, bias)[0], layer_norm_torch(x, weight, bias),
                 name="layer_norm_forward")
total = sized(2**25, 2**12)
widths = sized([1024, 2048, 4096, 8192, 16384], [128, 512, 2048])
forward = {"F.layer_norm": [], "layer_norm_forward (yours)": []}
training = {"F.layer_norm, forward + backward": [], "layer_norm (yours), forward + backward": []}
for n_cols in widths:
    x = rand(total // n_cols, n_cols, dtype=torch.float16).requires_grad_()
    weight = rand(n_cols, dtype=torch.float16).requires_grad_()
    bias = rand(n_cols, dtype=torch.float16).requires_grad_()
    dy = rand(total // n_cols, n_cols, dtype=torch.float16)
    nbytes = 2 * x.numel() * x.element_size()
    with torch.no_grad():
        torch_forward = lambda: F.layer_norm(x, (n_cols,), weight, bias)  # noqa: E731
        forward["F.layer_norm"].append(gbps(nbytes, bench_ms(torch_forward)))
        forward["layer_norm_forward (yours)"].append(gbps(nbytes, bench_ms(lambda: layer_norm_forward(x, weight, bias))))
        compiled_norm = torch_compiled(lambda t: F.layer_norm(t, (n_cols,), weight, bias), x)
        if compiled_norm is not None:
            forward.setdefault("torch.compile", []).append(gbps(nbytes, bench_ms(lambda: compiled_norm(x))))
    torch_norm = lambda t, w_, b_: F.layer_norm(t, (n_cols,), w_, b_)  # noqa: E731
    training["F.layer_norm, forward + backward"].append(
        gbps(5 * nbytes / 2, bench_ms(lambda: forward_backward(torch_norm, x, weight, bias, dy))))
    training["layer_norm (yours), forward + backward"].append(
        gbps(5 * nbytes / 2, bench_ms(lambda: forward_backward(layer_norm, x, weight, bias, dy))))
    del x, weight, bias, dy
for i, n_cols in enumerate(widths):
    print(f"{total // n_cols:6} x {n_cols:5}: " + ", ".join(
        f"{label} {values[i]:.4g} GB/s" for label, values in {**forward, **training}.items() if len(values) > i))
roof = copy_bandwidth()
plot_bandwidth(widths, forward, f"Layer norm forward, fp16, {total} elements", roof=roof,
               xlabel="columns (N), at a fixed number of elements")
plot_bandwidth(widths, training, f"Layer norm forward + backward, fp16, {total} elements", roof=roof,
               xlabel="columns (N), at a fixed number of elements")

# %% [markdown]
# **Reading the plots** (on a GPU).
#
# - **Forward.** Your kernel should run ahead of `F.layer_norm` at every width (in the solution's
#   run on an H200, 1.06x to 2.1x: 3326 against 2287 GB/s at 4096 columns, 3231 against 1997 at
#   16384). PyTorch's kernel is written for every shape and dtype; yours is compiled for this row
#   width (`BLOCK_SIZE` is a `tl.constexpr`) and reads a row that fits once, the advantages of
#   lesson 4's softmax. This plot times one call at a time, and a call here lasts about 20 us, so
#   each call's own start and finish weigh: the same kernel shows 53% to 85% of the copy bandwidth
#   here, from one width to the next and one run to the next, against 102% in the performance test,
#   which times calls back to back on more rows.
# - **`torch.compile`** generates a Triton reduction kernel compiled for each shape. For rows of up
#   to 1024 elements it is what Inductor (`torch.compile`'s code generator) calls a *persistent
#   reduction*: the whole row in one block, with no loop over it, kept in registers and read once,
#   like your kernel's first plan (no relation to the *persistent kernels* of lesson 6); for wider
#   rows, a loop. In the solution's run yours led at four widths of five (3537 against 2424 GB/s at
#   1024, 3231 against 1647 at 16384) and trailed at 8192 (2213 against 2534). Timed on twice the
#   elements, as `make bench` in the course's repository does, the two are level at 1024 and 16384
#   (0.98x and 0.96x of compile's speed) and yours leads at 2048 to 8192 (1.02x to 1.38x).
# - **Forward + backward.** Your backward reads `x` and `dy` and writes `dx`, plus the partial
#   sums, which are small next to the rest (one row of `N` fp32 numbers per 64 rows). Its kernels keep
#   up with PyTorch's (timed alone on an H200, 1.0x to 2.3x PyTorch's backward), but through your
#   `autograd.Function` the plot may show far less (0.26x to 0.47x on that H200): each backward is a
#   Python function that reshapes, allocates and launches three kernels, and on that machine
#   issuing it took more CPU time (0.2 to 0.4 ms) than the kernels took on the GPU. At these sizes
#   the plot then times Python, not your kernels; PyTorch's backward is one call into C++.
#
# ## What you learned
#
# - Layer norm is a reduction (mean and variance of each row) feeding an element-wise pass; one
#   program per row keeps the row on the chip, and the bytes floor is one read and one write.
# - Statistics in **fp32**, whatever the data's dtype: an fp16 running sum stalls.
# - **A row that fits one block is read once** and kept in registers; **rows wider than a block**
#   take a loop over the row with one running sum per lane, reduced once at the end, the second and
#   third passes reading the row from cache. One kernel holds both plans, behind a branch at run
#   time.
# - **Never `E[x^2] - E[x]^2`** in floating point when the mean can be large: catastrophic
#   cancellation. Two passes (mean, then the mean of `(x - mean)^2`) or Welford's update.
# - **Fusing** the residual add saves one pass of five; count the bytes, then measure.
# - **Backward**: `dx` is a row-wise reduction like the forward; `dw` and `db` sum over rows that
#   different programs own, so each program writes **partial sums** and a second launch adds them
#   up, in a fixed order (atomics do it in one launch, in an order that changes from run to run).
#   A `torch.autograd.Function` makes your kernels part of autograd.
# - One kernel, two norms: a `tl.constexpr` flag compiles a specialised variant (RMSNorm) at no
#   run-time cost.
#
# **Next, lesson 06 (matmul):** tiles of two matrices, `tl.dot` and the tensor cores, where the
# arithmetic, not the memory, becomes the limit.

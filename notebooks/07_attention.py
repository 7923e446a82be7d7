# %% [markdown]
# # Lesson 7: Attention: FlashAttention's forward pass, where the softmax meets the matmul
#
# Attention is the heart of every Transformer, and the kernel most people learn Triton for. For
# each query row `q_i` of a head, it weighs every key `k_j` by how well it matches, and returns
# the weighted average of the values `v_j`:
#
# $$S = \frac{Q K^T}{\sqrt{d}}, \qquad P = \mathrm{softmax}(S) \text{ (row by row)}, \qquad O = P V,$$
#
# with `Q`, `K`, `V` and `O` of shape `(N, d)` per head: `N` tokens, `d` numbers per token (the
# **head dimension**, 64 or 128 in most models). Written with three torch operations, it makes an
# `N x N` matrix of scores per head and writes it to memory, twice. At `N = 16384` that is half a
# gigabyte per head in fp16, for a result of 2 MB.
#
# FlashAttention (Dao et al., 2022) computes the same result without ever writing `S` or `P`: it
# cuts the work into tiles and computes the softmax **online**, fixing up a partial result each time
# a larger score arrives. This lesson's kernel follows its successor, FlashAttention-2 (Dao, 2023):
# each program keeps a block of queries on the chip and streams the keys and values past it in
# blocks, keeps its weighted sum of values unnormalised and divides once at the end, and saves one
# log-sum-exp per row for the backward pass. The memory becomes `O(N)` instead of `O(N^2)`, the
# traffic to memory drops by orders of magnitude, and the two products run on the tensor cores. This
# lesson builds it from the two previous ones: lesson 4's softmax and lesson 6's `tl.dot`.
#
# - count and measure what the three-step attention costs in memory, against `N`;
# - write the **online softmax**: one pass over a row for its maximum and its sum together;
# - write the **forward kernel**: one program per (head, block of queries), a loop over blocks of
#   keys and values with `tl.dot`, the rescaling, the final division, and the **log-sum-exp** of each
#   row saved for a backward pass; **causal** attention that skips the blocks above the diagonal;
#   sequence lengths that are not multiples of the block;
# - wrap it in `attention(q, k, v, causal)`, and race it against PyTorch's own FlashAttention.
#
# | exercise | what you write | points |
# |---|---|---|
# | 1 | `naive_attention_bytes`, `flash_attention_bytes`: the bytes each plan moves | 2 |
# | 2 | `online_softmax_kernel`: maximum and sum in one pass | 4 |
# | Q | (multiple choice) rescaling a partial result | 1 |
# | 3 | `attend_to_keys` and `attention_fwd_kernel`: FlashAttention's forward pass | 8 |
# | 4 | `attention`: the function that launches it | 4 |
# | W1 | (written) why the memory is `O(N)`, in your numbers | 3 |
# | 5 | (no new code) `attention` against PyTorch's FlashAttention | 3 |
# | * | (optional, ungraded) `attention_backward`: the backward pass, and a `torch.autograd.Function` | 0 |
#
# **Where to run it.** On Colab choose *Runtime > Change runtime type > GPU*. Like lesson 6, this
# lesson is best on a GPU of compute capability 8.0 or newer (A100, L4, H100, ...): on a T4 (7.5)
# Triton compiles `tl.dot` to plain FMAs, with no tensor cores (see lesson 6), so this notebook
# gives `tl.dot` fp32 inputs only there, and the setup cell's last line below says so; every test
# then runs in fp32. With no GPU the notebook runs on Triton's interpreter: every exercise works, on
# short sequences, and timings say nothing about GPUs.

# %% tags=["setup"]
from autograder.kit import *  # noqa: F403 (the build places autograder/kit.py here)

# %%
print(DOT_NOTE)
print("In this notebook tl.dot gets inputs of", ", ".join(str(d).removeprefix("torch.") for d in DOT_DTYPES))

# %% [markdown]
# ## 1. Attention in three steps, and what it costs
#
# Models hold `Q`, `K` and `V` as tensors of shape `(B, H, N, d)`: a batch of `B` sequences, `H`
# heads each. Every one of the `B * H` heads is an independent attention. Here is attention as
# three torch operations; `causal=True` lets query `i` see only keys `j <= i` (a language model
# must not look at the tokens it is about to predict), by setting the scores above the diagonal to
# `-inf` before the softmax.

# %% nbgrader={"grade_id": "attention_reference", "locked": true}
# The reference the tests compare with (read-only: grading restores it).
import matplotlib.pyplot as plt
import torch.nn.functional as F


def naive_attention(q, k, v, causal=False):
    """softmax(q k^T / sqrt(d)) v with torch, the N x N scores in memory, in q's dtype."""
    scores = (q * q.shape[-1] ** -0.5) @ k.transpose(-2, -1)  # (B, H, N, N)
    if causal:
        n = q.shape[-2]
        scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


q, k, v = rand(2, 3, 40, 64), rand(2, 3, 40, 64), rand(2, 3, 40, 64)
for causal in (False, True):
    print(f"causal={causal}: largest difference from F.scaled_dot_product_attention:",
          (naive_attention(q, k, v, causal) - F.scaled_dot_product_attention(q, k, v, is_causal=causal))
          .abs().max().item())


# %% [markdown]
# Count what it moves, per head, for `N` tokens of `d` numbers of `element_size` bytes:
#
# 1. `S = Q K^T` (the scale is applied to `Q`, `N * d` numbers: we neglect it): reads `Q` and `K`,
#    writes the `N x N` scores `S`;
# 2. `P = softmax(S)`: reads `S`, writes `P`, another `N x N`;
# 3. `O = P V`: reads `P` and `V`, writes `O`.
#
# FlashAttention runs one program per block of `BLOCK_M` queries: it reads its queries once, reads
# *all* the keys and values (each program needs every key), and writes its block of `O` and one
# fp32 number per query, the row's log-sum-exp (section 3 says what that is for). Nothing `N x N`
# ever reaches memory; the price is that `K` and `V` are read once per block of queries (from the
# L2 cache, mostly, but we count them all).
#
# ## Exercise 1: the bytes each plan moves (2 points)
#
# Write `naive_attention_bytes(batch_heads, N, d, element_size)`, the bytes the three steps above
# read and write for `batch_heads` heads, and `flash_attention_bytes(batch_heads, N, d, BLOCK_M,
# element_size)`, the bytes FlashAttention reads and writes, counting `K` and `V` once per block of
# queries (`triton.cdiv(N, BLOCK_M)` blocks) and 4 bytes of log-sum-exp per query.

# %% nbgrader={"grade_id": "attention_bytes", "solution": true}
def naive_attention_bytes(batch_heads, N, d, element_size=2):
    """Bytes read and written by S = QK^T, P = softmax(S), O = PV, for batch_heads heads."""
    ### BEGIN SOLUTION
    scores = N * N  # S and P: each written once and read once
    return batch_heads * element_size * (2 * N * d + scores + 2 * scores + scores + N * d + N * d)
    ### END SOLUTION


def flash_attention_bytes(batch_heads, N, d, BLOCK_M, element_size=2):
    """Bytes read and written by FlashAttention's forward pass: Q read and O written once, K and V
    read once per block of queries, one fp32 log-sum-exp written per query."""
    ### BEGIN SOLUTION
    query_blocks = triton.cdiv(N, BLOCK_M)
    per_head = element_size * (2 * N * d + 2 * N * d * query_blocks) + 4 * N
    return batch_heads * per_head
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_attention_bytes", "locked": true, "points": 1}
got = call_answer(naive_attention_bytes, 1, 2, 1, 2)
if got != (2 * 2 + 4 + 8 + 4 + 2 + 2) * 2:
    raise CheckFailed(f"naive_attention_bytes(1, 2, 1, 2) is {got!r}, expected 48: Q and K read (2 + 2 numbers), "
                      "S written (4), S read and P written (8), P read (4) with V (2), O written (2), 2 bytes each.")
got = call_answer(flash_attention_bytes, 1, 2, 1, 2, 2)
if got != (2 + 2 + 2 + 2) * 2 + 2 * 4:
    raise CheckFailed(f"flash_attention_bytes(1, 2, 1, 2, 2) is {got!r}, expected 24: one block of queries reads "
                      "Q, K and V and writes O (2 numbers each, 2 bytes each), and 2 fp32 log-sum-exps (4 bytes each).")
n, d, h200_bandwidth = 16384, 64, 4.2e12
print(f"One head, d = {d}, fp16, N = {n}:")
print(f"  three steps:    {naive_attention_bytes(1, n, d) / 1e6:9.1f} MB, "
      f"{naive_attention_bytes(1, n, d) / h200_bandwidth * 1e6:7.1f} us at 4.2 TB/s")
for block_m in (64, 128):
    nbytes = flash_attention_bytes(1, n, d, block_m)
    print(f"  flash, BLOCK_M = {block_m:3}: {nbytes / 1e6:6.1f} MB, {nbytes / h200_bandwidth * 1e6:7.1f} us "
          f"({naive_attention_bytes(1, n, d) / nbytes:.0f}x less)")

# %% nbgrader={"grade": true, "grade_id": "test_attention_bytes_hidden", "locked": true, "points": 1}
# Hidden tests check both functions on more sizes when your notebook is graded.
### BEGIN HIDDEN TESTS
for heads, N, d, block_m, size in [(1, 1, 16, 16, 2), (3, 100, 64, 32, 2), (32, 4096, 128, 128, 2), (5, 17, 32, 64, 4),
                                   (2, 129, 64, 128, 1)]:
    want = heads * size * (4 * N * N + 4 * N * d)
    got = call_answer(naive_attention_bytes, heads, N, d, size)
    if got != want:
        raise CheckFailed(f"naive_attention_bytes({heads}, {N}, {d}, {size}) is {got!r}, expected {want}: per head, "
                          "S and P are each written once and read once (4 N^2 numbers), and Q, K, V are read and O "
                          "written once (4 N d numbers).")
    want = heads * (size * (2 * N * d + 2 * N * d * triton.cdiv(N, block_m)) + 4 * N)
    got = call_answer(flash_attention_bytes, heads, N, d, block_m, size)
    if got != want:
        raise CheckFailed(f"flash_attention_bytes({heads}, {N}, {d}, {block_m}, {size}) is {got!r}, expected {want}: "
                          f"per head, Q read and O written once, K and V read once for each of the "
                          f"cdiv(N, BLOCK_M) = {triton.cdiv(N, block_m)} blocks of queries, and 4 bytes of "
                          "log-sum-exp per query.")
print("naive_attention_bytes and flash_attention_bytes passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# Counting is one thing; the next cell measures the three-step attention on growing `N` (4 heads,
# `d = 64`, fp16 on a GPU): its time, and its **peak memory** beyond its inputs, which PyTorch
# reports with `torch.cuda.max_memory_allocated()`. `S` and `P` both live at the peak: the softmax
# reads one while it writes the other. Under the interpreter there is no GPU memory to measure: the cell prints the count of
# the `N x N` matrices instead.

# %%
def peak_memory_mb(fn, *inputs):
    """The GPU memory fn(*inputs) allocates at its peak beyond what is already allocated, in MB; on
    the CPU (no allocator statistics) None."""
    if not ON_GPU:
        return None
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out = fn(*inputs)
    torch.cuda.synchronize()
    del out
    return (torch.cuda.max_memory_allocated() - before) / 2**20


attention_dtype = torch.float16 if torch.float16 in DOT_DTYPES else torch.float32
heads, d = 4, 64
lengths = sized([512, 1024, 2048, 4096, 8192], [32, 64, 128])
naive_ms, naive_mb = [], []
for n in lengths:
    q, k, v = (rand(1, heads, n, d, dtype=attention_dtype) for _ in range(3))
    try:
        naive_mb.append(peak_memory_mb(naive_attention, q, k, v))
        naive_ms.append(bench_ms(lambda: naive_attention(q, k, v)))
    except torch.cuda.OutOfMemoryError:  # under a grader's memory share, long sequences may not fit
        print(f"N = {n}: out of GPU memory")
        lengths = lengths[:len(naive_ms)]
        break
    counted = 2 * heads * n * n * q.element_size() / 2**20  # S and P, in the input's dtype
    measured = f"peak {naive_mb[-1]:8.1f} MB" if ON_GPU else "not measured (interpreter)"
    print(f"N = {n:5}: {naive_ms[-1]:8.3f} ms, {measured}; S and P alone: {counted:8.1f} MB")
    del q, k, v


# %% [markdown]
# Four times the memory for twice the tokens: the `N x N` matrices own the peak, and with them the
# time, which is memory traffic (on an H200, the three steps at `N = 8192` move about 2.2 GB, half
# a millisecond at 4.2 TB/s, for 69 GFLOP that its tensor cores, at about 990 TFLOP/s in fp16, do
# in about 70 microseconds). Section 5 puts your kernel next to these numbers.
#
# ## 2. The online softmax
#
# Lesson 4's softmax loaded a whole row, took its maximum `m`, then summed `exp(x_j - m)`, then
# divided. Subtracting the maximum keeps `exp` from overflowing; it needs the maximum *before* the
# sum. So a row too wide for one block costs three passes: one for the maximum, one for the sum,
# one to write.
#
# The **online softmax** (Milakov and Gimelshein, 2018) gets the maximum and the sum in one pass. Walk
# along the row a block at a time, keeping the maximum so far, `m`, and the sum so far *relative to
# it*, `l = sum over the elements seen of exp(x_j - m)`. When a block brings a larger maximum
# `m_new`, every term already in `l` was computed against the old `m`, and
# `exp(x_j - m) * exp(m - m_new) = exp(x_j - m_new)`: so **rescale** the sum, then add the block:
#
# ```python
# m_new = tl.maximum(m, tl.max(x, axis=1))                                  # per row
# l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
# m = m_new
# ```
#
# After the last block, `m` is the row's maximum and `l` its sum of `exp(x_j - m)`: a second pass
# writes `exp(x_j - m) / l`. Start with `m = -inf` and `l = 0`: the first block's factor
# `exp(-inf - m_new)` is 0, and `l` becomes that block's sum. Masked-off lanes load `-inf`, as in
# lesson 4, and add `exp(-inf) = 0`.
#
# Two passes instead of three is a small gain here. Its real use is in attention, where the
# "row" is a row of scores `S` that is never stored: each block of scores is computed, used and
# thrown away, and a second pass would mean computing it all again.
#
# ## Exercise 2: `online_softmax_kernel` (4 points)
#
# Write the kernel, on lesson 4's layout: program `pid` owns rows `pid * ROWS` to
# `pid * ROWS + ROWS - 1` of an `n_rows x n_cols` matrix whose rows start `row_stride` elements
# apart (input and output alike), and walks along them `BLOCK_N` columns at a time (`n_cols` may be
# larger than `BLOCK_N`, and need not be a multiple of it). Keep `m` and `l` per row, shape `(ROWS,)`,
# in fp32: `m = tl.full((ROWS,), -float("inf"), tl.float32)` and `l = tl.zeros((ROWS,), tl.float32)`.
# Then a second loop writes the softmax, converted to the output's dtype. Rows past `n_rows` load
# `-inf` everywhere and compute NaN, harmlessly: they are never stored.

# %% nbgrader={"grade_id": "online_softmax_kernel", "solution": true}
@triton.jit
def online_softmax_kernel(x_ptr, out_ptr, n_rows, n_cols, row_stride, ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    """Softmax of each row of x, ROWS rows per program, in two passes over the row: the maximum and
    the sum together (online), then the output."""
    ### BEGIN SOLUTION
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    row_starts = rows[:, None].to(tl.int64) * row_stride
    m = tl.full((ROWS,), -float("inf"), tl.float32)
    l = tl.zeros((ROWS,), tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
        x = tl.load(x_ptr + row_starts + cols[None, :], mask=mask, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=1))
        l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
        m = m_new
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
        x = tl.load(x_ptr + row_starts + cols[None, :], mask=mask, other=-float("inf")).to(tl.float32)
        y = tl.exp(x - m[:, None]) / l[:, None]
        tl.store(out_ptr + row_starts + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)
    ### END SOLUTION


# %% nbgrader={"grade_id": "online_softmax_checks", "locked": true}
# The course's helpers for the tests of this lesson (read-only: grading restores them).
def run_online_softmax(n_rows, n_cols, ROWS, BLOCK_N, dtype=torch.float32, scale=1.0, pad=0):
    """Launch online_softmax_kernel on a fresh (n_rows, n_cols) matrix (scaled by `scale`, its rows
    `n_cols + pad` elements apart in memory, the output's too) into a guarded output, and check it
    against torch.softmax: the row's own elements, and nothing written between the rows."""
    x = rand(n_rows, n_cols + pad, dtype=dtype).mul_(scale)[:, :n_cols]  # in place: the guard bands stay
    out = guarded_empty((n_rows, n_cols + pad), dtype=dtype)
    expected = out.clone()  # the padding between the rows must stay as it was
    expected[:, :n_cols] = torch.softmax(x.float(), dim=1).to(dtype)
    untouched = [(x, x.clone())]
    with np.errstate(invalid="ignore"):  # rows past the end compute NaN; they are not stored
        call_answer(lambda: online_softmax_kernel[(triton.cdiv(n_rows, ROWS),)](
            x, out, n_rows, n_cols, x.stride(0), ROWS=ROWS, BLOCK_N=BLOCK_N), name="online_softmax_kernel")
    what = f"online_softmax_kernel on {n_rows} x {n_cols} {str(dtype).removeprefix('torch.')}" + \
        (f" (rows {n_cols + pad} apart)" if pad else "") + f", ROWS={ROWS}, BLOCK_N={BLOCK_N}"
    if n_cols % BLOCK_N:
        hint = (f"{n_cols} columns are not a multiple of BLOCK_N = {BLOCK_N}: do the last block's lanes past "
                "n_cols load -inf (other=-float('inf')), so that they add exp(-inf) = 0 to the sum, and is "
                "the store masked on cols < n_cols?")
    elif scale > 10:
        hint = ("with large values exp overflows: is every exp taken of x - m, and is l rescaled by "
                "exp(m - m_new) when the maximum grows?")
    else:
        hint = ("is l rescaled by exp(m - m_new) before the block's sum is added, and does the second pass "
                "divide exp(x - m) by l?")
    check_output(out, expected, name=what, inputs=untouched, hint=hint)


# %% [markdown]
# The test runs your kernel on a 7 x 100 fp32 matrix, 4 rows per program, 32 columns at a time (the
# last block of each row has 4 real columns), then with values scaled by 100, where a softmax
# without the maximum overflows.

# %% nbgrader={"grade": true, "grade_id": "test_online_softmax_kernel", "locked": true, "points": 1}
code = getattr(getattr(online_softmax_kernel, "fn", None), "__code__", None)  # the Python function inside
if code is not None and "softmax" in code.co_names:
    raise CheckFailed("online_softmax_kernel calls tl.softmax: write the steps yourself (the running maximum, "
                      "the rescaled sum, then exp(x - m) / l).")
run_online_softmax(7, 100, ROWS=4, BLOCK_N=32)
run_online_softmax(7, 100, ROWS=4, BLOCK_N=32, scale=100.0)
print("online_softmax_kernel is right on rows of 100 in blocks of 32, large values included.")

# %% nbgrader={"grade": true, "grade_id": "test_online_softmax_kernel_hidden", "locked": true, "points": 3}
# Hidden tests check online_softmax_kernel on more shapes, blocks, dtypes and layouts when your
# notebook is graded.
### BEGIN HIDDEN TESTS
for n_rows, n_cols, rows, block in [(1, 1, 1, 16), (3, 1, 2, 16), (5, 16, 4, 16), (9, 129, 2, 32), (2, 1000, 1, 64),
                                    (17, 33, 8, 16), (4, 64, 4, 64)]:
    run_online_softmax(n_rows, n_cols, ROWS=rows, BLOCK_N=block)
run_online_softmax(6, 90, ROWS=2, BLOCK_N=16, scale=1000.0)  # the maximum moves by hundreds between blocks
run_online_softmax(6, 90, ROWS=2, BLOCK_N=32, pad=13)
for dtype in FLOAT_DTYPES:
    run_online_softmax(5, 77, ROWS=4, BLOCK_N=32, dtype=dtype, scale=10.0)
# A row whose maximum comes last: every earlier block's sum must be rescaled, by exp(-50) and less.
x = rand(1, 64)
x.copy_(torch.arange(64, device=x.device, dtype=torch.float32).view(1, 64))  # in place: the guard bands stay
out = guarded_empty((1, 64))
call_answer(lambda: online_softmax_kernel[(1,)](x, out, 1, 64, 64, ROWS=1, BLOCK_N=16), name="online_softmax_kernel")
check_output(out, torch.softmax(x, dim=1), name="online_softmax_kernel on the row 0, 1, ..., 63 in blocks of 16",
             hint="each block raises the maximum by 16: is l multiplied by exp(m - m_new) before adding the block?")
print("online_softmax_kernel passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ### Question Q (1 point)
#
# The same trick works on any sum weighted by `exp(x_j - m)`, not only on `l`. In attention, a
# program keeps, for each of its query rows, `acc = sum over the keys seen of exp(s_j - m) * v_j`
# (a vector of `d` numbers) next to `m` and `l`. A new block of keys raises the row's maximum from
# `m` to `m_new`. What must happen to `acc` before the new block's terms are added?
#
# - **a.** Nothing: only `l` depends on the maximum; `acc` is divided by `l` at the end anyway.
# - **b.** Multiply it by `exp(m - m_new)`, the same factor as `l`, so that all its terms are
#   relative to `m_new`; the final `acc / l` is then the softmax-weighted average of the values.
# - **c.** Divide it by `l` now, and again at the end.
# - **d.** Recompute it from the first key on, since its old terms used the old maximum.
#
# Set `answer_rescale` to one letter in the cell below.

# %% nbgrader={"grade_id": "q_rescale", "solution": true}
# Replace the two lines below with one line: answer_rescale = "<your letter>"
### BEGIN SOLUTION
answer_rescale = "b"  # one of "a", "b", "c", "d"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_q_rescale", "locked": true, "points": 1}
check_choice(globals().get("answer_rescale"), "answer_rescale")
print("Your answer is recorded; it is checked when your notebook is graded.")
### BEGIN HIDDEN TESTS
check_choice(answer_rescale, "answer_rescale", expected="b",
             why="acc's old terms were weighted by exp(s_j - m) and the new ones by exp(s_j - m_new): "
                 "multiply acc by exp(m - m_new), as l, and acc / l stays the weighted average.")
### END HIDDEN TESTS

# %% [markdown]
# ## 3. The forward kernel
#
# One program computes `BLOCK_M` rows of `O` for one head: program `(tl.program_id(0),
# tl.program_id(1))` takes the queries `offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)`
# of head `tl.program_id(1)`, which runs over all `B * H` heads. It loads its block of `Q` once,
# `(BLOCK_M, d)`, and keeps it on the chip; then it walks over the keys and values, `BLOCK_N` at a
# time:
#
# ```python
# acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)      # sum of exp(s - m) * v, per query row
# m = tl.full((BLOCK_M,), -float("inf"), tl.float32)   # running maximum of the scores, per row
# l = tl.zeros((BLOCK_M,), tl.float32)                 # running sum of exp(s - m), per row
# for start_n in range(0, N, BLOCK_N):
#     k = ...                                          # (BLOCK_N, HEAD_DIM) block of K, masked
#     v = ...                                          # (BLOCK_N, HEAD_DIM) block of V, masked
#     s = tl.dot(q, tl.trans(k)) * scale               # (BLOCK_M, BLOCK_N) scores, fp32, on the chip only
#     ... mask s, then the online softmax of exercise 2, with acc rescaled as in question Q:
#     acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
# o = acc / l[:, None]
# ```
#
# The details that make it right:
#
# - **Layout.** The wrapper hands the kernel contiguous `(B, H, N, d)` tensors: head `z` starts at
#   element `z * N * HEAD_DIM`, and its row `i` at `+ i * HEAD_DIM`. (Production kernels take
#   strides for every tensor, as lesson 6 did; here the wrapper calls `.contiguous()`. That is free
#   for tensors that already are, but a model's `(B, N, H, d)` projections seen as `(B, H, N, d)`
#   through `.transpose(1, 2)` are not: then it copies `Q`, `K` and `V`, about 100 MB read and
#   written at exercise 5's size, some 25 microseconds on an H200, 7% of the 0.35 ms the kernel
#   takes.) Use `tl.program_id(1).to(tl.int64)` for the head's offset: 32 heads of 16384 x 128
#   numbers already reach 2^26 elements, and a batch 32 times larger would hold 2^31, as many as
#   int32 offsets can count: any more and they overflow.
# - **Two products on the tensor cores.** `tl.dot(q, tl.trans(k))` gives the scores in fp32, and
#   `tl.dot(p.to(v.dtype), v)` adds the weighted values into the fp32 accumulator: `p` (between 0
#   and 1) is rounded to the input's dtype so that the tensor cores can take it, as FlashAttention
#   does.
# - **`tl.trans` moves no data.** `tl.trans(k)` is the same block indexed the other way round,
#   `(HEAD_DIM, BLOCK_N)`, and the compiler chooses how the tensor cores read it. For this kernel
#   Triton 3.6 to 3.9 copy `k` into shared memory as loaded and read it from there transposed (on
#   Hopper through a transposed view, `ttg.memdesc_trans` in the TTGIR; on Ampere through the
#   register layout it loads into): no extra copy, and the same shared memory as loading `K^T`
#   directly with the strides swapped (`k_head + offs_n[None, :] * HEAD_DIM + offs_d[:, None]`, a
#   `(HEAD_DIM, BLOCK_N)` block of the same numbers). A transpose is not always free: a transposed
#   block that feeds element-wise work rather than `tl.dot` may have to move between threads,
#   through shared memory.
# - **Masks on the keys.** When `N` is not a multiple of `BLOCK_N`, the last block has lanes
#   `offs_n >= N`. Load them with `other=0.0`, *and* set their scores to `-inf`
#   (`tl.where(offs_n[None, :] < N, s, -float("inf"))`): a score of 0 would still get the weight
#   `exp(0 - m)` in `l`.
# - **Masks on the queries.** The last block of queries may hang past `N`: load those rows of `Q`
#   with a mask (as 0: their scores are 0, harmless) and do not store them.
# - **Causal attention.** Query `i` sees keys `j <= i`. A block of keys that lies entirely above
#   the diagonal (every key after every query of the block, `start_n > last query`) contributes
#   nothing: **skip it**, do not load it. So a program with queries `start_m .. start_m + BLOCK_M - 1`
#   stops its loop at key `min(N, start_m + BLOCK_M)`: causal attention does about half the work.
#   Inside the blocks that cross the diagonal, set the scores of `offs_n[None, :] > offs_m[:, None]`
#   to `-inf`. Every query sees at least key 0, so no row is left with only `-inf`.
# - **The log-sum-exp.** A backward pass needs `P` again, and rebuilding it from the scores needs
#   each row's maximum and sum. Save one number per row: `lse = m + log(l)`, the log of the row's
#   sum of `exp(s_j)`; then `P[i, j] = exp(S[i, j] - lse[i])`. It goes into a `(B, H, N)` fp32
#   tensor, at `z * N + offs_m`.
#
# **One multiplication fewer** (optional). Lesson 4 said that Triton compiles `tl.exp(x)` to a
# multiplication by `log2(e)` and the GPU's fast power of two, `exp(x) = 2 ** (x * log2(e))`. Here
# every score is multiplied by `scale` already, so the two multiplications can be one: fold
# `log2(e)` into the scale (`qk_scale = scale * 1.4426950408889634`) and use `tl.exp2` everywhere.
# Then `m` and `s` are in units of `log2`, and the saved log-sum-exp must be converted back:
# `lse = (m + tl.log2(l)) * 0.6931471805599453` (that is `ln(2)`).
#
# **Masks only where needed.** Only the last block of keys (or, in causal attention, the blocks that
# cross the diagonal) needs masks; the others are whole, and a loop without masks runs faster. So
# the loop goes into a `@triton.jit` helper, which the kernel calls twice: once over the whole
# blocks with `MASKED=False`, once over the few others with `MASKED=True` (a `tl.constexpr`: each
# call is compiled with or without its masks). Non-causal: whole blocks up to
# `N - N % BLOCK_N`, then the rest. Causal: the keys before `start_m` (the first query of the
# block) are before every query of the block, whole blocks if `BLOCK_M` is a multiple of
# `BLOCK_N`; then the keys from `start_m` to `min(N, start_m + BLOCK_M)`, masked.
#
# ## Exercise 3: `attend_to_keys` and `attention_fwd_kernel` (8 points)
#
# Write the helper `attend_to_keys(acc, l, m, q, k_head, v_head, offs_m, start, stop, N, qk_scale,
# ...)`: the loop over the keys `start .. stop - 1` of one head (`k_head` and `v_head` point at the
# head's first key and value), which returns `(acc, l, m)` updated; `qk_scale` is what the scores are
# multiplied by (`scale`, or `scale * log2(e)` with `exp2`). Then the kernel, which loads its block
# of queries, calls the helper as above, and stores `o` and the log-sum-exp. (A single loop with
# masks everywhere is right too, and much slower: every block then pays for the masks' comparisons
# and selects, not only the last block or those on the diagonal. On an H200 one such answer reached
# 0.67x SDPA's speed, against the reference's 1.3x: section 6. The tests check results, not
# structure.)
#
# `scale` is `1 / sqrt(d)`; `HEAD_DIM` is `d`, a power of two of at least 16
# (`tl.dot` needs the dimension it sums over to be 16 or more: `HEAD_DIM` in `q k^T`, `BLOCK_N` in
# `p v`; older Triton versions ask it of all three); `BLOCK_M` and `BLOCK_N` are powers of two of at
# least 16; `BLOCK_M` is a multiple of `BLOCK_N` (that is what the reference solution needs; the
# tests keep to it). The grid is `(triton.cdiv(N, BLOCK_M), B * H)`. Write `o` in `o_ptr`'s dtype
# and the log-sum-exp (natural logarithm, of the scaled scores) in fp32.

# %% nbgrader={"grade_id": "attention_fwd_kernel", "solution": true}
@triton.jit
def attend_to_keys(acc, l, m, q, k_head, v_head, offs_m, start, stop, N, qk_scale, HEAD_DIM: tl.constexpr,
                   BLOCK_N: tl.constexpr, MASKED: tl.constexpr, CAUSAL: tl.constexpr):
    """(acc, l, m) after the online softmax has taken in the keys start .. stop - 1 of one head, BLOCK_N
    at a time, with scores q k^T * qk_scale; with MASKED, the keys past N (and, with CAUSAL, those after
    each query) are masked out, and without it none is."""
    ### BEGIN SOLUTION
    offs_d = tl.arange(0, HEAD_DIM)
    for start_n in range(start, stop, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        rows = offs_n[:, None] * HEAD_DIM + offs_d[None, :]
        if MASKED:
            k = tl.load(k_head + rows, mask=offs_n[:, None] < N, other=0.0)
            v = tl.load(v_head + rows, mask=offs_n[:, None] < N, other=0.0)
        else:
            k = tl.load(k_head + rows)
            v = tl.load(v_head + rows)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        if MASKED:
            seen = offs_n[None, :] < N
            if CAUSAL:
                seen = seen & (offs_n[None, :] <= offs_m[:, None])
            s = tl.where(seen, s, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp2(m - m_new)
        p = tl.exp2(s - m_new[:, None])
        l = l * alpha + tl.sum(p, axis=1)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m = m_new
    return acc, l, m
    ### END SOLUTION


@triton.jit
def attention_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, N, scale, HEAD_DIM: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    """O = softmax(Q K^T * scale) V for BLOCK_M queries of one head (program (query block, head)),
    and each query row's log-sum-exp; Q, K, V, O contiguous (B, H, N, HEAD_DIM), lse (B, H, N) fp32."""
    ### BEGIN SOLUTION
    start_m = tl.program_id(0) * BLOCK_M
    head = tl.program_id(1).to(tl.int64)
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q_rows = q_ptr + head * N * HEAD_DIM + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
    q = tl.load(q_rows, mask=offs_m[:, None] < N, other=0.0)
    k_head, v_head = k_ptr + head * N * HEAD_DIM, v_ptr + head * N * HEAD_DIM
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    m = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l = tl.zeros((BLOCK_M,), tl.float32)
    qk_scale = scale * 1.4426950408889634  # log2(e): exp(x) = exp2(x * log2(e))
    if CAUSAL:
        # Keys before start_m are before every query of the block: whole blocks, no mask. The keys
        # start_m .. start_m + BLOCK_M - 1 cross the diagonal; the keys after them are all skipped.
        acc, l, m = attend_to_keys(acc, l, m, q, k_head, v_head, offs_m, 0, start_m, N, qk_scale,
                                   HEAD_DIM, BLOCK_N, MASKED=False, CAUSAL=True)
        acc, l, m = attend_to_keys(acc, l, m, q, k_head, v_head, offs_m, start_m, tl.minimum(start_m + BLOCK_M, N),
                                   N, qk_scale, HEAD_DIM, BLOCK_N, MASKED=True, CAUSAL=True)
    else:
        whole_blocks = N - N % BLOCK_N
        acc, l, m = attend_to_keys(acc, l, m, q, k_head, v_head, offs_m, 0, whole_blocks, N, qk_scale,
                                   HEAD_DIM, BLOCK_N, MASKED=False, CAUSAL=False)
        acc, l, m = attend_to_keys(acc, l, m, q, k_head, v_head, offs_m, whole_blocks, N, N, qk_scale,
                                   HEAD_DIM, BLOCK_N, MASKED=True, CAUSAL=False)
    o = acc / l[:, None]
    o_rows = o_ptr + head * N * HEAD_DIM + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
    tl.store(o_rows, o.to(o_ptr.dtype.element_ty), mask=offs_m[:, None] < N)
    tl.store(lse_ptr + head * N + offs_m, (m + tl.log2(l)) * 0.6931471805599453, mask=offs_m < N)
    ### END SOLUTION


# %% nbgrader={"grade_id": "attention_checks", "locked": true}
# The course's helpers for the tests of this lesson (read-only: grading restores them).
def reference_attention(q, k, v, causal=False):
    """(o, lse) by torch in fp32 from q, k, v of shape (B, H, N, d): o in q's dtype, lse (B, H, N) in
    fp32. A few heads at a time, so that the N x N scores never take more than 256 MB."""
    B, H, N, d = q.shape
    heads = [t.reshape(B * H, N, d).float() for t in (q, k, v)]
    o = torch.empty(B * H, N, d, dtype=torch.float32, device=q.device)
    lse = torch.empty(B * H, N, dtype=torch.float32, device=q.device)
    step = max(1, 2**26 // max(1, N * N))
    for first in range(0, B * H, step):
        chunk = slice(first, first + step)
        scores = heads[0][chunk] @ heads[1][chunk].transpose(1, 2) * d ** -0.5
        if causal:
            above = torch.ones(N, N, dtype=torch.bool, device=q.device).triu(1)
            scores.masked_fill_(above, -float("inf"))
        lse[chunk] = torch.logsumexp(scores, dim=-1)
        o[chunk] = torch.softmax(scores, dim=-1) @ heads[2][chunk]
    return o.view(B, H, N, d).to(q.dtype), lse.view(B, H, N)


def attention_tolerance(dtype):
    """(atol, rtol) for o. fp16 and bf16 inputs: the products are exact and summed in fp32; what
    remains is p rounded to the input's dtype before P V, and o rounded at the store: check_output's
    default for the dtype (1e-2 for fp16, 5e-2 for bf16) on entries of size about 1. fp32 inputs: on
    a GPU tl.dot truncates them to TF32 (about 1e-3 relative in each score and weight): 1e-2."""
    return (1e-2, 1e-2) if dtype == torch.float32 else (None, None)


def lse_tolerance():
    """The log-sum-exp is fp32 arithmetic on fp32 scores: 1e-2 allows TF32's truncation of fp32 q and
    k on a GPU (about 1e-3 in a score) and is far below the error of a wrong formula (the maximum left
    out is off by the maximum itself, a few units; a log2 left unconverted, by a third of the lse).
    A function, not a number: the course keeps its definitions, whatever a notebook binds to the name."""
    return 1e-2


def describe_attention(B, H, N, d, dtype, causal):
    return f"(B, H, N, d) = ({B}, {H}, {N}, {d}), {str(dtype).removeprefix('torch.')}, " + \
        ("causal" if causal else "not causal")


def check_attention(o, lse, q, k, v, causal, what, untouched=(), block_n=None):
    """Compare o and lse with reference_attention, and name the likely mistake."""
    N = q.shape[2]
    expected_o, expected_lse = reference_attention(q, k, v, causal)
    if causal and N > 1:
        hint = ("causal: query i sees keys j <= i only. Are the scores of offs_n > offs_m set to -inf in the "
                "blocks that cross the diagonal, and does the loop stop at min(N, start_m + BLOCK_M)?")
    elif N % (block_n or 16):  # without block_n (the wrapper's own blocks): no block of 16 or more divides N
        blocks = f"BLOCK_N = {block_n}" if block_n else "your BLOCK_N (16 or more)"
        hint = (f"N = {N} is not a multiple of {blocks}: are the last block's keys offs_n >= N loaded with a "
                "mask (other=0.0) and their scores set to -inf, so that they add nothing to l?")
    else:
        hint = ("is acc multiplied by alpha = exp(m - m_new) before the block's p @ v is added, and l "
                "likewise, and is o = acc / l at the end?")
    if not q.is_contiguous():
        hint += (f" And q, k and v are views of a (B, N, H, d) tensor (strides {q.stride()}): are they made "
                 "contiguous before the launch of a kernel that reads contiguous (B, H, N, d) tensors?")
    atol, rtol = attention_tolerance(q.dtype)
    check_output(o, expected_o, name=f"{what}: o", inputs=untouched, atol=atol, rtol=rtol, hint=hint)
    if not isinstance(lse, torch.Tensor) or lse.shape != expected_lse.shape or lse.dtype != torch.float32:
        shape = tuple(lse.shape) if isinstance(lse, torch.Tensor) else type(lse).__name__
        raise CheckFailed(f"{what}: the log-sum-exp is {shape}, expected a (B, H, N) = {tuple(expected_lse.shape)} "
                          "fp32 tensor, one number per query row.")
    check_output(lse, expected_lse, name=f"{what}: lse", atol=lse_tolerance(), rtol=lse_tolerance(),
                 hint="lse = m + log(l) in natural logarithms of the scaled scores (with exp2, "
                      "(m + log2(l)) * ln(2)): is the maximum m added back?")


def attention_inputs(B, H, N, d, dtype=torch.float32):
    """Fresh q, k, v of shape (B, H, N, d), each inside its own guard bands."""
    return [rand(B, H, N, d, dtype=dtype) for _ in range(3)]


def run_attention_kernel(B, H, N, d, dtype=torch.float32, causal=False, BLOCK_M=32, BLOCK_N=16):
    """Launch attention_fwd_kernel on fresh inputs into guarded outputs, and check o and lse."""
    q, k, v = attention_inputs(B, H, N, d, dtype)
    untouched = [(t, t.clone()) for t in (q, k, v)]
    o, lse = guarded_empty((B, H, N, d), dtype=dtype), guarded_empty((B, H, N))
    grid = (triton.cdiv(N, BLOCK_M), B * H)
    call_answer(lambda: attention_fwd_kernel[grid](q, k, v, o, lse, N, d ** -0.5, HEAD_DIM=d, BLOCK_M=BLOCK_M,
                                                   BLOCK_N=BLOCK_N, CAUSAL=causal), name="attention_fwd_kernel")
    what = f"attention_fwd_kernel on {describe_attention(B, H, N, d, dtype, causal)}, BLOCK_M={BLOCK_M}, " \
           f"BLOCK_N={BLOCK_N}"
    check_attention(o, lse, q, k, v, causal, what, untouched, block_n=BLOCK_N)


# %% [markdown]
# The test launches your kernel on 2 heads of 50 queries with `d = 64`, 32 queries and 16 keys per
# block (50 is a multiple of neither), causal and not, then with `d = 128` and in each dtype
# `tl.dot` takes here.

# %% nbgrader={"grade": true, "grade_id": "test_attention_fwd_kernel", "locked": true, "points": 3}
for causal in (False, True):
    run_attention_kernel(1, 2, 50, 64, causal=causal)
run_attention_kernel(1, 1, 40, 128, causal=False, BLOCK_M=16, BLOCK_N=16)
for dtype in DOT_DTYPES:
    run_attention_kernel(2, 1, 48, 64, dtype=dtype, causal=True)
print("attention_fwd_kernel is right on lengths that are not multiples of the blocks, causal and not, "
      "with d = 64 and 128, in", ", ".join(str(d).removeprefix("torch.") for d in DOT_DTYPES))

# %% nbgrader={"grade": true, "grade_id": "test_attention_fwd_kernel_hidden", "locked": true, "points": 5}
# Hidden tests launch attention_fwd_kernel on more batches, heads, lengths, head dims, blocks and
# dtypes when your notebook is graded.
### BEGIN HIDDEN TESTS
for B, H, N in [(1, 1, 1), (1, 2, 2), (2, 1, 17), (1, 3, 33), (1, 1, 64), (2, 2, 100)]:
    for causal in (False, True):
        run_attention_kernel(B, H, N, 64, causal=causal)
for BLOCK_M, BLOCK_N in [(16, 16), (64, 16), (32, 32)]:
    for causal in (False, True):
        run_attention_kernel(1, 2, 70, 64, causal=causal, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
for dtype in DOT_DTYPES:
    for causal in (False, True):
        run_attention_kernel(1, 2, 37, 128, dtype=dtype, causal=causal)
        run_attention_kernel(2, 1, 65, 64, dtype=dtype, causal=causal, BLOCK_M=64, BLOCK_N=32)
run_attention_kernel(1, 1, 20, 16, causal=True, BLOCK_M=16, BLOCK_N=16)
# Scores of 100 and more: exp without the running maximum overflows, and a maximum that is not
# carried from block to block gives the wrong weights. In fp16 or bf16 where tl.dot takes them, so
# that the scores are exact (TF32 would truncate fp32 q and k and move scores of 100 by about 0.1,
# and so the weights).
q, k, v = attention_inputs(1, 1, 48, 64, DOT_DTYPES[-1])
q.mul_(20.0)
o, lse = guarded_empty((1, 1, 48, 64), dtype=q.dtype), guarded_empty((1, 1, 48))
call_answer(lambda: attention_fwd_kernel[(3, 1)](q, k, v, o, lse, 48, 0.125, HEAD_DIM=64, BLOCK_M=16, BLOCK_N=16,
                                                 CAUSAL=False), name="attention_fwd_kernel")
check_attention(o, lse, q, k, v, False, f"attention_fwd_kernel on {str(q.dtype).removeprefix('torch.')} queries "
                "scaled by 20 (scores in the hundreds)")
print("attention_fwd_kernel passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## 4. The function users call
#
# ## Exercise 4: `attention` (4 points)
#
# Now the function users call, `attention(q, k, v, causal=False)`, for `(B, H, N, d)` tensors; it
# returns `(o, lse)`: `o` like `q` (contiguous), `lse` of shape `(B, H, N)` in fp32.
#
# - check the inputs, with messages that say what is wrong: `q`, `k` and `v` 4-D, of the same
#   shape, dtype and device; `d` a power of two from 16 to 128 (a kernel for another `d` would pad
#   it, which we leave out);
# - make them contiguous (`.contiguous()` returns the tensor itself when it already is);
# - allocate `o` and `lse` with `torch.empty`, and launch `attention_fwd_kernel` on the grid
#   `(triton.cdiv(N, BLOCK_M), B * H)` with `scale = d ** -0.5` and the block sizes it was given.
#
# When the caller gives no block sizes (`BLOCK_M=None`, `BLOCK_N=None`), choose them. In fp16 and
# bf16, 128 queries by 64 keys per step are good on a GPU of compute capability 8.0 or newer, with
# 4 warps for `d = 64` and 8 for `d = 128` (pass them as `num_warps=`), and `num_stages=3` for rows
# of `K` and `V` of 128 bytes (`d = 64` in fp16), fewer for longer rows (`num_stages=` too: the
# compiler loads the next blocks of keys and values while the tensor cores work on these, and each
# stage holds a block of `K` and one of `V` in shared memory, of which a GPU has 100 to 228 KB per
# multiprocessor). fp32 numbers take twice the bytes, and so do the same blocks: at `d = 64` they
# need 80 KB of shared memory, more than the 64 KB a T4 gives a program, and the launch fails with
# "out of resource: shared memory". So fp32 gets 64 queries per block, and 16 keys where rows of
# `K` and `V` are longer than 256 bytes (`d = 128`: 64 x 32 would fill a T4's 64 KB exactly, with
# nothing to spare). The interpreter gets small blocks (32 x 16): it runs one program at a time,
# and each costs Python.

# %% nbgrader={"grade_id": "attention", "solution": true}
def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal=False, BLOCK_M=None, BLOCK_N=None):
    """(o, lse): softmax(q k^T / sqrt(d)) v for (B, H, N, d) tensors, computed by attention_fwd_kernel,
    and the (B, H, N) fp32 log-sum-exp of each query row's scaled scores. Block sizes left at None are
    chosen for the dtype and d."""
    ### BEGIN SOLUTION
    if q.dim() != 4 or q.shape != k.shape or q.shape != v.shape:
        raise ValueError(f"q, k and v must be 4-D tensors (B, H, N, d) of one shape, got {tuple(q.shape)}, "
                         f"{tuple(k.shape)} and {tuple(v.shape)}")
    if not (q.dtype == k.dtype == v.dtype) or not (q.device == k.device == v.device):
        raise ValueError(f"q, k and v must share a dtype and a device, got {q.dtype}, {k.dtype}, {v.dtype} on "
                         f"{q.device}, {k.device}, {v.device}")
    B, H, N, d = q.shape
    if d not in (16, 32, 64, 128):
        raise ValueError(f"head dim {d} is not supported: this kernel takes 16, 32, 64 or 128 (a power of two "
                         "of at least 16, as tl.arange and tl.dot need)")
    row_bytes = d * q.element_size()  # each pipeline stage holds BLOCK_N such rows of K and of V
    if BLOCK_M is None:  # fp32 takes twice fp16's bytes: half the queries, to fit a T4's 64 KB
        BLOCK_M = sized(128 if q.element_size() <= 2 else 64, 32)
    if BLOCK_N is None:
        BLOCK_N = sized(64 if row_bytes <= 256 else 16, 16)
    if BLOCK_M % BLOCK_N:
        raise ValueError(f"BLOCK_M = {BLOCK_M} must be a multiple of BLOCK_N = {BLOCK_N}")
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    o = torch.empty((B, H, N, d), dtype=q.dtype, device=q.device)
    lse = torch.empty((B, H, N), dtype=torch.float32, device=q.device)
    grid = (triton.cdiv(N, BLOCK_M), B * H)
    attention_fwd_kernel[grid](q, k, v, o, lse, N, d ** -0.5, HEAD_DIM=d, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                               CAUSAL=causal, num_warps=4 if d <= 64 else 8,
                               num_stages=3 if row_bytes <= 128 else 2 if row_bytes <= 256 else 1)
    return o, lse
    ### END SOLUTION


# %% nbgrader={"grade_id": "attention_wrapper_checks", "locked": true}
# The course's helpers for the tests of this lesson (read-only: grading restores them).
def run_attention(B, H, N, d, dtype=torch.float32, causal=False, layout="contiguous", **blocks):
    """Call attention on fresh inputs (laid out as asked: "contiguous", or "tokens first", the
    (B, N, H, d) layout of a model's projections seen through .transpose(1, 2)) with guarded
    allocations and counted launches; check that kernels computed o and lse, that they are right,
    that o is contiguous and that the inputs are unchanged."""
    if layout == "contiguous":
        q, k, v = attention_inputs(B, H, N, d, dtype)
    else:
        q, k, v = (t.transpose(1, 2) for t in attention_inputs(B, N, H, d, dtype))
    what = f"attention on {describe_attention(B, H, N, d, dtype, causal)}" + \
        (f", {layout}" if layout != "contiguous" else "") + "".join(f", {k}={v}" for k, v in blocks.items())
    untouched = [(t, t.clone()) for t in (q, k, v)]
    with guarded_allocations(), count_launches() as launches:
        result = call_answer(attention, q, k, v, causal=causal, **blocks)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise CheckFailed(f"{what} returned {type(result).__name__}, expected a pair (o, lse).")
    o, lse = result
    expect_launched(launches, what, o)
    expect_launched(launches, f"{what} (its log-sum-exp)", lse)
    check_attention(o, lse, q, k, v, causal, what, untouched, block_n=blocks.get("BLOCK_N"))
    if not o.is_contiguous():
        raise CheckFailed(f"{what} returned o with strides {o.stride()}: allocate it with "
                          "torch.empty((B, H, N, d), dtype=q.dtype, device=q.device), which is contiguous.")


def expect_refusal(what, *args):
    """attention(*args) must raise an error that says what is wrong, not compute."""
    try:
        call_answer(attention, *args)
    except (AssertionError, ValueError, TypeError, RuntimeError) as error:
        if isinstance(error, CheckFailed):
            raise
    else:
        raise CheckFailed(f"attention on {what} returned a result: check the inputs and raise "
                          "(ValueError, or assert) with a message that says what is wrong.")


# %% nbgrader={"grade": true, "grade_id": "test_attention", "locked": true, "points": 2}
run_attention(1, 2, 50, 64)
run_attention(2, 3, 33, 64, causal=True, layout="tokens first")
for dtype in DOT_DTYPES:
    run_attention(1, 2, 40, 128, dtype=dtype, causal=True)
expect_refusal("q of (1, 2, 8, 64) and k of (1, 2, 8, 32)", rand(1, 2, 8, 64), rand(1, 2, 8, 32), rand(1, 2, 8, 64))
print("attention is right on contiguous and transposed inputs, causal and not, and refuses mismatched shapes.")

# %% nbgrader={"grade": true, "grade_id": "test_attention_hidden", "locked": true, "points": 2}
# Hidden tests check attention on more shapes, layouts, dtypes and blocks, and more wrong inputs,
# when your notebook is graded.
### BEGIN HIDDEN TESTS
for B, H, N, causal in [(1, 1, 1, False), (1, 1, 1, True), (2, 3, 19, False), (1, 2, 64, True), (3, 1, 100, False)]:
    run_attention(B, H, N, 64, causal=causal)
for dtype in DOT_DTYPES:
    run_attention(2, 2, 45, 64, dtype=dtype, layout="tokens first")
    run_attention(1, 1, 70, 128, dtype=dtype, causal=True)
run_attention(1, 2, 50, 32, BLOCK_M=16, BLOCK_N=16)
run_attention(1, 2, 90, 64, causal=True, BLOCK_M=64, BLOCK_N=32)
expect_refusal("q of 3 dimensions, (2, 8, 64)", rand(2, 8, 64), rand(2, 8, 64), rand(2, 8, 64))
expect_refusal("v of (1, 1, 9, 64) with q and k of (1, 1, 8, 64)", rand(1, 1, 8, 64), rand(1, 1, 8, 64),
               rand(1, 1, 9, 64))
expect_refusal("fp16 q with fp32 k and v", rand(1, 1, 8, 64, dtype=torch.float16), rand(1, 1, 8, 64),
               rand(1, 1, 8, 64))
q, k, v = attention_inputs(1, 1, 20, 80)
try:  # a head dim that is not a power of two: refused, or (a kernel that pads it) computed right
    result = call_answer(attention, q, k, v)
except (AssertionError, ValueError, TypeError, RuntimeError) as error:
    if isinstance(error, CheckFailed):
        raise CheckFailed(f"attention on head dim 80: {error} Refuse head dims your kernel cannot take "
                          "(tl.arange needs a power of two) with a message that says so.") from None
else:
    check_attention(*result, q, k, v, False, "attention on (1, 1, 20, 80)")
print("attention passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## 5. Memory and time, measured
#
# Here is your kernel next to the three-step attention of section 1 and PyTorch's
# `F.scaled_dot_product_attention` (SDPA), on the same inputs: peak memory beyond the inputs, and
# time. SDPA picks its backend itself: on an H200 with torch 2.11 it ran here at about 460 TFLOP/s,
# as fast as its cuDNN backend measured alone (about 450) and faster than the FlashAttention-2
# backend (about 300) that exercise 5 compares you with. Under the interpreter it runs PyTorch's C++ on the CPU, while your kernel runs in Python, one
# program at a time: only the memory column means something there, and it is counted, not measured.

# %%
x = rand(1, 1, 24, 64, dtype=attention_dtype)
with guarded_allocations():  # first make sure that attention is right: a stub or a bug stops here
    check_attention(*call_answer(attention, x, x, x), x, x, x, False, "attention on (1, 1, 24, 64)")
yours_ms, yours_mb, sdpa_ms, sdpa_mb = [], [], [], []
for n, naive_time in zip(lengths, naive_ms):
    q, k, v = (rand(1, heads, n, d, dtype=attention_dtype) for _ in range(3))
    yours_mb.append(peak_memory_mb(attention, q, k, v))
    yours_ms.append(bench_ms(lambda: attention(q, k, v)))
    sdpa_mb.append(peak_memory_mb(F.scaled_dot_product_attention, q, k, v))
    sdpa_ms.append(bench_ms(lambda: F.scaled_dot_product_attention(q, k, v)))
    print(f"N = {n:5}: three steps {naive_time:8.3f} ms, yours {yours_ms[-1]:8.3f} ms, SDPA {sdpa_ms[-1]:8.3f} ms")
    del q, k, v
if ON_GPU:
    memory = {"three steps": naive_mb, "yours": yours_mb, "SDPA": sdpa_mb}
else:  # counted: the three steps hold S and P; yours holds o and lse
    memory = {"three steps (counted)": [heads * n * n * 2 * x.element_size() / 2**20 for n in lengths],
              "yours (counted)": [heads * n * (d * x.element_size() + 4) / 2**20 for n in lengths]}
fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4))
for label, values in memory.items():
    left.plot(lengths, values, marker="o", label=label)
for label, values in {"three steps": naive_ms, "yours": yours_ms, "SDPA": sdpa_ms}.items():
    right.plot(lengths, values, marker="o", label=label)
for ax, what in ((left, "peak memory beyond the inputs (MB)"), (right, "time (ms)")):
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("N (sequence length)")
    ax.set_ylabel(what)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
fig.suptitle(f"attention, {heads} heads, d = {d}, {str(attention_dtype).removeprefix('torch.')}"
             + ("" if ON_GPU else " (interpreter: memory counted, times not GPU numbers)"))
plt.show()
for i, n in enumerate(lengths):
    print(f"N = {n:5}: " + ", ".join(f"{label} {values[i]:9.2f} MB" for label, values in memory.items()))

# %% [markdown] nbgrader={"grade": true, "grade_id": "written_memory", "points": 3, "solution": true}
# **Written answer W1 (3 points).** From your plot and the numbers printed above: how does the peak
# memory of the three-step attention grow with `N`, and how does your kernel's? Give two of your
# measured (or, under the interpreter, counted) numbers for each. Explain why FlashAttention's
# memory is `O(N)` and why it moves far fewer bytes to and from HBM (use your `naive_attention_bytes`
# and `flash_attention_bytes` at `N = 16384`), even though it reads `K` and `V` many times and does
# the same `4 N^2 d` operations per head.
#
# ### BEGIN SOLUTION
# (Figures counted for 4 heads, d = 64, fp16: measured ones on a GPU come out close to them, plus
# what the allocator rounds up and, for the three steps, a temporary or two.) The three-step
# attention's peak memory grows like N^2: about 17 MB at N = 1024 and about 1 GB at N = 8192, 64
# times more for 8 times the tokens (S and P in fp16, 4 bytes per score: 4 heads x 8192^2 x 4 bytes
# = 1.07 GB).
# My kernel's grows like N: o and the lse, 0.5 MB at N = 1024 and 4 MB at N = 8192. It never writes
# a score: each program holds its block of queries, one block of scores (BLOCK_M x BLOCK_N, in
# registers) and its accumulator on the chip, and streams the keys and values past them, so what it
# allocates is the output, N x d numbers per head, plus one fp32 number per row. The online softmax
# is what makes this possible: the maximum and the sum of a row are known only after its last key,
# but rescaling acc and l by exp(m - m_new) lets the program use each block of scores once and throw
# it away. Traffic: at N = 16384, d = 64, one head, the three steps move about 2.2 GB (4 N^2 numbers
# of S and P against 4 N d of Q, K, V, O), FlashAttention with BLOCK_M = 128 about 0.54 GB, even
# counting K and V read once per block of queries (128 times), and in fact most of those re-reads hit
# the L2 cache, so HBM sees little more than Q, K, V and O once (8 MB). The arithmetic is the same
# 4 N^2 d operations; it was the bytes that made the three steps slow, and the kernel's time is now
# set by the tensor cores instead.
# ### END SOLUTION

# %% [markdown]
# ## 6. Against PyTorch's FlashAttention
#
# ## Exercise 5: `attention` against PyTorch's FlashAttention (3 points)
#
# No new code: on a GPU this test times your `attention` and SDPA's FlashAttention backend
# (`torch.nn.attention.sdpa_kernel(SDPBackend.FLASH_ATTENTION)`) on 4 sequences of 8 heads,
# `N = 4096`, `d = 64`, fp16, not causal, one after the other in the same notebook, and expects
# yours to reach at least **0.5 times its TFLOP/s** (the forward pass does `4 N^2 d` operations per
# head). A blocked kernel with 128 x 64 blocks clears it; one with tiny blocks, without `tl.dot`,
# or one that writes the scores to memory does not. (On an H200, against SDPA's 296 TFLOP/s: the
# reference solution 1.3 times, a single loop with masks everywhere 0.67, the three steps 0.20, tiny
# 16 x 16 blocks 0.16; `benchmarks/attention_calibration.py` measures them.) That backend is
# FlashAttention-2, a kernel of the Ampere generation (A100): on Hopper, beating it is not beating
# the best. The bar there is cuDNN's attention (SDPA's cuDNN backend, about 450 TFLOP/s in
# section 5; the reference solution reached 0.65x to 0.88x of it over the shapes of
# `docs/benchmarks.md`) or FlashAttention-3. Under the interpreter, and on GPUs below compute
# capability 8.0 (where Triton has no tensor-core path and this notebook gives `tl.dot` no fp16),
# the test prints the numbers and passes.

# %% nbgrader={"grade": true, "grade_id": "test_attention_performance", "locked": true, "points": 3}
from torch.nn.attention import SDPBackend, sdpa_kernel

TARGET = 0.5  # of SDPA's FlashAttention backend, in TFLOP/s, at N = 4096, d = 64, fp16, 4 x 8 heads
graded = ON_GPU and torch.float16 in DOT_DTYPES
dtype = torch.float16 if torch.float16 in DOT_DTYPES else torch.float32
B, H, N, d = (4, 8, 4096, 64) if graded else (1, 2, sized(1024, 64), 64)


def sdpa_flash(q, k, v):
    """SDPA's FlashAttention backend where the test is graded; elsewhere (old GPUs, the CPU: no flash
    backend) SDPA chooses its own."""
    if not graded:
        return F.scaled_dot_product_attention(q, k, v)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        return F.scaled_dot_product_attention(q, k, v)


def attention_tflops(ms):
    return 4 * B * H * N * N * d / (ms * 1e-3) / 1e12


x = rand(1, 2, 100, 64, dtype=dtype)  # a short sequence first: a missing mask is caught here, in the guard bands
with guarded_allocations():
    check_attention(*call_answer(attention, x, x, x), x, x, x, False, "attention on (1, 2, 100, 64)")
q, k, v = attention_inputs(B, H, N, d, dtype)
with exclusive_gpu():  # under the grader, no other notebook runs on the GPU meanwhile
    atol, rtol = attention_tolerance(dtype)
    ours, theirs = bench_against(lambda q, k, v: call_answer(attention, q, k, v)[0], sdpa_flash, q, k, v,
                                 expect=lambda q, k, v: reference_attention(q, k, v)[0], atol=atol, rtol=rtol)
with count_launches() as launches:  # compiled already: only the answer's own launches are counted
    o, lse = call_answer(attention, q, k, v)
expect_launched(launches, "attention", o)
expect_launched(launches, "attention (its log-sum-exp)", lse)
del o, lse
verdict = (f"attention on {describe_attention(B, H, N, d, dtype, False)}: {ours:.3f} ms "
           f"({attention_tflops(ours):.3g} TFLOP/s), SDPA {theirs:.3f} ms ({attention_tflops(theirs):.3g} TFLOP/s): "
           f"{theirs / ours:.2f}x SDPA's; the target is {TARGET}x.")
check_speed_against(theirs, ours, TARGET, verdict,
                    f"attention at N = 4096, d = 64, fp16 for {TARGET}x the\nTFLOP/s of SDPA's FlashAttention backend",
                    "Does attention use blocks of 128 queries and 64 keys (num_warps=4 for d = 64, num_stages=3), "
                    "does the kernel compute both products with tl.dot on fp16 inputs, and does nothing N x N "
                    "reach memory?", graded)
del q, k, v


# %% [markdown]
# ## 7. Optional challenge: the backward pass (ungraded)
#
# Training needs the gradients `dQ`, `dK`, `dV` of a loss, given `dO`. FlashAttention's backward
# pass does not store `P` either: it **recomputes** it, block by block, from `Q`, `K` and the
# log-sum-exp your kernel saved, `P = exp(S - lse)`. With `D_i = sum_j dO_ij * O_ij` (one number per
# row), the gradients are
#
# $$dV = P^T dO, \qquad dP = dO\, V^T, \qquad dS = P \circ (dP - D), \qquad
# dQ = dS\, K \cdot \text{scale}, \qquad dK = dS^T Q \cdot \text{scale}.$$
#
# No `N x N` matrix is needed: `P` is rebuilt a block at a time, and besides its output `O` (which
# the backward pass reads for `D`) the forward pass must save only `lse`. `rebuilt_probabilities`
# rebuilds one block, `exp(Q K^T * scale - lse)`, zero where masked, and two kernels use it.
# (Triton's tutorial *Fused Attention* splits the work differently: a small kernel first computes
# `D` for every row, then one kernel computes, in each program, `dK` and `dV` for a block of keys
# and `dQ` for a block of queries.)
#
# - `attention_bwd_dkdv_kernel`: one program per (block of `BLOCK_N` keys, head). It keeps its
#   blocks of `K` and `V` and the accumulators `dK`, `dV` on the chip, and loops over the blocks of
#   queries that see its keys (in causal attention, from the block of its first key on): load `Q`,
#   `dO`, `O` and `lse` of the block, rebuild `P`, `dV += P^T dO`, `dP = dO V^T`,
#   `D = rowsum(dO * O)`, `dS = P * (dP - D)`, `dK += dS^T Q`; store `dK * scale` and `dV`.
# - `attention_bwd_dq_kernel`: one program per (block of `BLOCK_M` queries, head), looping over the
#   keys like the forward pass (causal: up to the diagonal): `dQ += dS K`; store `dQ * scale`.
#
# `attention_backward(q, k, v, o, lse, do, causal)` launches both and returns `(dq, dk, dv)`, and the
# `torch.autograd.Function` in the cell after it (given) makes your kernels a layer that trains:
# `FlashAttention.apply(q, k, v, causal)`. The next cell compares the gradients with
# `torch.autograd` through the three-step attention. Neither is graded. A program of the backward
# pass keeps more on the chip than one of the forward pass (the dK/dV kernel holds `K`, `V`, `dK`
# and `dV`, and blocks of `Q`, `dO` and `O`), so it takes blocks of 64 queries by 32 keys, in one
# pipeline stage: in fp32 that is 56 KB on a T4 (64 KB of shared memory per program) and 80 KB on
# an A10 or L4 (99 KB), where 64 by 64 in two stages would need 80 and 112.

# %% nbgrader={"grade_id": "attention_backward", "solution": true}
@triton.jit
def rebuilt_probabilities(q, k, lse, offs_m, offs_n, N, scale, CAUSAL: tl.constexpr):
    """The block P[offs_m, offs_n] = exp(q k^T * scale - lse) of the forward pass's softmax, rebuilt
    from the saved log-sum-exp: zero past N and, when CAUSAL, above the diagonal."""
    ### BEGIN SOLUTION
    seen = (offs_m[:, None] < N) & (offs_n[None, :] < N)
    if CAUSAL:
        seen = seen & (offs_n[None, :] <= offs_m[:, None])
    return tl.where(seen, tl.exp(tl.dot(q, tl.trans(k)) * scale - lse[:, None]), 0.0)
    ### END SOLUTION


@triton.jit
def attention_bwd_dkdv_kernel(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dk_ptr, dv_ptr, N, scale,
                              HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                              CAUSAL: tl.constexpr):
    """dK and dV of BLOCK_N keys of one head (program (key block, head)), looping over the queries
    that see them and rebuilding P from the saved log-sum-exp. All tensors contiguous (B, H, N, d)."""
    ### BEGIN SOLUTION
    start_n = tl.program_id(0) * BLOCK_N
    head = tl.program_id(1).to(tl.int64)
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    key_rows = head * N * HEAD_DIM + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
    k = tl.load(k_ptr + key_rows, mask=offs_n[:, None] < N, other=0.0)
    v = tl.load(v_ptr + key_rows, mask=offs_n[:, None] < N, other=0.0)
    dk = tl.zeros((BLOCK_N, HEAD_DIM), tl.float32)
    dv = tl.zeros((BLOCK_N, HEAD_DIM), tl.float32)
    if CAUSAL:
        first = start_n // BLOCK_M * BLOCK_M  # queries before the block's first key see none of it
    else:
        first = 0
    for start_m in range(first, N, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        query_rows = head * N * HEAD_DIM + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
        q = tl.load(q_ptr + query_rows, mask=offs_m[:, None] < N, other=0.0)
        do = tl.load(do_ptr + query_rows, mask=offs_m[:, None] < N, other=0.0)
        o = tl.load(o_ptr + query_rows, mask=offs_m[:, None] < N, other=0.0)
        lse = tl.load(lse_ptr + head * N + offs_m, mask=offs_m < N, other=0.0)
        p = rebuilt_probabilities(q, k, lse, offs_m, offs_n, N, scale, CAUSAL)
        dv = tl.dot(tl.trans(p.to(do.dtype)), do, dv)
        row_terms = tl.sum(do.to(tl.float32) * o.to(tl.float32), axis=1)  # D = rowsum(dO * O)
        ds = p * (tl.dot(do, tl.trans(v)) - row_terms[:, None])
        dk = tl.dot(tl.trans(ds.to(q.dtype)), q, dk)
    tl.store(dk_ptr + key_rows, (dk * scale).to(dk_ptr.dtype.element_ty), mask=offs_n[:, None] < N)
    tl.store(dv_ptr + key_rows, dv.to(dv_ptr.dtype.element_ty), mask=offs_n[:, None] < N)
    ### END SOLUTION


@triton.jit
def attention_bwd_dq_kernel(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dq_ptr, N, scale, HEAD_DIM: tl.constexpr,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    """dQ of BLOCK_M queries of one head (program (query block, head)), looping over the keys they see."""
    ### BEGIN SOLUTION
    start_m = tl.program_id(0) * BLOCK_M
    head = tl.program_id(1).to(tl.int64)
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    query_rows = head * N * HEAD_DIM + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
    q = tl.load(q_ptr + query_rows, mask=offs_m[:, None] < N, other=0.0)
    do = tl.load(do_ptr + query_rows, mask=offs_m[:, None] < N, other=0.0)
    o = tl.load(o_ptr + query_rows, mask=offs_m[:, None] < N, other=0.0)
    lse = tl.load(lse_ptr + head * N + offs_m, mask=offs_m < N, other=0.0)
    row_terms = tl.sum(do.to(tl.float32) * o.to(tl.float32), axis=1)
    dq = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    if CAUSAL:
        stop = tl.minimum(N, start_m + BLOCK_M)  # the keys after the block's last query are skipped
    else:
        stop = N
    for start_n in range(0, stop, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        key_rows = head * N * HEAD_DIM + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
        k = tl.load(k_ptr + key_rows, mask=offs_n[:, None] < N, other=0.0)
        v = tl.load(v_ptr + key_rows, mask=offs_n[:, None] < N, other=0.0)
        p = rebuilt_probabilities(q, k, lse, offs_m, offs_n, N, scale, CAUSAL)
        ds = p * (tl.dot(do, tl.trans(v)) - row_terms[:, None])
        dq = tl.dot(ds.to(k.dtype), k, dq)
    tl.store(dq_ptr + query_rows, (dq * scale).to(dq_ptr.dtype.element_ty), mask=offs_m[:, None] < N)
    ### END SOLUTION


def attention_backward(q, k, v, o, lse, do, causal=False, BLOCK_M=sized(64, 16), BLOCK_N=sized(32, 16)):
    """(dq, dk, dv) of attention's output o = attention(q, k, v, causal)[0], given do, its gradient."""
    ### BEGIN SOLUTION
    B, H, N, d = q.shape
    q, k, v, o, do = (t.contiguous() for t in (q, k, v, o, do))
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    attention_bwd_dkdv_kernel[(triton.cdiv(N, BLOCK_N), B * H)](q, k, v, o, do, lse, dk, dv, N, d ** -0.5, HEAD_DIM=d,
                                                                BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, CAUSAL=causal,
                                                                num_stages=1)
    attention_bwd_dq_kernel[(triton.cdiv(N, BLOCK_M), B * H)](q, k, v, o, do, lse, dq, N, d ** -0.5, HEAD_DIM=d,
                                                              BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, CAUSAL=causal,
                                                              num_stages=1)
    return dq, dk, dv
    ### END SOLUTION


# %%
class FlashAttention(torch.autograd.Function):
    """attention as a layer: forward by attention (saving lse), backward by attention_backward."""

    @staticmethod
    def forward(ctx, q, k, v, causal=False):
        o, lse = attention(q, k, v, causal=causal)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.causal = causal
        return o

    @staticmethod
    def backward(ctx, do):
        return *attention_backward(*ctx.saved_tensors, do, causal=ctx.causal), None


# %%
for causal in (False, True):
    for N, d in ((40, 32), (70, 64)):
        q, k, v = (rand(1, 2, N, d).requires_grad_() for _ in range(3))
        do = rand(1, 2, N, d)
        o = call_answer(FlashAttention.apply, q, k, v, causal, name="attention (FlashAttention's forward pass)")
        ours = call_answer(torch.autograd.grad, o, (q, k, v), do, name="attention_backward")
        theirs = torch.autograd.grad(naive_attention(q, k, v, causal), (q, k, v), do)
        for name, mine, torchs in zip(("dq", "dk", "dv"), ours, theirs):
            # fp32 inputs: on a GPU each tl.dot truncates them to TF32 (about 1e-3 relative), five products deep
            check_output(mine, torchs, name=f"{name} of FlashAttention on (1, 2, {N}, {d}), causal={causal}",
                         atol=2e-2, rtol=2e-2)
print("attention_backward's gradients match torch.autograd's, causal and not.")

# %% [markdown]
# ## What you learned
#
# - Attention as three steps writes two `N x N` matrices per head: its memory is `O(N^2)` and its
#   time is memory traffic. FlashAttention's is `O(N)`: the scores live on the chip, a block at a
#   time, and are thrown away after use.
# - The **online softmax** keeps a running maximum `m` and a running sum `l`, and rescales
#   everything summed so far (`l` and the accumulator) by `exp(m - m_new)` when the maximum grows:
#   one pass instead of two, and no need to keep a row.
# - The forward kernel: one program per (head, block of queries); a loop over blocks of keys and
#   values with `tl.dot` for `Q K^T` and for `P V`, fp32 accumulation, one division at the end, and
#   the **log-sum-exp** saved for the backward pass, which recomputes `P` from it.
# - **Masks**: keys past `N` are loaded as 0 *and* scored `-inf`; queries past `N` are not
#   stored; causal attention skips the blocks above the diagonal entirely and masks only the blocks
#   that cross it. Loops without masks where none are needed, and `exp2` with `log2(e)` folded into
#   the scale, are what the fast kernels add.
#
# **Where next:** Triton's own tutorials go on from here: *Fused Attention* (the backward pass, FP8,
# and the tricks of Hopper GPUs), *Persistent Matmul* (the persistent kernels of lesson 6,
# section 8), and grouped GEMM.

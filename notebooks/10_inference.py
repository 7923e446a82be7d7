# %% [markdown]
# # Lesson 10: Inference kernels: decoding attention over a paged KV cache, and a weight-only int4 matmul at small batch
#
# Lessons 7 and 9 wrote attention for training: thousands of queries per sequence, matrix products
# large enough to keep every tensor core busy. Serving a model is a different job. Once the prompt
# has been read, the model **decodes**: each step makes one new token per sequence, so each layer
# sees one query per sequence and head, and must read everything it has cached about the sequence
# so far (the keys and values of every earlier token) and every weight of the layer, to do very
# little arithmetic with each byte. Serving is **memory-bound**, and its kernels are judged by one
# figure: how close they come to reading their bytes once at the speed of a copy. This lesson writes
# the two kernels that dominate a decoding step:
#
# - **split-KV decoding attention** (FlashAttention's "flash-decoding"): one query per (sequence,
#   head) against a long cache, the cache cut into slices that programs read in parallel, each
#   writing a partial softmax that a second kernel merges with the online-softmax rule;
# - **paged, variable-length decoding**: the batch holds sequences of different lengths, and the
#   cache lives in fixed-size pages found through a **block table** (vLLM's PagedAttention layout),
#   so that memory is handed out a page at a time and never copied;
# - a **weight-only int4 matrix product** (W4A16): weights stored in 4 bits with one scale and zero
#   point per group of rows, expanded inside the kernel's loop, at the batch sizes decoding has
#   (M = 1 to 16), with **split-K** to give every multiprocessor work.
#
# Everything is measured against the **bytes floor** (the cache, or the packed weights, read once)
# as a fraction of the copy bandwidth the course measures on this machine, and against torch in the
# same notebook.
#
# | exercise | what you write | points |
# |---|---|---|
# | 1 | `decode_partials_kernel`, `decode_merge_kernel` and `decode_attention`: split-KV over a contiguous cache, GQA | 7 |
# | W1 | (written) why decoding attention is memory-bound | 3 |
# | 2 | `paged_decode_partials_kernel` and `paged_decode_attention`: a paged cache, sequences of different lengths | 8 |
# | Q | (multiple choice) what a program whose slice is empty writes | 1 |
# | 3 | `int4_matmul_kernel`, `int4_reduce_kernel` and `int4_linear`: W4A16 with split-K | 8 |
# | W2 | (written) int4 at M = 1 and M = 16 | 3 |
# | 4 | (no new code) both kernels against the bytes floor and against torch | 6 |
#
# **Where to run it.** The performance tests are graded on compute capability 9.0 (H100, H200), where
# their targets were set. Everywhere else every exercise runs and is graded for correctness, and
# the performance tests print their numbers and say why they are not graded. With no GPU, Triton's
# interpreter runs every kernel on short caches and small matrices, and timings say nothing about GPUs.

# %% tags=["setup"]
from autograder.kit import *  # noqa: F403 (the build places autograder/kit.py here)

# %% nbgrader={"grade_id": "inference_helpers", "locked": true}
# The course's helpers for this lesson (read-only: grading restores them).
import torch.nn.functional as F

HEAD_DIMS = (16, 32, 64, 128)  # the head dims the kernels take: powers of two, as tl.arange needs
PAGE_SIZES = (16, 32, 64, 128)  # tokens per page: a page is one tl.dot operand, which needs at least 16 rows
GROUP_SIZES = (32, 64, 128, 256)  # rows of K per int4 scale: powers of two, at least 32 (two halves of 16)


def multiprocessors():
    """The GPU's streaming multiprocessors (132 on an H100 or H200); 4 under the interpreter, so that
    the tests there see work cut into several slices too."""
    return torch.cuda.get_device_properties(DEVICE).multi_processor_count if ON_GPU else 4


def graded_speed():
    """Where the performance tests are graded: compute capability 9.0 (H100, H200), the GPU the
    lesson's targets were set on. Elsewhere they print the numbers and pass."""
    return ON_GPU and CAPABILITY == (9, 0)


def fast_dtype():
    """The 16-bit dtype a model serves in here: fp16 where tl.dot takes it, else fp32 (a T4)."""
    return torch.float16 if torch.float16 in DOT_DTYPES else torch.float32


def decode_dtypes():
    """The dtypes the tests give the decoding kernels: those tl.dot takes here (no bf16 under the
    interpreter or on a T4)."""
    return list(DOT_DTYPES)


def int4_dtypes():
    """The activation dtypes of the int4 product: 16-bit, as W4A16 says; bf16 only where BF16_OK."""
    return [t for t in (torch.float16, torch.bfloat16) if t in DOT_DTYPES and (t != torch.bfloat16 or BF16_OK)] \
        or [torch.float32]


def decode_config(d, dtype, paged=False):
    """Keys per step of the split-KV kernels, warps and pipeline stages: 64 keys of d = 128 fp16 are
    16 KB of K and 16 KB of V per stage on a GPU; in fp32 32 keys, so that three stages fit the 99 KB
    of an L4 or RTX 40 and one fits a T4's 64 KB; small blocks under the interpreter. The paged kernel
    (`paged=True`) takes two stages: it runs four programs per multiprocessor (exercise 2), and at
    three stages (96 KB each) only two fit an H200's 227 KB."""
    if not ON_GPU:
        return dict(BLOCK_N=16, num_warps=4, num_stages=1)
    return dict(BLOCK_N=32 if dtype == torch.float32 or d > 128 else 64, num_warps=4, num_stages=2 if paged else 3)


def int4_config(group_size, dtype):
    """Blocks of the int4 product. BLOCK_M = 16 rows of x (tl.dot's least; decoding has 1 to 16),
    BLOCK_N columns of W per program, BLOCK_K rows of W per step (a divisor of the group size, so
    that a step has one row of scales and zeros). On a GPU 256 columns, 128 rows, 4 warps, 3 stages
    (what measured best on an H200 at K = N = 8192; 128 columns were 13% faster at 4096)."""
    if not ON_GPU:
        return dict(BLOCK_M=16, BLOCK_N=32, BLOCK_K=min(group_size, 32), num_warps=4, num_stages=1)
    if dtype == torch.float32:  # x in fp32 (a T4): 128 columns and 64 rows, so that 3 stages fit its 64 KB
        return dict(BLOCK_M=16, BLOCK_N=128, BLOCK_K=min(group_size, 64), num_warps=4, num_stages=3)
    return dict(BLOCK_M=16, BLOCK_N=256, BLOCK_K=min(group_size, 128), num_warps=4, num_stages=3)


def check_fraction(achieved, fraction, what, hint, graded):
    """A bytes-floor test: `achieved` GB/s must reach `fraction` of this GPU's measured copy
    bandwidth where `graded` (compute capability 9.0); elsewhere the figures are printed, and why."""
    __tracebackhide__ = True
    if graded:
        check_bandwidth(achieved, fraction, what, hint=hint)
        return
    if ON_GPU:
        roof = copy_bandwidth()
        print(f"{what} reached {achieved:.0f} GB/s, {achieved / roof:.0%} of this device's copy bandwidth "
              f"({roof:.0f} GB/s).")
    advisory(f"{what} for {fraction:.0%} of the card's\nmeasured copy bandwidth, on compute capability 9.0")


def lesson_note():
    """What this device does with the lesson's kernels."""
    if not ON_GPU:
        return ("Triton's interpreter: every kernel runs (on NumPy, one program at a time); short caches and "
                "small matrices only, and timings say nothing about GPUs.")
    where = f"Compute capability {CAPABILITY[0]}.{CAPABILITY[1]}, {multiprocessors()} multiprocessors"
    if graded_speed():
        return f"{where}: the performance tests are graded here."
    return f"{where}: the performance tests are advisory here (graded on compute capability 9.0)."


print(lesson_note())
print("The decoding tests give tl.dot", ", ".join(str(t).removeprefix("torch.") for t in decode_dtypes()),
      "; the int4 tests give x", ", ".join(str(t).removeprefix("torch.") for t in int4_dtypes()))


# %% [markdown]
# ## 1. One query against a long cache
#
# At step `t` of decoding, sequence `b` has a cache of `N = t` keys and values per K/V head and one
# new query per query head: `q` is `(B, H, d)`, `k` and `v` are `(B, N, H_kv, d)` (token-major, as a
# model appends to them; any strides), with grouped-query attention as in lesson 9: query head `h`
# reads K/V head `h // G`, `G = H // H_kv`. The output is `(B, H, d)`:
# `o[b, h] = softmax(q[b, h] . k[b, :, h // G] * scale) @ v[b, :, h // G]`, `scale = d ** -0.5`.
#
# The course's reference computes that in fp32, one sequence at a time, without repeating K and V
# (the `G` query heads of a group are the rows of one product), and returns `q`'s dtype.

# %% nbgrader={"grade_id": "decode_reference", "locked": true}
# The references the tests compare with (read-only: grading restores them).
def reference_decode(q, k, v, scale=None, lengths=None):
    """o (B, H, d) in q's dtype: each query against the keys of its sequence, by torch in fp32. q is
    (B, H, d), k and v (B, N, H_kv, d); query head h reads K/V head h // (H // H_kv). Sequence b
    attends to its first lengths[b] keys (a list of ints), or to all N."""
    B, H, d = q.shape
    H_kv = k.shape[2]
    scale = d ** -0.5 if scale is None else scale
    o = torch.empty(B, H, d, dtype=torch.float32, device=q.device)
    for b in range(B):
        n = k.shape[1] if lengths is None else lengths[b]
        qb = q[b].float().view(H_kv, H // H_kv, d)
        kb, vb = k[b, :n].float(), v[b, :n].float()  # (n, H_kv, d)
        scores = torch.einsum("kgd,nkd->kgn", qb, kb) * scale
        o[b] = torch.einsum("kgn,nkd->kgd", torch.softmax(scores, dim=-1), vb).reshape(H, d)
    return o.to(q.dtype)


def gather_pages(pages, block_table):
    """The contiguous (B, max_pages * PAGE_SIZE, H_kv, d) cache that a block table describes: page i
    of sequence b is pages[block_table[b, i]]. A copy, by torch: what the paged kernel must not do."""
    B, max_pages = block_table.shape
    return pages[block_table.long()].reshape(B, max_pages * pages.shape[1], *pages.shape[2:])


def reference_paged_decode(q, k_pages, v_pages, block_table, lengths, scale=None):
    """reference_decode on the cache gathered from the pages, sequence b cut at lengths[b]."""
    return reference_decode(q, gather_pages(k_pages, block_table), gather_pages(v_pages, block_table), scale,
                            lengths=[int(n) for n in lengths.tolist()])


def torch_paged_decode(q, k_pages, v_pages, block_table, lengths):
    """What torch does without a paged kernel: gather the pages into a contiguous cache, then SDPA
    with a mask of each sequence's length (enable_gqa). The performance tests race it."""
    k, v = gather_pages(k_pages, block_table), gather_pages(v_pages, block_table)
    mask = torch.arange(k.shape[1], device=q.device)[None, :] < lengths[:, None]  # (B, N)
    o = F.scaled_dot_product_attention(q[:, :, None], k.transpose(1, 2), v.transpose(1, 2),
                                       attn_mask=mask[:, None, None, :], enable_gqa=q.shape[1] != k.shape[2])
    return o[:, :, 0]


def decode_inputs(B, N, H, H_kv, d, dtype=torch.float32, layout="separate"):
    """Fresh q (B, H, d) and k, v (B, N, H_kv, d) in guard bands. "separate": three contiguous
    tensors; "fused": k and v slices of one (B, N, 2 H_kv, d) cache; "heads first": k and v
    (B, H_kv, N, d) tensors seen through .transpose(1, 2). q is a slice of a wider tensor in "fused"."""
    if layout == "fused":
        kv = rand(B, N, 2 * H_kv, d, dtype=dtype)
        return rand(B, H, 2 * d, dtype=dtype)[:, :, :d], kv[:, :, :H_kv], kv[:, :, H_kv:]
    if layout == "heads first":
        return (rand(B, H, d, dtype=dtype),) + tuple(rand(B, H_kv, N, d, dtype=dtype).transpose(1, 2)
                                                      for _ in range(2))
    return rand(B, H, d, dtype=dtype), rand(B, N, H_kv, d, dtype=dtype), rand(B, N, H_kv, d, dtype=dtype)


def paged_inputs(lengths, H, H_kv, d, page_size, dtype=torch.float32, spare_pages=3, shuffle=True):
    """q (B, H, d), k_pages and v_pages (num_pages, page_size, H_kv, d) in guard bands, a block table
    (B, max_pages) int32 and lengths (B,) int32 for sequences of the given lengths. Each sequence
    gets the pages it needs, in a shuffled order (as a server hands them out), and a few spare pages
    nobody owns; a table's entries past a sequence's last page point at real pages of others, so
    that reading past lengths[b] reads someone else's keys and shows."""
    B = len(lengths)
    needed = [-(-n // page_size) for n in lengths]
    max_pages = max(needed)
    num_pages = sum(needed) + spare_pages
    order = torch.randperm(num_pages) if shuffle else torch.arange(num_pages)
    table = torch.empty(B, max_pages, dtype=torch.int32)
    used = 0
    for b, count in enumerate(needed):
        table[b, :count] = order[used:used + count].to(torch.int32)
        table[b, count:] = order[torch.randint(0, num_pages, (max_pages - count,))].to(torch.int32)
        used += count
    k_pages = rand(num_pages, page_size, H_kv, d, dtype=dtype)
    v_pages = rand(num_pages, page_size, H_kv, d, dtype=dtype)
    return (rand(B, H, d, dtype=dtype), k_pages, v_pages, table.to(DEVICE),
            torch.tensor(lengths, dtype=torch.int32, device=DEVICE))


def decode_tolerance(dtype):
    """(atol, rtol) for o. 16-bit inputs: p is rounded to the input's dtype before P V, o at the
    store: check_output's default. fp32: TF32 in tl.dot on a GPU, 1e-2."""
    return (1e-2, 1e-2) if dtype == torch.float32 else (None, None)


print("reference_decode against torch's SDPA (one query per head, GQA):")
q, k, v = decode_inputs(2, 40, 4, 2, 32)
theirs = F.scaled_dot_product_attention(q[:, :, None], k.transpose(1, 2), v.transpose(1, 2), enable_gqa=True)[:, :, 0]
print(f"  largest difference {(reference_decode(q, k, v) - theirs).abs().max().item():.2e}")
q, k_pages, v_pages, table, lengths = paged_inputs([5, 40], 4, 2, 32, 16)
difference = reference_paged_decode(q, k_pages, v_pages, table, lengths) - \
    torch_paged_decode(q, k_pages, v_pages, table, lengths)
print(f"  paged (lengths 5 and 40, pages of 16), against torch_paged_decode: {difference.abs().max().item():.2e}")
del q, k, v, theirs, k_pages, v_pages, table, lengths, difference

# %% [markdown]
# ## 2. Why lesson 7's grid leaves the GPU idle
#
# Lesson 7's kernel gives one program to each (head, block of queries). At decoding time the block
# of queries is **one row** (padded to 16 for `tl.dot`), so the grid is `B * H` programs, and each
# reads its head's whole cache, `N` keys, one block after another. Count it for a served model: 4
# sequences, 32 query heads over 8 K/V heads, a cache of 8192 tokens, on a GPU of 132 multiprocessors.

# %%
B, H, H_kv, N, d = 4, 32, 8, 8192, 128
sms = 132  # an H100 or H200
programs = B * H
print(f"lesson 7's grid: {programs} programs for {sms} multiprocessors: {programs / sms:.2f} programs each, so "
      f"{sms - programs} multiprocessors have nothing to do,")
print(f"  and each program streams {N} keys serially: {N // 64} steps of 64 keys, with nothing to hide their latency.")
print(f"  Worse, its {H // H_kv} query heads of a group each read the same K/V head: the cache is read "
      f"{H // H_kv} times ({H // H_kv * 2 * B * N * H_kv * d * 2 / 1e6:.0f} MB instead of "
      f"{2 * B * N * H_kv * d * 2 / 1e6:.0f} MB).")
splits = -(-2 * sms // (B * H_kv))
print(f"split-KV: one program per (sequence, K/V head, slice of the keys): {B * H_kv} x {splits} slices = "
      f"{B * H_kv * splits} programs, about two per multiprocessor, each reading {N // splits} keys once for "
      f"the {H // H_kv} query heads of its group.")


# %% [markdown]
# Two things go wrong, and split-KV fixes both:
#
# 1. **Too few programs.** 128 programs on 132 multiprocessors, one program each: a multiprocessor
#    needs several programs (or one with many warps in flight) to keep enough loads outstanding to
#    reach full bandwidth. Cut each head's keys into `SPLITS` slices and give each slice its own
#    program: `B * H_kv * SPLITS` programs. Each computes the softmax of its slice only, so it
#    writes a **partial result**: its running maximum `m`, its sum `l` and its unnormalised output
#    `acc` (exactly the three numbers lesson 7's loop carries), in fp32, to a scratch buffer.
# 2. **The cache read `G` times.** The `G` query heads of a group read the same keys. Give them to
#    one program, as the **rows** of the product: `Q` is then a `(G, d)` block (padded to at least
#    16 rows, `tl.dot`'s least, with a mask), and `S = Q K^T` a `(G, BLOCK_N)` block; the cache is
#    read once, and `tl.dot` has rows to work on.
#
# A second, small kernel **merges** the `SPLITS` partials of each (sequence, query head) with the
# online-softmax rule you already know: with `m* = max_i m_i`,
#
# `o = sum_i exp(m_i - m*) acc_i / sum_i exp(m_i - m*) l_i`.
#
# The rule is the same one that lets lesson 7's loop take in one block of keys after another; here
# the blocks were taken in by different programs, and are combined at the end. As in lesson 9, use
# `exp2` with `log2(e)` folded into the scale (`qk_scale = scale * 1.4426950408889634`): then `m` is
# in `log2` units, and the merge uses `exp2(m_i - m*)`.
#
# **How many slices?** Enough programs to fill the GPU about twice over, `SPLITS =
# cdiv(2 * multiprocessors(), B * H_kv)`, but no more slices than blocks of keys (a slice of fewer
# than `BLOCK_N` keys wastes its program), and no host synchronisation: the shapes alone decide.
# Make each slice a whole number of `BLOCK_N` blocks, `keys_per_split = cdiv(cdiv(N, SPLITS),
# BLOCK_N) * BLOCK_N`, so that only the last block of the cache needs a mask; then recount
# `SPLITS = cdiv(N, keys_per_split)`.
#
# **int64 offsets**: `b * stride_kb` passes 2^31 for long caches and large batches (lesson 9): make
# `b`, the head and the key offsets int64 before they meet a stride.
#
# ## Exercise 1: `decode_partials_kernel`, `decode_merge_kernel` and `decode_attention` (7 points)
#
# 1. `decode_partials_kernel`: grid `(B * H_kv, SPLITS)`; program `(b * H_kv + hk, split)` loads the
#    `G` queries of K/V head `hk` (query heads `hk * G .. hk * G + G - 1`) as a `(BLOCK_G, d)` block,
#    `BLOCK_G = max(16, triton.next_power_of_2(G))`, rows past `G` masked to 0; streams the keys
#    `split * keys_per_split .. min(N, (split + 1) * keys_per_split) - 1` `BLOCK_N` at a time with
#    the online softmax (keys past the end masked, their scores `-inf`); and stores `m`, `l` and
#    `acc` of its `G` rows to scratch: `m` and `l` of shape `(B, H, SPLITS)`, `acc` `(B, H, SPLITS,
#    d)`, all fp32 and contiguous.
# 2. `decode_merge_kernel`: grid `(B * H,)`; program `b * H + h` loads the `SPLITS` partials of its
#    row (padded to a power of two, masked: `m` to `-inf`, `l` and `acc` to 0), merges them, and
#    stores `o[b, h]` in `o`'s dtype.
# 3. `decode_attention(q, k, v, scale=None, splits=None)`: checks the inputs (`q` 3-D `(B, H, d)`,
#    `k` and `v` 4-D of one shape `(B, N, H_kv, d)` with `q`'s `B` and `d`, `N >= 1`, `H % H_kv == 0`,
#    one dtype and device, `d` in `HEAD_DIMS`: `ValueError` saying what is wrong), takes
#    `decode_config(d, q.dtype)`, chooses `SPLITS` as above (or uses `splits` when it is given: the tests
#    pass it to try one slice, and more slices than there are blocks), allocates the scratch with
#    `torch.empty` and `o` `(B, H, d)` in `q`'s dtype, launches both kernels and returns `o`.
#    `scale` defaults to `d ** -0.5`. No `.contiguous()`: pass every stride.
#
# When `splits` asks for more slices than there are keys, some slices are **empty**: their program
# runs no step of its loop. Its partial must still be written, and must add nothing to the merge:
# question Q below asks what it is.

# %% nbgrader={"grade_id": "decode_attention", "solution": true}
@triton.jit
def decode_partials_kernel(q_ptr, k_ptr, v_ptr, m_ptr, l_ptr, acc_ptr,
                           stride_qb, stride_qh, stride_qd,
                           stride_kb, stride_kn, stride_kh, stride_kd,
                           stride_vb, stride_vn, stride_vh, stride_vd,
                           H, H_KV, N, GROUP, SPLITS, keys_per_split, scale,
                           HEAD_DIM: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr):
    """(m, l, acc) of the GROUP query heads of K/V head hk of sequence b over one slice of the keys:
    program (b * H_KV + hk, split)."""
    ### BEGIN SOLUTION
    pair = tl.program_id(0)
    split = tl.program_id(1)
    b = (pair // H_KV).to(tl.int64)
    hk = (pair % H_KV).to(tl.int64)
    g = tl.arange(0, BLOCK_G)
    live = g < GROUP
    heads = hk * GROUP + g  # the query heads of the group, one per row
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + b * stride_qb + heads[:, None] * stride_qh + offs_d[None, :] * stride_qd,
                mask=live[:, None], other=0.0)
    k_base = k_ptr + b * stride_kb + hk * stride_kh
    v_base = v_ptr + b * stride_vb + hk * stride_vh
    acc = tl.zeros((BLOCK_G, HEAD_DIM), tl.float32)
    m = tl.full((BLOCK_G,), -float("inf"), tl.float32)
    l = tl.zeros((BLOCK_G,), tl.float32)
    qk_scale = scale * 1.4426950408889634  # log2(e): exp(x) = exp2(x * log2(e))
    lo = split * keys_per_split
    hi = tl.minimum(N, lo + keys_per_split)
    for start in range(lo, hi, BLOCK_N):  # every step holds at least one key below hi: no NaN
        offs_n = start + tl.arange(0, BLOCK_N)
        inside = offs_n < hi
        rows = offs_n[:, None].to(tl.int64)
        k = tl.load(k_base + rows * stride_kn + offs_d[None, :] * stride_kd, mask=inside[:, None], other=0.0)
        v = tl.load(v_base + rows * stride_vn + offs_d[None, :] * stride_vd, mask=inside[:, None], other=0.0)
        s = tl.where(inside[None, :], tl.dot(q, tl.trans(k)) * qk_scale, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp2(m - m_new)
        p = tl.exp2(s - m_new[:, None])
        l = l * alpha + tl.sum(p, axis=1)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m = m_new
    # an empty slice ran no step: m = -inf, l = 0, acc = 0, which the merge weighs exp2(-inf) = 0
    row = (b * H + heads) * SPLITS + split
    tl.store(m_ptr + row, m, mask=live)
    tl.store(l_ptr + row, l, mask=live)
    tl.store(acc_ptr + row[:, None] * HEAD_DIM + offs_d[None, :], acc, mask=live[:, None])
    ### END SOLUTION


@triton.jit
def decode_merge_kernel(m_ptr, l_ptr, acc_ptr, o_ptr, stride_ob, stride_oh, stride_od, H, SPLITS,
                        HEAD_DIM: tl.constexpr, BLOCK_S: tl.constexpr):
    """o[b, h] from the SPLITS partials (m, l, acc) of row b * H + h: program b * H + h."""
    ### BEGIN SOLUTION
    row = tl.program_id(0).to(tl.int64)
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, HEAD_DIM)
    present = offs_s < SPLITS
    m = tl.load(m_ptr + row * SPLITS + offs_s, mask=present, other=-float("inf"))
    l = tl.load(l_ptr + row * SPLITS + offs_s, mask=present, other=0.0)
    acc = tl.load(acc_ptr + (row * SPLITS + offs_s)[:, None] * HEAD_DIM + offs_d[None, :],
                  mask=present[:, None], other=0.0)
    m_max = tl.max(m, axis=0)  # finite: every sequence has at least one key
    weight = tl.exp2(m - m_max)  # 0 for an empty slice (m = -inf)
    o = tl.sum(acc * weight[:, None], axis=0) / tl.sum(l * weight, axis=0)
    b = row // H
    h = row % H
    tl.store(o_ptr + b * stride_ob + h * stride_oh + offs_d * stride_od, o.to(o_ptr.dtype.element_ty))
    ### END SOLUTION


def decode_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale=None, splits=None) -> torch.Tensor:
    """o (B, H, d) in q's dtype: one query per (sequence, head) against a (B, N, H_kv, d) cache, by
    split-KV: decode_partials_kernel on (B * H_kv, SPLITS), then decode_merge_kernel on (B * H,)."""
    ### BEGIN SOLUTION
    if q.dim() != 3 or k.dim() != 4 or v.dim() != 4:
        raise ValueError(f"q must be 3-D (B, H, d) and k, v 4-D (B, N, H_kv, d), got {q.dim()}-D, {k.dim()}-D "
                         f"and {v.dim()}-D")
    B, H, d = q.shape
    N, H_kv = k.shape[1], k.shape[2]
    if k.shape != (B, N, H_kv, d) or v.shape != k.shape or N == 0:
        raise ValueError(f"k and v must both be (B, N, H_kv, d) with q's B and d and N >= 1: q is {tuple(q.shape)}, "
                         f"k {tuple(k.shape)}, v {tuple(v.shape)}")
    if H_kv == 0 or H % H_kv:
        raise ValueError(f"{H} query heads cannot be grouped over {H_kv} K/V heads: H must be a multiple of H_kv")
    if not (q.dtype == k.dtype == v.dtype) or not (q.device == k.device == v.device):
        raise ValueError(f"q, k and v must share a dtype and a device, got {q.dtype}, {k.dtype}, {v.dtype}")
    if d not in HEAD_DIMS:
        raise ValueError(f"head dim {d} is not supported: the kernel takes {HEAD_DIMS}")
    config = decode_config(d, q.dtype)
    block_n = config["BLOCK_N"]
    if splits is None:
        splits = min(triton.cdiv(2 * multiprocessors(), B * H_kv), triton.cdiv(N, block_n))
    splits = max(1, splits)
    keys_per_split = triton.cdiv(triton.cdiv(N, splits), block_n) * block_n
    if splits <= triton.cdiv(N, block_n):  # otherwise keep the slices asked for: the last ones are empty
        splits = triton.cdiv(N, keys_per_split)
    G = H // H_kv
    m = torch.empty((B, H, splits), dtype=torch.float32, device=q.device)
    l = torch.empty((B, H, splits), dtype=torch.float32, device=q.device)
    acc = torch.empty((B, H, splits, d), dtype=torch.float32, device=q.device)
    o = torch.empty((B, H, d), dtype=q.dtype, device=q.device)
    scale = d ** -0.5 if scale is None else scale
    decode_partials_kernel[(B * H_kv, splits)](q, k, v, m, l, acc, *q.stride(), *k.stride(), *v.stride(),
                                               H, H_kv, N, G, splits, keys_per_split, scale, HEAD_DIM=d,
                                               BLOCK_G=max(16, triton.next_power_of_2(G)), **config)
    decode_merge_kernel[(B * H,)](m, l, acc, o, *o.stride(), H, splits, HEAD_DIM=d,
                                  BLOCK_S=triton.next_power_of_2(splits))
    return o
    ### END SOLUTION


# %% nbgrader={"grade_id": "decode_checks", "locked": true}
# The course's helpers for the tests of this lesson (read-only: grading restores them).
def describe_decode(B, N, H, H_kv, d, dtype, layout=None):
    return (f"(B, N, H, H_kv, d) = ({B}, {N}, {H}, {H_kv}, {d}), {str(dtype).removeprefix('torch.')}"
            + (f", {layout} layout" if layout else ""))


def empty_slice_hint(o):
    """A message for NaN in o: the usual cause in split-KV is an empty slice or a block of masked keys."""
    return ("o holds NaN. In split-KV the usual cause is a slice (or a block) with no key in it: its running "
            "maximum stays -inf, and exp2(m - m_new) = exp2(-inf - (-inf)) is NaN. A program whose slice is "
            "empty must run no step of its loop and still store the neutral partial m = -inf, l = 0, acc = 0; "
            "the merge gives it the weight exp2(-inf - m*) = 0. Does the loop stop at min(length, end of the "
            "slice), and is every partial stored?")


def check_decode(o, expected, what, dtype, hint, untouched=()):
    """Compare o with the reference; NaN and the other usual mistakes get their own messages."""
    if isinstance(o, torch.Tensor) and o.shape == expected.shape and o.dtype == expected.dtype:
        if bool(torch.isnan(o.float()).any()) and not bool(torch.isnan(expected.float()).any()):
            raise CheckFailed(f"{what}: {empty_slice_hint(o)}")
    atol, rtol = decode_tolerance(dtype)
    check_output(o, expected, name=f"{what}: o", inputs=untouched, atol=atol, rtol=rtol, hint=hint)


def decode_hint(N, H, H_kv, splits, k):
    hints = []
    if H != H_kv:
        hints.append(f"{H} query heads share {H_kv} K/V heads: are the rows of the program's Q the query heads "
                     "hk * GROUP + g, g < GROUP, and is each row's partial stored at its own query head?")
    if N % 16:
        hints.append(f"N = {N} is not a multiple of any block: are the keys past the end of the slice loaded with a "
                     "mask (other=0.0) and their scores set to -inf?")
    if splits is None or splits > 1:
        hints.append("the merge: m* = max over the slices of m, o = sum exp2(m_i - m*) acc_i / sum exp2(m_i - m*) l_i "
                     "(m in log2 units); does each slice start at split * keys_per_split?")
    if not k.is_contiguous():
        hints.append(f"k has strides {k.stride()}: are the addresses computed from every stride you were given?")
    hints.append("is acc rescaled by alpha = exp2(m - m_new) (l too), with qk_scale = scale * log2(e)?")
    return " ".join(hints)


def run_decode(B, N, H, H_kv, d, dtype=torch.float32, layout="separate", splits=None, scale=None):
    """decode_attention on fresh inputs, with guarded allocations and counted launches: kernels
    computed o, it is right, and the inputs are unchanged."""
    q, k, v = decode_inputs(B, N, H, H_kv, d, dtype, layout)
    what = f"decode_attention on {describe_decode(B, N, H, H_kv, d, dtype, layout)}" + \
        (f", splits={splits}" if splits is not None else "") + (f", scale={scale}" if scale is not None else "")
    untouched = [(t, t.clone()) for t in (q, k, v)]
    with guarded_allocations(), count_launches() as launches:
        o = call_answer(decode_attention, q, k, v, scale=scale, splits=splits)
    expect_launched(launches, what, o)
    check_decode(o, reference_decode(q, k, v, scale), what, dtype, decode_hint(N, H, H_kv, splits, k), untouched)


def expect_refusal(answer, what, *args, error=(AssertionError, ValueError, TypeError, RuntimeError), message=None):
    """answer(*args) must raise an error that says what is wrong (containing `message`, if given)."""
    try:
        call_answer(answer, *args)
    except (AssertionError, ValueError, TypeError, RuntimeError) as raised:
        if isinstance(raised, CheckFailed):
            raise
        if not isinstance(raised, error):
            raise CheckFailed(f"{name_of(answer)} on {what} raised {type(raised).__name__}: raise ValueError with a "
                              "message that says what is wrong.") from None
        if message and message not in str(raised).lower():
            raise CheckFailed(f"{name_of(answer)} on {what} raised {type(raised).__name__}({str(raised)[:120]!r}): "
                              f"say what is wrong; the message should contain {message!r}.") from None
    else:
        raise CheckFailed(f"{name_of(answer)} on {what} returned a result: check the inputs and raise "
                          "ValueError with a message that says what is wrong.")


# %% [markdown]
# The test runs your `decode_attention` on 2 sequences of 50 keys (a multiple of no block) with 4
# query heads over 2 K/V heads, with the slices your function chooses, then one slice, then more
# slices than there are blocks (empty slices); multi-query attention (one K/V head for 8 query
# heads) on a fused cache; `d = 128`; every dtype `tl.dot` takes here; and a head dim of 80, which
# must be refused with a `ValueError`.

# %% nbgrader={"grade": true, "grade_id": "test_decode_attention", "locked": true, "points": 3}
run_decode(2, 50, 4, 2, 64)
run_decode(2, 50, 4, 2, 64, splits=1)
run_decode(1, 40, 4, 2, 64, splits=5)  # 3 blocks of 16 keys in 5 slices: two slices are empty
run_decode(1, 37, 8, 1, 32, layout="fused")
run_decode(1, 33, 2, 2, 128, layout="heads first")
for dtype in decode_dtypes():
    run_decode(2, 48, 4, 2, 64, dtype=dtype)
expect_refusal(decode_attention, "head dim 80", rand(1, 2, 80), rand(1, 8, 2, 80), rand(1, 8, 2, 80), error=ValueError)
print("decode_attention is right with grouped and multi-query heads, one slice, many and empty slices, in",
      ", ".join(str(t).removeprefix("torch.") for t in decode_dtypes()))

# %% nbgrader={"grade": true, "grade_id": "test_decode_attention_hidden", "locked": true, "points": 4}
# Hidden tests check decode_attention on more caches, groups, layouts, dtypes and head dims, and more
# wrong inputs, when your notebook is graded.
### BEGIN HIDDEN TESTS
for B, N, H, H_kv in [(1, 1, 1, 1), (1, 1, 4, 1), (3, 17, 8, 8), (2, 97, 8, 2), (1, 64, 32, 4), (2, 31, 8, 1)]:
    run_decode(B, N, H, H_kv, 64)
for d in (16, 32, 128):
    run_decode(1, 29, 4, 1, d, layout="fused")
for splits in (2, 3, 7, 12):
    run_decode(1, 45, 4, 4, 32, splits=splits)
for dtype in decode_dtypes():
    run_decode(2, 70, 8, 2, 128, dtype=dtype, layout="heads first")
run_decode(1, 50, 4, 2, 64, scale=0.3)
# Scores in the hundreds: without the running maximum exp2 overflows.
q, k, v = decode_inputs(1, 48, 4, 2, 64, decode_dtypes()[-1])
q.mul_(20.0)
with guarded_allocations():
    o = call_answer(decode_attention, q, k, v)
check_decode(o, reference_decode(q, k, v), "decode_attention with queries scaled by 20", q.dtype,
             "is the running maximum subtracted before exp2, and acc and l rescaled when it grows?")
expect_refusal(decode_attention, "a 4-D q", rand(1, 1, 2, 32), rand(1, 8, 2, 32), rand(1, 8, 2, 32))
expect_refusal(decode_attention, "6 query heads over 4 K/V heads", rand(1, 6, 32), rand(1, 8, 4, 32),
               rand(1, 8, 4, 32))
expect_refusal(decode_attention, "k of head dim 64 and q of 32", rand(1, 2, 32), rand(1, 8, 2, 64), rand(1, 8, 2, 64))
expect_refusal(decode_attention, "fp16 q with fp32 k and v", rand(1, 2, 32, dtype=torch.float16), rand(1, 8, 2, 32),
               rand(1, 8, 2, 32))
expect_refusal(decode_attention, "head dim 48", rand(1, 2, 48), rand(1, 8, 2, 48), rand(1, 8, 2, 48), error=ValueError)
print("decode_attention passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## Written answer W1 (3 points)

# %% [markdown] nbgrader={"grade": true, "grade_id": "written_decode_bytes", "points": 3, "solution": true}
# **Written answer W1 (3 points).** Why is decoding attention memory-bound? For one layer and one
# sequence with `H = 32` query heads over `H_kv = 8` K/V heads, `d = 128`, a cache of `N = 8192`
# tokens in fp16: how many bytes must the kernel read, how many floating-point operations does it
# do, and what is its arithmetic intensity (operations per byte)? Compare it with an H200's ridge
# point (about 990 TFLOP/s of fp16 tensor-core arithmetic over about 4.8 TB/s of memory bandwidth).
# What is the least time the layer's attention can take, and what would grouping the query heads of
# a K/V head in one program (this lesson's kernel) change, against one program per query head?
#
# ### BEGIN SOLUTION
# Bytes: K and V, 2 x 8192 tokens x 8 heads x 128 x 2 bytes = 33.6 MB (q and o, 32 x 128 x 2 bytes
# each, are nothing beside it). Operations: per query head, S = q K^T is 2 N d and P V another
# 2 N d, so 4 x 8192 x 128 x 32 heads = 134 MFLOP. Intensity: 134e6 / 33.6e6 = 4 FLOP per byte
# (in general G = H / H_kv operations per byte in fp16). The H200's ridge is 990e12 / 4.8e12 = about
# 206 FLOP per byte: decoding sits 50 times below it, so the tensor cores idle and the time is the
# time to read the cache: 33.6 MB / ~4.2 TB/s (the copy bandwidth we measure) = about 8 us per layer
# and sequence. Grouping matters for exactly this reason: with one program per query head the
# cache is read G = 4 times (134 MB, about 32 us, even if the L2 catches some of it), with the group
# in one program it is read once; the arithmetic is the same either way, and it costs nothing.
# ### END SOLUTION

# %% [markdown]
# ## 3. A paged cache, and sequences of different lengths
#
# A server decodes many sequences at once, and they have different lengths: one is 20 tokens into
# its answer, another 7000. Giving each sequence a contiguous `(N_max, H_kv, d)` cache wastes the
# memory between its length and `N_max`, and growing it means copying. **PagedAttention** (vLLM)
# stores the cache in fixed-size **pages** of `PAGE_SIZE` tokens, handed out one at a time from a
# pool: `k_pages` and `v_pages` are `(num_pages, PAGE_SIZE, H_kv, d)` (vLLM's and FlashAttention's
# layout), and a **block table** `(B, max_pages)` of int32 says where sequence `b`'s tokens are:
# token `n` of sequence `b` is slot `n % PAGE_SIZE` of page `block_table[b, n // PAGE_SIZE]`. The
# pages of one sequence lie anywhere in the pool, in any order. `lengths` `(B,)` int32 holds each
# sequence's length (at least 1); its last page is usually partial, and the table's entries past
# its last page are whatever the server left there (the tests point them at other sequences' pages).
#
# The kernel is exercise 1's with two changes:
#
# - **Keys through the block table.** Step through the slice `BLOCK_N` keys at a time, as in
#   exercise 1, and find each key's page: for the keys `n = start + tl.arange(0, BLOCK_N)`, load
#   their page numbers `block_table[b, n // PAGE_SIZE]` (a vector of `BLOCK_N` entries, `PAGE_SIZE`
#   of them alike; the cache serves the repeats), then their rows at `k_ptr + page * stride_kp +
#   (n % PAGE_SIZE) * stride_ks + hk * stride_kh + i * stride_kd` (int64: `page * stride_kp` is the
#   whole pool's size). Stepping a page at a time (`BLOCK_N = PAGE_SIZE`, one scalar load of the
#   table per step) is as correct and simpler, but pages of 16 tokens make small steps: 4 KB of K
#   and 4 KB of V each, too few bytes in flight. On an H200 at the performance test's shape the
#   course's kernel went from 0.37 to 0.80 of the copy bandwidth (timed from CUDA graphs) with 64
#   keys per step and four programs per multiprocessor (0.68 with two: a gathered load waits for its
#   page number first, and more programs hide that wait). Nothing is
#   copied: the alternative, `k_pages[block_table]`, is a gather of the whole cache by torch, which
#   the tests refuse (and which would double the bytes read).
# - **Lengths on the device.** Each program loads `lengths[b]` itself and stops its slice there:
#   keys `lo .. min(lengths[b], lo + keys_per_split) - 1`, the last page masked at `lengths[b]`.
#   The host never reads `lengths` (`lengths.max().item()` or `.tolist()` would wait for the GPU,
#   a synchronisation each decoding step; the tests refuse values taken out of torch): it sizes the
#   slices from the largest length the table can hold, `block_table.shape[1] * PAGE_SIZE`, with
#   `keys_per_split` a whole number of `BLOCK_N` steps. A short sequence then has slices past its length:
#   they are empty, and write the neutral partial.
#
# The merge is exercise 1's `decode_merge_kernel`, unchanged: reuse it.
#
# ## Exercise 2: `paged_decode_partials_kernel` and `paged_decode_attention` (8 points)
#
# 1. `paged_decode_partials_kernel`: grid `(B * H_kv, SPLITS)`, exercise 1's program reading its
#    keys through the block table `BLOCK_N` at a time, stopping at `lengths[b]`; the same scratch.
# 2. `paged_decode_attention(q, k_pages, v_pages, block_table, lengths, scale=None, splits=None)`:
#    checks (`q` `(B, H, d)`; `k_pages` and `v_pages` of one shape `(num_pages, PAGE_SIZE, H_kv, d)`
#    with `q`'s `d`; `PAGE_SIZE` in `PAGE_SIZES`; `block_table` `(B, max_pages)` and `lengths`
#    `(B,)`, both int32; `H % H_kv == 0`; one dtype and device for `q`, `k_pages`, `v_pages`: else
#    `ValueError`), chooses `SPLITS` from `block_table.shape[1] * PAGE_SIZE` keys, for about four
#    programs per multiprocessor (or takes `splits`), launches your kernel and
#    `decode_merge_kernel`, and returns `o` `(B, H, d)` in `q`'s dtype. `decode_config(d, q.dtype,
#    paged=True)` gives `BLOCK_N`, `num_warps` and `num_stages`.

# %% nbgrader={"grade_id": "paged_decode_attention", "solution": true}
@triton.jit
def paged_decode_partials_kernel(q_ptr, k_ptr, v_ptr, table_ptr, lengths_ptr, m_ptr, l_ptr, acc_ptr,
                                 stride_qb, stride_qh, stride_qd,
                                 stride_kp, stride_ks, stride_kh, stride_kd,
                                 stride_vp, stride_vs, stride_vh, stride_vd,
                                 stride_tb, H, H_KV, GROUP, SPLITS, keys_per_split, scale,
                                 HEAD_DIM: tl.constexpr, PAGE_SIZE: tl.constexpr, BLOCK_G: tl.constexpr,
                                 BLOCK_N: tl.constexpr):
    """(m, l, acc) of the GROUP query heads of K/V head hk of sequence b over one slice of its paged
    keys, BLOCK_N at a time, stopping at lengths[b]: program (b * H_KV + hk, split)."""
    ### BEGIN SOLUTION
    pair = tl.program_id(0)
    split = tl.program_id(1)
    b = (pair // H_KV).to(tl.int64)
    hk = (pair % H_KV).to(tl.int64)
    g = tl.arange(0, BLOCK_G)
    live = g < GROUP
    heads = hk * GROUP + g
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + b * stride_qb + heads[:, None] * stride_qh + offs_d[None, :] * stride_qd,
                mask=live[:, None], other=0.0)
    acc = tl.zeros((BLOCK_G, HEAD_DIM), tl.float32)
    m = tl.full((BLOCK_G,), -float("inf"), tl.float32)
    l = tl.zeros((BLOCK_G,), tl.float32)
    qk_scale = scale * 1.4426950408889634
    length = tl.load(lengths_ptr + b)
    lo = split * keys_per_split
    hi = tl.minimum(length, lo + keys_per_split)  # below lo for a slice past the sequence: no step
    for start in range(lo, hi, BLOCK_N):
        n = start + tl.arange(0, BLOCK_N)
        inside = n < hi  # the last block is partial
        # each key's page, from the table (BLOCK_N entries, PAGE_SIZE of them alike), and its slot there
        page = tl.load(table_ptr + b * stride_tb + n // PAGE_SIZE, mask=inside, other=0).to(tl.int64)
        slot = n % PAGE_SIZE
        k_rows = k_ptr + page * stride_kp + slot * stride_ks + hk * stride_kh
        v_rows = v_ptr + page * stride_vp + slot * stride_vs + hk * stride_vh
        k = tl.load(k_rows[:, None] + offs_d[None, :] * stride_kd, mask=inside[:, None], other=0.0)
        v = tl.load(v_rows[:, None] + offs_d[None, :] * stride_vd, mask=inside[:, None], other=0.0)
        s = tl.where(inside[None, :], tl.dot(q, tl.trans(k)) * qk_scale, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp2(m - m_new)
        p = tl.exp2(s - m_new[:, None])
        l = l * alpha + tl.sum(p, axis=1)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m = m_new
    row = (b * H + heads) * SPLITS + split
    tl.store(m_ptr + row, m, mask=live)
    tl.store(l_ptr + row, l, mask=live)
    tl.store(acc_ptr + row[:, None] * HEAD_DIM + offs_d[None, :], acc, mask=live[:, None])
    ### END SOLUTION


def paged_decode_attention(q: torch.Tensor, k_pages: torch.Tensor, v_pages: torch.Tensor, block_table: torch.Tensor,
                           lengths: torch.Tensor, scale=None, splits=None) -> torch.Tensor:
    """o (B, H, d) in q's dtype: one query per (sequence, head) against its paged cache (pages
    (num_pages, PAGE_SIZE, H_kv, d), found through block_table (B, max_pages), lengths (B,) on the
    device), by paged_decode_partials_kernel and decode_merge_kernel."""
    ### BEGIN SOLUTION
    if q.dim() != 3 or k_pages.dim() != 4 or v_pages.dim() != 4:
        raise ValueError("q must be (B, H, d) and k_pages, v_pages (num_pages, PAGE_SIZE, H_kv, d)")
    B, H, d = q.shape
    num_pages, page_size, H_kv = k_pages.shape[:3]
    if v_pages.shape != k_pages.shape or k_pages.shape[3] != d:
        raise ValueError(f"k_pages and v_pages must be (num_pages, PAGE_SIZE, H_kv, d) with q's d: q is "
                         f"{tuple(q.shape)}, k_pages {tuple(k_pages.shape)}, v_pages {tuple(v_pages.shape)}")
    if page_size not in PAGE_SIZES:
        raise ValueError(f"pages of {page_size} tokens are not supported: PAGE_SIZE must be one of {PAGE_SIZES}")
    if block_table.dim() != 2 or block_table.shape[0] != B or block_table.dtype != torch.int32:
        raise ValueError(f"block_table must be a (B, max_pages) int32 tensor with B = {B}")
    if lengths.shape != (B,) or lengths.dtype != torch.int32:
        raise ValueError(f"lengths must be a ({B},) int32 tensor")
    if H_kv == 0 or H % H_kv:
        raise ValueError(f"{H} query heads cannot be grouped over {H_kv} K/V heads: H must be a multiple of H_kv")
    if not (q.dtype == k_pages.dtype == v_pages.dtype) or not (q.device == k_pages.device == v_pages.device):
        raise ValueError("q, k_pages and v_pages must share a dtype and a device")
    if d not in HEAD_DIMS:
        raise ValueError(f"head dim {d} is not supported: the kernel takes {HEAD_DIMS}")
    config = decode_config(d, q.dtype, paged=True)
    blocks = triton.cdiv(block_table.shape[1] * page_size, config["BLOCK_N"])  # of the longest sequence the table holds
    if splits is None:
        splits = min(triton.cdiv(4 * multiprocessors(), B * H_kv), blocks)
    splits = max(1, splits)
    blocks_per_split = triton.cdiv(blocks, splits)
    if splits <= blocks:
        splits = triton.cdiv(blocks, blocks_per_split)
    G = H // H_kv
    m = torch.empty((B, H, splits), dtype=torch.float32, device=q.device)
    l = torch.empty((B, H, splits), dtype=torch.float32, device=q.device)
    acc = torch.empty((B, H, splits, d), dtype=torch.float32, device=q.device)
    o = torch.empty((B, H, d), dtype=q.dtype, device=q.device)
    scale = d ** -0.5 if scale is None else scale
    paged_decode_partials_kernel[(B * H_kv, splits)](
        q, k_pages, v_pages, block_table, lengths, m, l, acc, *q.stride(), *k_pages.stride(), *v_pages.stride(),
        block_table.stride(0), H, H_kv, G, splits, blocks_per_split * config["BLOCK_N"], scale, HEAD_DIM=d,
        PAGE_SIZE=page_size, BLOCK_G=max(16, triton.next_power_of_2(G)), **config)
    decode_merge_kernel[(B * H,)](m, l, acc, o, *o.stride(), H, splits, HEAD_DIM=d,
                                  BLOCK_S=triton.next_power_of_2(splits))
    return o
    ### END SOLUTION


# %% nbgrader={"grade_id": "paged_checks", "locked": true}
# The course's helpers for the tests of this lesson (read-only: grading restores them).
def paged_hint(lengths, page_size, H, H_kv, splits):
    hints = []
    if any(n % page_size for n in lengths):
        hints.append(f"lengths {lengths} end inside a page of {page_size}: are the slots of the last page at "
                     "start + slot >= lengths[b] masked (loaded as 0, scores -inf)? They hold other tokens' keys.")
    if len(set(lengths)) > 1:
        hints.append("the sequences have different lengths: does each program load lengths[b] of its own sequence "
                     "and stop its slice there?")
    if H != H_kv:
        hints.append(f"{H} query heads over {H_kv} K/V heads: does the program read K/V head hk of every page for "
                     "the query heads hk * GROUP .. hk * GROUP + GROUP - 1?")
    hints.append("is the page of key n read from block_table[b, n // PAGE_SIZE] (the pages are shuffled), at "
                 "page * stride_kp + (n % PAGE_SIZE) * stride_ks + hk * stride_kh?")
    return " ".join(hints)


def run_paged(lengths, H, H_kv, d, page_size=16, dtype=torch.float32, splits=None, shuffle=True):
    """paged_decode_attention on fresh pages with guarded allocations and counted launches: kernels
    computed o, with no copy of the cache, and it is right."""
    q, k_pages, v_pages, table, lens = paged_inputs(lengths, H, H_kv, d, page_size, dtype, shuffle=shuffle)
    what = (f"paged_decode_attention on lengths {lengths}, pages of {page_size}, (H, H_kv, d) = ({H}, {H_kv}, {d}), "
            f"{str(dtype).removeprefix('torch.')}" + (f", splits={splits}" if splits is not None else ""))
    untouched = [(t, t.clone()) for t in (q, k_pages, v_pages, table, lens)]
    with guarded_allocations(), count_launches() as launches:
        o = call_answer(paged_decode_attention, q, k_pages, v_pages, table, lens, splits=splits)
    expect_launched(launches, what, o)
    check_decode(o, reference_paged_decode(q, k_pages, v_pages, table, lens), what, dtype,
                 paged_hint(lengths, page_size, H, H_kv, splits), untouched)


def paged_refusal(what, q, k_pages, v_pages, table, lengths):
    expect_refusal(paged_decode_attention, what, q, k_pages, v_pages, table, lengths)


# %% [markdown]
# The test runs your paged kernel on 3 sequences of lengths 5, 40 and 17 (each ending inside a page
# of 16) with 4 query heads over 2 K/V heads, pages shuffled in the pool; with one slice and with
# many; multi-query attention on pages of 32; `d = 128`; every dtype `tl.dot` takes here; and checks
# that a page of 12 tokens is refused.

# %% nbgrader={"grade": true, "grade_id": "test_paged_decode", "locked": true, "points": 3}
run_paged([5, 40, 17], 4, 2, 64)
run_paged([5, 40, 17], 4, 2, 64, splits=1)
run_paged([5, 40, 17], 4, 2, 64, splits=3)
run_paged([33, 64], 8, 1, 32, page_size=32)
run_paged([20, 9], 2, 2, 128)
for dtype in decode_dtypes():
    run_paged([30, 3], 4, 2, 64, dtype=dtype)
q, k_pages, v_pages, table, lengths = paged_inputs([5, 7], 2, 1, 32, 16)
paged_refusal("pages of 12 tokens", q, k_pages[:, :12], v_pages[:, :12], table, lengths)
print("paged_decode_attention is right on sequences of different lengths, shuffled pages, partial last pages, "
      "one slice and many, in", ", ".join(str(t).removeprefix("torch.") for t in decode_dtypes()))

# %% nbgrader={"grade": true, "grade_id": "test_paged_decode_hidden", "locked": true, "points": 5}
# Hidden tests check paged_decode_attention on more lengths, pages, groups and head dims when your
# notebook is graded.
### BEGIN HIDDEN TESTS
run_paged([1], 4, 1, 64)
run_paged([1, 1, 1], 2, 2, 32)
run_paged([2, 3, 5, 7], 8, 4, 64)  # primes, all inside the first page
run_paged([13, 31, 47], 4, 4, 64, page_size=32)
run_paged([200, 3, 1, 9], 4, 2, 64)  # one long sequence among short ones: its slices only are full
run_paged([48, 16, 32], 8, 8, 32, shuffle=False)  # whole pages, in order
for H, H_kv in [(4, 4), (8, 2), (8, 1), (16, 2)]:  # groups 1, 4, 8 (MQA) and 8
    run_paged([19, 44], H, H_kv, 64)
for d in (16, 32, 128):
    run_paged([25, 50], 4, 1, d)
for splits in (2, 5, 16):
    run_paged([70, 6], 4, 2, 32, splits=splits)
for dtype in decode_dtypes():
    run_paged([61, 12, 100], 8, 2, 128, page_size=64, dtype=dtype)
q, k_pages, v_pages, table, lengths = paged_inputs([5, 7], 2, 1, 32, 16)
paged_refusal("a block table of int64", q, k_pages, v_pages, table.long(), lengths)
paged_refusal("lengths of another batch", q, k_pages, v_pages, table, lengths[:1])
paged_refusal("3 query heads over 2 K/V heads", rand(2, 3, 32), rand(4, 16, 2, 32), rand(4, 16, 2, 32), table, lengths)
paged_refusal("pages of head dim 64 for q of 32", q, rand(4, 16, 1, 64), rand(4, 16, 1, 64), table, lengths)
print("paged_decode_attention passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ### Question Q (1 point)
#
# With the slices sized from `block_table.shape[1] * PAGE_SIZE`, a sequence of 20 tokens in a batch
# whose table holds 512 pages gets slices that lie entirely past its length: their programs run no
# step of their loop. What must such a program write for its rows, so that the merge gives the
# right `o` and no NaN?
#
# - **a.** Nothing: it returns early, and the merge skips its slice because the scratch was made
#   with `torch.empty`, which holds zeros.
# - **b.** `m = 0`, `l = 0`, `acc = 0`: zeros add nothing to either sum.
# - **c.** `m = -inf`, `l = 0`, `acc = 0`: the merge weighs it `exp2(-inf - m*) = 0`, so it adds
#   nothing, and `m*` (the largest `m`) is a real slice's, since every sequence has a key.
# - **d.** `m = -inf`, `l = 1`, `acc = 0`: `l` must not be 0, or the merge divides by zero.
#
# Set `answer_empty_slice` to one letter in the cell below.

# %% nbgrader={"grade_id": "q_empty_slice", "solution": true}
# Replace the two lines below with one line: answer_empty_slice = "<your letter>"
### BEGIN SOLUTION
answer_empty_slice = "c"  # one of "a", "b", "c", "d"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_q_empty_slice", "locked": true, "points": 1}
check_choice(globals().get("answer_empty_slice"), "answer_empty_slice")
print("Your answer is recorded; it is checked when your notebook is graded.")
### BEGIN HIDDEN TESTS
check_choice(answer_empty_slice, "answer_empty_slice", expected="c",
             why="torch.empty holds whatever was in memory, and m = 0 raises m* above the real maxima when every "
                 "score is negative (and with l = 1 the sum is wrong): m = -inf, l = 0, acc = 0 gets the weight 0.")
### END HIDDEN TESTS

# %% [markdown]
# ## 4. Weights in 4 bits
#
# A decoding step also reads every weight of the model, once per step, to multiply it with a few
# rows of activations: `x @ W` with `x` of shape `(M, K)`, `M` the number of sequences in the batch
# (1 to 16 is typical), and `W` `(K, N)`. In fp16, `W` of a 8192 x 8192 layer is 134 MB; reading it
# is the whole cost. **Weight-only quantisation** (GPTQ, AWQ: "W4A16") stores `W` in 4 bits and
# keeps the activations in 16: four times fewer bytes to read, at the price of expanding each weight
# inside the kernel.
#
# The format, per **group** of `group_size` consecutive rows of `K` (128 is usual), per column:
# an integer `q[k, n]` in `0 .. 15`, a scale (fp16) and a zero point (an integer, stored in fp16, as
# GPTQ's and AWQ's are):
#
# `W[k, n] = (q[k, n] - zeros[k // group_size, n]) * scales[k // group_size, n]`.
#
# Two 4-bit numbers share a byte: `packed` is `(K // 2, N)` uint8, row `i` holding `q[2i, n]` in its
# low nibble and `q[2i + 1, n]` in its high nibble: `packed[i, n] = q[2i, n] | (q[2i + 1, n] << 4)`.
# The course's `pack_int4` and `dequantize` below spell it out; the tests use them.

# %% nbgrader={"grade_id": "int4_reference", "locked": true}
# The format and the reference (read-only: grading restores them).
def pack_int4(q):
    """(K // 2, N) uint8 from (K, N) integers in 0 .. 15: rows 2i (low nibble) and 2i + 1 (high nibble)
    of q share byte i of each column."""
    q = q.to(torch.uint8)
    return q[0::2] | (q[1::2] << 4)


def dequantize(packed, scales, zeros, group_size):
    """W (K, N) in fp32: W[k, n] = (q[k, n] - zeros[k // group_size, n]) * scales[k // group_size, n]."""
    low, high = (packed & 15).float(), (packed >> 4).float()
    q = torch.stack([low, high], dim=1).reshape(2 * packed.shape[0], packed.shape[1])  # rows 2i, 2i + 1
    group = torch.arange(q.shape[0], device=packed.device) // group_size
    return (q - zeros.float()[group]) * scales.float()[group]


@triton.jit
def nibbles_minus_zero(nibbles, zeros, dtype: tl.constexpr):
    """q - zero in `dtype`, exactly, for nibbles q (uint8, 0 .. 15) and integer zero points, without a
    conversion instruction: the nibble is OR'ed into the mantissa of a power of two whose mantissa
    step is 1 (1024 in fp16, 128 in bf16, 2^23 in fp32), the bits read as that float (a bitcast, no
    instruction), and the power plus the zero point subtracted in one subtraction (exact: both are
    integers where the float's step is 1). An int-to-float conversion (`.to(tl.float16)`) runs in a
    unit with an eighth of the multiprocessor's throughput, which then bounds the whole product."""
    if dtype == tl.float16:
        return (nibbles.to(tl.uint16) | 0x6400).to(tl.float16, bitcast=True) - (zeros + 1024.0)
    elif dtype == tl.bfloat16:
        return (nibbles.to(tl.uint16) | 0x4300).to(tl.bfloat16, bitcast=True) - (zeros + 128.0)
    else:
        return (nibbles.to(tl.uint32) | 0x4B000000).to(tl.float32, bitcast=True) - (zeros + 8388608.0)


def reference_int4_linear(x, packed, scales, zeros, group_size, nibbles="low first", zero_point=True):
    """x @ W by torch in fp32, returned in x's dtype (or the product a mistake gives, to name it:
    nibbles="high first" swaps the two nibbles of a byte, zero_point=False leaves the zeros out)."""
    if nibbles != "low first":
        packed = (packed >> 4) | (packed << 4)
    w = dequantize(packed, scales, zeros if zero_point else torch.zeros_like(zeros), group_size)
    return (x.float() @ w).to(x.dtype)


def int4_inputs(M, K, N, group_size, dtype=torch.float16, x_layout="contiguous"):
    """x (M, K) in guard bands ("contiguous", or "strided": every other column of a wider tensor), and
    packed (K // 2, N) uint8, scales and zeros (K // group_size, N) fp16 of random 4-bit weights: scales
    in 0.005 .. 0.025, zero points integers in 4 .. 11, as a quantiser makes them."""
    x = rand(M, 2 * K, dtype=dtype)[:, ::2] if x_layout == "strided" else rand(M, K, dtype=dtype)
    q = torch.randint(0, 16, (K, N), device=DEVICE)
    scales = (torch.rand(K // group_size, N, device=DEVICE) * 0.02 + 0.005).to(torch.float16)
    zeros = torch.randint(4, 12, (K // group_size, N), device=DEVICE).to(torch.float16)
    return x, pack_int4(q), scales, zeros


def int4_tolerance(K, dtype=torch.float16):
    """(atol, rtol). Each weight is rounded to x's dtype before tl.dot (half a step of fp16 is 2^-12 of
    it; bf16's steps are 8 times coarser), the products summed in fp32 over K rows: 4e-3 * sqrt(K / 256)
    absolute in fp16 (about twenty times the error seen), 8 times that in bf16; fp32 like fp16 (TF32)."""
    return 4e-3 * max(1.0, (K / 256) ** 0.5) * (8 if dtype == torch.bfloat16 else 1), 1e-2


print("pack_int4 and dequantize on 4 x 2 weights:")
q = torch.tensor([[0, 15], [1, 14], [2, 13], [3, 12]], device=DEVICE)
packed = pack_int4(q)
print("  q =", q.tolist(), "-> packed bytes", packed.tolist(), "(row i: q[2i] + 16 q[2i + 1])")
scale, zero = torch.full((1, 2), 0.5, device=DEVICE), torch.full((1, 2), 8.0, device=DEVICE)
print("  dequantize with scale 0.5, zero 8:", dequantize(packed, scale, zero, 4).tolist())
del q, packed, scale, zero


# %% [markdown]
# ### The kernel
#
# It is lesson 6's matmul with a different way of reading `B`. A program owns `BLOCK_M` rows of `x`
# (all of them, at decoding sizes: `BLOCK_M = 16`, masked at `M`) and `BLOCK_N` columns of the
# output, and walks `K` `BLOCK_K` rows at a time. Per step, for rows `k0 .. k0 + BLOCK_K - 1`:
#
# - load `BLOCK_K // 2` rows of `packed` (`(BLOCK_K // 2, BLOCK_N)` bytes, masked on `N`), and split
#   them: `low = packed & 0xF` (the even rows of `W`), `high = packed >> 4` (the odd rows);
# - the step lies in one group (`BLOCK_K` divides `group_size`; `int4_config` sees to it), so load
#   one row of `scales` and one of `zeros`, at `k0 // group_size`, and expand:
#   `w_low = (low - zeros) * scales`, then `w_high`, in `x`'s dtype for `tl.dot` (in fp32 with a
#   cast at the end they are the same weights in fp16, and slower);
# - **no interleave**: instead of putting the even and odd rows back in order, take `x`'s even
#   columns `k0, k0 + 2, ...` and its odd columns `k0 + 1, k0 + 3, ...` apart and accumulate
#   `acc = tl.dot(x_even, w_low, acc)`, then `acc = tl.dot(x_odd, w_high, acc)`: the same sum over
#   `k`, in another order;
# - accumulate in fp32.
#
# **Where the time goes.** That kernel is correct, and on an H200 it is slower than cuBLAS reading
# four times the bytes. At decoding's `M` the tensor cores idle; what bounds it is the expansion,
# 67 million weights at `K = N = 8192`, each a few instructions, of which the int-to-float
# conversion `(packed & 0xF).to(...)` runs in a unit with an eighth of the multiprocessor's
# throughput, and the waits on memory between them. Three changes, each measured at `M = 16`,
# `K = N = 8192` (CUDA graphs, the same blocks: 256 columns, 128 rows), the first two on an H200
# (cuBLAS on fp16 weights 38 us), the third on an H100 (cuBLAS 46 us):
#
# 1. **No conversion instruction**: `nibbles_minus_zero(nibbles, zeros, dtype)` (the course's
#    helper, in the cell above) ORs the nibble into the mantissa of 1024 (fp16: the float whose
#    mantissa step is 1) and reads the bits as a float, `1024 + q`, exactly, in integer operations.
#    44 us to 35 us. It then subtracts `1024 + zero` in one subtraction, where `(q - zero)` written
#    out costs two: on an H100, with step 3 and the split-K sum below in place, 23.0 us to 21.6.
# 2. **The weights as `tl.dot`'s first operand**: compute the transposed tile, `out^T = W^T x^T`,
#    an accumulator `(BLOCK_N, BLOCK_M)` from `tl.dot(w_low_t, xt_even, acc)` with `w_low_t`
#    `(BLOCK_N, BLOCK_K // 2)` (load `packed` with the offsets swapped) and `xt_even`
#    `(BLOCK_K // 2, BLOCK_M)`. Hopper's tensor cores (`wgmma`) can take the first operand from
#    registers, where the weights were just expanded; the second must be in shared memory, so in the
#    first orientation every expanded weight is written there and read back. 35 us to 28 us, 1.36
#    times cuBLAS's speed.
# 3. **`x` in one contiguous load, split in registers.** With `num_stages`, Triton copies a load
#    into shared memory a few steps ahead (`cp.async`), so that the step that uses it does not wait
#    on memory. A copy moves 4, 8 or 16 contiguous bytes per thread, and `x`'s even columns are
#    2-byte values 4 bytes apart: the compiled kernel copies `packed`, `scales` and `zeros` ahead
#    but leaves the two strided loads of `x` in the loop, and every step waits for them. Load
#    columns `k0 .. k0 + BLOCK_K - 1` as one `(BLOCK_K, BLOCK_M)` tile instead, and take it apart:
#    `xt.reshape(BLOCK_K // 2, 2, BLOCK_M).permute(0, 2, 1).split()` gives the even rows and the
#    odd rows (`tl.split` cuts a last dimension of 2 in two). On an H100, 28.5 us to 24.2 us (at
#    `M = 1` the loads of `x` are one row and the change is small: 11.6 us to 11.4 at 4096).
#
# The tests pass without any of the three; the course's answer does all three.
#
# **Split-K.** At `M <= 16` there is one block of rows, so the grid over `N` alone is `N / BLOCK_N`
# programs: 32 for `N = 8192` and `BLOCK_N = 256`, on 132 multiprocessors. Each also walks the whole
# of `K`. Cut `K` into `SPLIT_K` slices too, a third grid dimension: each program adds up its slice
# of `K` into an fp32 **partial** `(SPLIT_K, M, N)`, and a small second kernel sums the `SPLIT_K`
# partials of each output element and casts the sum to `x`'s dtype. It loads all the partials of its
# `BLOCK` outputs at once, a `(SPLITS, BLOCK)` tile (`SPLITS` the power of two at or above `SPLIT_K`,
# the rows past `SPLIT_K` masked), and sums them with `tl.sum(parts, axis=0)`: one wait on memory,
# where a loop over the splits waits `SPLIT_K` times, one after another. Take about 4096 partials a
# program (`BLOCK = 4096 // SPLITS`: of 1024 and 4096, 4096 was as fast or faster at four of five
# shapes). On an H100 (one run, before step 1's single subtraction) the sum then took 1.7 us of the
# call at `M = 1`, `K = N = 4096` (8.7 us in all) and 1.9 us at `M = 16`, `K = N = 8192` (23.0 us),
# where the loop took 4.3 and 3.1. (The other way is `tl.atomic_add` into a zeroed fp32 buffer, then
# a cast: fewer bytes, but the order of additions changes from run to run.) Choose `SPLIT_K` so that
# the grid fills the GPU about twice, as in exercise 1, with each slice a whole number of `BLOCK_K`
# steps: `k_per_split = cdiv(cdiv(K, SPLIT_K), BLOCK_K) * BLOCK_K`.
# The partials are `SPLIT_K * M * N * 4` bytes, small beside the weights at decoding's `M`.
#
# **What is refused.** `K` must be a multiple of `group_size` (and so even): `packed` has `K // 2`
# rows and the scales `K // group_size`, and the formats that use this layout (GPTQ's, AWQ's) make
# every group whole. A `K` that is not is refused with a `ValueError` whose message says that `K`
# is not a multiple of `group_size`, rather than read past the end of the scales.
#
# ## Exercise 3: `int4_matmul_kernel`, `int4_reduce_kernel` and `int4_linear` (8 points)
#
# 1. `int4_matmul_kernel`: grid `(cdiv(N, BLOCK_N), cdiv(M, BLOCK_M), SPLIT_K)`, the program above,
#    storing its `(BLOCK_M, BLOCK_N)` partial in fp32 at `part[split, m, n]` (a contiguous
#    `(SPLIT_K, M, N)` tensor), masked at `M` and `N`.
# 2. `int4_reduce_kernel`: `out[m, n] = sum over split of part[split, m, n]` in `out`'s dtype, the
#    partials of a block of outputs loaded as one `(SPLITS, BLOCK)` tile.
# 3. `int4_linear(x, packed, scales, zeros, group_size, split_k=None)`: checks (`x` 2-D `(M, K)`,
#    16-bit or fp32; `packed` `(K // 2, N)` uint8; `scales` and `zeros` `(K // group_size, N)`;
#    `group_size` in `GROUP_SIZES`; `K` a multiple of `group_size`: else `ValueError`), takes
#    `int4_config(group_size, x.dtype)`, chooses `SPLIT_K` (or takes `split_k`), allocates the partials and
#    `out` `(M, N)` in `x`'s dtype with `torch.empty`, launches both kernels and returns `out`.
#    `x` may have any strides.

# %% nbgrader={"grade_id": "int4_linear", "solution": true}
@triton.jit
def int4_matmul_kernel(x_ptr, w_ptr, s_ptr, z_ptr, part_ptr, M, N, K, k_per_split,
                       stride_xm, stride_xk, stride_wk, stride_wn, stride_sk, stride_sn, stride_zk, stride_zn,
                       GROUP_SIZE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       BLOCK_K: tl.constexpr):
    """The fp32 partial x[:, slice] @ W[slice, :] of BLOCK_M rows and BLOCK_N columns, W expanded from
    4 bits step by step: program (column block, row block, split)."""
    ### BEGIN SOLUTION
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    split = tl.program_id(2)
    dtype = x_ptr.dtype.element_ty
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    half = tl.arange(0, BLOCK_K // 2)
    rows_ok = offs_m[None, :] < M
    cols_ok = offs_n < N
    x_cols = x_ptr + offs_m[None, :].to(tl.int64) * stride_xm
    # The transposed product, out^T = W^T x^T: the expanded weights are tl.dot's first operand, which
    # Hopper's tensor cores can take from registers (the second must be in shared memory).
    acc = tl.zeros((BLOCK_N, BLOCK_M), tl.float32)
    lo = split * k_per_split
    hi = tl.minimum(K, lo + k_per_split)
    for k0 in range(lo, hi, BLOCK_K):
        # x's columns k0 .. k0 + BLOCK_K - 1 in one contiguous load (copied a few steps ahead), split
        # in registers: the even ones meet the low nibbles (rows 2i of W), the odd ones the high
        xt = tl.load(x_cols + (k0 + tl.arange(0, BLOCK_K))[:, None].to(tl.int64) * stride_xk, mask=rows_ok,
                     other=0.0)
        xt_even, xt_odd = xt.reshape(BLOCK_K // 2, 2, BLOCK_M).permute(0, 2, 1).split()
        packed_t = tl.load(w_ptr + (k0 // 2 + half)[None, :].to(tl.int64) * stride_wk + offs_n[:, None] * stride_wn,
                           mask=cols_ok[:, None], other=0)
        group = k0 // GROUP_SIZE
        s = tl.load(s_ptr + group * stride_sk + offs_n * stride_sn, mask=cols_ok, other=0.0).to(dtype)
        z = tl.load(z_ptr + group * stride_zk + offs_n * stride_zn, mask=cols_ok, other=0.0).to(dtype)
        w_low = nibbles_minus_zero(packed_t & 0xF, z[:, None], dtype) * s[:, None]
        w_high = nibbles_minus_zero(packed_t >> 4, z[:, None], dtype) * s[:, None]
        acc = tl.dot(w_low, xt_even, acc)
        acc = tl.dot(w_high, xt_odd, acc)
    part = part_ptr + (split * M + offs_m[None, :]).to(tl.int64) * N + offs_n[:, None]
    tl.store(part, acc, mask=rows_ok & cols_ok[:, None])
    ### END SOLUTION


@triton.jit
def int4_reduce_kernel(part_ptr, out_ptr, total, SPLIT_K, SPLITS: tl.constexpr, BLOCK: tl.constexpr):
    """out (contiguous, `total` elements) = the sum of the SPLIT_K partials, cast to out's dtype: the
    partials of BLOCK outputs loaded at once, SPLITS (a power of two, at least SPLIT_K) rows."""
    ### BEGIN SOLUTION
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    splits = tl.arange(0, SPLITS)
    inside = offs < total
    parts = tl.load(part_ptr + splits[:, None].to(tl.int64) * total + offs[None, :],
                    mask=(splits[:, None] < SPLIT_K) & inside[None, :], other=0.0)
    tl.store(out_ptr + offs, tl.sum(parts, axis=0).to(out_ptr.dtype.element_ty), mask=inside)
    ### END SOLUTION


def int4_linear(x: torch.Tensor, packed: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor, group_size: int,
                split_k=None) -> torch.Tensor:
    """x @ W (M, N) in x's dtype, W (K, N) given in 4 bits (pack_int4's layout) with a scale and a zero
    point per group of group_size rows, by int4_matmul_kernel (split-K) and int4_reduce_kernel."""
    ### BEGIN SOLUTION
    if x.dim() != 2 or packed.dim() != 2:
        raise ValueError(f"x must be (M, K) and packed (K // 2, N), got {x.dim()}-D and {packed.dim()}-D")
    M, K = x.shape
    N = packed.shape[1]
    if group_size not in GROUP_SIZES:
        raise ValueError(f"group_size {group_size} is not supported: it must be one of {GROUP_SIZES}")
    if K % group_size:
        raise ValueError(f"K = {K} is not a multiple of group_size = {group_size}: every group of rows needs its "
                         "scales and zeros")
    if packed.dtype != torch.uint8 or packed.shape != (K // 2, N):
        raise ValueError(f"packed must be ({K // 2}, N) uint8 (two 4-bit weights per byte), got "
                         f"{tuple(packed.shape)} {packed.dtype}")
    if scales.shape != (K // group_size, N) or zeros.shape != scales.shape:
        raise ValueError(f"scales and zeros must be ({K // group_size}, {N}), got {tuple(scales.shape)} and "
                         f"{tuple(zeros.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"x must be fp16, bf16 or fp32, got {x.dtype}")
    config = int4_config(group_size, x.dtype)
    block_k = config["BLOCK_K"]
    programs = triton.cdiv(N, config["BLOCK_N"]) * triton.cdiv(M, config["BLOCK_M"])
    if split_k is None:
        split_k = min(triton.cdiv(2 * multiprocessors(), programs), K // block_k)
    split_k = max(1, min(split_k, K // block_k))
    k_per_split = triton.cdiv(triton.cdiv(K, split_k), block_k) * block_k
    split_k = triton.cdiv(K, k_per_split)
    part = torch.empty((split_k, M, N), dtype=torch.float32, device=x.device)
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(N, config["BLOCK_N"]), triton.cdiv(M, config["BLOCK_M"]), split_k)
    int4_matmul_kernel[grid](x, packed, scales, zeros, part, M, N, K, k_per_split, *x.stride(), *packed.stride(),
                             *scales.stride(), *zeros.stride(), GROUP_SIZE=group_size, **config)
    splits = triton.next_power_of_2(split_k)
    block = max(32, (4096 if ON_GPU else 256) // splits)  # about 4096 partials a program on a GPU
    int4_reduce_kernel[(triton.cdiv(M * N, block),)](part, out, M * N, split_k, SPLITS=splits, BLOCK=block)
    return out
    ### END SOLUTION


# %% nbgrader={"grade_id": "int4_checks", "locked": true}
# The course's helpers for the tests of this lesson (read-only: grading restores them).
def int4_hint(M, K, N, group_size, x):
    hints = []
    if M % 16:
        hints.append(f"M = {M}: are the rows of x past M masked (other=0.0) and never stored?")
    if N % 32:
        hints.append(f"N = {N} is not a multiple of the blocks: are the columns past N masked in packed, scales, "
                     "zeros and the store?")
    if not x.is_contiguous():
        hints.append(f"x has strides {x.stride()}: are its addresses computed from stride_xm and stride_xk?")
    hints.append("is row k0 + 2i of W the low nibble of packed row k0 // 2 + i and row k0 + 2i + 1 its high "
                 "nibble, each step's scales and zeros those of group k0 // group_size, and every split's partial "
                 "summed once?")
    return " ".join(hints)


def check_int4(out, x, packed, scales, zeros, group_size, what, untouched=()):
    """Compare out with reference_int4_linear, naming the nibble order and the zero point if one of
    the usual mistakes explains the result."""
    M, K = x.shape
    N = packed.shape[1]
    atol, rtol = int4_tolerance(K, x.dtype)
    expected = reference_int4_linear(x, packed, scales, zeros, group_size)
    if isinstance(out, torch.Tensor) and out.shape == expected.shape and out.dtype == expected.dtype:
        for wrong, message in [
                (dict(nibbles="high first"), "the nibbles are swapped: out is x @ W with row 2i of W taken from the "
                                             "high nibble. Row 2i is the LOW nibble of byte i (packed & 0xF), row "
                                             "2i + 1 the high one (packed >> 4)."),
                (dict(zero_point=False), "the zero point is left out: out is x @ (q * scales). W = (q - zeros[k // "
                                         "group_size]) * scales[k // group_size], q the 4-bit integer in 0 .. 15.")]:
            mistaken = reference_int4_linear(x, packed, scales, zeros, group_size, **wrong)
            if torch.allclose(out.float(), mistaken.float(), atol=atol, rtol=rtol):
                raise CheckFailed(f"{what}: {message}")
    check_output(out, expected, name=f"{what}: out", inputs=untouched, atol=atol, rtol=rtol,
                 hint=int4_hint(M, K, N, group_size, x))


def run_int4(M, K, N, group_size, dtype=torch.float16, x_layout="contiguous", split_k=None):
    """int4_linear on fresh inputs, with guarded allocations and counted launches: kernels computed
    out, from the packed weights, and it is right."""
    x, packed, scales, zeros = int4_inputs(M, K, N, group_size, dtype, x_layout)
    what = (f"int4_linear on (M, K, N) = ({M}, {K}, {N}), group_size {group_size}, "
            f"{str(dtype).removeprefix('torch.')}, {x_layout} x" + (f", split_k={split_k}" if split_k else ""))
    untouched = [(t, t.clone()) for t in (x, packed, scales, zeros)]
    with guarded_allocations(), count_launches() as launches:
        out = call_answer(int4_linear, x, packed, scales, zeros, group_size, split_k=split_k)
    expect_launched(launches, what, out)
    check_int4(out, x, packed, scales, zeros, group_size, what, untouched)


def int4_refusal(what, M, K, N, group_size, message=None):
    """int4_linear on inputs whose K does not fit group_size must raise ValueError saying so."""
    x = rand(M, K, dtype=torch.float16)
    packed = torch.zeros(K // 2, N, dtype=torch.uint8, device=DEVICE)
    groups = -(-K // group_size)
    scales = torch.ones(groups, N, dtype=torch.float16, device=DEVICE)
    expect_refusal(int4_linear, what, x, packed, scales, torch.zeros_like(scales), group_size, error=ValueError,
                   message=message)


# %% [markdown]
# The test runs your `int4_linear` at `M = 1, 4, 16` on a `256 x 96` weight in groups of 64 and
# 128, with the split your function chooses, one split and four; a strided `x`; every 16-bit dtype
# `tl.dot` takes here; and checks that `K = 200` with groups of 64 is refused with a `ValueError`
# that says `K` is not a multiple of the group size.

# %% nbgrader={"grade": true, "grade_id": "test_int4_linear", "locked": true, "points": 3}
for M in (1, 4, 16):
    run_int4(M, 256, 96, 64)
run_int4(2, 256, 96, 128, split_k=1)
run_int4(2, 256, 96, 32, split_k=4)
run_int4(3, 128, 64, 64, x_layout="strided")
for dtype in int4_dtypes():
    run_int4(5, 256, 64, 64, dtype=dtype)
int4_refusal("K = 200 with groups of 64", 2, 200, 64, 64, message="multiple")
print("int4_linear is right at M = 1, 4, 16, in groups of 32, 64 and 128, with one split and several, in",
      ", ".join(str(t).removeprefix("torch.") for t in int4_dtypes()))

# %% nbgrader={"grade": true, "grade_id": "test_int4_linear_hidden", "locked": true, "points": 5}
# Hidden tests check int4_linear on more shapes, groups, splits and dtypes when your notebook is graded.
### BEGIN HIDDEN TESTS
for M in (1, 3, 16, 17):
    run_int4(M, 256, 80, 64)
for N in (1, 33, 100):  # not a multiple of any block
    run_int4(2, 128, N, 32)
for group_size in (32, 128, 256):
    run_int4(4, 512, 64, group_size)
for split_k in (2, 3, 16, 64):  # more splits than steps: the function keeps them whole
    run_int4(1, 256, 64, 32, split_k=split_k)
run_int4(17, 256, 48, 64, x_layout="strided")
for dtype in int4_dtypes():
    run_int4(16, 512, 96, 128, dtype=dtype)
int4_refusal("K = 129 (odd) with groups of 32", 1, 129, 32, 32, message="multiple")
int4_refusal("K = 320 with groups of 128", 1, 320, 32, 128, message="multiple")
x, packed, scales, zeros = int4_inputs(2, 128, 32, 64)
expect_refusal(int4_linear, "packed of int8", x, packed.to(torch.int8), scales, zeros, 64)
expect_refusal(int4_linear, "scales of another group size", x, packed, scales[:1], zeros[:1], 64)
expect_refusal(int4_linear, "group_size 48", x, packed, scales, zeros, 48)
print("int4_linear passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## Written answer W2 (3 points)

# %% [markdown] nbgrader={"grade": true, "grade_id": "written_int4", "points": 3, "solution": true}
# **Written answer W2 (3 points).** Take `x @ W` with `K = N = 8192`, weights in int4 (groups of
# 128, fp16 scales and zeros), activations in fp16, at `M = 1` and at `M = 16`. How many bytes does
# the kernel read, how many operations does it do, and what is the arithmetic intensity in each
# case? Why does the weight read set the time at both, and at about which `M` would the product
# become compute-bound on an H200 (990 TFLOP/s, about 4.8 TB/s), for int4 weights and for fp16
# weights? What work does the int4 kernel do that cuBLAS on fp16 weights does not, and when does it
# start to matter?
#
# ### BEGIN SOLUTION
# Bytes: the packed weights are 8192 x 8192 / 2 = 33.6 MB, scales and zeros 2 x 64 x 8192 x 2 bytes
# = 2.1 MB, x and the output 16 x 8192 x 2 bytes = 0.26 MB at M = 16 (16 KB at M = 1): about 36 MB
# either way. Operations: 2 M K N = 134 MFLOP at M = 1, 2.1 GFLOP at M = 16. Intensity: about
# 4 FLOP/byte at M = 1 and 60 at M = 16 (4M per byte of packed weight), both below the ridge of
# 990 / 4.8 = 206: the time is the weight read, about 36 MB / 4.2 TB/s = 8.5 us, the same at M = 1 and
# M = 16 (16 rows cost no more than one). int4 becomes compute-bound near M = 206 / 4 = about 50; fp16
# weights (2 bytes each, M FLOP/byte) near M = 200, but they read 134 MB, four times the time, so int4
# wins by up to 4x at small M. The extra work: unpacking and expanding every weight (shift, mask,
# convert, subtract, multiply: about 5 operations per weight, 67 M weights) on the ordinary
# arithmetic units, not the tensor cores, and independent of M; amortised over more rows as M grows,
# it competes with the bandwidth when M is large (and is why int4 kernels lose to fp16 cuBLAS in the
# prefill, at M in the thousands).
# ### END SOLUTION

# %% [markdown]
# ## 5. Against the bytes floor and against torch
#
# ## Exercise 4: both kernels measured (6 points)
#
# No new code. On compute capability 9.0 (H100, H200) the first test times your
# `paged_decode_attention` at `B = 4` sequences of 8192 tokens, `H = 32` query heads over `H_kv = 8`,
# `d = 128`, fp16, pages of 16 (shuffled), and torch's way (the pages gathered into a contiguous cache,
# then SDPA with a mask of the lengths, `torch_paged_decode`), in turns in the same notebook. It
# counts the bytes floor (K and V read once, `q` and `o`) and expects your kernel to reach
# **`DECODE_FRACTION` of the copy bandwidth** measured on this GPU and **`DECODE_VS_TORCH` times
# torch's speed** (3 points). The second times `int4_linear` at `M = 16`, `K = N = 8192`, groups of
# 128, against `torch.matmul` on the same weights in fp16 (cuBLAS), counting the packed weights,
# scales, zeros, `x` and the output, and compares with **`INT4_FRACTION` of the copy bandwidth** and
# **`INT4_VS_TORCH` times** cuBLAS's speed; it is advisory on every GPU for now (below), so its 3
# points are for a correct product that a Triton kernel computed. Elsewhere the tests print the
# numbers, say why they are not graded, and pass.
#
# What the course measured at these shapes, two ways. From CUDA graphs (`make bench`'s way: the
# GPU's time alone, no Python between launches), on an H200 (Triton 3.6, torch 2.11): paged decoding
# 40 us, 0.80 of the copy bandwidth (0.95 at 32768 tokens), where torch's gather + SDPA took 128 us;
# an earlier form of the int4 product 28 us, 1.36 times cuBLAS's speed on fp16 weights (38 us), at
# 0.30 of the copy bandwidth; on an H100, 0.85 and 0.96 of copy for decoding, 3.1x torch, and the
# int4 product as it is now (section 4's three changes) 21.4 us, 0.52 of copy, 2.1x cuBLAS (45.5 us).
# The tests time calls one by one instead, each lasting until the GPU is idle
# (so that a timed call does all the work it is credited for), and Python's checks, allocations and
# two launches per call count too. The tests' calibration, two runs on two H100s (`benchmarks/calibrate.py
# --only 10_inference --rounds 2`, docs/calibration.md):
#
# | answer | decoding: of copy, against torch | int4: of copy, against cuBLAS on fp16 |
# |---|---|---|
# | the course's kernels | 44-47%, 1.22-1.54x | 15-16%, 0.44-0.47x |
# | a second correct answer (atomic split-K, its own loops) | 50-53%, 1.34-1.68x | 14-15%, 0.43-0.51x |
# | the course's kernels, 64 slices per head / split-K of 16 | 51-52%, 1.26-1.78x | 16-18%, 0.48-0.61x |
# | the course's kernels, one slice per head (no split-KV) / no split-K | 19-20%, 0.52-0.68x | 9%, 0.26-0.30x |
#
# A rerun on another H100 (2026-12-07, after section 4's three changes to the int4 kernel): decoding
# 36-43% and 1.21-2.09x for the three correct answers, 19% and 0.65-0.88x without split-KV; int4 6-13%
# and 0.17-0.38x for all four, the course's kernel at 6-7% and 0.17-0.18x though it is now 1.4 times
# faster on the GPU alone. Timed call by call, the int4 product measures the host, which is why that
# test advises.
#
# The comparison with torch, timed in turns with yours and so on the same clock, is the test that
# separates: 0.9x, under the slowest correct answer (1.22x) and over the kernel without splits
# (0.68x). The fraction of copy is only a floor, 8%: the solutions notebook, run alone on a freshly
# started H200, once measured an earlier form of the course's kernel at 14% of copy (its
# calibration: 32%) while torch slowed as much, likely the multiprocessors' clock, which a kernel
# far from the roof follows and a copy does not.
#
# **The int4 test only advises, on every GPU**: at these sizes the bytes floor is 36 MB, 9 us at an
# H200's copy bandwidth; the course's kernel takes about 21 us and Python 40 to 80 us to check the
# arguments, allocate and launch two kernels, so a call timed on its own measures mostly the host.
# In the course's grader (`autograder demo` on the H200) the earlier kernel measured 5% of copy and
# 0.19x cuBLAS against 11% and 0.42x alone: what else the host was doing moved the grade. (Serving
# engines replay decoding steps from CUDA graphs for this reason.) It prints against 5% of copy and
# 0.2x cuBLAS. Read the int4 figures honestly. On the GPU alone (an H100, CUDA graphs, in turns) the
# course's kernel is 2.1 to 2.3 times cuBLAS's speed on fp16 weights at `K = N = 8192`, and even with
# it at 4096 (8.4 us against 9.0 at `M = 1`, 9.3 against 9.6 at `M = 16`, where both wait on latency
# more than on bytes). It reaches 0.52 to 0.55 of the copy bandwidth at 8192, where the bytes floor
# allows all of it; torch's own int4 kernel (tinygemm, hand-written CUDA with the weights re-tiled
# for the tensor cores) reaches 0.58 at `M = 1` and 0.14 at `M = 16`. What is left is in the
# expansion: its loop issues about four instructions per weight, with two 4-warp programs per
# multiprocessor (their registers allow no more) to hide each one's waits. Expanding eight nibbles
# with four 32-bit instructions (inline PTX, as production kernels do) measured no faster here:
# the waits, more than the instruction count, set the time. Decoding is close to the roof: 0.80 of
# the copy bandwidth at 8192 tokens, 0.95 at 32768.

# %% nbgrader={"grade_id": "speed_targets", "locked": true}
# The performance targets (read-only: grading restores them), on compute capability 9.0.
# Calibrated on an H100 (the table above, docs/calibration.md).
DECODE_FRACTION = 0.08  # of the copy bandwidth, on K, V, q and o read or written once
DECODE_VS_TORCH = 0.9  # times the speed of gathering the pages and SDPA
INT4_FRACTION = 0.05  # of the copy bandwidth, on the packed weights, scales, zeros, x and out
INT4_VS_TORCH = 0.2  # times the speed of torch.matmul on the weights in fp16 (cuBLAS)
DECODE_SHAPE = (4, 8192, 32, 8, 128, 16)  # B, tokens per sequence, H, H_kv, d, PAGE_SIZE: 128 MB of cache
INT4_SHAPE = (16, 8192, 8192, 128)  # M, K, N, group_size: 34 MB packed, 134 MB in fp16 for torch

# %% nbgrader={"grade": true, "grade_id": "test_decode_performance", "locked": true, "points": 3}
graded = graded_speed()
dtype = fast_dtype()
B, n, H, H_kv, d, page = DECODE_SHAPE if graded else (2, sized(1024, 64), 4, 2, 64, 16)
if not graded:
    print("Not graded here:", "the interpreter's times say nothing about a GPU." if not ON_GPU else
          f"compute capability {CAPABILITY[0]}.{CAPABILITY[1]}; the targets were set on 9.0 (H100, H200).")
run_paged([37, 5], 4, 2, 64, dtype=dtype)  # a short cache first: a missing mask is caught here
q, k_pages, v_pages, table, lengths = paged_inputs([n] * B, H, H_kv, d, page, dtype, spare_pages=0)
with count_launches() as launches:
    o = call_answer(paged_decode_attention, q, k_pages, v_pages, table, lengths)
expect_launched(launches, "paged_decode_attention", o)
del o
with exclusive_gpu():  # under the grader, no other notebook runs on the GPU meanwhile
    atol, rtol = decode_tolerance(dtype)
    # block_table and lengths stay fixed (the timer refills floating-point inputs only): the closures hold them
    ours, theirs = bench_against(
        lambda q, kp, vp: call_answer(paged_decode_attention, q, kp, vp, table, lengths),
        lambda q, kp, vp: torch_paged_decode(q, kp, vp, table, lengths), q, k_pages, v_pages,
        expect=lambda q, kp, vp: reference_paged_decode(q, kp, vp, table, lengths), atol=atol, rtol=rtol)
    nbytes = (k_pages.numel() + v_pages.numel() + 2 * q.numel()) * q.element_size() + table.numel() * 4
    what = (f"paged_decode_attention on B = {B} sequences of {n} tokens, (H, H_kv, d) = ({H}, {H_kv}, {d}), pages "
            f"of {page}, {str(dtype).removeprefix('torch.')}")
    print(f"{what}: {ours * 1e3:.1f} us ({gbps(nbytes, ours):.0f} GB/s on the bytes floor), torch's gather + SDPA "
          f"{theirs * 1e3:.1f} us: {theirs / ours:.2f}x torch's.")
    check_fraction(gbps(nbytes, ours), DECODE_FRACTION, what,
                   "Does each program read its slice of pages once, for all the query heads of its group (rows of "
                   "one tl.dot), and are there enough slices to give every multiprocessor about two programs?",
                   graded)
del q, k_pages, v_pages
check_speed_against(theirs, ours, DECODE_VS_TORCH, f"{what}: {theirs / ours:.2f}x torch's gather + SDPA; the target "
                    f"is {DECODE_VS_TORCH}x.", f"paged_decode_attention at {DECODE_SHAPE} (B, tokens, H, H_kv, d, "
                    f"PAGE_SIZE) in fp16, on compute capability 9.0,\nfor {DECODE_VS_TORCH}x the speed of gathering "
                    "the pages and SDPA", "Does the kernel read the pages in place (no gather), and split the keys "
                    "so that the whole GPU works?", graded)

# %% nbgrader={"grade": true, "grade_id": "test_int4_performance", "locked": true, "points": 3}
dtype = int4_dtypes()[0]
M, K, N, group_size = INT4_SHAPE if graded_speed() else (16, sized(1024, 256), sized(1024, 64), 128)
# Advisory on every GPU for now: one call is shorter than its host code (see above), so timing calls
# one by one measures the CPU that launches them, and under the grader that failed honest answers.
graded = False
run_int4(3, 256, 40, 64, dtype=dtype)  # a small product first: masks and the format
x, packed, scales, zeros = int4_inputs(M, K, N, group_size, dtype)
with count_launches() as launches:
    out = call_answer(int4_linear, x, packed, scales, zeros, group_size)
expect_launched(launches, "int4_linear", out)
del out
w16 = dequantize(packed, scales, zeros, group_size).to(dtype)  # torch's weights: the same, in 16 bits
with exclusive_gpu():
    # x and the scales get fresh values in each timed call, so the expected result is recomputed, loosely;
    # the zero points stay the integers the format has (the timer refills floating-point inputs only with
    # random values): the closures hold them
    atol, rtol = int4_tolerance(K, dtype)
    ours, theirs = bench_against(
        lambda x, p, s: call_answer(int4_linear, x, p, s, zeros, group_size),
        lambda x, p, s: torch.matmul(x, w16), x, packed, scales,
        expect=lambda x, p, s: reference_int4_linear(x, p, s, zeros, group_size), atol=atol * 100, rtol=5e-2)
    nbytes = packed.numel() + (scales.numel() + zeros.numel()) * 2 + (x.numel() + M * N) * x.element_size()
    what = f"int4_linear at (M, K, N) = ({M}, {K}, {N}), group_size {group_size}, {str(dtype).removeprefix('torch.')}"
    print(f"{what}: {ours * 1e3:.1f} us ({gbps(nbytes, ours):.0f} GB/s on the bytes floor), torch.matmul on fp16 "
          f"weights {theirs * 1e3:.1f} us: {theirs / ours:.2f}x torch's.")
    check_fraction(gbps(nbytes, ours), INT4_FRACTION, what,
                   "Does the grid give every multiprocessor work (split-K: about two programs each), does each step "
                   "read BLOCK_K // 2 rows of packed bytes once, and are the partials few (SPLIT_K * M * N fp32)?",
                   graded)
del x, packed, scales, zeros, w16
check_speed_against(theirs, ours, INT4_VS_TORCH, f"{what}: {theirs / ours:.2f}x torch.matmul on fp16 weights; the "
                    f"target is {INT4_VS_TORCH}x.", f"int4_linear at {INT4_SHAPE} (M, K, N, group_size), on compute "
                    f"capability 9.0,\nfor {INT4_VS_TORCH}x the speed of cuBLAS on the weights in fp16",
                    "Four times fewer bytes than cuBLAS reads: is the weight expanded in registers inside the K "
                    "loop (not in a pass of its own), and does split-K fill the GPU?", graded)

# %% [markdown]
# ## 6. Bandwidth against the cache length and the batch
#
# The last cell plots GB/s on the bytes floor against the length of the cache for your paged
# decoding and torch's gather + SDPA (`B = 4`, `H = 32`, `H_kv = 8`, `d = 128`, pages of 16), and
# against `M` for your `int4_linear` and `torch.matmul` on fp16 weights (`K = N = 8192`; torch's
# bytes counted as what it reads, the fp16 weights), with the copy bandwidth as the roof. Under the
# interpreter: tiny sizes, and times of Python, not of a GPU.

# %%
dtype = fast_dtype()
B, H, H_kv, d, page = (4, 32, 8, 128, 16) if ON_GPU else (2, 4, 2, 64, 16)
cache_lengths = [1024, 2048, 4096, 8192, 16384] if ON_GPU else [32, 64]
decoding = {"paged_decode_attention": [], "torch: gather + SDPA": []}
for n in cache_lengths:
    q, k_pages, v_pages, table, lengths = paged_inputs([n] * B, H, H_kv, d, page, dtype, spare_pages=0)
    nbytes = (k_pages.numel() + v_pages.numel() + 2 * q.numel()) * q.element_size()
    decoding["paged_decode_attention"].append(
        gbps(nbytes, bench_ms(lambda: paged_decode_attention(q, k_pages, v_pages, table, lengths))))
    decoding["torch: gather + SDPA"].append(
        gbps(nbytes, bench_ms(lambda: torch_paged_decode(q, k_pages, v_pages, table, lengths))))
    del q, k_pages, v_pages, table, lengths
roof = copy_bandwidth()
plot_bandwidth(cache_lengths, decoding, f"paged decoding, B = {B}, H = {H}, H_kv = {H_kv}, d = {d}", roof=roof,
               xlabel="tokens in the cache per sequence")
K, N = sized((8192, 8192), (256, 64))
rows = [1, 2, 4, 8, 16] if ON_GPU else [1, 16]
products = {"int4_linear (packed bytes)": [], "torch.matmul, fp16 weights (their bytes)": []}
for M in rows:
    x, packed, scales, zeros = int4_inputs(M, K, N, 128, int4_dtypes()[0])
    w16 = dequantize(packed, scales, zeros, 128).to(x.dtype)
    ours = bench_ms(lambda: int4_linear(x, packed, scales, zeros, 128))
    theirs = bench_ms(lambda: torch.matmul(x, w16))
    products["int4_linear (packed bytes)"].append(gbps(packed.numel() + 4 * scales.numel(), ours))
    products["torch.matmul, fp16 weights (their bytes)"].append(gbps(w16.numel() * 2, theirs))
    del x, packed, scales, zeros, w16
plot_bandwidth(rows, products, f"x @ W at K = N = {K}, groups of 128", roof=roof, xlabel="M (rows of x)")

# %% [markdown]
# ## What you learned
#
# - **Decoding is memory-bound**: one query per head does `G` operations per byte of cache (4 at
#   `G = 4`), fifty times below an H200's ridge; the kernel's time is the time to read the cache once.
# - **Split-KV** cuts each head's keys into slices so that `B * H_kv * SPLITS` programs fill the GPU;
#   each writes a partial softmax `(m, l, acc)`, and a merge combines them with the online-softmax
#   rule. The query heads of a group are the rows of one `tl.dot`: the cache is read once, not `G`
#   times. An empty slice writes `m = -inf, l = 0, acc = 0`, which the merge weighs 0.
# - A **paged cache** is read through its block table, a page number per step, in place; lengths
#   live on the device and each program stops at its own, so the host never waits for the GPU.
# - **int4 weights** cost four times fewer bytes than fp16; they are expanded in registers inside the
#   loop (mask, shift, subtract the zero point, scale), the even and odd rows of `W` meeting `x`'s
#   even and odd columns, and **split-K** gives every multiprocessor work when `M` is small.
# - Both are judged against the **bytes floor**: what fraction of the copy bandwidth they reach.
# - A floor is a bound, not a result: the course's own int4 kernel reads four times fewer bytes
#   than cuBLAS on fp16 weights and is still slower (section 5). Measure before you believe.
#
# **Next:** the course ends here; the same measuring, bytes or operations against the roof, applies
# to every kernel you write next.

# %% [markdown]
# # Lesson 9: Attention for training: FlashAttention's backward pass, grouped-query attention, and a fast forward
#
# Lesson 7 built FlashAttention's forward pass and left its backward pass as an ungraded challenge.
# Training is where attention spends most of its time: for every forward pass there is a backward
# pass that does two and a half times its arithmetic. This lesson writes attention as a model uses
# it, and trains with it:
#
# - **the layout of a model**: queries, keys and values come out of projections as `(B, N, H, d)`
#   tensors (`(x @ Wq).view(B, N, H, d)`), often slices of one fused projection, so the kernel takes
#   **every stride** and copies nothing;
# - **grouped-query attention** (GQA): `H` query heads share `H_kv` heads of keys and values, a group
#   of `H // H_kv` query heads per K/V head (Llama 3, Mistral, Qwen); `H_kv = 1` is multi-query
#   attention; the K/V cache of a model shrinks by the group's size;
# - a **forward pass scheduled for Hopper**: `exp2` with `log2(e)` folded into the scale, unmasked
#   loops where no mask is needed, tensor descriptors, warp specialisation, measured step by step;
# - **the backward pass**: the probabilities rebuilt from the saved log-sum-exp, the row terms
#   `D = rowsum(dO * O)` computed once, `dK` and `dV` by programs that own a block of keys (and sum
#   over the query heads of their group), `dQ` by a second kernel; causal attention skips blocks in
#   both directions;
# - a `torch.autograd.Function` whose gradients match torch's, and **a small transformer block
#   trained** with it, its loss curve beside the one torch's attention gives.
#
# | exercise | what you write | points |
# |---|---|---|
# | 1 | `attention_forward_kernel` and `attention_forward`: strides, GQA, causal, the log-sum-exp | 8 |
# | W1 | (written) why the backward pass recomputes `P` instead of storing it | 3 |
# | 2 | `attention_delta_kernel` and `attention_delta`: `D = rowsum(dO * O)` | 2 |
# | 3 | `attention_dkdv_kernel`, `attention_dq_kernel` and `attention_backward` | 8 |
# | Q | (multiple choice) `dQ` by atomics or by a second pass | 1 |
# | 4 | `FlashAttention` and `flash_attention`: a layer that trains | 5 |
# | 5 | (no new code) a transformer block trained with your attention | 2 |
# | 6 | (no new code) forward and backward against PyTorch's SDPA | 6 |
#
# **Where to run it.** The lesson measures on Hopper (compute capability 9.0: H100, H200), where
# its performance tests are graded. Everywhere else every exercise runs and is graded for
# correctness: on Ampere and Ada (A100, L4, RTX 30 and 40) the kernels run as lesson 7's did, with
# pointer loads; on a T4 (7.5) `tl.dot` gets fp32 inputs only and there is no bf16 (the setup's
# note below says so); with no GPU, Triton's interpreter runs every kernel on short sequences, and
# timings say nothing about GPUs.

# %% tags=["setup"]
from autograder.kit import *  # noqa: F403 (the build places autograder/kit.py here)

# %% nbgrader={"grade_id": "attention_helpers", "locked": true}
# The course's helpers for this lesson (read-only: grading restores them).
import matplotlib.pyplot as plt
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

HEAD_DIMS = (16, 32, 64, 128)  # the head dims the kernels take: powers of two, as tl.arange needs


def has_tma():
    """Hopper's tensor memory accelerator: compute capability 9.0 and newer."""
    return ON_GPU and CAPABILITY >= (9, 0)


def graded_speed():
    """Where the performance tests are graded: compute capability 9.0 (H100, H200), the GPU the
    lesson's targets were set on. Elsewhere they print the numbers and pass."""
    return ON_GPU and CAPABILITY == (9, 0)


def attention_dtypes():
    """The dtypes the tests give the kernels: those tl.dot takes on this device (fp32 alone on a T4;
    fp32 and fp16 under the interpreter, which has no bf16; fp32, fp16 and bf16 from Ampere on)."""
    return list(DOT_DTYPES)


def fast_dtype():
    """The dtype a model trains attention in here: fp16 where tl.dot takes it on tensor cores, else fp32."""
    return torch.float16 if torch.float16 in DOT_DTYPES and (not ON_GPU or CAPABILITY >= (8, 0)) else torch.float32


def attention_config(d, dtype, causal):
    """Blocks, warps, stages and the schedule of the forward pass on this device, for head dim d.
    On Hopper, in 16 bits: 128 queries per program in 8 warps (two warp groups of wgmma), 128 keys
    per step at d <= 64 and 64 at d = 128 (a block of K and one of V take 32 KB per stage, three
    stages and Q fit in 227 KB), K and V through tensor descriptors; warp specialisation off: on
    Hopper, Triton 3.6 and 3.9 compile this loop with it to the same PTX as without (section 3
    checks), and Triton's own tutorial turns it on only on Blackwell. Elsewhere lesson 7's blocks;
    small ones for the interpreter."""
    if not ON_GPU:
        return dict(BLOCK_M=32, BLOCK_N=16, num_warps=4, num_stages=1, WARP_SPECIALIZE=False, DESCRIPTORS=False)
    row_bytes = d * torch.empty(0, dtype=dtype).element_size()
    if has_tma() and dtype != torch.float32:
        return dict(BLOCK_M=128, BLOCK_N=128 if d <= 64 else 64, num_warps=8, num_stages=3, WARP_SPECIALIZE=False,
                    DESCRIPTORS=True)
    if dtype == torch.float32:  # twice the bytes of fp16: half the queries, to fit a T4's 64 KB
        return dict(BLOCK_M=64, BLOCK_N=64 if row_bytes <= 256 else 16, num_warps=4,
                    num_stages=2 if row_bytes <= 256 else 1, WARP_SPECIALIZE=False, DESCRIPTORS=False)
    return dict(BLOCK_M=128, BLOCK_N=64, num_warps=4 if d <= 64 else 8,
                num_stages=3 if row_bytes <= 128 else 2, WARP_SPECIALIZE=False, DESCRIPTORS=False)


def backward_config(d, dtype):
    """Blocks, warps and stages of the backward pass: a program owns BLOCK_OWN rows (keys in the
    dK/dV kernel, queries in the dQ kernel) and streams the others BLOCK_STEP at a time. In 16 bits
    on Ampere and newer, Triton's tutorial's 128 and 32; fp32 (a T4, TF32 elsewhere) 64 and 32, or
    32 and 16 at d = 128, so that K, V, dK and dV fit; small blocks for the interpreter."""
    if not ON_GPU:
        return dict(BLOCK_OWN=32, BLOCK_STEP=16, num_warps=4, num_stages=1)
    if dtype == torch.float32:
        return dict(BLOCK_OWN=64 if d <= 64 else 32, BLOCK_STEP=32 if d <= 64 else 16, num_warps=4, num_stages=1)
    return dict(BLOCK_OWN=128, BLOCK_STEP=32, num_warps=4 if d <= 64 else 8, num_stages=5 if has_tma() else 2)


def warp_specializes(dtype):
    """Whether WARP_SPECIALIZE=True runs here for tl.dot inputs of this dtype: on Hopper and newer
    for 16-bit inputs (lesson 8), and under the interpreter."""
    return not ON_GPU or (has_tma() and dtype != torch.float32)


def descriptor_ready(t):
    """Whether a tensor descriptor can read t's (N, d) rows of one head: last stride 1, every other
    stride and the address multiples of 16 bytes (lesson 8's rule)."""
    size = t.element_size()
    return t.stride(-1) == 1 and all(s * size % 16 == 0 for s in t.stride()[:-1]) and t.data_ptr() % 16 == 0


def sdpa_backend():
    """(backend, name): the SDPA backend the performance tests race. cuDNN's where it runs here
    (Hopper, recent torch), else FlashAttention-2's; on the CPU, None: SDPA chooses (its C++ kernel)."""
    if not ON_GPU:
        return None, "SDPA's own choice on the CPU (math / C++)"
    x = torch.zeros(1, 2, 128, 64, dtype=torch.float16, device=DEVICE)
    for backend, name in [(SDPBackend.CUDNN_ATTENTION, "cuDNN attention"),
                          (SDPBackend.FLASH_ATTENTION, "FlashAttention-2")]:
        try:
            with sdpa_kernel(backend):
                F.scaled_dot_product_attention(x, x, x)
            return backend, name
        except RuntimeError:
            continue
    return None, "SDPA's own choice"


def sdpa_bnhd(q, k, v, causal=False):
    """torch's SDPA on (B, N, H, d) tensors with GQA (enable_gqa), returned as (B, N, H, d), through
    sdpa_backend()'s backend where there is one."""
    backend, _ = sdpa_backend()
    args = [t.transpose(1, 2) for t in (q, k, v)]
    gqa = q.shape[2] != k.shape[2]
    if backend is None:
        return F.scaled_dot_product_attention(*args, is_causal=causal, enable_gqa=gqa).transpose(1, 2)
    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(*args, is_causal=causal, enable_gqa=gqa).transpose(1, 2)


if ON_GPU:  # descriptors made inside a kernel live in a scratch buffer that Triton asks torch for
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=DEVICE))


def lesson_note():
    """What this device does with the lesson's kernels."""
    if not ON_GPU:
        return ("Triton's interpreter: every kernel runs (on NumPy, one program at a time), descriptors and "
                "warp specialisation too; short sequences only, and timings say nothing about GPUs.")
    where = f"Compute capability {CAPABILITY[0]}.{CAPABILITY[1]}"
    if graded_speed():
        return f"{where}: descriptors, wgmma, warp specialisation; the performance tests are graded here."
    return (f"{where}: the performance tests are advisory here (graded on compute capability 9.0). "
            + ("" if torch.float16 in DOT_DTYPES else DOT_NOTE))


print(lesson_note())
print("The tests give tl.dot", ", ".join(str(t).removeprefix("torch.") for t in attention_dtypes()))


# %% [markdown]
# ## 1. Attention as a model calls it
#
# A transformer layer computes its queries, keys and values from the same activations `x`, of
# shape `(B, N, D)`: `q = (x @ Wq).view(B, N, H, d)`, and likewise `k` and `v` with `H_kv` heads.
# That is the layout the kernel gets: token `n`'s numbers for all heads side by side, head `h`'s
# `d` numbers at `q[b, n, h, :]`. Lesson 7 wanted `(B, H, N, d)` and called `.contiguous()`, which
# for these tensors is a copy of `Q`, `K` and `V`. Here the kernel takes the strides of every
# tensor, as lesson 6's matmul did: element `q[b, n, h, i]` is at
# `q_ptr + b * stride_qb + n * stride_qn + h * stride_qh + i * stride_qd`. Models often make all
# three with one fused projection, `x @ W_qkv`, viewed as `(B, N, H + 2 * H_kv, d)` and sliced: then
# `stride_qn` is `(H + 2 * H_kv) * d`, not `H * d`. Strides handle that too, and the tests use it.
#
# **Grouped-query attention.** With `H_kv < H` heads of keys and values, query head `h` reads K/V
# head `h // (H // H_kv)`: query heads `0 .. G - 1` share K/V head 0, where `G = H // H_kv` is the
# group's size. It is exactly attention with each K/V head repeated `G` times
# (`k.repeat_interleave(G, dim=2)`), which is how the course's reference below computes it; the
# kernel does not repeat anything, it only points at the right head.
#
# The reference computes in fp32 from the inputs, a few heads at a time, and returns `o` in the
# input's dtype and `lse`, the natural-log log-sum-exp of each row of scaled scores (lesson 7's
# convention), of shape `(B, H, N)`.

# %% nbgrader={"grade_id": "attention_reference", "locked": true}
# The reference the tests compare with (read-only: grading restores it).
def reference_attention(q, k, v, causal=False, kv_head_of=None):
    """(o, lse) by torch in fp32 for (B, N, H, d) q and (B, N, H_kv, d) k, v: query head h reads K/V
    head h // (H // H_kv) (or kv_head_of(h, H, H_kv), to name a mistake). o is (B, N, H, d) in q's
    dtype, lse (B, H, N) fp32. A few heads at a time: the scores never take more than 256 MB."""
    B, N, H, d = q.shape
    H_kv = k.shape[2]
    heads = [kv_head_of(h, H, H_kv) if kv_head_of else h // (H // H_kv) for h in range(H)]
    qh = q.transpose(1, 2).float()
    kh, vh = (t.transpose(1, 2).float()[:, heads] for t in (k, v))
    o = torch.empty(B, H, N, d, dtype=torch.float32, device=q.device)
    lse = torch.empty(B, H, N, dtype=torch.float32, device=q.device)
    step = max(1, 2**26 // max(1, N * N))
    for b in range(B):
        for first in range(0, H, step):
            part = slice(first, first + step)
            scores = qh[b, part] @ kh[b, part].transpose(1, 2) * d ** -0.5
            if causal:
                scores.masked_fill_(torch.ones(N, N, dtype=torch.bool, device=q.device).triu(1), -float("inf"))
            lse[b, part] = torch.logsumexp(scores, dim=-1)
            o[b, part] = torch.softmax(scores, dim=-1) @ vh[b, part]
    return o.transpose(1, 2).to(q.dtype), lse


def reference_gradients(q, k, v, do, causal=False):
    """(dq, dk, dv) of the fp32 reference attention by torch.autograd, in the inputs' dtypes."""
    leaves = [t.detach().float().requires_grad_() for t in (q, k, v)]
    B, N, H, d = q.shape
    G = H // k.shape[2]
    qh = leaves[0].transpose(1, 2)
    kh, vh = (t.transpose(1, 2).repeat_interleave(G, dim=1) for t in leaves[1:])
    scores = qh @ kh.transpose(-2, -1) * d ** -0.5
    if causal:
        scores = scores.masked_fill(torch.ones(N, N, dtype=torch.bool, device=q.device).triu(1), -float("inf"))
    o = (torch.softmax(scores, dim=-1) @ vh).transpose(1, 2)
    grads = torch.autograd.grad(o, leaves, do.float())
    return [g.to(t.dtype) for g, t in zip(grads, (q, k, v))]


def attention_inputs(B, N, H, H_kv, d, dtype=torch.float32, layout="fused"):
    """Fresh q (B, N, H, d), k and v (B, N, H_kv, d), in guard bands, laid out as a model makes them:
    "fused": slices of one (B, N, H + 2 H_kv, d) projection (rows of H + 2 H_kv heads); "separate":
    three contiguous tensors; "heads first": (B, H, N, d) tensors seen through .transpose(1, 2)."""
    if layout == "fused":
        qkv = rand(B, N, H + 2 * H_kv, d, dtype=dtype)
        return qkv[:, :, :H], qkv[:, :, H:H + H_kv], qkv[:, :, H + H_kv:]
    if layout == "separate":
        return rand(B, N, H, d, dtype=dtype), rand(B, N, H_kv, d, dtype=dtype), rand(B, N, H_kv, d, dtype=dtype)
    return tuple(rand(B, h, N, d, dtype=dtype).transpose(1, 2) for h in (H, H_kv, H_kv))


def describe(B, N, H, H_kv, d, dtype, causal, layout=None):
    return (f"(B, N, H, H_kv, d) = ({B}, {N}, {H}, {H_kv}, {d}), {str(dtype).removeprefix('torch.')}, "
            + ("causal" if causal else "not causal") + (f", {layout} layout" if layout else ""))


def output_tolerance(dtype):
    """(atol, rtol) for o. 16-bit inputs: the products are exact and summed in fp32; p is rounded to
    the input's dtype before P V and o at the store: check_output's default for the dtype. fp32
    inputs: on a GPU tl.dot truncates them to TF32 (about 1e-3 relative in each score): 1e-2."""
    return (1e-2, 1e-2) if dtype == torch.float32 else (None, None)


def lse_tolerance():
    """lse is fp32 arithmetic on fp32 scores: 1e-2 allows TF32 on a GPU, and is far below a wrong
    formula (the maximum left out: a few units; a log2 left unconverted: a third of the lse)."""
    return 1e-2


print("reference_attention with H_kv = H against torch's SDPA (its inputs (B, H, N, d)):")
x = [rand(2, 40, 4, 32) for _ in range(3)]
for causal in (False, True):
    theirs = F.scaled_dot_product_attention(*(t.transpose(1, 2) for t in x), is_causal=causal).transpose(1, 2)
    print(f"  causal={causal}: largest difference {(reference_attention(*x, causal)[0] - theirs).abs().max().item():.2e}")


# %% [markdown]
# ## 2. The forward pass, for a model
#
# The kernel is lesson 7's, and the grid too: program `(tl.program_id(0), tl.program_id(1))` takes
# the block of `BLOCK_M` queries `tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)` of the pair
# `tl.program_id(1) = b * H + h` (batch `b`, query head `h`), loads its queries once and streams
# the keys and values of K/V head `h // GROUP` past them with the online softmax. What changes:
#
# - **Addresses from strides.** The block of `Q` is at `q_ptr + b * stride_qb + h * stride_qh +
#   offs_m[:, None] * stride_qn + offs_d[None, :] * stride_qd`, and likewise for `K`, `V` and `O`
#   with their own strides (pass all four of each tensor; `o` you allocate contiguous, but its
#   strides cost nothing to pass). `lse` is a contiguous `(B, H, N)` tensor: row `(b * H + h) * N`.
# - **int64 offsets.** `b * stride_qb` with `B = 8` sequences of `N = 32768` tokens, 32 heads of
#   128: `stride_qb` is 2^27, and `b * stride_qb` passes 2^31 at `b = 16`; `offs_m * stride_qn`
#   reaches `N * H * d`. Triton computes with int32 unless told: make `b`, `h` and the row offsets
#   int64 (`.to(tl.int64)`) before you multiply them by strides.
# - **GQA**: K/V head `h // GROUP`, with `GROUP = H // H_kv` passed by the launcher.
#
# The rest is lesson 7's, and the details that made it fast:
#
# - **`exp2`, `log2(e)` in the scale.** `exp(x) = exp2(x * log2(e))`: multiply the scores by
#   `qk_scale = d ** -0.5 * 1.4426950408889634` once and use `tl.exp2` for every exponential; `m`
#   is then in units of `log2`, and the log-sum-exp the kernel saves converts back:
#   `lse = (m + tl.log2(l)) * 0.6931471805599453` (`ln 2`). The backward pass reads this `lse` and
#   must convert it the same way (the other direction).
# - **Masks only where they are needed.** Write the loop over keys as a `@triton.jit` helper with
#   a `MASKED: tl.constexpr` flag, and call it twice: over the whole blocks without masks, then
#   over the last blocks with them. Not causal: keys `0 .. N - N % BLOCK_N - 1` unmasked, the tail
#   masked. Causal: the keys before `start_m` (rounded down to a multiple of `BLOCK_N`) are seen by
#   every query of the block: unmasked; the keys from there to `min(N, start_m + BLOCK_M)` cross the
#   diagonal: masked; every key after them is **skipped**: its block is never loaded.
# - **Masks on the queries**: rows past `N` are loaded as 0 and never stored.
#
# ### The schedule: what a Hopper GPU adds
#
# Per block of keys, a program does two matrix products (`S = Q K^T` and `acc += P V`) on the
# tensor cores and, between them, the softmax on the ordinary arithmetic units: a maximum, `B_M x
# B_N` exponentials, a sum, a rescaling. On an H200 the tensor cores do about 990 TFLOP/s in fp16
# and the exponential unit about 4 TFLOP/s: at `d = 128`, one block's two products take about as
# long as its exponentials. Done one after the other, each unit idles half the time. The fast
# kernels (FlashAttention-3, cuDNN) **overlap** them: while the softmax of block `j` runs, the
# tensor cores already compute `S` of block `j + 1`. Three ways to let Triton do that:
#
# 1. **Software pipelining** (`num_stages`, lesson 6): the loads of the next blocks of `K` and `V`
#    are in flight while this block is computed. Every GPU since Ampere; the compiler does it.
# 2. **Tensor descriptors** (lesson 8): `tl.make_tensor_descriptor(k_base, shape=[N, HEAD_DIM],
#    strides=[stride_kn, 1], block_shape=[BLOCK_N, HEAD_DIM])` and `k_desc.load([start_n, 0])`: the
#    copy engine (TMA) moves whole blocks into shared memory, zero-filled past `N`, and the warps do
#    not compute a single address. Hopper only, and only for tensors that keep lesson 8's
#    alignment rule (last stride 1, the others and the address multiples of 16 bytes): the launcher
#    checks it (`descriptor_ready`, in the helpers above) and uses pointers otherwise.
# 3. **Warp specialisation**: `tl.range(lo, hi, BLOCK_N, warp_specialize=True)` splits the loop's
#    work between groups of warps: one group issues the copies, others the products and the
#    softmax, so that the two halves of consecutive blocks overlap (FlashAttention-3's "ping-pong").
#    A switch asks; the compiler decides. Section 3 reads what it did with this one.
#
# `attention_config(d, dtype, causal)`, in the helpers above, gives your launcher the blocks and
# the schedule for this device: `BLOCK_M`, `BLOCK_N`, `num_warps`, `num_stages`, and the two
# switches `WARP_SPECIALIZE` and `DESCRIPTORS`, which your kernel takes as `tl.constexpr`s. Section
# 3 measures each step. (Measured on an H200: see docs/benchmarks.md, which the course fills in
# from its GPU runs.)
#
# ## Exercise 1: `attention_forward_kernel` and `attention_forward` (8 points)
#
# 1. `attention_forward_kernel(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, <the 16 strides of q, k, v, o>,
#    H, N, GROUP, scale, HEAD_DIM, BLOCK_M, BLOCK_N, CAUSAL, WARP_SPECIALIZE, DESCRIPTORS)`: the
#    program above. With `DESCRIPTORS`, load `K` and `V` through descriptors made in the kernel
#    (their bases `k_ptr + b * stride_kb + hk * stride_kh`); without, through pointers. Give
#    `tl.range` of your unmasked loop `warp_specialize=WARP_SPECIALIZE`.
# 2. `attention_forward(q, k, v, causal=False, **config)`: check the inputs (4-D; `k` and `v` of one
#    shape `(B, N, H_kv, d)` with `B`, `N`, `d` those of `q`; `H % H_kv == 0`; one dtype and device;
#    `d` in `HEAD_DIMS`, else `ValueError` with a message that says so), take
#    `attention_config(d, q.dtype, causal)` updated with the `config` given, turn `DESCRIPTORS` off
#    where `descriptor_ready` says a tensor cannot take it, allocate `o` (`(B, N, H, d)`, `q`'s dtype,
#    contiguous) and `lse` (`(B, H, N)`, fp32), and launch on the grid
#    `(triton.cdiv(N, BLOCK_M), B * H)` with `scale = d ** -0.5`. No `.contiguous()`.
#
# `BLOCK_M` and `BLOCK_N` are powers of two of at least 16, and the tests keep `BLOCK_M` a multiple
# of `BLOCK_N` (as lesson 7's did).

# %% nbgrader={"grade_id": "attention_forward", "solution": true}
@triton.jit
def load_rows(base, desc, start, N, stride_n, stride_d, HEAD_DIM: tl.constexpr, BLOCK: tl.constexpr,
              MASKED: tl.constexpr, DESCRIPTORS: tl.constexpr):
    """The (BLOCK, HEAD_DIM) rows start .. start + BLOCK - 1 of one head: through its descriptor (which
    zero-fills rows past N itself), or through pointers, masked on N where MASKED."""
    ### BEGIN SOLUTION
    if DESCRIPTORS:
        block = desc.load([start, 0])
    else:
        rows = start + tl.arange(0, BLOCK)
        ptrs = base + rows[:, None].to(tl.int64) * stride_n + tl.arange(0, HEAD_DIM)[None, :] * stride_d
        if MASKED:
            block = tl.load(ptrs, mask=rows[:, None] < N, other=0.0)
        else:
            block = tl.load(ptrs)
    return block
    ### END SOLUTION


@triton.jit
def attend(acc, l, m, q, k_base, v_base, k_desc, v_desc, stride_kn, stride_kd, stride_vn, stride_vd, offs_m, lo, hi,
           N, qk_scale, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, MASKED: tl.constexpr, CAUSAL: tl.constexpr,
           WARP_SPECIALIZE: tl.constexpr, DESCRIPTORS: tl.constexpr):
    """(acc, l, m) after the online softmax (in log2 units) has taken in the keys lo .. hi - 1."""
    ### BEGIN SOLUTION
    for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
        k = load_rows(k_base, k_desc, start_n, N, stride_kn, stride_kd, HEAD_DIM, BLOCK_N, MASKED, DESCRIPTORS)
        v = load_rows(v_base, v_desc, start_n, N, stride_vn, stride_vd, HEAD_DIM, BLOCK_N, MASKED, DESCRIPTORS)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        if MASKED:
            offs_n = start_n + tl.arange(0, BLOCK_N)
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
def attention_forward_kernel(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr,
                             stride_qb, stride_qn, stride_qh, stride_qd,
                             stride_kb, stride_kn, stride_kh, stride_kd,
                             stride_vb, stride_vn, stride_vh, stride_vd,
                             stride_ob, stride_on, stride_oh, stride_od,
                             H, N, GROUP, scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                             BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, WARP_SPECIALIZE: tl.constexpr,
                             DESCRIPTORS: tl.constexpr):
    """O and the log-sum-exp of BLOCK_M queries of query head h of batch b (program (query block,
    b * H + h)), reading K/V head h // GROUP; every tensor through its strides."""
    ### BEGIN SOLUTION
    start_m = tl.program_id(0) * BLOCK_M
    pair = tl.program_id(1)
    b = (pair // H).to(tl.int64)
    h = (pair % H).to(tl.int64)
    hk = h // GROUP
    k_base = k_ptr + b * stride_kb + hk * stride_kh
    v_base = v_ptr + b * stride_vb + hk * stride_vh
    if DESCRIPTORS:
        k_desc = tl.make_tensor_descriptor(k_base, shape=[N, HEAD_DIM], strides=[stride_kn, 1],
                                           block_shape=[BLOCK_N, HEAD_DIM])
        v_desc = tl.make_tensor_descriptor(v_base, shape=[N, HEAD_DIM], strides=[stride_vn, 1],
                                           block_shape=[BLOCK_N, HEAD_DIM])
    else:
        k_desc, v_desc = k_base, v_base  # unused: the loads go through the pointers
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    rows = offs_m[:, None].to(tl.int64)
    q = tl.load(q_ptr + b * stride_qb + h * stride_qh + rows * stride_qn + offs_d[None, :] * stride_qd,
                mask=offs_m[:, None] < N, other=0.0)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    m = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l = tl.zeros((BLOCK_M,), tl.float32)
    qk_scale = scale * 1.4426950408889634  # log2(e): exp(x) = exp2(x * log2(e))
    if CAUSAL:
        diagonal = start_m // BLOCK_N * BLOCK_N  # keys before it: seen by every query of the block
        stop = tl.minimum(N, start_m + BLOCK_M)  # keys from here on: seen by none, skipped
    else:
        diagonal = N - N % BLOCK_N
        stop = N
    acc, l, m = attend(acc, l, m, q, k_base, v_base, k_desc, v_desc, stride_kn, stride_kd, stride_vn, stride_vd,
                       offs_m, 0, diagonal, N, qk_scale, HEAD_DIM, BLOCK_N, False, CAUSAL, WARP_SPECIALIZE,
                       DESCRIPTORS)
    acc, l, m = attend(acc, l, m, q, k_base, v_base, k_desc, v_desc, stride_kn, stride_kd, stride_vn, stride_vd,
                       offs_m, diagonal, stop, N, qk_scale, HEAD_DIM, BLOCK_N, True, CAUSAL, False, DESCRIPTORS)
    o = acc / l[:, None]
    tl.store(o_ptr + b * stride_ob + h * stride_oh + rows * stride_on + offs_d[None, :] * stride_od,
             o.to(o_ptr.dtype.element_ty), mask=offs_m[:, None] < N)
    tl.store(lse_ptr + pair.to(tl.int64) * N + offs_m, (m + tl.log2(l)) * 0.6931471805599453, mask=offs_m < N)
    ### END SOLUTION


def attention_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal=False, **config):
    """(o, lse) of softmax(q k^T / sqrt(d)) v for q (B, N, H, d) and k, v (B, N, H_kv, d), any strides:
    o (B, N, H, d) contiguous in q's dtype, lse (B, H, N) fp32, by attention_forward_kernel."""
    ### BEGIN SOLUTION
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError(f"q, k and v must be 4-D (B, N, heads, d), got {q.dim()}-D, {k.dim()}-D and {v.dim()}-D")
    B, N, H, d = q.shape
    H_kv = k.shape[2]
    if k.shape != (B, N, H_kv, d) or v.shape != k.shape:
        raise ValueError(f"k and v must both be (B, N, H_kv, d) with q's B, N and d: q is {tuple(q.shape)}, "
                         f"k {tuple(k.shape)}, v {tuple(v.shape)}")
    if H_kv == 0 or H % H_kv:
        raise ValueError(f"{H} query heads cannot be grouped over {H_kv} K/V heads: H must be a multiple of H_kv")
    if not (q.dtype == k.dtype == v.dtype) or not (q.device == k.device == v.device):
        raise ValueError(f"q, k and v must share a dtype and a device, got {q.dtype}, {k.dtype}, {v.dtype}")
    if d not in HEAD_DIMS:
        raise ValueError(f"head dim {d} is not supported: the kernel takes {HEAD_DIMS} (tl.arange needs a power "
                         "of two, tl.dot at least 16)")
    config = {**attention_config(d, q.dtype, causal), **config}
    if config["DESCRIPTORS"] and not (descriptor_ready(k) and descriptor_ready(v)):
        config["DESCRIPTORS"] = False
    o = torch.empty((B, N, H, d), dtype=q.dtype, device=q.device)
    lse = torch.empty((B, H, N), dtype=torch.float32, device=q.device)
    grid = (triton.cdiv(N, config["BLOCK_M"]), B * H)
    attention_forward_kernel[grid](q, k, v, o, lse, *q.stride(), *k.stride(), *v.stride(), *o.stride(),
                                   H, N, H // H_kv, d ** -0.5, HEAD_DIM=d, CAUSAL=causal, **config)
    return o, lse
    ### END SOLUTION


# %% nbgrader={"grade_id": "forward_checks", "locked": true}
# The course's helpers for the tests of this lesson (read-only: grading restores them).
def check_forward(o, lse, q, k, v, causal, what, untouched=()):
    """Compare (o, lse) with reference_attention, and name the likely mistake."""
    B, N, H, d = q.shape
    H_kv = k.shape[2]
    expected_o, expected_lse = reference_attention(q, k, v, causal)
    if not isinstance(o, torch.Tensor) or o.shape != expected_o.shape:
        shape = tuple(o.shape) if isinstance(o, torch.Tensor) else type(o).__name__
        raise CheckFailed(f"{what}: o is {shape}, expected (B, N, H, d) = {tuple(expected_o.shape)}, like q.")
    atol, rtol = output_tolerance(q.dtype)
    hint = "is acc rescaled by alpha = exp2(m - m_new) (l too), and o = acc / l at the end?"
    if 1 < H_kv < H:  # with one K/V head (or one per query head) h % H_kv and h // GROUP agree
        wrong = reference_attention(q, k, v, causal, kv_head_of=lambda h, H, H_kv: h % H_kv)[0]
        if torch.allclose(o.float(), wrong.float(), atol=atol or 1e-2, rtol=rtol or 1e-2):
            raise CheckFailed(f"{what}: o is attention with query head h reading K/V head h % H_kv. In grouped-query "
                              f"attention the G = H // H_kv = {H // H_kv} query heads h = g*G .. g*G + G - 1 share K/V "
                              "head g: read K/V head h // GROUP.")
    if H != H_kv:
        hint = (f"{H} query heads share {H_kv} K/V heads: does query head h read K/V head h // GROUP, through "
                "stride_kh and stride_vh? And " + hint)
    if causal and N > 1:
        hint = ("causal: query i sees keys j <= i only. Are scores of offs_n > offs_m set to -inf in the blocks "
                "that cross the diagonal, is the unmasked loop stopped before the diagonal's first block, and the "
                "whole loop at min(N, start_m + BLOCK_M)? " + hint)
    elif N % 16:
        hint = (f"N = {N} is not a multiple of any block: are the last keys loaded with a mask (other=0.0) and "
                "their scores set to -inf, and the rows of q past N masked? " + hint)
    if not q.is_contiguous():
        hint += (f" q has strides {q.stride()}: are the addresses computed from every stride you were given "
                 "(b * stride_qb + h * stride_qh + n * stride_qn + i * stride_qd)?")
    check_output(o, expected_o, name=f"{what}: o", inputs=untouched, atol=atol, rtol=rtol, hint=hint)
    if not isinstance(lse, torch.Tensor) or lse.shape != expected_lse.shape or lse.dtype != torch.float32:
        shape = (tuple(lse.shape), lse.dtype) if isinstance(lse, torch.Tensor) else type(lse).__name__
        raise CheckFailed(f"{what}: the log-sum-exp is {shape}, expected a (B, H, N) = {tuple(expected_lse.shape)} "
                          "fp32 tensor, one number per query row of each head.")
    if torch.allclose(lse, expected_lse * 1.4426950408889634, atol=lse_tolerance(), rtol=lse_tolerance()) and N > 1:
        raise CheckFailed(f"{what}: lse is in log2 units (m + log2(l) with exp2): multiply it by ln(2) = "
                          "0.6931471805599453 before the store. The backward pass expects natural logarithms.")
    check_output(lse, expected_lse, name=f"{what}: lse", atol=lse_tolerance(), rtol=lse_tolerance(),
                 hint="lse = (m + log2(l)) * ln(2) of the scores scaled by d ** -0.5, with the running maximum m "
                      "added back: is that what is stored, at (b * H + h) * N + offs_m?")


def run_forward(B, N, H, H_kv, d, dtype=torch.float32, causal=False, layout="fused", **config):
    """attention_forward on fresh inputs with guarded allocations and counted launches: kernels
    computed o and lse, they are right, o is contiguous and the inputs are unchanged."""
    q, k, v = attention_inputs(B, N, H, H_kv, d, dtype, layout)
    what = f"attention_forward on {describe(B, N, H, H_kv, d, dtype, causal, layout)}" + \
        "".join(f", {key}={value}" for key, value in config.items())
    untouched = [(t, t.clone()) for t in (q, k, v)]
    with guarded_allocations(), count_launches() as launches:
        result = call_answer(attention_forward, q, k, v, causal=causal, **config)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise CheckFailed(f"{what} returned {type(result).__name__}, expected a pair (o, lse).")
    o, lse = result
    expect_launched(launches, what, o)
    expect_launched(launches, f"{what} (its log-sum-exp)", lse)
    check_forward(o, lse, q, k, v, causal, what, untouched)
    if not o.is_contiguous():
        raise CheckFailed(f"{what} returned o with strides {o.stride()}: allocate it with "
                          "torch.empty((B, N, H, d), dtype=q.dtype, device=q.device), which is contiguous.")


def expect_refusal(what, *args, error=(AssertionError, ValueError, TypeError, RuntimeError)):
    """attention_forward(*args) must raise an error that says what is wrong, not compute."""
    try:
        call_answer(attention_forward, *args)
    except error as raised:
        if isinstance(raised, CheckFailed):
            raise
    except (AssertionError, ValueError, TypeError, RuntimeError) as raised:
        if isinstance(raised, CheckFailed):
            raise
        raise CheckFailed(f"attention_forward on {what} raised {type(raised).__name__}: raise ValueError with a "
                          "message that says what is wrong.") from None
    else:
        raise CheckFailed(f"attention_forward on {what} returned a result: check the inputs and raise "
                          "ValueError with a message that says what is wrong.")


# %% [markdown]
# The test runs your forward pass on 2 sequences of 50 tokens (a multiple of no block), with
# 4 query heads over 2 K/V heads, sliced from one fused projection, causal and not; then on one
# K/V head (multi-query), on `d = 128`, in every dtype `tl.dot` takes here, and checks that a head
# dim of 80 is refused with a `ValueError`.

# %% nbgrader={"grade": true, "grade_id": "test_attention_forward", "locked": true, "points": 3}
for causal in (False, True):
    run_forward(2, 50, 4, 2, 64, causal=causal)
run_forward(1, 37, 4, 1, 32, causal=True, layout="heads first")
run_forward(1, 40, 2, 2, 128, causal=False, layout="separate")
for dtype in attention_dtypes():
    run_forward(1, 48, 4, 2, 64, dtype=dtype, causal=True)
expect_refusal("head dim 80", rand(1, 8, 2, 80), rand(1, 8, 2, 80), rand(1, 8, 2, 80), error=ValueError)
print("attention_forward is right with grouped and multi-query heads, fused, separate and heads-first layouts, "
      "causal and not, in", ", ".join(str(t).removeprefix("torch.") for t in attention_dtypes()))

# %% nbgrader={"grade": true, "grade_id": "test_attention_forward_hidden", "locked": true, "points": 5}
# Hidden tests check attention_forward on more shapes, groups, layouts, dtypes, head dims and blocks,
# and more wrong inputs, when your notebook is graded.
### BEGIN HIDDEN TESTS
for B, N, H, H_kv, causal in [(1, 1, 1, 1, False), (1, 1, 2, 1, True), (2, 17, 4, 4, True), (1, 33, 8, 2, False),
                              (3, 20, 2, 1, True), (1, 64, 4, 2, True)]:
    run_forward(B, N, H, H_kv, 64, causal=causal)
for d in (16, 32):
    run_forward(1, 29, 2, 1, d, causal=True, layout="separate")
for dtype in attention_dtypes():
    run_forward(1, 45, 4, 2, 128, dtype=dtype, causal=True, layout="heads first")
    run_forward(2, 70, 2, 2, 64, dtype=dtype)
for blocks in [dict(BLOCK_M=16, BLOCK_N=16), dict(BLOCK_M=64, BLOCK_N=16), dict(BLOCK_M=32, BLOCK_N=32)]:
    run_forward(1, 90, 2, 1, 32, causal=True, **blocks)
if warp_specializes(torch.float32):
    run_forward(1, 50, 2, 1, 32, causal=True, WARP_SPECIALIZE=True)
# Scores in the hundreds: without the running maximum exp2 overflows.
q, k, v = attention_inputs(1, 48, 2, 1, 64, attention_dtypes()[-1], "separate")
q.mul_(20.0)
with guarded_allocations():
    o, lse = call_answer(attention_forward, q, k, v)
check_forward(o, lse, q, k, v, False, "attention_forward with queries scaled by 20 (scores in the hundreds)")
expect_refusal("3-D tensors", rand(8, 2, 64), rand(8, 2, 64), rand(8, 2, 64))
expect_refusal("6 query heads over 4 K/V heads", rand(1, 8, 6, 32), rand(1, 8, 4, 32), rand(1, 8, 4, 32))
expect_refusal("k of 9 tokens and q of 8", rand(1, 8, 2, 32), rand(1, 9, 2, 32), rand(1, 9, 2, 32))
expect_refusal("fp16 q with fp32 k and v", rand(1, 8, 2, 32, dtype=torch.float16), rand(1, 8, 2, 32),
               rand(1, 8, 2, 32))
expect_refusal("head dim 48", rand(1, 8, 2, 48), rand(1, 8, 2, 48), rand(1, 8, 2, 48), error=ValueError)
print("attention_forward passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## 3. The schedule, measured step by step
#
# The next cell races four schedules of your kernel against torch's SDPA (through
# `sdpa_backend()`, cuDNN's attention where it runs) at `B, H, N, d = 4, 32, 4096, 128` in fp16,
# not causal: lesson 7's blocks with pointer loads; Hopper's blocks with pointer loads; the same
# with descriptors; and with warp specialisation on top. A step that cannot run on this GPU is
# reported and skipped. Then it reads what the compiler made of the last switch, as lesson 8 did:
# it launches your kernel with `WARP_SPECIALIZE` off and on and compares the two PTX programs
# (`compiled.asm["ptx"]`); a warp-specialised kernel splits its registers between producer and
# consumer warps with `setmaxnreg`. Under the interpreter the cell prints nothing but that the
# interpreter's times say nothing about a GPU.
#
# What the course measured on an H200 (Triton 3.6, `solutions/` executed there): 365, 419 and 459
# TFLOP/s for the first three steps, 455 with the switch on, cuDNN 584. With warp specialisation
# the PTX is **identical**
# to the PTX without it: Triton 3.6 (and 3.9) leaves this loop as it is on Hopper, while it splits
# lesson 8's matmul loop (`setmaxnreg` appears there), and Triton's own attention tutorial turns the
# switch on only on Blackwell. Any gap in TFLOP/s between the last two steps is the spread of two
# runs of one program. Below Hopper the switch compiles too, and changes nothing either.

# %%
def attention_tflops(B, H, N, d, ms, causal=False):
    """The forward pass does 4 N^2 d operations per head (two products), half of them when causal."""
    return 4 * B * H * N * N * d / (2 if causal else 1) / (ms * 1e-3) / 1e12


if ON_GPU and fast_dtype() != torch.float32:
    B, H, N, d = 4, 32, 4096, 128
    q, k, v = attention_inputs(B, N, H, H, d, fast_dtype(), "separate")
    run_forward(1, 64, 2, 1, 64, dtype=fast_dtype())  # first make sure it is right: a stub or a bug stops here
    steps = [("lesson 7's blocks, pointers", dict(BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=2,
                                                   WARP_SPECIALIZE=False, DESCRIPTORS=False)),
             ("attention_config, pointers", {**attention_config(d, q.dtype, False), "DESCRIPTORS": False}),
             ("attention_config, descriptors", {**attention_config(d, q.dtype, False), "DESCRIPTORS": has_tma()}),
             ("+ warp specialisation", {**attention_config(d, q.dtype, False), "DESCRIPTORS": has_tma(),
                                        "WARP_SPECIALIZE": True})]
    for label, config in steps:
        try:
            ms = bench_ms(lambda: attention_forward(q, k, v, **config))
            print(f"{label:32}: {ms:7.3f} ms, {attention_tflops(B, H, N, d, ms):6.1f} TFLOP/s")
        except Exception as error:  # a step this GPU or this Triton cannot run
            print(f"{label:32}: does not run here ({type(error).__name__}: {str(error).splitlines()[0][:100]})")
    ms = bench_ms(lambda: sdpa_bnhd(q, k, v))
    print(f"{'SDPA, ' + sdpa_backend()[1]:32}: {ms:7.3f} ms, {attention_tflops(B, H, N, d, ms):6.1f} TFLOP/s")
    ptx, o = {}, torch.empty_like(q)
    lse = torch.empty((B, H, N), device=DEVICE, dtype=torch.float32)
    for switch in (False, True):  # your kernel launched as attention_forward launches it, keeping what it compiled
        config = {**attention_config(d, q.dtype, False), "DESCRIPTORS": has_tma(), "WARP_SPECIALIZE": switch}
        try:
            ptx[switch] = attention_forward_kernel[(triton.cdiv(N, config["BLOCK_M"]), B * H)](
                q, k, v, o, lse, *q.stride(), *k.stride(), *v.stride(), *o.stride(), H, N, 1, d ** -0.5,
                HEAD_DIM=d, CAUSAL=False, **config).asm["ptx"]
        except Exception as error:  # a kernel whose parameters are not the exercise's
            print(f"Could not launch attention_forward_kernel directly ({type(error).__name__}): compare by hand.")
            break
    if len(ptx) == 2:
        print(f"warp_specialize=True: the PTX is {'identical to' if ptx[True] == ptx[False] else 'not'} the PTX "
              f"without it{'' if ptx[True] == ptx[False] else ' (different code)'}; setmaxnreg (a warp split) "
              f"{'appears' if 'setmaxnreg' in ptx[True] else 'does not appear'} in it.")
    del q, k, v, o, lse
else:
    print("Measured on a GPU only (16-bit tensor cores): the interpreter's times say nothing about a GPU's schedule.")


# %% [markdown]
# ## 4. The backward pass
#
# Given `dO`, the gradient of the loss with respect to `O`, the backward pass returns `dQ`, `dK`,
# `dV`. Per head, with `S = Q K^T * scale`, `P = softmax(S)` and `O = P V`:
#
# $$dV = P^T dO, \qquad dP = dO\, V^T, \qquad dS = P \circ (dP - D), \qquad dQ = dS\, K \cdot \text{scale},
# \qquad dK = dS^T Q \cdot \text{scale},$$
#
# where `D` has one number per query row, `D_i = sum_j P_ij dP_ij`, which equals
# `sum_k dO_ik O_ik` (`O = P V`, so `sum_j P_ij (dO V^T)_ij = sum_k dO_ik (P V)_ik`): `D` is a
# row sum over `d` numbers, not over `N`. Five matrix products in all, against the forward's two:
# the backward does two and a half times the forward's arithmetic (when `P` is recomputed, one
# product more: three times).
#
# **P is never stored.** The forward pass saved `lse`, one number per row; the backward pass
# rebuilds each block `P = exp(S - lse)` (with `exp2`: `exp2(S * scale * log2(e) - lse * log2(e))`)
# from `Q` and `K` as it goes. The written question below asks you why that is the right trade.
#
# **The work is split three ways**, by what each program owns:
#
# 1. `attention_delta_kernel`: `D = rowsum(dO * O)`, once per row, before anything else. Each
#    program of the other two kernels needs `D` of the queries it touches; computed once, it is
#    `B * H * N` fp32 numbers to read instead of a product per block.
# 2. `attention_dkdv_kernel`: one program per (block of `BLOCK_OWN` keys, batch, K/V head). It keeps
#    its blocks of `K` and `V` and two fp32 accumulators `dK`, `dV` on the chip, and streams the
#    queries `BLOCK_STEP` at a time: `Q`, `dO`, `lse` and `D` of the block, then
#    `P^T = exp2(K Q^T * qk_scale - lse * log2(e))` (keys down, queries across: no transposes of
#    big blocks), `dV += P^T dO`, `dP^T = V dO^T`, `dS^T = P^T * (dP^T - D)`, `dK += dS^T Q`. **GQA**:
#    the K/V head `hk` is read by the query heads `hk * GROUP .. hk * GROUP + GROUP - 1`, and its
#    gradient is the sum of theirs: the program loops over the group's query heads too, and stores
#    `dK * scale` and `dV` once. No two programs write the same rows: no atomics.
# 3. `attention_dq_kernel`: one program per (block of `BLOCK_OWN` queries, batch, query head),
#    streaming the keys of its K/V head like the forward pass: `P`, `dP = dO V^T`,
#    `dS = P * (dP - D)`, `dQ += dS K`; store `dQ * scale`.
#
# **Causal**, in both directions: a dK/dV program with keys `start_n ..` skips every block of
# queries before `start_n` (they see none of its keys), masks the blocks that cross the diagonal
# and streams the rest unmasked; a dQ program stops at its last query, as the forward pass did.
# The same trick as the forward's, unmasked loops where no mask is needed, pays here too.
#
# ## Written answer W1 (3 points)

# %% [markdown] nbgrader={"grade": true, "grade_id": "written_recompute", "points": 3, "solution": true}
# **Written answer W1 (3 points).** Why does the backward pass recompute `P` from `Q`, `K` and the
# saved `lse` instead of having the forward pass store it? Count the bytes: for `B * H = 32`
# heads (one sequence of 32 heads), `N = 16384`, `d = 128`, in fp16, how large is `P`, how large
# are `lse` and the `Q`, `K`, `V`, `O` the backward pass reads anyway, and what does recomputing
# cost instead (in operations, against the backward's five products)? Which resource (memory, HBM
# bandwidth, tensor-core time) is scarce, and which one does recomputing spend?
#
# ### BEGIN SOLUTION
# Storing P: 32 heads x 16384^2 scores x 2 bytes = 17.2 GB, for one layer of one sequence: more
# than a tenth of an H200's 141 GB, and a model has dozens of layers whose activations are alive
# at once between the forward and the backward pass. Writing it and reading it back moves
# 34 GB: at 4.2 TB/s that is about 8 ms. The lse is 32 x 16384 x 4 bytes = 2 MB; Q, K, V, O and dO
# are 32 x 16384 x 128 x 2 bytes = 134 MB each. Recomputing costs one product more, Q K^T, per
# block: 2 N^2 d operations per head, 32 x 2 x 16384^2 x 128 = 2.2 TFLOP, about 2.2 ms at
# 990 TFLOP/s, on top of the backward's five products (11 TFLOP, 11 ms), so about 20% more
# arithmetic against 8 ms of traffic and 17 GB of memory saved. Memory (capacity and bandwidth)
# is the scarce resource; tensor-core operations are cheap, so the kernel spends them.
# ### END SOLUTION

# %% [markdown]
# ## Exercise 2: `attention_delta_kernel` and `attention_delta` (2 points)
#
# Write `attention_delta(o, do)`: for `o` and `do` of shape `(B, N, H, d)` (any strides), the
# `(B, H, N)` fp32 tensor `D[b, h, n] = sum_i do[b, n, h, i] * o[b, n, h, i]`, products and sum in
# fp32, by `attention_delta_kernel` (one program per block of rows of one `(b, h)`; its signature is
# yours).

# %% nbgrader={"grade_id": "attention_delta", "solution": true}
@triton.jit
def attention_delta_kernel(o_ptr, do_ptr, delta_ptr, stride_ob, stride_on, stride_oh, stride_od,
                           stride_dob, stride_don, stride_doh, stride_dod, H, N, HEAD_DIM: tl.constexpr,
                           BLOCK_M: tl.constexpr):
    """D = rowsum(dO * O) in fp32 for BLOCK_M rows of one (batch, head): program (row block, b * H + h)."""
    ### BEGIN SOLUTION
    pair = tl.program_id(1)
    b = (pair // H).to(tl.int64)
    h = (pair % H).to(tl.int64)
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    rows = offs_m[:, None].to(tl.int64)
    o = tl.load(o_ptr + b * stride_ob + h * stride_oh + rows * stride_on + offs_d[None, :] * stride_od,
                mask=offs_m[:, None] < N, other=0.0)
    do = tl.load(do_ptr + b * stride_dob + h * stride_doh + rows * stride_don + offs_d[None, :] * stride_dod,
                 mask=offs_m[:, None] < N, other=0.0)
    tl.store(delta_ptr + pair.to(tl.int64) * N + offs_m, tl.sum(o.to(tl.float32) * do.to(tl.float32), axis=1),
             mask=offs_m < N)
    ### END SOLUTION


def attention_delta(o: torch.Tensor, do: torch.Tensor) -> torch.Tensor:
    """(B, H, N) fp32: rowsum(do * o) over the head dim, for (B, N, H, d) o and do of any strides."""
    ### BEGIN SOLUTION
    if o.shape != do.shape or o.dim() != 4:
        raise ValueError(f"o and do must be (B, N, H, d) tensors of one shape, got {tuple(o.shape)}, {tuple(do.shape)}")
    B, N, H, d = o.shape
    delta = torch.empty((B, H, N), dtype=torch.float32, device=o.device)
    block = 64 if ON_GPU else 16
    attention_delta_kernel[(triton.cdiv(N, block), B * H)](o, do, delta, *o.stride(), *do.stride(), H, N,
                                                           HEAD_DIM=d, BLOCK_M=block)
    return delta
    ### END SOLUTION


# %% nbgrader={"grade_id": "delta_checks", "locked": true}
# The course's helpers for the tests of this lesson (read-only: grading restores them).
def check_delta(B, N, H, d, dtype=torch.float32, layout="separate"):
    """attention_delta on fresh o and do (laid out as attention_inputs lays out q): a kernel computed
    it, it equals rowsum(do * o) in fp32, and the inputs are unchanged."""
    o, do, _ = attention_inputs(B, N, H, H, d, dtype, layout)
    what = f"attention_delta on (B, N, H, d) = ({B}, {N}, {H}, {d}), {str(dtype).removeprefix('torch.')}, " \
           f"{layout} layout"
    untouched = [(t, t.clone()) for t in (o, do)]
    with guarded_allocations(), count_launches() as launches:
        delta = call_answer(attention_delta, o, do)
    expect_launched(launches, what, delta)
    expected = (o.float() * do.float()).sum(-1).transpose(1, 2).contiguous()
    check_output(delta, expected, name=what, inputs=untouched, atol=1e-4 * d, rtol=1e-4,
                 hint="D[b, h, n] = sum over i of do[b, n, h, i] * o[b, n, h, i], in fp32, stored at (b * H + h) * N + n: "
                      "are the rows past N masked, and every stride used?")


# %% nbgrader={"grade": true, "grade_id": "test_attention_delta", "locked": true, "points": 1}
check_delta(2, 50, 3, 64)
check_delta(1, 33, 4, 32, layout="fused")
print("attention_delta is right on 50 and 33 rows, separate and fused layouts.")

# %% nbgrader={"grade": true, "grade_id": "test_attention_delta_hidden", "locked": true, "points": 1}
# Hidden tests check attention_delta on more shapes, layouts and dtypes when your notebook is graded.
### BEGIN HIDDEN TESTS
for B, N, H, d in [(1, 1, 1, 16), (3, 17, 2, 128), (1, 100, 1, 64)]:
    check_delta(B, N, H, d)
for dtype in attention_dtypes():
    check_delta(2, 29, 2, 64, dtype=dtype, layout="heads first")
print("attention_delta passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## Exercise 3: `attention_dkdv_kernel`, `attention_dq_kernel` and `attention_backward` (8 points)
#
# Write the two kernels of section 4 (their signatures are yours; `@triton.jit` helpers of your own
# are welcome, one with a `MASKED` flag as in the forward pass) and
# `attention_backward(q, k, v, o, lse, do, causal=False, **config)`, which returns `(dq, dk, dv)`:
# `dq` of `q`'s shape and dtype, `dk` and `dv` of `k`'s (contiguous, allocated with `torch.empty`),
# `lse` as your forward pass saved it. It computes `D` with your `attention_delta` (once), and
# launches the dK/dV kernel on `(triton.cdiv(N, BLOCK_OWN), B * H_kv)` and the dQ kernel on
# `(triton.cdiv(N, BLOCK_OWN), B * H)`, with `backward_config(d, q.dtype)` updated with the
# `config` given (`BLOCK_OWN`, `BLOCK_STEP`, `num_warps`, `num_stages`; the tests keep
# `BLOCK_OWN` a multiple of `BLOCK_STEP`). Everything is computed in your kernels: the function only
# checks, allocates and launches.
#
# Accumulate in fp32; cast `P` and `dS` to the inputs' dtype before they enter `tl.dot` (as the
# forward pass does `P`), and remember `scale` twice: in the scores, and on `dK` and `dQ`.

# %% nbgrader={"grade_id": "attention_backward", "solution": true}
@triton.jit
def dkdv_from_queries(dk, dv, k, v, q_base, do_base, lse_base, delta_base, stride_qn, stride_qd, stride_don,
                      stride_dod, offs_n, lo, hi, N, qk_scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                      MASKED: tl.constexpr, CAUSAL: tl.constexpr):
    """dK and dV of the program's keys after the queries lo .. hi - 1 of one query head, BLOCK_M at a time."""
    ### BEGIN SOLUTION
    offs_d = tl.arange(0, HEAD_DIM)
    for start_m in range(lo, hi, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        rows = offs_m[:, None].to(tl.int64)
        if MASKED:
            q = tl.load(q_base + rows * stride_qn + offs_d[None, :] * stride_qd, mask=offs_m[:, None] < N, other=0.0)
            do = tl.load(do_base + rows * stride_don + offs_d[None, :] * stride_dod, mask=offs_m[:, None] < N,
                         other=0.0)
            lse = tl.load(lse_base + offs_m, mask=offs_m < N, other=0.0)
            delta = tl.load(delta_base + offs_m, mask=offs_m < N, other=0.0)
        else:
            q = tl.load(q_base + rows * stride_qn + offs_d[None, :] * stride_qd)
            do = tl.load(do_base + rows * stride_don + offs_d[None, :] * stride_dod)
            lse = tl.load(lse_base + offs_m)
            delta = tl.load(delta_base + offs_m)
        p_t = tl.exp2(tl.dot(k, tl.trans(q)) * qk_scale - lse[None, :] * 1.4426950408889634)  # (keys, queries)
        if MASKED:
            seen = (offs_m[None, :] < N) & (offs_n[:, None] < N)
            if CAUSAL:
                seen = seen & (offs_n[:, None] <= offs_m[None, :])
            p_t = tl.where(seen, p_t, 0.0)
        dv = tl.dot(p_t.to(do.dtype), do, dv)
        ds_t = p_t * (tl.dot(v, tl.trans(do)) - delta[None, :])
        dk = tl.dot(ds_t.to(q.dtype), q, dk)
    return dk, dv
    ### END SOLUTION


@triton.jit
def attention_dkdv_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr,
                          stride_qb, stride_qn, stride_qh, stride_qd,
                          stride_kb, stride_kn, stride_kh, stride_kd,
                          stride_vb, stride_vn, stride_vh, stride_vd,
                          stride_dob, stride_don, stride_doh, stride_dod,
                          stride_dkb, stride_dkn, stride_dkh, stride_dkd,
                          H, H_KV, N, GROUP, scale, HEAD_DIM: tl.constexpr, BLOCK_OWN: tl.constexpr,
                          BLOCK_STEP: tl.constexpr, CAUSAL: tl.constexpr):
    """dK and dV of BLOCK_OWN keys of K/V head hk of batch b (program (key block, b * H_KV + hk)), summed
    over the GROUP query heads that read them, streaming their queries BLOCK_STEP at a time."""
    ### BEGIN SOLUTION
    start_n = tl.program_id(0) * BLOCK_OWN
    pair = tl.program_id(1)
    b = (pair // H_KV).to(tl.int64)
    hk = (pair % H_KV).to(tl.int64)
    offs_n = start_n + tl.arange(0, BLOCK_OWN)
    offs_d = tl.arange(0, HEAD_DIM)
    rows = offs_n[:, None].to(tl.int64)
    k = tl.load(k_ptr + b * stride_kb + hk * stride_kh + rows * stride_kn + offs_d[None, :] * stride_kd,
                mask=offs_n[:, None] < N, other=0.0)
    v = tl.load(v_ptr + b * stride_vb + hk * stride_vh + rows * stride_vn + offs_d[None, :] * stride_vd,
                mask=offs_n[:, None] < N, other=0.0)
    dk = tl.zeros((BLOCK_OWN, HEAD_DIM), tl.float32)
    dv = tl.zeros((BLOCK_OWN, HEAD_DIM), tl.float32)
    qk_scale = scale * 1.4426950408889634
    whole = N - N % BLOCK_STEP  # query blocks before it have no rows past N
    if CAUSAL:
        first = start_n // BLOCK_STEP * BLOCK_STEP  # queries before it see none of these keys: skipped
        diagonal_end = tl.minimum(tl.cdiv(start_n + BLOCK_OWN, BLOCK_STEP) * BLOCK_STEP, N)
    else:
        first = 0
        diagonal_end = 0
    for g in range(0, GROUP):  # the query heads of the group, each adding its share
        h = hk * GROUP + g
        q_base = q_ptr + b * stride_qb + h * stride_qh
        do_base = do_ptr + b * stride_dob + h * stride_doh
        lse_base = lse_ptr + (b * H + h) * N
        delta_base = delta_ptr + (b * H + h) * N
        if CAUSAL:  # the query blocks that cross the diagonal
            dk, dv = dkdv_from_queries(dk, dv, k, v, q_base, do_base, lse_base, delta_base, stride_qn, stride_qd,
                                       stride_don, stride_dod, offs_n, first, diagonal_end, N, qk_scale, HEAD_DIM,
                                       BLOCK_STEP, True, True)
        dk, dv = dkdv_from_queries(dk, dv, k, v, q_base, do_base, lse_base, delta_base, stride_qn, stride_qd,
                                   stride_don, stride_dod, offs_n, diagonal_end, whole, N, qk_scale, HEAD_DIM,
                                   BLOCK_STEP, False, CAUSAL)
        dk, dv = dkdv_from_queries(dk, dv, k, v, q_base, do_base, lse_base, delta_base, stride_qn, stride_qd,
                                   stride_don, stride_dod, offs_n, tl.maximum(whole, diagonal_end), N, N, qk_scale,
                                   HEAD_DIM, BLOCK_STEP, True, CAUSAL)
    out = b * stride_dkb + hk * stride_dkh + rows * stride_dkn + offs_d[None, :] * stride_dkd
    tl.store(dk_ptr + out, (dk * scale).to(dk_ptr.dtype.element_ty), mask=offs_n[:, None] < N)
    tl.store(dv_ptr + out, dv.to(dv_ptr.dtype.element_ty), mask=offs_n[:, None] < N)
    ### END SOLUTION


@triton.jit
def dq_from_keys(dq, q, do, lse, delta, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd, offs_m, lo, hi,
                 N, qk_scale, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, MASKED: tl.constexpr,
                 CAUSAL: tl.constexpr):
    """dQ of the program's queries after the keys lo .. hi - 1, BLOCK_N at a time (lse in log2 units)."""
    ### BEGIN SOLUTION
    offs_d = tl.arange(0, HEAD_DIM)
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        rows = offs_n[:, None].to(tl.int64)
        if MASKED:
            k = tl.load(k_base + rows * stride_kn + offs_d[None, :] * stride_kd, mask=offs_n[:, None] < N, other=0.0)
            v = tl.load(v_base + rows * stride_vn + offs_d[None, :] * stride_vd, mask=offs_n[:, None] < N, other=0.0)
        else:
            k = tl.load(k_base + rows * stride_kn + offs_d[None, :] * stride_kd)
            v = tl.load(v_base + rows * stride_vn + offs_d[None, :] * stride_vd)
        p = tl.exp2(tl.dot(q, tl.trans(k)) * qk_scale - lse[:, None])
        if MASKED:
            seen = offs_n[None, :] < N
            if CAUSAL:
                seen = seen & (offs_n[None, :] <= offs_m[:, None])
            p = tl.where(seen, p, 0.0)
        ds = p * (tl.dot(do, tl.trans(v)) - delta[:, None])
        dq = tl.dot(ds.to(k.dtype), k, dq)
    return dq
    ### END SOLUTION


@triton.jit
def attention_dq_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr,
                        stride_qb, stride_qn, stride_qh, stride_qd,
                        stride_kb, stride_kn, stride_kh, stride_kd,
                        stride_vb, stride_vn, stride_vh, stride_vd,
                        stride_dob, stride_don, stride_doh, stride_dod,
                        stride_dqb, stride_dqn, stride_dqh, stride_dqd,
                        H, N, GROUP, scale, HEAD_DIM: tl.constexpr, BLOCK_OWN: tl.constexpr,
                        BLOCK_STEP: tl.constexpr, CAUSAL: tl.constexpr):
    """dQ of BLOCK_OWN queries of query head h of batch b (program (query block, b * H + h)), streaming
    the keys of K/V head h // GROUP BLOCK_STEP at a time."""
    ### BEGIN SOLUTION
    start_m = tl.program_id(0) * BLOCK_OWN
    pair = tl.program_id(1)
    b = (pair // H).to(tl.int64)
    h = (pair % H).to(tl.int64)
    hk = h // GROUP
    offs_m = start_m + tl.arange(0, BLOCK_OWN)
    offs_d = tl.arange(0, HEAD_DIM)
    rows = offs_m[:, None].to(tl.int64)
    q = tl.load(q_ptr + b * stride_qb + h * stride_qh + rows * stride_qn + offs_d[None, :] * stride_qd,
                mask=offs_m[:, None] < N, other=0.0)
    do = tl.load(do_ptr + b * stride_dob + h * stride_doh + rows * stride_don + offs_d[None, :] * stride_dod,
                 mask=offs_m[:, None] < N, other=0.0)
    lse = tl.load(lse_ptr + pair.to(tl.int64) * N + offs_m, mask=offs_m < N, other=0.0) * 1.4426950408889634
    delta = tl.load(delta_ptr + pair.to(tl.int64) * N + offs_m, mask=offs_m < N, other=0.0)
    k_base = k_ptr + b * stride_kb + hk * stride_kh
    v_base = v_ptr + b * stride_vb + hk * stride_vh
    dq = tl.zeros((BLOCK_OWN, HEAD_DIM), tl.float32)
    qk_scale = scale * 1.4426950408889634
    if CAUSAL:
        diagonal = start_m // BLOCK_STEP * BLOCK_STEP
        stop = tl.minimum(N, start_m + BLOCK_OWN)
    else:
        diagonal = N - N % BLOCK_STEP
        stop = N
    dq = dq_from_keys(dq, q, do, lse, delta, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd, offs_m, 0,
                      diagonal, N, qk_scale, HEAD_DIM, BLOCK_STEP, False, CAUSAL)
    dq = dq_from_keys(dq, q, do, lse, delta, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd, offs_m,
                      diagonal, stop, N, qk_scale, HEAD_DIM, BLOCK_STEP, True, CAUSAL)
    tl.store(dq_ptr + b * stride_dqb + h * stride_dqh + rows * stride_dqn + offs_d[None, :] * stride_dqd,
             (dq * scale).to(dq_ptr.dtype.element_ty), mask=offs_m[:, None] < N)
    ### END SOLUTION


def attention_backward(q, k, v, o, lse, do, causal=False, **config):
    """(dq, dk, dv) of o = attention_forward(q, k, v, causal)[0] given do, o's gradient; dk and dv
    summed over the query heads of each group."""
    ### BEGIN SOLUTION
    B, N, H, d = q.shape
    H_kv = k.shape[2]
    if k.shape != (B, N, H_kv, d) or v.shape != k.shape or H % H_kv or o.shape != q.shape or do.shape != q.shape:
        raise ValueError(f"shapes do not fit: q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}, "
                         f"o {tuple(o.shape)}, do {tuple(do.shape)}")
    if lse.shape != (B, H, N) or lse.dtype != torch.float32:
        raise ValueError(f"lse must be the forward pass's (B, H, N) fp32 log-sum-exp, got {tuple(lse.shape)}")
    config = {**backward_config(d, q.dtype), **config}
    delta = attention_delta(o, do)
    dq = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    dk = torch.empty(k.shape, dtype=k.dtype, device=k.device)
    dv = torch.empty(v.shape, dtype=v.dtype, device=v.device)
    blocks = triton.cdiv(N, config["BLOCK_OWN"])
    attention_dkdv_kernel[(blocks, B * H_kv)](q, k, v, do, lse, delta, dk, dv, *q.stride(), *k.stride(), *v.stride(),
                                              *do.stride(), *dk.stride(), H, H_kv, N, H // H_kv, d ** -0.5,
                                              HEAD_DIM=d, CAUSAL=causal, **config)
    attention_dq_kernel[(blocks, B * H)](q, k, v, do, lse, delta, dq, *q.stride(), *k.stride(), *v.stride(),
                                         *do.stride(), *dq.stride(), H, N, H // H_kv, d ** -0.5, HEAD_DIM=d,
                                         CAUSAL=causal, **config)
    return dq, dk, dv
    ### END SOLUTION


# %% nbgrader={"grade_id": "backward_checks", "locked": true}
# The course's helpers for the tests of this lesson (read-only: grading restores them).
def gradient_tolerance(dtype):
    """(atol, rtol) for dq, dk, dv on inputs of size about 1. The backward accumulates in fp32, but
    P and dS are rounded to the inputs' dtype before their products (as every FlashAttention does),
    and dq, dk, dv at the store: fp16 (10 bits) 2e-2, bf16 (7 bits, 8 times coarser) 1e-1. fp32
    inputs: exact fp32 on the interpreter and a T4, TF32 (10 bits) in each tl.dot on newer GPUs, five
    products deep: 2e-2."""
    return {torch.float16: (2e-2, 2e-2), torch.bfloat16: (1e-1, 5e-2)}.get(dtype, (2e-2, 2e-2))


def gradient_hint(name, B, N, H, H_kv, causal):
    hints = []
    if name in ("dk", "dv") and H != H_kv:
        hints.append(f"{H} query heads share {H_kv} K/V heads: is {name} summed over the {H // H_kv} query heads "
                     "of each group (the dK/dV program loops over them, h = hk * GROUP + g) before one store?")
    if causal and N > 1:
        hints.append("causal: are the query blocks before the program's first key skipped in the dK/dV kernel, the "
                     "keys after the last query skipped in the dQ kernel, and P masked (offs_n <= offs_m) in the "
                     "blocks that cross the diagonal?")
    if N % 16:
        hints.append(f"N = {N} is not a multiple of any block: are the rows past N loaded with masks (other=0.0) and "
                     "their probabilities zero?")
    hints.append("is P rebuilt as exp2(S * scale * log2(e) - lse * log2(e)) (lse is in natural logarithms), dS = P * "
                 "(dP - D) with D from attention_delta, and are dK and dQ multiplied by scale?")
    return " ".join(hints)


def check_gradients(got, q, k, v, do, causal, what, untouched=()):
    """Compare (dq, dk, dv) with the fp32 reference's gradients, naming the likely mistake."""
    B, N, H, d = q.shape
    H_kv = k.shape[2]
    if not (isinstance(got, (tuple, list)) and len(got) == 3):
        raise CheckFailed(f"{what} returned {type(got).__name__}, expected a tuple (dq, dk, dv).")
    atol, rtol = gradient_tolerance(q.dtype)
    for name, mine, torchs in zip(("dq", "dk", "dv"), got, reference_gradients(q, k, v, do, causal)):
        check_output(mine, torchs, name=f"{what}: {name}", inputs=untouched, atol=atol, rtol=rtol,
                     hint=gradient_hint(name, B, N, H, H_kv, causal))


def run_backward(B, N, H, H_kv, d, dtype=torch.float32, causal=False, layout="fused", **config):
    """attention_backward on fresh inputs, with o and lse from the course's reference (so that a
    mistake of the forward pass is not taken for one of the backward's), guarded allocations and
    counted launches: kernels computed dq, dk and dv, and they are right."""
    q, k, v = attention_inputs(B, N, H, H_kv, d, dtype, layout)
    do = attention_inputs(B, N, H, H_kv, d, dtype, layout)[0]
    o, lse = reference_attention(q, k, v, causal)
    what = f"attention_backward on {describe(B, N, H, H_kv, d, dtype, causal, layout)}" + \
        "".join(f", {key}={value}" for key, value in config.items())
    untouched = [(t, t.clone()) for t in (q, k, v, o, lse, do)]
    with guarded_allocations(), count_launches() as launches:
        got = call_answer(attention_backward, q, k, v, o, lse, do, causal=causal, **config)
    if isinstance(got, (tuple, list)) and len(got) == 3:
        for name, grad in zip(("dq", "dk", "dv"), got):
            expect_launched(launches, f"{what} ({name})", grad)
    check_gradients(got, q, k, v, do, causal, what, untouched)


# %% [markdown]
# The test runs your backward pass (with `o` and `lse` from the course's reference) on 2 sequences
# of 50 tokens with 4 query heads over 2 K/V heads, causal and not, then multi-query attention with
# 4 query heads on one K/V head, `d = 128`, and the dtypes `tl.dot` takes here.

# %% nbgrader={"grade": true, "grade_id": "test_attention_backward", "locked": true, "points": 3}
for causal in (False, True):
    run_backward(2, 50, 4, 2, 64, causal=causal)
run_backward(1, 37, 4, 1, 32, causal=True, layout="heads first")
run_backward(1, 24, 2, 2, 128, layout="separate")
for dtype in attention_dtypes()[1:]:
    run_backward(1, 40, 2, 1, 64, dtype=dtype, causal=True)
print("attention_backward is right with grouped and multi-query heads, causal and not, in",
      ", ".join(str(t).removeprefix("torch.") for t in attention_dtypes()))

# %% nbgrader={"grade": true, "grade_id": "test_attention_backward_hidden", "locked": true, "points": 5}
# Hidden tests check attention_backward on more shapes, groups, layouts, dtypes and blocks when your
# notebook is graded.
### BEGIN HIDDEN TESTS
for B, N, H, H_kv, causal in [(1, 1, 1, 1, False), (1, 2, 2, 1, True), (2, 17, 4, 4, True), (1, 33, 8, 2, False),
                              (1, 64, 4, 1, True)]:
    run_backward(B, N, H, H_kv, 32, causal=causal)
for dtype in attention_dtypes():
    run_backward(1, 29, 4, 2, 64, dtype=dtype, causal=True, layout="separate")
for blocks in [dict(BLOCK_OWN=16, BLOCK_STEP=16), dict(BLOCK_OWN=64, BLOCK_STEP=16)]:
    run_backward(1, 70, 2, 1, 32, causal=True, **blocks)
if ON_GPU:  # longer sequences, d = 128 and groups of 8, where the GPU makes them cheap
    for causal in (False, True):
        run_backward(2, 300, 8, 1, 128, dtype=fast_dtype(), causal=causal)
        run_backward(1, 257, 16, 2, 64, dtype=attention_dtypes()[-1], causal=causal, layout="heads first")
print("attention_backward passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ### Question Q (1 point)
#
# This lesson's `dQ` takes a second kernel, which computes `P` and `dP` for every block a second
# time. FlashAttention-2's backward (in CUDA, and in its Triton version when the blocks of keys run
# in parallel) does it another way: the dK/dV programs, which have `dS` of every block anyway, also
# add `dS K * scale` into `dQ` with atomic adds (`tl.atomic_add`) on an fp32 buffer. (Triton's own
# tutorial does neither: each of its programs computes a block of dK/dV, then a block of dQ, in one
# kernel.) What does each way cost?
#
# - **a.** Nothing separates them: both compute the same products once and give bitwise the same
#   `dQ`; atomics only save a launch.
# - **b.** Atomics compute `Q K^T` and `dO V^T` once per block instead of twice (the second pass
#   does two of the five products again, 40% more arithmetic), but every dK/dV program adds into
#   the same rows of `dQ`: fp32 atomics contend, `dQ` needs an fp32 buffer zeroed first and converted
#   after, and the order of the additions changes from run to run, so `dQ` is not bitwise
#   reproducible. The second pass writes each row of `dQ` once, in a fixed order: deterministic.
# - **c.** The second pass is always faster because atomics are slower than recomputing anything.
# - **d.** Atomics are deterministic because every program adds the same numbers; only the second
#   pass depends on the order in which its programs run.
#
# Set `answer_dq` to one letter in the cell below.

# %% nbgrader={"grade_id": "q_dq", "solution": true}
# Replace the two lines below with one line: answer_dq = "<your letter>"
### BEGIN SOLUTION
answer_dq = "b"  # one of "a", "b", "c", "d"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_q_dq", "locked": true, "points": 1}
check_choice(globals().get("answer_dq"), "answer_dq")
print("Your answer is recorded; it is checked when your notebook is graded.")
### BEGIN HIDDEN TESTS
check_choice(answer_dq, "answer_dq", expected="b",
             why="atomics save the recomputed products (2 of 5) but contend for dQ's rows, need an fp32 buffer, and "
                 "add in an order that changes between runs: not bitwise reproducible; the second pass is.")
### END HIDDEN TESTS

# %% [markdown]
# ## 5. A layer that trains
#
# ## Exercise 4: `FlashAttention` and `flash_attention` (5 points)
#
# Wrap your kernels in a `torch.autograd.Function`: `forward(ctx, q, k, v, causal=False)` runs
# `attention_forward`, saves what the backward pass needs with `ctx.save_for_backward` (`q`, `k`,
# `v`, `o`, `lse`: `P` is not among them) and returns `o`; `backward(ctx, do)` returns
# `attention_backward`'s `(dq, dk, dv)` and `None` for `causal`. Then
# `flash_attention(q, k, v, causal=False)` is `FlashAttention.apply(q, k, v, causal)`. The tests
# compare its gradients with torch's, and they run the whole backward pass inside the kit's launch
# counter: a backward that calls `torch.autograd.grad`, SDPA's backward or `torch.func`, or that
# recomputes anything with torch (in a grid function too), earns nothing.

# %% nbgrader={"grade_id": "flash_attention", "solution": true}
class FlashAttention(torch.autograd.Function):
    """Attention as a layer: forward by attention_forward (saving lse), backward by attention_backward."""

    @staticmethod
    def forward(ctx, q, k, v, causal=False):
        ### BEGIN SOLUTION
        o, lse = attention_forward(q, k, v, causal=causal)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.causal = causal
        return o
        ### END SOLUTION

    @staticmethod
    def backward(ctx, do):
        ### BEGIN SOLUTION
        q, k, v, o, lse = ctx.saved_tensors
        dq, dk, dv = attention_backward(q, k, v, o, lse, do, causal=ctx.causal)
        return dq, dk, dv, None
        ### END SOLUTION


def flash_attention(q, k, v, causal=False):
    """Attention of (B, N, H, d) q and (B, N, H_kv, d) k, v that autograd differentiates with your kernels."""
    ### BEGIN SOLUTION
    return FlashAttention.apply(q, k, v, causal)
    ### END SOLUTION


# %% nbgrader={"grade_id": "layer_checks", "locked": true}
# The course's helpers for the tests of this lesson (read-only: grading restores them).
def run_layer(B, N, H, H_kv, d, dtype=torch.float32, causal=False, layout="fused"):
    """flash_attention forward and backward on fresh inputs: every launch counted (forward, then the
    whole backward through torch.autograd.grad), and o and the gradients compared with torch's."""
    q, k, v = attention_inputs(B, N, H, H_kv, d, dtype, layout)
    do = attention_inputs(B, N, H, H_kv, d, dtype, layout)[0]
    what = f"flash_attention on {describe(B, N, H, H_kv, d, dtype, causal, layout)}"
    untouched = [(t, t.clone()) for t in (q, k, v, do)]
    leaves = [t.requires_grad_() for t in (q, k, v)]
    with guarded_allocations(), count_launches() as forward:
        o = call_answer(flash_attention, *leaves, causal=causal)
    expect_launched(forward, what, o)
    check_output(o.detach(), reference_attention(q.detach(), k.detach(), v.detach(), causal)[0], name=f"{what}: o",
                 atol=output_tolerance(dtype)[0], rtol=output_tolerance(dtype)[1],
                 hint="does FlashAttention.forward return attention_forward's o?")
    if o.grad_fn is None:
        raise CheckFailed(f"{what}: its output has no grad_fn, so autograd cannot differentiate it: return "
                          "FlashAttention.apply(q, k, v, causal), and let forward return o.")
    with guarded_allocations(), count_launches() as backward:
        got = call_answer(torch.autograd.grad, o, leaves, do, name="FlashAttention.backward")
    if not backward:
        raise CheckFailed(f"{what}: its backward pass launched no Triton kernel: FlashAttention.backward must "
                          "call attention_backward with the tensors forward saved.")
    for name, grad in zip(("dq", "dk", "dv"), got):
        expect_launched(backward, f"{what}, the backward pass ({name})", grad)
    check_gradients(got, *(t.detach() for t in leaves), do, causal, f"{what}, the backward pass", untouched)


# %% [markdown]
# The test trains nothing yet: it runs `flash_attention` forward and backward on grouped and
# multi-query heads, causal and not, in each dtype `tl.dot` takes here, and compares with the
# gradients of torch's autograd through the three-step attention in fp32.

# %% nbgrader={"grade": true, "grade_id": "test_flash_attention", "locked": true, "points": 2}
for causal in (False, True):
    run_layer(1, 45, 4, 2, 64, causal=causal)
for dtype in attention_dtypes()[1:]:
    run_layer(1, 33, 4, 1, 64, dtype=dtype, causal=True, layout="separate")
print("flash_attention's gradients match torch's, causal and not, grouped and multi-query, in",
      ", ".join(str(t).removeprefix("torch.") for t in attention_dtypes()))

# %% nbgrader={"grade": true, "grade_id": "test_flash_attention_hidden", "locked": true, "points": 3}
# Hidden tests check flash_attention on more shapes, groups, layouts and dtypes when your notebook
# is graded.
### BEGIN HIDDEN TESTS
for B, N, H, H_kv, causal in [(1, 1, 2, 1, True), (2, 19, 2, 2, False), (1, 40, 4, 4, True)]:
    run_layer(B, N, H, H_kv, 32, causal=causal, layout="heads first")
for dtype in attention_dtypes():
    run_layer(1, 50, 8, 2, sized(128, 64), dtype=dtype, causal=True)
if ON_GPU:
    for causal in (False, True):
        run_layer(2, 333, 16, 2, 128, dtype=fast_dtype(), causal=causal)
print("flash_attention passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## 6. Using it: a transformer block that trains
#
# The course's helper below builds a tiny language model, one transformer block: an embedding, a
# layer norm, an attention layer with `H = 4` query heads over `H_kv = 2` K/V heads (causal, its
# projections viewed as `(B, N, H, d)` as in section 1), a two-layer MLP, and the logits. Its data is
# a copy task: each sequence is random tokens followed by the same tokens again, so the second half
# can be predicted by attending to the first half, and only attention can learn it. It trains the
# model for a few steps of Adam from a fixed seed twice: once with your `flash_attention`, once with
# torch's SDPA (`enable_gqa=True`), and returns both loss curves. Same initial weights, same data,
# same optimiser: the curves should lie on top of each other.
#
# ## Exercise 5: train with your attention (2 points)
#
# No new code. The test trains both models, plots the two curves, and expects every step's losses
# to agree within `loss_tolerance()` of the loss (the two models compute the same function; what
# separates them is the order of fp32 additions, and on GPUs from Ampere on TF32 in `tl.dot` for
# fp32 inputs, about 1e-3 relative in each product, which Adam's steps carry from one step to the
# next: 1e-3 where `tl.dot` is IEEE fp32, 2e-2 with TF32), and the loss to go down. It also counts
# the kernels the training launched: a backward pass that launches none has left the work to torch.

# %% nbgrader={"grade_id": "training_helpers", "locked": true}
# The course's helpers for the tests of this lesson (read-only: grading restores them).
def torch_sdpa_attention(q, k, v, causal=False):
    """SDPA on (B, N, H, d) q and (B, N, H_kv, d) k, v, by torch's autograd."""
    return F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=causal,
                                          enable_gqa=q.shape[2] != k.shape[2]).transpose(1, 2)


def loss_tolerance():
    """How far the two loss curves may drift apart, relative to the loss. The two models compute the
    same function; where tl.dot computes in IEEE fp32 (the interpreter, a T4) only the order of fp32
    additions separates them (about 1e-7 per step, measured): 1e-3, which a wrong gradient (a causal
    mask off by one, lse in the wrong units) passes within two steps. On newer GPUs tl.dot truncates
    fp32 inputs to TF32 (about 1e-3 relative in each product), and Adam carries it from step to step: 2e-2."""
    return 1e-3 if not ON_GPU or CAPABILITY < (8, 0) else 2e-2


def tiny_block_losses(attention, steps=sized(30, 6), seed=0):
    """The losses of `steps` steps of Adam training one transformer block (attention(q, k, v, causal=True)
    in its attention layer) on the copy task, in fp32 on this device, from a fixed seed."""
    vocab, D, H, H_kv, d = 32, 64, 4, 2, 16
    B, half = sized(8, 2), sized(64, 8)
    generator = torch.Generator().manual_seed(seed)

    def weight(*shape):
        return (torch.randn(*shape, generator=generator) * shape[0] ** -0.5).to(DEVICE).requires_grad_()

    params = dict(embed=weight(vocab, D), wq=weight(D, H * d), wk=weight(D, H_kv * d), wv=weight(D, H_kv * d),
                  wo=weight(H * d, D), w1=weight(D, 4 * D), w2=weight(4 * D, D), out=weight(D, vocab))
    first = torch.randint(0, vocab, (B, half), generator=generator)
    tokens = torch.cat([first, first], dim=1).to(DEVICE)  # (B, 2 half): the second half copies the first
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    N = inputs.shape[1]
    optimiser = torch.optim.Adam(params.values(), lr=1e-2)
    losses = []
    for _ in range(steps):
        x = params["embed"][inputs]
        h = F.layer_norm(x, (D,))
        q = (h @ params["wq"]).view(B, N, H, d)
        k = (h @ params["wk"]).view(B, N, H_kv, d)
        v = (h @ params["wv"]).view(B, N, H_kv, d)
        x = x + attention(q, k, v, causal=True).reshape(B, N, H * d) @ params["wo"]
        x = x + F.gelu(F.layer_norm(x, (D,)) @ params["w1"]) @ params["w2"]
        loss = F.cross_entropy((F.layer_norm(x, (D,)) @ params["out"]).view(-1, vocab), targets.reshape(-1))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    return losses


# %% nbgrader={"grade": true, "grade_id": "test_training", "locked": true, "points": 2}
theirs = tiny_block_losses(torch_sdpa_attention)
with count_launches() as launches:  # the whole training: torch's layers, and your kernels
    ours = call_answer(tiny_block_losses, flash_attention, name="training with flash_attention")
with count_launches() as one_forward:
    call_answer(flash_attention, *attention_inputs(1, 16, 4, 2, 16), causal=True)
if len(launches) < len(ours) * (len(one_forward) + 1):
    raise CheckFailed(f"Training launched {len(launches)} Triton kernels in {len(ours)} steps, and one forward pass of "
                      f"flash_attention launches {len(one_forward)}: the backward passes launched none. "
                      "FlashAttention.backward must compute the gradients with attention_backward's kernels, not "
                      "with torch (torch.autograd.grad, SDPA's backward, torch.func).")
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(range(1, len(theirs) + 1), theirs, marker="o", label="torch SDPA")
ax.plot(range(1, len(ours) + 1), ours, marker="x", linestyle="--", label="your flash_attention")
ax.set_xlabel("training step")
ax.set_ylabel("cross-entropy loss")
ax.set_title("one transformer block on the copy task" + ("" if ON_GPU else " (interpreter: a few steps)"))
ax.grid(True, alpha=0.3)
ax.legend()
plt.show()
worst = max(range(len(ours)), key=lambda i: abs(ours[i] - theirs[i]))
print(f"losses: yours {ours[0]:.4f} -> {ours[-1]:.4f}, torch's {theirs[0]:.4f} -> {theirs[-1]:.4f}; largest "
      f"difference {abs(ours[worst] - theirs[worst]):.2e} at step {worst + 1}")
if abs(ours[worst] - theirs[worst]) > loss_tolerance() * max(1.0, abs(theirs[worst])):
    raise CheckFailed(f"At step {worst + 1} the loss with your flash_attention is {ours[worst]:.4f}, with torch's "
                      f"{theirs[worst]:.4f}: the models drift apart. "
                      + ("They agree at step 1, so the forward pass is right and the gradients are not: "
                         "check attention_backward (dk and dv summed over the group, causal skips, scale)."
                         if abs(ours[0] - theirs[0]) <= 1e-3 * max(1.0, abs(theirs[0])) else
                         "They differ at step 1 already: the forward pass (causal, grouped heads) is wrong."))
if not ours[-1] < ours[0]:
    raise CheckFailed(f"The loss did not go down with your flash_attention ({ours[0]:.4f} -> {ours[-1]:.4f}).")
print("Your attention trains the block as torch's does.")

# %% [markdown]
# ## 7. Against PyTorch's SDPA
#
# ## Exercise 6: forward and backward against SDPA (6 points)
#
# No new code. On compute capability 9.0 (H100, H200) the first test times your `attention_forward`
# and torch's SDPA (its cuDNN backend where it runs, else FlashAttention-2's: `sdpa_backend()` says
# which) at `B, H, N, d = 1, 32, 4096, 128`, fp16, not causal, in turns (one run of each per
# round) in the same notebook, and expects yours to reach **`FORWARD_TARGET` times SDPA's speed**
# (3 points); the second times the backward passes alone, your `attention_backward` against SDPA's
# backward (through `torch.autograd.grad` on a graph kept for the purpose), and expects
# **`BACKWARD_TARGET` times** its speed (3 points). Elsewhere the tests print the numbers, say why
# they are not graded, and pass.
#
# The targets catch a kernel that does not use the GPU the way this lesson does, not one that has
# missed a refinement. On the course's H200 at this shape (docs/calibration.md has every figure)
# the reference forward ran at 0.59x cuDNN's; with pointers instead of descriptors 0.51x, with
# every block masked 0.55x, with lesson 7's blocks (64 queries, 32 keys, 4 warps) 0.40x, but with
# 32 x 16 blocks in 4 warps and one stage 0.08x. The backward is further from cuDNN's: the
# reference ran at 0.57x, with two pipeline stages 0.41x, with 64 keys per program 0.27x, with
# `dQ` added by fp32 atomics (question Q) 0.19x, and with 32 keys per program, 16 per step, 4 warps
# and one stage 0.12x. The targets sit between the slowest of the ways this lesson teaches and the
# naive blocks: 0.25x forward, 0.15x backward.

# %% nbgrader={"grade_id": "speed_targets", "locked": true}
# The performance targets (read-only: grading restores them): fractions of SDPA's speed measured in
# the same notebook, on compute capability 9.0, calibrated on the H200 (docs/calibration.md).
FORWARD_TARGET = 0.25
BACKWARD_TARGET = 0.15
SPEED_SHAPE = (1, 32, 4096, 128)  # B, H, N, d: one sequence, so that the timed copies fit the grader's 4 GB

# %% nbgrader={"grade": true, "grade_id": "test_forward_performance", "locked": true, "points": 3}
graded = graded_speed()
dtype = fast_dtype()
B, H, N, d = SPEED_SHAPE if graded else (1, 2, sized(1024, 64), 64)
if not graded:
    print("Not graded here:", "the interpreter's times say nothing about a GPU." if not ON_GPU else
          f"compute capability {CAPABILITY[0]}.{CAPABILITY[1]}; the targets were set on 9.0 (H100, H200).")
run_forward(1, 100, 2, 1, 64, dtype=dtype)  # a short sequence first: a missing mask is caught in the guard bands
q, k, v = attention_inputs(B, N, H, H, d, dtype, "separate")
with exclusive_gpu():  # under the grader, no other notebook runs on the GPU meanwhile
    atol, rtol = output_tolerance(dtype)
    ours, theirs = bench_against(lambda q, k, v: call_answer(attention_forward, q, k, v)[0], sdpa_bnhd, q, k, v,
                                 expect=lambda q, k, v: reference_attention(q, k, v)[0], atol=atol, rtol=rtol)
with count_launches() as launches:
    o, lse = call_answer(attention_forward, q, k, v)
expect_launched(launches, "attention_forward", o)
expect_launched(launches, "attention_forward (its log-sum-exp)", lse)
del o, lse, q, k, v
flops = 4 * B * H * N * N * d
verdict = (f"attention_forward on (B, H, N, d) = ({B}, {H}, {N}, {d}), {str(dtype).removeprefix('torch.')}: "
           f"{ours:.3f} ms ({flops / ours / 1e9:.4g} TFLOP/s), SDPA ({sdpa_backend()[1]}) {theirs:.3f} ms "
           f"({flops / theirs / 1e9:.4g} TFLOP/s): {theirs / ours:.2f}x SDPA's; the target is {FORWARD_TARGET}x.")
check_speed_against(theirs, ours, FORWARD_TARGET, verdict,
                    f"attention_forward at (B, H, N, d) = {SPEED_SHAPE} in fp16, on compute capability 9.0, "
                    f"for {FORWARD_TARGET}x\nthe speed of SDPA (cuDNN's attention where it runs)",
                    "Does attention_forward use attention_config's blocks (128 queries, 64 keys per step at d = 128, "
                    "8 warps, 3 stages), compute both products with tl.dot on fp16 inputs, use exp2 with log2(e) "
                    "folded into the scale, and run its loop without masks except at the tail?", graded)

# %% nbgrader={"grade": true, "grade_id": "test_backward_performance", "locked": true, "points": 3}
graded = graded_speed()
dtype = fast_dtype()
B, H, N, d = SPEED_SHAPE if graded else (1, 2, sized(1024, 64), 64)
run_backward(1, 70, 2, 1, 64, dtype=dtype)  # a short sequence first
q, k, v = attention_inputs(B, N, H, H, d, dtype, "separate")
do = attention_inputs(B, N, H, H, d, dtype, "separate")[0]
o, lse = reference_attention(q, k, v)
leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
graph = sdpa_bnhd(*leaves)  # SDPA's graph, kept: each timed call runs its backward alone
with exclusive_gpu():
    ours, theirs = bench_against(lambda *inputs: call_answer(attention_backward, *inputs),
                                 lambda *inputs: torch.autograd.grad(graph, leaves, inputs[-1], retain_graph=True),
                                 q, k, v, o, lse, do)
with count_launches() as launches:
    got = call_answer(attention_backward, q, k, v, o, lse, do)
for name, grad in zip(("dq", "dk", "dv"), got):
    expect_launched(launches, f"attention_backward ({name})", grad)
del got, graph, leaves, q, k, v, do, o, lse
flops = 10 * B * H * N * N * d  # five products of 2 N^2 d operations each
verdict = (f"attention_backward on (B, H, N, d) = ({B}, {H}, {N}, {d}), {str(dtype).removeprefix('torch.')}: "
           f"{ours:.3f} ms ({flops / ours / 1e9:.4g} TFLOP/s), SDPA's backward ({sdpa_backend()[1]}) {theirs:.3f} ms "
           f"({flops / theirs / 1e9:.4g} TFLOP/s): {theirs / ours:.2f}x SDPA's; the target is {BACKWARD_TARGET}x.")
check_speed_against(theirs, ours, BACKWARD_TARGET, verdict,
                    f"attention_backward at (B, H, N, d) = {SPEED_SHAPE} in fp16, on compute capability 9.0, "
                    f"for {BACKWARD_TARGET}x\nthe speed of SDPA's backward (cuDNN's where it runs)",
                    "Does attention_backward use backward_config's blocks (128 keys per dK/dV program, 32 queries per "
                    "step), compute D once with attention_delta, skip nothing it needs and recompute nothing per "
                    "block that can be done once?", graded)

# %% [markdown]
# ## 8. Speed against the sequence length
#
# The last cell plots TFLOP/s against `N` for your forward pass and SDPA's, and for the forward and
# backward passes together (a training step's attention), at `B = 4`, `H = 32`, `d = 128` on a GPU
# in fp16 (under the interpreter: tiny sizes, and times of Python, not of a GPU).

# %%
dtype = fast_dtype()
B, H, d = (4, 32, 128) if ON_GPU else (1, 2, 64)
lengths = [1024, 2048, 4096, 8192] if ON_GPU else [32, 64]
speeds = {"yours, forward": [], f"SDPA ({sdpa_backend()[1]}), forward": [], "yours, forward + backward": [],
          "SDPA, forward + backward": []}
for n in lengths:
    q, k, v = attention_inputs(B, n, H, H, d, dtype, "separate")
    do = torch.randn_like(q)
    leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    forward = 4 * B * H * n * n * d
    runs = [(lambda: attention_forward(q, k, v), forward), (lambda: sdpa_bnhd(q, k, v), forward),
            (lambda: torch.autograd.grad(flash_attention(*leaves), leaves, do), 3.5 * forward),
            (lambda: torch.autograd.grad(sdpa_bnhd(*leaves), leaves, do), 3.5 * forward)]
    for label, (run, flops) in zip(speeds, runs):
        speeds[label].append(flops / bench_ms(run) / 1e9)
    print(f"N = {n:5}: " + ", ".join(f"{label} {values[-1]:7.4g}" for label, values in speeds.items()) + " TFLOP/s")
    del q, k, v, do, leaves
plot_tflops(lengths, speeds, f"attention, B = {B}, H = {H}, d = {d}, {str(dtype).removeprefix('torch.')}, not causal",
            xlabel="N (sequence length)")

# %% [markdown]
# ## What you learned
#
# - A kernel for a model takes **every stride**: `(B, N, H, d)` projections, slices of a fused
#   one, or a transposed layout, with no `.contiguous()` copy; int64 offsets where products of
#   indices and strides can pass 2^31.
# - **Grouped-query attention** is a pointer: query head `h` reads K/V head `h // GROUP`. In the
#   backward pass the shared K/V head's gradient is the **sum** over its group, accumulated by the
#   one program that owns its keys.
# - The **backward pass** rebuilds `P` block by block from the saved `lse` (one more product, 17 GB
#   less memory at `N = 16384`), computes `D = rowsum(dO * O)` once, accumulates `dK`, `dV` in
#   programs that own keys and `dQ` in programs that own queries, and skips the blocks above the
#   diagonal in both. `dQ` by atomics saves two products and costs contention and determinism.
# - On Hopper the schedule is the rest of the speed: unmasked loops, descriptors and pipelining
#   keep the tensor cores fed. Warp specialisation is one switch in Triton, but a switch only asks:
#   Triton 3.6 compiles this loop the same with it as without on Hopper. Read what the compiler
#   made (the PTX, `setmaxnreg`) before counting on a switch.
# - Wrapped in a `torch.autograd.Function`, the kernels train a transformer block exactly as
#   torch's attention does.
#
# **Next:** the kernels of inference: decoding attention with split-KV over a paged cache, and
# int4 weight-only matrix products.

# The sample class for 09_attention_training, graded by `autograder demo 09_attention_training` and by
# the tests (see autograder/samples.py). The written_recompute cell is graded by hand: the demo lists
# it as "to grade by hand", except in the untouched release, where nbgrader scores an unanswered cell
# 0 at once. The performance tests only advise under the interpreter and on GPUs other than compute
# capability 9.0; each starts with a short correctness run (run_forward, run_backward), so a sample
# whose forward or backward is wrong fails it everywhere.
# ida writes every answer differently from the solutions (tests/test_second_answers.py checks that it
# covers them) and must lose no points, on the H200's performance tests too: the loops written out in
# the kernel (an unmasked one over the keys every query sees, a masked one for the rest), K loaded
# transposed, no descriptors or warp specialisation (it takes the switches and ignores them); D in
# programs of 32 rows over the (b, h, n) rows flattened; dK/dV and dQ kernels with helpers of its own
# that take one block, three loops in the dK/dV kernel (the diagonal, the plain blocks, the tail);
# dQ stored through its own row arithmetic; the quiz letter in upper case with spaces.
# hal writes dQ the other way question Q describes: its dK/dV programs add their share of dQ with
# tl.atomic_add into a zeroed fp32 buffer (then a cast kernel into q's dtype: a .to() would be a copy
# by torch, which the tests refuse), and it masks every block. Correct, and a design the lesson
# teaches, so it loses no points, on the H200 either, where its backward ran at 0.19x SDPA's, the
# slowest of the honest backwards that set BACKWARD_TARGET (docs/calibration.md).
# cy's FlashAttention.backward computes the gradients with torch (SDPA under torch.enable_grad and
# torch.autograd.grad): its backward launches no kernel, so the layer tests and the training test
# (which counts the launches of the whole training) fail; the kernels themselves are right.
# dee's dK/dV kernel loops over the first query head of each group only (range(0, 1)): dK and dV miss
# the other heads' share wherever H > H_kv.
# eve's dK/dV kernel masks the diagonal with offs_n < offs_m: each key drops its own query's share.
# fay's dQ kernel forgets to turn lse into log2 units (lse * log2(e)) before exp2: P is wrong, dQ too.
# gus's forward loads its last (masked) block of keys without the mask: the interpreter's bounds check
# sees the reads past the end of K; on a GPU they read the guard bands (on_gpu: wrong values rather
# than out-of-bounds reads, so no why there); the performance test's fp16 forward passes there, since
# on Hopper it loads K and V through tensor descriptors, which zero-fill past N without a mask.
{
    "ada": {"about": "a correct submission", "answers": "solution", "fails": []},
    "ida": {"about": "every answer written differently, all correct",
            "answers": "solution", "fails": [],
            "replace": {
                "attention_forward": """@triton.jit
def attention_forward_kernel(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr,
                             sqb, sqn, sqh, sqd, skb, skn, skh, skd, svb, svn, svh, svd, sob, son, soh, sod,
                             H, N, GROUP, scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                             BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, WARP_SPECIALIZE: tl.constexpr,
                             DESCRIPTORS: tl.constexpr):
    batch = tl.program_id(1) // H
    head = tl.program_id(1) % H
    kv = head // GROUP
    qs = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    q_start = q_ptr + batch.to(tl.int64) * sqb + head.to(tl.int64) * sqh
    k_start = k_ptr + batch.to(tl.int64) * skb + kv.to(tl.int64) * skh
    v_start = v_ptr + batch.to(tl.int64) * svb + kv.to(tl.int64) * svh
    q = tl.load(q_start + qs.to(tl.int64)[:, None] * sqn + dims[None, :] * sqd, mask=qs[:, None] < N, other=0.0)
    total = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    best = tl.zeros((BLOCK_M,), dtype=tl.float32) - float("inf")
    weight = tl.zeros((BLOCK_M,), dtype=tl.float32)
    log2_scale = scale * 1.4426950408889634
    # the keys that every query of the block sees go through the first loop, without masks; the rest
    # (the diagonal when causal, the last partial block) through the second, with them
    if CAUSAL:
        whole = (tl.program_id(0) * BLOCK_M) // BLOCK_N * BLOCK_N
        end = tl.minimum(N, (tl.program_id(0) + 1) * BLOCK_M)
    else:
        whole = N // BLOCK_N * BLOCK_N
        end = N
    for first in range(0, whole, BLOCK_N):
        ks = first + tl.arange(0, BLOCK_N)
        k_t = tl.load(k_start + ks.to(tl.int64)[None, :] * skn + dims[:, None] * skd)
        v = tl.load(v_start + ks.to(tl.int64)[:, None] * svn + dims[None, :] * svd)
        scores = tl.dot(q, k_t) * log2_scale
        new_best = tl.maximum(best, tl.max(scores, axis=1))
        factor = tl.exp2(best - new_best)
        probs = tl.exp2(scores - new_best[:, None])
        weight = weight * factor + tl.sum(probs, axis=1)
        total = total * factor[:, None] + tl.dot(probs.to(v.dtype), v)
        best = new_best
    for first in range(whole, end, BLOCK_N):
        ks = first + tl.arange(0, BLOCK_N)
        k_t = tl.load(k_start + ks.to(tl.int64)[None, :] * skn + dims[:, None] * skd, mask=ks[None, :] < N, other=0.0)
        v = tl.load(v_start + ks.to(tl.int64)[:, None] * svn + dims[None, :] * svd, mask=ks[:, None] < N, other=0.0)
        keep = ks[None, :] < N
        if CAUSAL:
            keep = keep & (ks[None, :] <= qs[:, None])
        scores = tl.where(keep, tl.dot(q, k_t) * log2_scale, -float("inf"))
        new_best = tl.maximum(best, tl.max(scores, axis=1))
        factor = tl.exp2(best - new_best)
        probs = tl.exp2(scores - new_best[:, None])
        weight = weight * factor + tl.sum(probs, axis=1)
        total = total * factor[:, None] + tl.dot(probs.to(v.dtype), v)
        best = new_best
    out = total / weight[:, None]
    o_start = o_ptr + batch.to(tl.int64) * sob + head.to(tl.int64) * soh
    tl.store(o_start + qs.to(tl.int64)[:, None] * son + dims[None, :] * sod, out.to(o_ptr.dtype.element_ty),
             mask=qs[:, None] < N)
    tl.store(lse_ptr + tl.program_id(1).to(tl.int64) * N + qs, (best + tl.log2(weight)) / 1.4426950408889634,
             mask=qs < N)

def attention_forward(q, k, v, causal=False, **config):
    assert q.ndim == 4 and k.ndim == 4 and v.ndim == 4, "q, k, v must be (B, N, heads, d)"
    batch, n, heads, dim = q.shape
    kv_heads = k.shape[2]
    assert tuple(k.shape) == (batch, n, kv_heads, dim) and tuple(v.shape) == tuple(k.shape), "k, v: (B, N, H_kv, d)"
    assert kv_heads > 0 and heads % kv_heads == 0, "the query heads must split evenly over the K/V heads"
    assert q.dtype == k.dtype == v.dtype and q.device == k.device == v.device, "one dtype and one device"
    if dim not in HEAD_DIMS:
        raise ValueError(f"d = {dim}: only 16, 32, 64 and 128 are supported")
    settings = attention_config(dim, q.dtype, causal)
    settings.update(config)
    o = torch.empty(batch, n, heads, dim, dtype=q.dtype, device=q.device)
    lse = torch.empty(batch, heads, n, dtype=torch.float32, device=q.device)
    attention_forward_kernel[(triton.cdiv(n, settings["BLOCK_M"]), batch * heads)](
        q, k, v, o, lse, *q.stride(), *k.stride(), *v.stride(), *o.stride(), heads, n, heads // kv_heads,
        1.0 / math.sqrt(dim), HEAD_DIM=dim, CAUSAL=causal, **settings)
    return o, lse
""",
                "attention_delta": """@triton.jit
def attention_delta_kernel(o_ptr, do_ptr, delta_ptr, sob, son, soh, sod, sdb, sdn, sdh, sdd, H, N, rows,
                           HEAD_DIM: tl.constexpr, ROWS: tl.constexpr):
    r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)  # rows (b, h, n) of the (B, H, N) output, flattened
    n = (r % N).to(tl.int64)
    h = ((r // N) % H).to(tl.int64)
    b = (r // (N * H)).to(tl.int64)
    i = tl.arange(0, HEAD_DIM)[None, :]
    live = (r < rows)[:, None]
    o = tl.load(o_ptr + (b * sob + n * son + h * soh)[:, None] + i * sod, mask=live, other=0.0).to(tl.float32)
    g = tl.load(do_ptr + (b * sdb + n * sdn + h * sdh)[:, None] + i * sdd, mask=live, other=0.0).to(tl.float32)
    tl.store(delta_ptr + r, tl.sum(o * g, axis=1), mask=r < rows)


def attention_delta(o, do):
    assert o.shape == do.shape and o.ndim == 4
    b, n, h, d = o.shape
    out = torch.empty(b, h, n, device=o.device, dtype=torch.float32)
    rows = b * h * n
    attention_delta_kernel[(triton.cdiv(rows, 32),)](o, do, out, *o.stride(), *do.stride(), h, n, rows, HEAD_DIM=d,
                                                     ROWS=32)
    return out
""",
                "attention_backward": """@triton.jit
def keys_from_queries(dk, dv, k, v, q_start, g_start, lse_start, delta_start, sqn, sqd, sgn, sgd, ks, first, N,
                      log2_scale, HEAD_DIM: tl.constexpr, BLOCK_STEP: tl.constexpr, MASK: tl.constexpr,
                      CAUSAL: tl.constexpr):
    # one block of BLOCK_STEP queries added to dK and dV of the program's keys
    qs = first + tl.arange(0, BLOCK_STEP)
    dims = tl.arange(0, HEAD_DIM)
    live = qs < N
    if MASK:
        q = tl.load(q_start + qs.to(tl.int64)[:, None] * sqn + dims[None, :] * sqd, mask=live[:, None], other=0.0)
        do = tl.load(g_start + qs.to(tl.int64)[:, None] * sgn + dims[None, :] * sgd, mask=live[:, None], other=0.0)
        lse = tl.load(lse_start + qs, mask=live, other=0.0)
        delta = tl.load(delta_start + qs, mask=live, other=0.0)
    else:
        q = tl.load(q_start + qs.to(tl.int64)[:, None] * sqn + dims[None, :] * sqd)
        do = tl.load(g_start + qs.to(tl.int64)[:, None] * sgn + dims[None, :] * sgd)
        lse = tl.load(lse_start + qs)
        delta = tl.load(delta_start + qs)
    p_t = tl.exp2(tl.dot(k, tl.trans(q)) * log2_scale - lse[None, :] * 1.4426950408889634)  # (keys, queries)
    if MASK:
        keep = live[None, :] & (ks[:, None] < N)
        if CAUSAL:
            keep = keep & (ks[:, None] <= qs[None, :])
        p_t = tl.where(keep, p_t, 0.0)
    dv += tl.dot(p_t.to(do.dtype), do)
    ds_t = p_t * (tl.dot(v, tl.trans(do)) - delta[None, :])
    dk += tl.dot(ds_t.to(q.dtype), q)
    return dk, dv


@triton.jit
def attention_dkdv_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr,
                          sqb, sqn, sqh, sqd, skb, skn, skh, skd, svb, svn, svh, svd, sgb, sgn, sgh, sgd,
                          H, H_KV, N, GROUP, scale, HEAD_DIM: tl.constexpr, BLOCK_OWN: tl.constexpr,
                          BLOCK_STEP: tl.constexpr, CAUSAL: tl.constexpr):
    # dK, dV of BLOCK_OWN keys; the query blocks that need masks (across the diagonal, past N) apart
    batch = (tl.program_id(1) // H_KV).to(tl.int64)
    kv = (tl.program_id(1) % H_KV).to(tl.int64)
    ks = tl.program_id(0) * BLOCK_OWN + tl.arange(0, BLOCK_OWN)
    dims = tl.arange(0, HEAD_DIM)
    k = tl.load(k_ptr + batch * skb + kv * skh + ks.to(tl.int64)[:, None] * skn + dims[None, :] * skd,
                mask=ks[:, None] < N, other=0.0)
    v = tl.load(v_ptr + batch * svb + kv * svh + ks.to(tl.int64)[:, None] * svn + dims[None, :] * svd,
                mask=ks[:, None] < N, other=0.0)
    dk = tl.zeros((BLOCK_OWN, HEAD_DIM), dtype=tl.float32)
    dv = tl.zeros((BLOCK_OWN, HEAD_DIM), dtype=tl.float32)
    log2_scale = scale * 1.4426950408889634
    crossing, crossed = 0, 0  # the query blocks that cross the diagonal: none unless causal
    if CAUSAL:
        crossing = (tl.program_id(0) * BLOCK_OWN) // BLOCK_STEP * BLOCK_STEP
        crossed = tl.minimum(N, (tl.program_id(0) + 1) * BLOCK_OWN)
    plain = N // BLOCK_STEP * BLOCK_STEP
    for head in range(kv * GROUP, kv * GROUP + GROUP):
        q_start = q_ptr + batch * sqb + head * sqh
        g_start = do_ptr + batch * sgb + head * sgh
        lse_start = lse_ptr + (batch * H + head) * N
        delta_start = delta_ptr + (batch * H + head) * N
        for first in range(crossing, crossed, BLOCK_STEP):
            dk, dv = keys_from_queries(dk, dv, k, v, q_start, g_start, lse_start, delta_start, sqn, sqd, sgn, sgd,
                                       ks, first, N, log2_scale, HEAD_DIM, BLOCK_STEP, True, CAUSAL)
        for first in range(crossed, plain, BLOCK_STEP):
            dk, dv = keys_from_queries(dk, dv, k, v, q_start, g_start, lse_start, delta_start, sqn, sqd, sgn, sgd,
                                       ks, first, N, log2_scale, HEAD_DIM, BLOCK_STEP, False, CAUSAL)
        for first in range(tl.maximum(crossed, plain), N, BLOCK_STEP):
            dk, dv = keys_from_queries(dk, dv, k, v, q_start, g_start, lse_start, delta_start, sqn, sqd, sgn, sgd,
                                       ks, first, N, log2_scale, HEAD_DIM, BLOCK_STEP, True, CAUSAL)
    dk_rows = ((batch * N + ks.to(tl.int64)) * H_KV + kv)[:, None] * HEAD_DIM + dims[None, :]
    tl.store(dk_ptr + dk_rows, (dk * scale).to(dk_ptr.dtype.element_ty), mask=ks[:, None] < N)
    tl.store(dv_ptr + dk_rows, dv.to(dv_ptr.dtype.element_ty), mask=ks[:, None] < N)


@triton.jit
def queries_from_keys(dq, q, do, lse, delta, k_start, v_start, skn, skd, svn, svd, qs, first, N, log2_scale,
                      HEAD_DIM: tl.constexpr, BLOCK_STEP: tl.constexpr, MASK: tl.constexpr, CAUSAL: tl.constexpr):
    # one block of BLOCK_STEP keys added to dQ of the program's queries (lse already in log2 units)
    ks = first + tl.arange(0, BLOCK_STEP)
    dims = tl.arange(0, HEAD_DIM)
    if MASK:
        k_t = tl.load(k_start + ks.to(tl.int64)[None, :] * skn + dims[:, None] * skd, mask=ks[None, :] < N, other=0.0)
        v_t = tl.load(v_start + ks.to(tl.int64)[None, :] * svn + dims[:, None] * svd, mask=ks[None, :] < N, other=0.0)
    else:
        k_t = tl.load(k_start + ks.to(tl.int64)[None, :] * skn + dims[:, None] * skd)
        v_t = tl.load(v_start + ks.to(tl.int64)[None, :] * svn + dims[:, None] * svd)
    p = tl.exp2(tl.dot(q, k_t) * log2_scale - lse[:, None])
    if MASK:
        keep = ks[None, :] < N
        if CAUSAL:
            keep = keep & (ks[None, :] <= qs[:, None])
        p = tl.where(keep, p, 0.0)
    ds = p * (tl.dot(do, v_t) - delta[:, None])
    return dq + tl.dot(ds.to(k_t.dtype), tl.trans(k_t))


@triton.jit
def attention_dq_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr,
                        sqb, sqn, sqh, sqd, skb, skn, skh, skd, svb, svn, svh, svd, sgb, sgn, sgh, sgd,
                        H, N, GROUP, scale, HEAD_DIM: tl.constexpr, BLOCK_OWN: tl.constexpr,
                        BLOCK_STEP: tl.constexpr, CAUSAL: tl.constexpr):
    # dQ of BLOCK_OWN queries, written once (dq is contiguous, like q's shape)
    batch = (tl.program_id(1) // H).to(tl.int64)
    head = (tl.program_id(1) % H).to(tl.int64)
    kv = head // GROUP
    qs = tl.program_id(0) * BLOCK_OWN + tl.arange(0, BLOCK_OWN)
    dims = tl.arange(0, HEAD_DIM)
    live = qs < N
    q = tl.load(q_ptr + batch * sqb + head * sqh + qs.to(tl.int64)[:, None] * sqn + dims[None, :] * sqd,
                mask=live[:, None], other=0.0)
    do = tl.load(do_ptr + batch * sgb + head * sgh + qs.to(tl.int64)[:, None] * sgn + dims[None, :] * sgd,
                 mask=live[:, None], other=0.0)
    row = tl.program_id(1).to(tl.int64) * N + qs
    lse = tl.load(lse_ptr + row, mask=live, other=0.0) * 1.4426950408889634
    delta = tl.load(delta_ptr + row, mask=live, other=0.0)
    k_start = k_ptr + batch * skb + kv * skh
    v_start = v_ptr + batch * svb + kv * svh
    dq = tl.zeros((BLOCK_OWN, HEAD_DIM), dtype=tl.float32)
    log2_scale = scale * 1.4426950408889634
    if CAUSAL:
        plain = (tl.program_id(0) * BLOCK_OWN) // BLOCK_STEP * BLOCK_STEP
        end = tl.minimum(N, (tl.program_id(0) + 1) * BLOCK_OWN)
    else:
        plain = N // BLOCK_STEP * BLOCK_STEP
        end = N
    for first in range(0, plain, BLOCK_STEP):
        dq = queries_from_keys(dq, q, do, lse, delta, k_start, v_start, skn, skd, svn, svd, qs, first, N, log2_scale,
                               HEAD_DIM, BLOCK_STEP, False, CAUSAL)
    for first in range(plain, end, BLOCK_STEP):
        dq = queries_from_keys(dq, q, do, lse, delta, k_start, v_start, skn, skd, svn, svd, qs, first, N, log2_scale,
                               HEAD_DIM, BLOCK_STEP, True, CAUSAL)
    dq_rows = ((batch * N + qs.to(tl.int64)) * H + head)[:, None] * HEAD_DIM + dims[None, :]
    tl.store(dq_ptr + dq_rows, (dq * scale).to(dq_ptr.dtype.element_ty), mask=live[:, None])


def attention_backward(q, k, v, o, lse, do, causal=False, **config):
    batch, n, heads, dim = q.shape
    kv_heads = k.shape[2]
    assert heads % kv_heads == 0 and k.shape == v.shape and o.shape == q.shape == do.shape
    settings = backward_config(dim, q.dtype)
    settings.update(config)
    delta = attention_delta(o, do)
    dq = torch.empty(batch, n, heads, dim, dtype=q.dtype, device=q.device)
    dk = torch.empty(batch, n, kv_heads, dim, dtype=k.dtype, device=k.device)
    dv = torch.empty(batch, n, kv_heads, dim, dtype=v.dtype, device=v.device)
    strides = (*q.stride(), *k.stride(), *v.stride(), *do.stride())
    programs = triton.cdiv(n, settings["BLOCK_OWN"])
    attention_dkdv_kernel[(programs, batch * kv_heads)](
        q, k, v, do, lse, delta, dk, dv, *strides, heads, kv_heads, n, heads // kv_heads, dim ** -0.5,
        HEAD_DIM=dim, CAUSAL=causal, **settings)
    attention_dq_kernel[(programs, batch * heads)](
        q, k, v, do, lse, delta, dq, *strides, heads, n, heads // kv_heads, dim ** -0.5, HEAD_DIM=dim,
        CAUSAL=causal, **settings)
    return dq, dk, dv
""",
                "q_dq": 'answer_dq = " B "\n',
                "flash_attention": """class FlashAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, causal=False):
        out, lse = attention_forward(q, k, v, causal)
        ctx.causal = causal
        ctx.save_for_backward(q, k, v, out, lse)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        grads = attention_backward(*ctx.saved_tensors, grad_out, causal=ctx.causal)
        return grads[0], grads[1], grads[2], None


def flash_attention(q, k, v, causal=False):
    return FlashAttention.apply(q, k, v, causal)
""",
            }},
    "hal": {"ci": False, "about": "correct; dQ by fp32 atomics from the dK/dV programs, masks on every block: "
                                  "slower than the second pass", "answers": "solution", "fails": [],
            "replace": {"attention_backward": """@triton.jit
def attention_dkdv_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, dq_ptr,
                          sqb, sqn, sqh, sqd, skb, skn, skh, skd, svb, svn, svh, svd, sgb, sgn, sgh, sgd,
                          H, H_KV, N, GROUP, scale, HEAD_DIM: tl.constexpr, BLOCK_OWN: tl.constexpr,
                          BLOCK_STEP: tl.constexpr, CAUSAL: tl.constexpr):
    # dK, dV of BLOCK_OWN keys, and their share of dQ added with atomics into a (B, N, H, d) fp32 buffer
    batch = (tl.program_id(1) // H_KV).to(tl.int64)
    kv = (tl.program_id(1) % H_KV).to(tl.int64)
    ks = tl.program_id(0) * BLOCK_OWN + tl.arange(0, BLOCK_OWN)
    dims = tl.arange(0, HEAD_DIM)
    k = tl.load(k_ptr + batch * skb + kv * skh + ks.to(tl.int64)[:, None] * skn + dims[None, :] * skd,
                mask=ks[:, None] < N, other=0.0)
    v = tl.load(v_ptr + batch * svb + kv * svh + ks.to(tl.int64)[:, None] * svn + dims[None, :] * svd,
                mask=ks[:, None] < N, other=0.0)
    dk = tl.zeros((BLOCK_OWN, HEAD_DIM), dtype=tl.float32)
    dv = tl.zeros((BLOCK_OWN, HEAD_DIM), dtype=tl.float32)
    begin = 0
    if CAUSAL:
        begin = (tl.program_id(0) * BLOCK_OWN) // BLOCK_STEP * BLOCK_STEP
    for head in range(kv * GROUP, kv * GROUP + GROUP):
        for first in range(begin, N, BLOCK_STEP):
            qs = first + tl.arange(0, BLOCK_STEP)
            live = qs < N
            q_rows = batch * sqb + head * sqh + qs.to(tl.int64)[:, None] * sqn + dims[None, :] * sqd
            g_rows = batch * sgb + head * sgh + qs.to(tl.int64)[:, None] * sgn + dims[None, :] * sgd
            q = tl.load(q_ptr + q_rows, mask=live[:, None], other=0.0)
            do = tl.load(do_ptr + g_rows, mask=live[:, None], other=0.0)
            row = (batch * H + head) * N + qs
            lse = tl.load(lse_ptr + row, mask=live, other=float("inf"))
            delta = tl.load(delta_ptr + row, mask=live, other=0.0)
            keep = live[:, None] & (ks[None, :] < N)
            if CAUSAL:
                keep = keep & (ks[None, :] <= qs[:, None])
            p = tl.where(keep, tl.exp(tl.dot(q, tl.trans(k)) * scale - lse[:, None]), 0.0)  # (queries, keys)
            dv += tl.dot(tl.trans(p).to(do.dtype), do)
            ds = p * (tl.dot(do, tl.trans(v)) - delta[:, None])
            dk += tl.dot(tl.trans(ds).to(q.dtype), q)
            dq_part = tl.dot(ds.to(k.dtype), k) * scale
            dq_rows = ((batch * N + qs.to(tl.int64)) * H + head)[:, None] * HEAD_DIM + dims[None, :]
            tl.atomic_add(dq_ptr + dq_rows, dq_part, mask=live[:, None])
    dk_rows = ((batch * N + ks.to(tl.int64)) * H_KV + kv)[:, None] * HEAD_DIM + dims[None, :]
    tl.store(dk_ptr + dk_rows, (dk * scale).to(dk_ptr.dtype.element_ty), mask=ks[:, None] < N)
    tl.store(dv_ptr + dk_rows, dv.to(dv_ptr.dtype.element_ty), mask=ks[:, None] < N)


@triton.jit
def attention_dq_kernel(dq32_ptr, dq_ptr, total, BLOCK: tl.constexpr):
    # the fp32 sums of the atomics, cast into dq's dtype
    at = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dq_ptr + at, tl.load(dq32_ptr + at, mask=at < total).to(dq_ptr.dtype.element_ty), mask=at < total)


def attention_backward(q, k, v, o, lse, do, causal=False, **config):
    batch, n, heads, dim = q.shape
    kv_heads = k.shape[2]
    assert heads % kv_heads == 0 and k.shape == v.shape and o.shape == q.shape == do.shape
    settings = backward_config(dim, q.dtype)
    settings.update(config)
    delta = attention_delta(o, do)
    dq32 = torch.zeros(batch, n, heads, dim, dtype=torch.float32, device=q.device)
    dk = torch.empty(batch, n, kv_heads, dim, dtype=k.dtype, device=k.device)
    dv = torch.empty(batch, n, kv_heads, dim, dtype=v.dtype, device=v.device)
    attention_dkdv_kernel[(triton.cdiv(n, settings["BLOCK_OWN"]), batch * kv_heads)](
        q, k, v, do, lse, delta, dk, dv, dq32, *q.stride(), *k.stride(), *v.stride(), *do.stride(), heads, kv_heads,
        n, heads // kv_heads, dim ** -0.5, HEAD_DIM=dim, CAUSAL=causal, **settings)
    dq = torch.empty(batch, n, heads, dim, dtype=q.dtype, device=q.device)
    attention_dq_kernel[(triton.cdiv(dq.numel(), 1024),)](dq32, dq, dq.numel(), BLOCK=1024)
    return dq, dk, dv
"""}},
    "bo": {"ci": False, "about": "the release, untouched", "answers": "release",
           "fails": ["test_attention_backward", "test_attention_backward_hidden", "test_attention_delta",
                     "test_attention_delta_hidden", "test_attention_forward", "test_attention_forward_hidden",
                     "test_backward_performance", "test_flash_attention", "test_flash_attention_hidden",
                     "test_forward_performance", "test_q_dq", "test_training", "written_recompute"],
           "why": {"test_attention_forward": "attention_forward is still the exercise stub",
                   "test_attention_delta": "attention_delta is still the exercise stub",
                   "test_q_dq": "answer_dq is not set"}},
    "cy": {"about": "FlashAttention.backward computes the gradients with torch (SDPA and torch.autograd.grad)",
           "answers": "solution",
           "edits": {"flash_attention": [["        dq, dk, dv = attention_backward(q, k, v, o, lse, do, causal=ctx.causal)\n",
                                          "        with torch.enable_grad():\n"
                                          "            leaves = [t.detach().requires_grad_() for t in (q, k, v)]\n"
                                          "            out = F.scaled_dot_product_attention(\n"
                                          "                *(t.transpose(1, 2) for t in leaves), is_causal=ctx.causal,\n"
                                          "                enable_gqa=q.shape[2] != k.shape[2]).transpose(1, 2)\n"
                                          "            dq, dk, dv = torch.autograd.grad(out, leaves, do)\n"]]},
           "fails": ["test_flash_attention", "test_flash_attention_hidden", "test_training"],
           "why": {"test_flash_attention": "its backward pass launched no Triton kernel",
                   "test_flash_attention_hidden": "its backward pass launched no Triton kernel",
                   "test_training": "the backward passes launched none"}},
    "dee": {"about": "the dK/dV kernel takes the first query head of each group only: dK and dV are not summed "
                     "over the group",
            "answers": "solution",
            "edits": {"attention_backward": [["    for g in range(0, GROUP):", "    for g in range(0, 1):"]]},
            "fails": ["test_attention_backward", "test_attention_backward_hidden", "test_backward_performance",
                      "test_flash_attention", "test_flash_attention_hidden", "test_training"],
            "why": {"test_attention_backward": "summed over the 2 query heads of each group",
                    "test_flash_attention": "summed over the 2 query heads of each group",
                    "test_backward_performance": "summed over the 2 query heads of each group"}},
    "eve": {"ci": False, "about": "the dK/dV kernel's causal mask is off by one (offs_n < offs_m): a key drops "
                                  "its own query's share",
            "answers": "solution",
            "edits": {"attention_backward": [["seen = seen & (offs_n[:, None] <= offs_m[None, :])",
                                              "seen = seen & (offs_n[:, None] < offs_m[None, :])"]]},
            "fails": ["test_attention_backward", "test_attention_backward_hidden", "test_flash_attention",
                      "test_flash_attention_hidden", "test_training"],
            "why": {"test_attention_backward": "causal: are the query blocks before the program's first key skipped",
                    "test_flash_attention": "causal: are the query blocks before the program's first key skipped"}},
    "fay": {"about": "the dQ kernel leaves lse in natural logarithms before exp2: P, and so dQ, is wrong",
            "answers": "solution",
            "edits": {"attention_backward": [["mask=offs_m < N, other=0.0) * 1.4426950408889634",
                                              "mask=offs_m < N, other=0.0)"]]},
            "fails": ["test_attention_backward", "test_attention_backward_hidden", "test_backward_performance",
                      "test_flash_attention", "test_flash_attention_hidden", "test_training"],
            "why": {"test_attention_backward": "lse is in natural logarithms",
                    "test_flash_attention": "lse is in natural logarithms",
                    "test_backward_performance": "lse is in natural logarithms"}},
    "gus": {"ci": False, "about": "the forward pass loads its last block of keys and values without the mask",
            "answers": "solution",
            "edits": {"attention_forward": [["            block = tl.load(ptrs, mask=rows[:, None] < N, other=0.0)",
                                             "            block = tl.load(ptrs)"]]},
            "fails": ["test_attention_forward", "test_attention_forward_hidden", "test_flash_attention",
                      "test_flash_attention_hidden", "test_forward_performance", "test_training"],
            "on_gpu": {"fails": ["test_attention_forward", "test_attention_forward_hidden", "test_flash_attention",
                                 "test_flash_attention_hidden", "test_training"]}},
}

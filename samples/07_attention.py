# The sample class for 07_attention, graded by `autograder demo 07_attention` and by the tests (see
# autograder/samples.py). The written_memory cell is graded by hand: the demo lists it as "to grade by
# hand", except in the untouched release, where nbgrader scores an unanswered cell 0 at once.
# cy computes with torch (SDPA, and logsumexp of q @ k^T): its attention launches no kernel, and the
# audit flags both lines. gus does the same through torch.ops.aten, which no list of torch's names
# holds: the tests see torch's operators run at the dispatcher, and the audit flags torch.ops.
# Every expected failure is the same on a GPU and under the interpreter: the buggy kernels load every
# key with its mask and other=0.0, so what they compute does not depend on what lies past the end.
# eve masks the scores only for causal attention: the keys past N load as 0, score 0 instead of
# -inf, and each adds exp(0 - m) to l, on every length that is not a multiple of BLOCK_N (in causal
# attention the diagonal mask, offs_n <= offs_m, happens to leave them out of every stored row, so
# eve fails on the non-causal tests, which every test cell has). dee skips the blocks above the
# diagonal but does not mask the diagonal block: a query sees up to BLOCK_N - 1 later keys.
# A kernel that does not skip the blocks above the diagonal (masking them all) is right, and only
# slower on a GPU in causal attention, which the performance test does not time: not a sample.
# fay saves log(l) as the log-sum-exp and forgets the maximum m: o is right, lse is not, and every
# test that checks lse (the kernel's, the wrapper's, the performance test's first check) fails.
# ida writes every answer differently from the solutions (tests/test_second_answers.py checks that it
# covers them): per-lane running maxima merged at the end in the online softmax, one loop with masks
# everywhere, tl.exp instead of exp2, K loaded transposed, a backward pass in one kernel with atomic
# additions into dQ (ungraded, but it must match torch.autograd too), and must lose no points: a hidden test
# that rejects it rejects a valid answer.
{
    "ada": {"about": "a correct submission", "answers": "solution", "fails": []},
    "ida": {"about": "every answer written differently, all correct", "answers": "solution", "fails": [],
            "replace": {
                "attention_bytes": """def naive_attention_bytes(batch_heads, N, d, element_size=2):
    reads = N * d * 3 + N * N * 2  # Q, K, V; S by the softmax, P by the second product
    writes = N * N * 2 + N * d  # S, P; O
    return (reads + writes) * element_size * batch_heads


def flash_attention_bytes(batch_heads, N, d, BLOCK_M, element_size=2):
    programs = -(-N // BLOCK_M)
    q_and_o = 2 * N * d * element_size
    k_and_v = programs * 2 * N * d * element_size
    return batch_heads * (q_and_o + k_and_v + N * 4)
""",
                "online_softmax_kernel": """@triton.jit
def online_softmax_kernel(x_ptr, out_ptr, n_rows, n_cols, row_stride, ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    # Each lane keeps its own running maximum and sum; the lanes are merged after the loop.
    row_ids = tl.program_id(axis=0) * ROWS + tl.arange(0, ROWS)
    offsets = row_ids.to(tl.int64)[:, None] * row_stride
    lane_max = tl.full((ROWS, BLOCK_N), -float("inf"), tl.float32)
    lane_sum = tl.zeros((ROWS, BLOCK_N), tl.float32)
    for first in range(0, n_cols, BLOCK_N):
        col_ids = first + tl.arange(0, BLOCK_N)[None, :]
        inside = (row_ids[:, None] < n_rows) & (col_ids < n_cols)
        x = tl.load(x_ptr + offsets + col_ids, mask=inside, other=-float("inf")).to(tl.float32)
        new_max = tl.maximum(lane_max, x)
        finite = tl.where(new_max == -float("inf"), 0.0, new_max)  # a lane that has seen nothing yet
        lane_sum = lane_sum * tl.exp(lane_max - finite) + tl.exp(x - finite)
        lane_max = new_max
    row_max = tl.max(lane_max, axis=1)
    inverse = 1.0 / tl.sum(lane_sum * tl.exp(lane_max - row_max[:, None]), axis=1)
    for first in range(0, n_cols, BLOCK_N):
        col_ids = first + tl.arange(0, BLOCK_N)[None, :]
        inside = (row_ids[:, None] < n_rows) & (col_ids < n_cols)
        x = tl.load(x_ptr + offsets + col_ids, mask=inside, other=0.0).to(tl.float32)
        tl.store(out_ptr + offsets + col_ids, (tl.exp(x - row_max[:, None]) * inverse[:, None]).to(
            out_ptr.dtype.element_ty), mask=inside)
""",
                "q_rescale": "answer_rescale = ' B '\n",
                "attention_fwd_kernel": """@triton.jit
def online_update(acc, total, top, scores, values):
    # one block of keys into the running state, in natural logarithms
    new_top = tl.maximum(top, tl.max(scores, axis=1))
    shrink = tl.exp(top - new_top)
    weights = tl.exp(scores - new_top[:, None])
    total = total * shrink + tl.sum(weights, axis=1)
    acc = acc * shrink[:, None] + tl.dot(weights.to(values.dtype), values)
    return acc, total, new_top


@triton.jit
def attention_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, N, scale, HEAD_DIM: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    block = tl.program_id(axis=0)
    z = tl.program_id(axis=1).to(tl.int64)
    base = z * N * HEAD_DIM
    queries = block * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + queries[:, None] * HEAD_DIM + dims[None, :], mask=queries[:, None] < N, other=0.0)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    total = tl.zeros((BLOCK_M,), dtype=tl.float32)
    top = tl.zeros((BLOCK_M,), dtype=tl.float32) - float("inf")
    if CAUSAL:
        end = tl.minimum(N, (block + 1) * BLOCK_M)  # blocks after the last query are skipped
    else:
        end = N
    for first in range(0, end, BLOCK_N):
        keys = first + tl.arange(0, BLOCK_N)
        k_t = tl.load(k_ptr + base + keys[None, :] * HEAD_DIM + dims[:, None], mask=keys[None, :] < N, other=0.0)
        values = tl.load(v_ptr + base + keys[:, None] * HEAD_DIM + dims[None, :], mask=keys[:, None] < N, other=0.0)
        scores = tl.dot(q, k_t) * scale
        visible = keys[None, :] < N
        if CAUSAL:
            visible = visible & (queries[:, None] >= keys[None, :])
        scores = tl.where(visible, scores, float("-inf"))
        acc, total, top = online_update(acc, total, top, scores, values)
    tl.store(o_ptr + base + queries[:, None] * HEAD_DIM + dims[None, :], (acc / total[:, None]).to(
        o_ptr.dtype.element_ty), mask=queries[:, None] < N)
    tl.store(lse_ptr + z * N + queries, top + tl.log(total), mask=queries < N)
""",
                "attention": """def attention(q, k, v, causal=False, BLOCK_M=sized(128, 16), BLOCK_N=sized(64, 32)):
    assert q.ndim == 4, f"q must be (batch, heads, tokens, head dim), got shape {list(q.shape)}"
    assert k.shape == q.shape and v.shape == q.shape, \\
        f"q, k, v must have one shape: {list(q.shape)}, {list(k.shape)}, {list(v.shape)}"
    assert k.dtype == q.dtype and v.dtype == q.dtype, f"mixed dtypes: {q.dtype}, {k.dtype}, {v.dtype}"
    assert k.device == q.device and v.device == q.device, "q, k and v must be on one device"
    batch, heads, tokens, head_dim = q.shape
    assert head_dim in (16, 32, 64, 128), f"head dim {head_dim}: the kernel takes 16, 32, 64 or 128"
    q, k, v = (t if t.is_contiguous() else t.contiguous() for t in (q, k, v))
    o = q.new_empty(q.shape)
    lse = torch.empty(batch, heads, tokens, device=q.device, dtype=torch.float32)
    stages = 2 if head_dim * q.element_size() <= 256 else 1  # fp32 rows of 128: one block of K and V at a time
    attention_fwd_kernel[(triton.cdiv(tokens, BLOCK_M), batch * heads)](
        q, k, v, o, lse, tokens, 1.0 / math.sqrt(head_dim), HEAD_DIM=head_dim, BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N, CAUSAL=causal, num_warps=4, num_stages=stages)
    return o, lse
""",
                "attention_backward": """@triton.jit
def attention_bwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dq_ptr, dk_ptr, dv_ptr, N, scale,
                         HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    # One kernel, as the first FlashAttention did: each program owns a block of keys, keeps dK and dV,
    # and adds its share of dQ into an fp32 buffer with atomic additions.
    block = tl.program_id(axis=0)
    z = tl.program_id(axis=1).to(tl.int64)
    base = z * N * HEAD_DIM
    keys = block * BLOCK_N + tl.arange(0, BLOCK_N)
    dims = tl.arange(0, HEAD_DIM)
    k_t = tl.load(k_ptr + base + keys[None, :] * HEAD_DIM + dims[:, None], mask=keys[None, :] < N, other=0.0)
    v_t = tl.load(v_ptr + base + keys[None, :] * HEAD_DIM + dims[:, None], mask=keys[None, :] < N, other=0.0)
    dk_t = tl.zeros((HEAD_DIM, BLOCK_N), dtype=tl.float32)
    dv_t = tl.zeros((HEAD_DIM, BLOCK_N), dtype=tl.float32)
    for first in range(0, N, BLOCK_M):  # every block of queries; the mask does the causal part
        queries = first + tl.arange(0, BLOCK_M)
        rows = base + queries[:, None] * HEAD_DIM + dims[None, :]
        ok = queries[:, None] < N
        q = tl.load(q_ptr + rows, mask=ok, other=0.0)
        grad_out = tl.load(do_ptr + rows, mask=ok, other=0.0)
        out = tl.load(o_ptr + rows, mask=ok, other=0.0)
        lse = tl.load(lse_ptr + z * N + queries, mask=queries < N, other=0.0)
        visible = ok & (keys[None, :] < N)
        if CAUSAL:
            visible = visible & (queries[:, None] >= keys[None, :])
        probs = tl.where(visible, tl.exp(tl.dot(q, k_t) * scale - lse[:, None]), 0.0)
        delta = tl.sum(grad_out.to(tl.float32) * out.to(tl.float32), axis=1)
        dscores = probs * (tl.dot(grad_out, v_t) - delta[:, None])
        dv_t += tl.dot(tl.trans(grad_out), probs.to(grad_out.dtype))
        dk_t += tl.dot(tl.trans(q), dscores.to(q.dtype))
        tl.atomic_add(dq_ptr + rows, tl.dot(dscores.to(q.dtype), tl.trans(k_t)) * scale, mask=ok)
    tl.store(dk_ptr + base + keys[None, :] * HEAD_DIM + dims[:, None], (dk_t * scale).to(dk_ptr.dtype.element_ty),
             mask=keys[None, :] < N)
    tl.store(dv_ptr + base + keys[None, :] * HEAD_DIM + dims[:, None], dv_t.to(dv_ptr.dtype.element_ty),
             mask=keys[None, :] < N)


def attention_backward(q, k, v, o, lse, do, causal=False, BLOCK_M=32, BLOCK_N=32):
    batch, heads, tokens, head_dim = q.shape
    q, k, v, o, do = (t if t.is_contiguous() else t.contiguous() for t in (q, k, v, o, do))
    dq = torch.zeros(q.shape, dtype=torch.float32, device=q.device)  # the atomic additions start from 0
    dk, dv = k.new_empty(k.shape), v.new_empty(v.shape)
    attention_bwd_kernel[(triton.cdiv(tokens, BLOCK_N), batch * heads)](
        q, k, v, o, do, lse, dq, dk, dv, tokens, 1.0 / math.sqrt(head_dim), HEAD_DIM=head_dim, BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N, CAUSAL=causal)
    return dq.to(q.dtype), dk, dv
""",
            }},
    "bo": {"about": "the release, untouched", "answers": "release",
           "fails": ["test_attention", "test_attention_bytes", "test_attention_bytes_hidden", "test_attention_fwd_kernel",
                     "test_attention_fwd_kernel_hidden", "test_attention_hidden", "test_attention_performance",
                     "test_online_softmax_kernel", "test_online_softmax_kernel_hidden", "test_q_rescale",
                     "written_memory"],
           "why": {"test_attention": "attention is still the exercise stub",
                   "test_q_rescale": "answer_rescale is not set"}},
    "cy": {"about": "torch in place of the kernel: F.scaled_dot_product_attention, and torch.logsumexp of q @ k^T",
           "answers": "solution",
           "replace": {"attention": """def attention(q, k, v, causal=False, BLOCK_M=64, BLOCK_N=64):
    scores = q.float() @ k.float().transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[-2]
        scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), -float("inf"))
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return o, torch.logsumexp(scores, dim=-1)
"""},
           "fails": ["test_attention", "test_attention_hidden", "test_attention_performance"],
           "why": {"test_attention": "launched no Triton kernel",
                   "test_attention_hidden": "launched no Triton kernel",
                   "test_attention_performance": "launched no Triton kernel"},
            # On a GPU the performance test's first call, at full size, runs out of the notebook's
            # share of GPU memory (the N x N scores of torch's attention) before launches are counted
            "on_gpu": {"why": {"test_attention": "launched no Triton kernel", "test_attention_hidden": "launched no Triton kernel",
                               "test_attention_performance": "out of memory"}},
           "flags": ["attention computes with transpose", "attention computes with torch.nn.functional.scaled_dot_product_attention"]},
    "gus": {"about": "torch's operators called directly (torch.ops.aten), past any name a list would hold: "
                     "the launches watched at torch's dispatcher see them",
            "answers": "solution",
            "replace": {"attention": """def attention(q, k, v, causal=False, BLOCK_M=64, BLOCK_N=64):
    aten = torch.ops.aten
    scores = aten.mul.Scalar(aten.matmul(q.float(), aten.transpose.int(k.float(), -2, -1)), q.shape[-1] ** -0.5)
    if causal:
        n = q.shape[-2]
        scores = aten.masked_fill.Scalar(scores, aten.triu(aten.ones([n, n], dtype=torch.bool, device=q.device), 1),
                                         -float("inf"))
    lse = aten.logsumexp(scores, [-1])
    return aten.matmul(aten.exp(aten.sub.Tensor(scores, aten.unsqueeze(lse, -1))), v.float()).to(q.dtype), lse
"""},
            "fails": ["test_attention", "test_attention_hidden", "test_attention_performance"],
            "why": {"test_attention": "launched no Triton kernel",
                    "test_attention_hidden": "launched no Triton kernel",
                    "test_attention_performance": "launched no Triton kernel"},
            # On a GPU the performance test's first call, at full size, runs out of the notebook's
            # share of GPU memory (the N x N scores of torch's attention) before launches are counted
            "on_gpu": {"why": {"test_attention": "launched no Triton kernel", "test_attention_hidden": "launched no Triton kernel",
                               "test_attention_performance": "out of memory"}},
            "flags": ["torch.ops", "calls torch's operators directly"]},
    "dee": {"about": "skips the blocks above the diagonal but does not mask the diagonal block: causal is wrong",
            "answers": "solution",
            "edits": {"attention_fwd_kernel": [["            if CAUSAL:\n"
                                                "                seen = seen & (offs_n[None, :] <= offs_m[:, None])\n", ""]]},
            "fails": ["test_attention", "test_attention_fwd_kernel", "test_attention_fwd_kernel_hidden",
                      "test_attention_hidden"],
            "why": {"test_attention": "set to -inf in the blocks that cross the diagonal",
                    "test_attention_fwd_kernel": "set to -inf in the blocks that cross the diagonal",
                    "test_attention_fwd_kernel_hidden": "set to -inf in the blocks that cross the diagonal",
                    "test_attention_hidden": "set to -inf in the blocks that cross the diagonal"}},
    "eve": {"ci": False, "about": "masks the scores for causal attention only: the keys past N score 0, not -inf",
            "answers": "solution",
            "edits": {"attention_fwd_kernel": [["        if MASKED:\n"
                                                "            seen = offs_n[None, :] < N\n"
                                                "            if CAUSAL:\n"
                                                "                seen = seen & (offs_n[None, :] <= offs_m[:, None])\n"
                                                "            s = tl.where(seen, s, -float(\"inf\"))\n",
                                                "        if MASKED and CAUSAL:\n"
                                                "            s = tl.where(offs_n[None, :] <= offs_m[:, None], s, -float(\"inf\"))\n"]]},
            "fails": ["test_attention", "test_attention_fwd_kernel", "test_attention_fwd_kernel_hidden",
                      "test_attention_hidden", "test_attention_performance"],
            "why": {"test_attention": "are the last block's keys offs_n >= N loaded with a mask",
                    "test_attention_fwd_kernel": "are the last block's keys offs_n >= N loaded with a mask",
                    "test_attention_fwd_kernel_hidden": "are the last block's keys offs_n >= N loaded with a mask",
                    "test_attention_hidden": "are the last block's keys offs_n >= N loaded with a mask",
                    "test_attention_performance": "are the last block's keys offs_n >= N loaded with a mask"}},
    "fay": {"ci": False, "about": "saves log(l) as the log-sum-exp, without the maximum: lse is wrong, o is right",
            "answers": "solution",
            "edits": {"attention_fwd_kernel": [["(m + tl.log2(l)) * 0.6931471805599453", "tl.log(l)"]]},
            "fails": ["test_attention", "test_attention_fwd_kernel", "test_attention_fwd_kernel_hidden",
                      "test_attention_hidden", "test_attention_performance"],
            "why": {"test_attention": "is the maximum m added back?",
                    "test_attention_fwd_kernel": "is the maximum m added back?",
                    "test_attention_fwd_kernel_hidden": "is the maximum m added back?",
                    "test_attention_hidden": "is the maximum m added back?",
                    "test_attention_performance": "is the maximum m added back?"}},
    "kai": {"about": "attention hands its kernel N = 0 (it stores nothing) and a grid function, which Triton's "
                     "launcher calls, that writes SDPA's output and torch's log-sum-exp into o and lse: the "
                     "student's callbacks are watched like the rest of the answer",
            "answers": "solution",
            "edits": {"attention": [["    grid = (triton.cdiv(N, BLOCK_M), B * H)\n", """
    def grid(meta):
        o.copy_(torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal))
        scores = q.float() @ k.float().transpose(-2, -1) * d ** -0.5
        if causal:
            scores = scores.masked_fill(torch.ones(N, N, dtype=torch.bool, device=q.device).triu(1), -float("inf"))
        lse.copy_(torch.logsumexp(scores, dim=-1))
        return (1, B * H)

"""], ["attention_fwd_kernel[grid](q, k, v, o, lse, N, d ** -0.5,", "attention_fwd_kernel[grid](q, k, v, o, lse, 0, d ** -0.5,"]]},
            "fails": ["test_attention", "test_attention_hidden", "test_attention_performance"],
            "why": {"test_attention": "besides launching a kernel", "test_attention_hidden": "besides launching a kernel",
                    "test_attention_performance": "besides launching a kernel"},
            # On a GPU the performance test's first call, at full size, runs out of the notebook's
            # share of GPU memory (the N x N scores of torch's attention) before launches are counted
            "on_gpu": {"why": {"test_attention": "besides launching a kernel", "test_attention_hidden": "besides launching a kernel",
                               "test_attention_performance": "out of memory"}}},
}

# The sample class for 10_inference, graded by `autograder demo 10_inference` and by the tests (see
# autograder/samples.py). The written answers (written_decode_bytes, written_int4) are graded by hand:
# the demo lists them as "to grade by hand", except in the untouched release, where nbgrader scores an
# unanswered cell 0 at once. The performance tests only advise under the interpreter and on GPUs other
# than compute capability 9.0; each starts with a short correctness run (run_paged, run_int4), so a
# sample whose paged kernel or int4 product is wrong fails it everywhere.
# ida writes every answer differently from the solutions (tests/test_second_answers.py checks that it
# covers them) and must lose no points: its partials kernel counts its steps (zero or fewer for an
# empty slice) and loads K transposed, its merge folds the slices into slice 0 one at a time; its
# paged kernel loops over page numbers and stops at the sequence's own last page; its int4 product
# does split-K the other way the lesson names, fp32 atomics into a zeroed buffer and a cast kernel,
# and unpacks with % 16 and // 16; the quiz letter in upper case with spaces.
# bo hands in the release untouched: every test fails, each saying its function is still the stub.
# cy gathers the paged cache into a contiguous tensor with torch (k_pages[block_table]) and hands each
# sequence, cut at lengths.tolist(), to exercise 1's kernels: torch computed (the gather, the cut, the
# cat), so the paged tests and the decoding performance test fail; exercise 1 is right.
# dee dequantises the int4 weights with torch (masks, shifts, the zero point, the scales) and calls a
# plain Triton matmul on the fp16 result: the int4 tests and the int4 performance test fail.
# eve calls SDPA on the gathered cache, with a mask of the lengths: no Triton kernel at all.
# fay's paged kernel forgets the mask of the last page: it reads the slots past lengths[b], which
# hold other tokens' keys, so every sequence whose length ends inside a page is wrong. Where a read
# takes its page from past the block table's row, an H100 can fault (an illegal address): that test
# fails with the seal's device-fault message, which asks about masks too, and the int4 tests after
# it, graded in a fresh kernel, pass.
# gus swaps the nibbles: row 2i of W from the high nibble, row 2i + 1 from the low one.
# jo's int4 kernel leaves out the zero point: W = q * scales (ci: False, a second mistake of the format,
# caught by the same check as gus's).
# hal's contiguous partials kernel steps through its whole slice with masks instead of stopping at
# N: a block (or a slice) with no key in it leaves m = -inf, and exp2(-inf - (-inf)) is NaN, which the
# merge spreads to o wherever a slice ends past the cache. Its paged kernel is the reference's.
{'ada': {'about': 'a correct submission', 'answers': 'solution', 'fails': []},
 'ida': {'about': 'every answer written differently, all correct',
         'answers': 'solution',
         'fails': [],
         'replace': {'decode_attention': '@triton.jit\n'
                                         'def decode_partials_kernel(q_ptr, k_ptr, v_ptr, m_ptr, l_ptr, acc_ptr, '
                                         'sqb, sqh, sqd, skb, skn, skh, skd,\n'
                                         '                           svb, svn, svh, svd, H, H_KV, N, GROUP, SPLITS, '
                                         'keys_per_split, scale,\n'
                                         '                           HEAD_DIM: tl.constexpr, BLOCK_G: tl.constexpr, '
                                         'BLOCK_N: tl.constexpr):\n'
                                         '    seq = tl.program_id(0) // H_KV\n'
                                         '    kv = tl.program_id(0) % H_KV\n'
                                         '    part = tl.program_id(1)\n'
                                         '    rows = tl.arange(0, BLOCK_G)\n'
                                         '    dims = tl.arange(0, HEAD_DIM)\n'
                                         '    head = kv * GROUP + rows\n'
                                         '    q = tl.load(q_ptr + seq.to(tl.int64) * sqb + head.to(tl.int64)[:, '
                                         'None] * sqh + dims[None, :] * sqd,\n'
                                         '                mask=(rows < GROUP)[:, None], other=0.0)\n'
                                         '    k_start = k_ptr + seq.to(tl.int64) * skb + kv.to(tl.int64) * skh\n'
                                         '    v_start = v_ptr + seq.to(tl.int64) * svb + kv.to(tl.int64) * svh\n'
                                         '    best = tl.zeros((BLOCK_G,), dtype=tl.float32) - float("inf")\n'
                                         '    total = tl.zeros((BLOCK_G,), dtype=tl.float32)\n'
                                         '    out = tl.zeros((BLOCK_G, HEAD_DIM), dtype=tl.float32)\n'
                                         '    log2_scale = scale * 1.4426950408889634\n'
                                         '    first = part * keys_per_split\n'
                                         '    last = tl.minimum(first + keys_per_split, N)\n'
                                         '    # the number of blocks in this slice: zero (or less) for a slice past '
                                         'the end, which then stores\n'
                                         '    # its starting values, the neutral partial\n'
                                         '    for step in range(0, tl.cdiv(last - first, BLOCK_N)):\n'
                                         '        ks = first + step * BLOCK_N + tl.arange(0, BLOCK_N)\n'
                                         '        keep = ks < last\n'
                                         '        k_t = tl.load(k_start + ks.to(tl.int64)[None, :] * skn + dims[:, '
                                         'None] * skd, mask=keep[None, :], other=0.0)\n'
                                         '        v = tl.load(v_start + ks.to(tl.int64)[:, None] * svn + dims[None, '
                                         ':] * svd, mask=keep[:, None], other=0.0)\n'
                                         '        scores = tl.where(keep[None, :], tl.dot(q, k_t) * log2_scale, '
                                         '-float("inf"))\n'
                                         '        new_best = tl.maximum(best, tl.max(scores, axis=1))\n'
                                         '        factor = tl.exp2(best - new_best)\n'
                                         '        probs = tl.exp2(scores - new_best[:, None])\n'
                                         '        total = total * factor + tl.sum(probs, axis=1)\n'
                                         '        out = out * factor[:, None] + tl.dot(probs.to(v.dtype), v)\n'
                                         '        best = new_best\n'
                                         '    where = (seq * H + head).to(tl.int64) * SPLITS + part\n'
                                         '    tl.store(m_ptr + where, best, mask=rows < GROUP)\n'
                                         '    tl.store(l_ptr + where, total, mask=rows < GROUP)\n'
                                         '    tl.store(acc_ptr + where[:, None] * HEAD_DIM + dims[None, :], out, '
                                         'mask=(rows < GROUP)[:, None])\n'
                                         '\n'
                                         '\n'
                                         '@triton.jit\n'
                                         'def decode_merge_kernel(m_ptr, l_ptr, acc_ptr, o_ptr, sob, soh, sod, H, '
                                         'SPLITS, HEAD_DIM: tl.constexpr):\n'
                                         '    # slice 0 always holds keys (every sequence has one); the others are '
                                         'merged into it one by one\n'
                                         '    r = tl.program_id(0)\n'
                                         '    row = r.to(tl.int64) * SPLITS\n'
                                         '    dims = tl.arange(0, HEAD_DIM)\n'
                                         '    best = tl.load(m_ptr + row)\n'
                                         '    total = tl.load(l_ptr + row)\n'
                                         '    out = tl.load(acc_ptr + row * HEAD_DIM + dims)\n'
                                         '    for s in range(1, SPLITS):\n'
                                         '        mi = tl.load(m_ptr + row + s)\n'
                                         '        li = tl.load(l_ptr + row + s)\n'
                                         '        ai = tl.load(acc_ptr + (row + s) * HEAD_DIM + dims)\n'
                                         '        new = tl.maximum(best, mi)\n'
                                         '        old_weight = tl.exp2(best - new)\n'
                                         '        new_weight = tl.exp2(mi - new)  # 0 for an empty slice\n'
                                         '        total = total * old_weight + li * new_weight\n'
                                         '        out = out * old_weight + ai * new_weight\n'
                                         '        best = new\n'
                                         '    seq = r // H\n'
                                         '    head = r % H\n'
                                         '    tl.store(o_ptr + seq.to(tl.int64) * sob + head.to(tl.int64) * soh + '
                                         'dims * sod,\n'
                                         '             (out / total).to(o_ptr.dtype.element_ty))\n'
                                         '\n'
                                         '\n'
                                         'def decode_attention(q, k, v, scale=None, splits=None):\n'
                                         '    if q.ndim != 3 or k.ndim != 4 or tuple(v.shape) != tuple(k.shape):\n'
                                         '        raise ValueError("q must be (B, H, d), k and v (B, N, H_kv, d) of '
                                         'one shape")\n'
                                         '    batch, heads, dim = q.shape\n'
                                         '    _, n, kv_heads, kdim = k.shape\n'
                                         '    if k.shape[0] != batch or kdim != dim or n < 1:\n'
                                         '        raise ValueError("k and v must have q\'s batch and head dim, and '
                                         'at least one key")\n'
                                         '    if kv_heads < 1 or heads % kv_heads:\n'
                                         '        raise ValueError("the query heads must split evenly over the K/V '
                                         'heads")\n'
                                         '    if q.dtype != k.dtype or k.dtype != v.dtype or q.device != k.device or '
                                         'k.device != v.device:\n'
                                         '        raise ValueError("q, k and v need one dtype and one device")\n'
                                         '    if dim not in HEAD_DIMS:\n'
                                         '        raise ValueError(f"d = {dim}: only 16, 32, 64 and 128 are '
                                         'supported")\n'
                                         '    settings = decode_config(dim, q.dtype)\n'
                                         '    step = settings.pop("BLOCK_N")\n'
                                         '    blocks = -(-n // step)\n'
                                         '    wanted = splits if splits is not None else max(1, min(blocks, -(-2 * '
                                         'multiprocessors() // (batch * kv_heads))))\n'
                                         '    if wanted > blocks:  # one block per slice, and the slices past the '
                                         'last block empty\n'
                                         '        per_split, count = step, wanted\n'
                                         '    else:\n'
                                         '        per_split = step * -(-blocks // wanted)\n'
                                         '        count = -(-n // per_split)\n'
                                         '    group = heads // kv_heads\n'
                                         '    m = torch.empty(batch, heads, count, device=q.device, '
                                         'dtype=torch.float32)\n'
                                         '    l = torch.empty_like(m)\n'
                                         '    acc = torch.empty(batch, heads, count, dim, device=q.device, '
                                         'dtype=torch.float32)\n'
                                         '    o = torch.empty(batch, heads, dim, device=q.device, dtype=q.dtype)\n'
                                         '    decode_partials_kernel[(batch * kv_heads, count)](\n'
                                         '        q, k, v, m, l, acc, *q.stride(), *k.stride(), *v.stride(), heads, '
                                         'kv_heads, n, group, count, per_split,\n'
                                         '        dim ** -0.5 if scale is None else scale, HEAD_DIM=dim, '
                                         'BLOCK_G=max(16, triton.next_power_of_2(group)),\n'
                                         '        BLOCK_N=step, **settings)\n'
                                         '    decode_merge_kernel[(batch * heads,)](m, l, acc, o, *o.stride(), '
                                         'heads, count, HEAD_DIM=dim)\n'
                                         '    return o\n',
                     'paged_decode_attention': '@triton.jit\n'
                                               'def paged_decode_partials_kernel(q_ptr, k_ptr, v_ptr, table_ptr, '
                                               'lengths_ptr, m_ptr, l_ptr, acc_ptr,\n'
                                               '                                 sqb, sqh, sqd, skp, sks, skh, skd, '
                                               'svp, svs, svh, svd, stb,\n'
                                               '                                 H, H_KV, GROUP, SPLITS, '
                                               'pages_per_split, scale,\n'
                                               '                                 HEAD_DIM: tl.constexpr, PAGE_SIZE: '
                                               'tl.constexpr, BLOCK_G: tl.constexpr):\n'
                                               '    seq = tl.program_id(0) // H_KV\n'
                                               '    kv = tl.program_id(0) % H_KV\n'
                                               '    part = tl.program_id(1)\n'
                                               '    rows = tl.arange(0, BLOCK_G)\n'
                                               '    dims = tl.arange(0, HEAD_DIM)\n'
                                               '    slots = tl.arange(0, PAGE_SIZE)\n'
                                               '    head = kv * GROUP + rows\n'
                                               '    q = tl.load(q_ptr + seq.to(tl.int64) * sqb + '
                                               'head.to(tl.int64)[:, None] * sqh + dims[None, :] * sqd,\n'
                                               '                mask=(rows < GROUP)[:, None], other=0.0)\n'
                                               '    n = tl.load(lengths_ptr + seq)\n'
                                               '    best = tl.zeros((BLOCK_G,), dtype=tl.float32) - float("inf")\n'
                                               '    total = tl.zeros((BLOCK_G,), dtype=tl.float32)\n'
                                               '    out = tl.zeros((BLOCK_G, HEAD_DIM), dtype=tl.float32)\n'
                                               '    log2_scale = scale * 1.4426950408889634\n'
                                               '    first_page = part * pages_per_split\n'
                                               '    end_page = tl.minimum(first_page + pages_per_split, tl.cdiv(n, '
                                               "PAGE_SIZE))  # the sequence's own pages only\n"
                                               '    for p in range(first_page, end_page):\n'
                                               '        page = tl.load(table_ptr + seq.to(tl.int64) * stb + '
                                               'p).to(tl.int64)\n'
                                               '        keep = p * PAGE_SIZE + slots < n\n'
                                               '        k_t = tl.load(k_ptr + page * skp + kv.to(tl.int64) * skh + '
                                               'slots[None, :] * sks + dims[:, None] * skd,\n'
                                               '                      mask=keep[None, :], other=0.0)\n'
                                               '        v = tl.load(v_ptr + page * svp + kv.to(tl.int64) * svh + '
                                               'slots[:, None] * svs + dims[None, :] * svd,\n'
                                               '                    mask=keep[:, None], other=0.0)\n'
                                               '        scores = tl.where(keep[None, :], tl.dot(q, k_t) * '
                                               'log2_scale, -float("inf"))\n'
                                               '        new_best = tl.maximum(best, tl.max(scores, axis=1))\n'
                                               '        factor = tl.exp2(best - new_best)\n'
                                               '        probs = tl.exp2(scores - new_best[:, None])\n'
                                               '        total = total * factor + tl.sum(probs, axis=1)\n'
                                               '        out = out * factor[:, None] + tl.dot(probs.to(v.dtype), v)\n'
                                               '        best = new_best\n'
                                               '    where = (seq * H + head).to(tl.int64) * SPLITS + part\n'
                                               '    tl.store(m_ptr + where, best, mask=rows < GROUP)\n'
                                               '    tl.store(l_ptr + where, total, mask=rows < GROUP)\n'
                                               '    tl.store(acc_ptr + where[:, None] * HEAD_DIM + dims[None, :], '
                                               'out, mask=(rows < GROUP)[:, None])\n'
                                               '\n'
                                               '\n'
                                               'def paged_decode_attention(q, k_pages, v_pages, block_table, '
                                               'lengths, scale=None, splits=None):\n'
                                               '    if q.ndim != 3 or k_pages.ndim != 4 or tuple(v_pages.shape) != '
                                               'tuple(k_pages.shape):\n'
                                               '        raise ValueError("q must be (B, H, d), k_pages and v_pages '
                                               '(num_pages, PAGE_SIZE, H_kv, d) of one shape")\n'
                                               '    batch, heads, dim = q.shape\n'
                                               '    _, page_size, kv_heads, kdim = k_pages.shape\n'
                                               '    if kdim != dim:\n'
                                               '        raise ValueError(f"the pages hold head dim {kdim}, q has '
                                               '{dim}")\n'
                                               '    if page_size not in PAGE_SIZES:\n'
                                               '        raise ValueError(f"PAGE_SIZE {page_size}: the kernel takes '
                                               '{PAGE_SIZES}")\n'
                                               '    if block_table.dtype != torch.int32 or block_table.ndim != 2 or '
                                               'block_table.shape[0] != batch:\n'
                                               '        raise ValueError("block_table must be (B, max_pages) '
                                               'int32")\n'
                                               '    if lengths.dtype != torch.int32 or tuple(lengths.shape) != '
                                               '(batch,):\n'
                                               '        raise ValueError("lengths must be (B,) int32")\n'
                                               '    if kv_heads < 1 or heads % kv_heads:\n'
                                               '        raise ValueError("the query heads must split evenly over the '
                                               'K/V heads")\n'
                                               '    if q.dtype != k_pages.dtype or k_pages.dtype != v_pages.dtype or '
                                               'q.device != k_pages.device:\n'
                                               '        raise ValueError("q and the pages need one dtype and one '
                                               'device")\n'
                                               '    if dim not in HEAD_DIMS:\n'
                                               '        raise ValueError(f"d = {dim}: only 16, 32, 64 and 128 are '
                                               'supported")\n'
                                               '    settings = decode_config(dim, q.dtype)\n'
                                               '    del settings["BLOCK_N"]\n'
                                               '    table_pages = block_table.shape[1]\n'
                                               '    wanted = splits if splits is not None else max(1, '
                                               'min(table_pages, -(-2 * multiprocessors() // (batch * kv_heads))))\n'
                                               '    if wanted > table_pages:  # a page per slice, the rest empty\n'
                                               '        per_split, count = 1, wanted\n'
                                               '    else:\n'
                                               '        per_split = -(-table_pages // wanted)\n'
                                               '        count = -(-table_pages // per_split)\n'
                                               '    group = heads // kv_heads\n'
                                               '    m = torch.empty(batch, heads, count, device=q.device, '
                                               'dtype=torch.float32)\n'
                                               '    l = torch.empty_like(m)\n'
                                               '    acc = torch.empty(batch, heads, count, dim, device=q.device, '
                                               'dtype=torch.float32)\n'
                                               '    o = torch.empty(batch, heads, dim, device=q.device, '
                                               'dtype=q.dtype)\n'
                                               '    paged_decode_partials_kernel[(batch * kv_heads, count)](\n'
                                               '        q, k_pages, v_pages, block_table, lengths, m, l, acc, '
                                               '*q.stride(), *k_pages.stride(), *v_pages.stride(),\n'
                                               '        block_table.stride(0), heads, kv_heads, group, count, '
                                               'per_split, dim ** -0.5 if scale is None else scale,\n'
                                               '        HEAD_DIM=dim, PAGE_SIZE=page_size, BLOCK_G=max(16, '
                                               'triton.next_power_of_2(group)), **settings)\n'
                                               '    decode_merge_kernel[(batch * heads,)](m, l, acc, o, *o.stride(), '
                                               'heads, count, HEAD_DIM=dim)\n'
                                               '    return o\n',
                     'q_empty_slice': 'answer_empty_slice = " C "\n',
                     'int4_linear': '@triton.jit\n'
                                    'def int4_matmul_kernel(x_ptr, packed_ptr, scale_ptr, zero_ptr, out_ptr, M, N, '
                                    'K, steps_per_split,\n'
                                    '                       sxm, sxk, spk, spn, ssk, ssn, szk, szn, GROUP_SIZE: '
                                    'tl.constexpr, BLOCK_M: tl.constexpr,\n'
                                    '                       BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):\n'
                                    '    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)\n'
                                    '    rows = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)\n'
                                    '    pair = tl.arange(0, BLOCK_K // 2)\n'
                                    '    total = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n'
                                    '    first = tl.program_id(2) * steps_per_split\n'
                                    '    last = tl.minimum(first + steps_per_split, K // BLOCK_K)\n'
                                    '    x_at = x_ptr + rows.to(tl.int64)[:, None] * sxm\n'
                                    '    for step in range(first, last):\n'
                                    '        k_lo = step * BLOCK_K + 2 * pair  # the rows of W held in the low '
                                    'nibbles\n'
                                    '        bytes_ = tl.load(packed_ptr + (step * (BLOCK_K // 2) + '
                                    'pair).to(tl.int64)[:, None] * spk + cols[None, :] * spn,\n'
                                    '                         mask=cols[None, :] < N, other=0)\n'
                                    '        g = (step * BLOCK_K) // GROUP_SIZE\n'
                                    '        scale = tl.load(scale_ptr + g * ssk + cols * ssn, mask=cols < N, '
                                    'other=0.0).to(tl.float32)[None, :]\n'
                                    '        zero = tl.load(zero_ptr + g * szk + cols * szn, mask=cols < N, '
                                    'other=0.0).to(tl.float32)[None, :]\n'
                                    '        x_lo = tl.load(x_at + k_lo.to(tl.int64)[None, :] * sxk, mask=(rows < '
                                    'M)[:, None], other=0.0)\n'
                                    '        x_hi = tl.load(x_at + (k_lo + 1).to(tl.int64)[None, :] * sxk, '
                                    'mask=(rows < M)[:, None], other=0.0)\n'
                                    '        lo_w = (bytes_ % 16).to(tl.float32) * scale - zero * scale\n'
                                    '        hi_w = (bytes_ // 16).to(tl.float32) * scale - zero * scale\n'
                                    '        total += tl.dot(x_lo, lo_w.to(x_lo.dtype))\n'
                                    '        total += tl.dot(x_hi, hi_w.to(x_hi.dtype))\n'
                                    '    # each split adds its share into the zeroed fp32 sum (the atomic way of '
                                    'split-K)\n'
                                    '    tl.atomic_add(out_ptr + rows.to(tl.int64)[:, None] * N + cols[None, :], '
                                    'total,\n'
                                    '                  mask=(rows < M)[:, None] & (cols < N)[None, :])\n'
                                    '\n'
                                    '\n'
                                    '@triton.jit\n'
                                    'def int4_cast_kernel(src_ptr, dst_ptr, count, BLOCK: tl.constexpr):\n'
                                    '    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n'
                                    '    tl.store(dst_ptr + i, tl.load(src_ptr + i, mask=i < count, '
                                    'other=0.0).to(dst_ptr.dtype.element_ty), mask=i < count)\n'
                                    '\n'
                                    '\n'
                                    'def int4_linear(x, packed, scales, zeros, group_size, split_k=None):\n'
                                    '    if x.ndim != 2 or packed.ndim != 2:\n'
                                    '        raise ValueError("x must be (M, K) and packed (K // 2, N)")\n'
                                    '    rows, depth = x.shape\n'
                                    '    if group_size not in GROUP_SIZES:\n'
                                    '        raise ValueError(f"group_size must be one of {GROUP_SIZES}")\n'
                                    '    if depth % group_size != 0:\n'
                                    '        raise ValueError(f"K = {depth} must be a multiple of group_size = '
                                    '{group_size}")\n'
                                    '    cols = packed.shape[1]\n'
                                    '    if packed.dtype != torch.uint8 or tuple(packed.shape) != (depth // 2, '
                                    'cols):\n'
                                    '        raise ValueError("packed must be (K // 2, N) uint8")\n'
                                    '    if tuple(scales.shape) != (depth // group_size, cols) or tuple(zeros.shape) '
                                    '!= tuple(scales.shape):\n'
                                    '        raise ValueError("scales and zeros must be (K // group_size, N)")\n'
                                    '    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32):\n'
                                    '        raise ValueError("x must be a floating-point tensor of 16 or 32 bits")\n'
                                    '    cfg = int4_config(group_size, x.dtype)\n'
                                    '    steps = depth // cfg["BLOCK_K"]\n'
                                    '    tiles = triton.cdiv(cols, cfg["BLOCK_N"]) * triton.cdiv(rows, '
                                    'cfg["BLOCK_M"])\n'
                                    '    parts = split_k if split_k is not None else triton.cdiv(2 * '
                                    'multiprocessors(), tiles)\n'
                                    '    per = triton.cdiv(steps, max(1, min(parts, steps)))\n'
                                    '    parts = triton.cdiv(steps, per)\n'
                                    '    acc = torch.zeros(rows, cols, dtype=torch.float32, device=x.device)\n'
                                    '    out = torch.empty(rows, cols, dtype=x.dtype, device=x.device)\n'
                                    '    grid = (triton.cdiv(cols, cfg["BLOCK_N"]), triton.cdiv(rows, '
                                    'cfg["BLOCK_M"]), parts)\n'
                                    '    int4_matmul_kernel[grid](x, packed, scales, zeros, acc, rows, cols, depth, '
                                    'per, *x.stride(), *packed.stride(),\n'
                                    '                             *scales.stride(), *zeros.stride(), '
                                    'GROUP_SIZE=group_size, **cfg)\n'
                                    '    int4_cast_kernel[(triton.cdiv(rows * cols, 512),)](acc, out, rows * cols, '
                                    'BLOCK=512)\n'
                                    '    return out\n'}},
 'bo': {'ci': False,
        'about': 'the release, untouched',
        'answers': 'release',
        'fails': ['test_decode_attention',
                  'test_decode_attention_hidden',
                  'test_decode_performance',
                  'test_int4_linear',
                  'test_int4_linear_hidden',
                  'test_int4_performance',
                  'test_paged_decode',
                  'test_paged_decode_hidden',
                  'test_q_empty_slice',
                  'written_decode_bytes',
                  'written_int4'],
        'why': {'test_decode_attention': 'decode_attention is still the exercise stub',
                'test_paged_decode': 'paged_decode_attention is still the exercise stub',
                'test_int4_linear': 'int4_linear is still the exercise stub',
                'test_q_empty_slice': 'answer_empty_slice is not set'}},
 'cy': {'about': "gathers the paged cache with torch (k_pages[block_table]) and hands it to exercise 1's kernels",
        'answers': 'solution',
        'replace': {'paged_decode_attention': 'def paged_decode_attention(q, k_pages, v_pages, block_table, lengths, '
                                              'scale=None, splits=None):\n'
                                              "    # gather each sequence's pages into a contiguous cache, then "
                                              "exercise 1's kernels\n"
                                              '    B, max_pages = block_table.shape\n'
                                              '    page = k_pages.shape[1]\n'
                                              '    k = k_pages[block_table.long()].reshape(B, max_pages * page, '
                                              '*k_pages.shape[2:])\n'
                                              '    v = v_pages[block_table.long()].reshape(B, max_pages * page, '
                                              '*v_pages.shape[2:])\n'
                                              '    outs = [decode_attention(q[b:b + 1], k[b:b + 1, :n], v[b:b + 1, '
                                              ':n], scale) for b, n in enumerate(lengths.tolist())]\n'
                                              '    return torch.cat(outs)\n'},
        'fails': ['test_decode_performance', 'test_paged_decode', 'test_paged_decode_hidden'],
        'why': {'test_paged_decode': 'computed with torch (Tensor.tolist, aten.cat, aten.index)',
                'test_paged_decode_hidden': 'computed with torch (Tensor.tolist, aten.cat, aten.index)',
                'test_decode_performance': 'computed with torch (Tensor.tolist, aten.cat, aten.index)'}},
 'dee': {'about': 'dequantises the int4 weights with torch, then a plain Triton matmul',
         'answers': 'solution',
         'replace': {'int4_linear': '@triton.jit\n'
                                    'def plain_matmul_kernel(x_ptr, w_ptr, out_ptr, M, N, K, sxm, sxk, swk, swn, '
                                    'BLOCK_M: tl.constexpr,\n'
                                    '                        BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):\n'
                                    '    rows = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)\n'
                                    '    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)\n'
                                    '    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n'
                                    '    for k0 in range(0, K, BLOCK_K):\n'
                                    '        ks = k0 + tl.arange(0, BLOCK_K)\n'
                                    '        a = tl.load(x_ptr + rows[:, None] * sxm + ks[None, :] * sxk, '
                                    'mask=(rows[:, None] < M) & (ks[None, :] < K),\n'
                                    '                    other=0.0)\n'
                                    '        b = tl.load(w_ptr + ks[:, None] * swk + cols[None, :] * swn, '
                                    'mask=(ks[:, None] < K) & (cols[None, :] < N),\n'
                                    '                    other=0.0)\n'
                                    '        acc = tl.dot(a, b, acc)\n'
                                    '    tl.store(out_ptr + rows[:, None] * N + cols[None, :], '
                                    'acc.to(out_ptr.dtype.element_ty),\n'
                                    '             mask=(rows[:, None] < M) & (cols[None, :] < N))\n'
                                    '\n'
                                    '\n'
                                    'def int4_linear(x, packed, scales, zeros, group_size, split_k=None):\n'
                                    '    M, K = x.shape\n'
                                    '    if K % group_size:\n'
                                    '        raise ValueError(f"K = {K} is not a multiple of group_size = '
                                    '{group_size}")\n'
                                    '    if packed.dtype != torch.uint8 or scales.shape[0] != K // group_size or '
                                    'group_size not in GROUP_SIZES:\n'
                                    '        raise ValueError("packed must be uint8, and scales (K // group_size, '
                                    'N)")\n'
                                    '    # expand the weights first, then an ordinary product\n'
                                    '    low, high = packed & 15, packed >> 4\n'
                                    '    q = torch.stack([low, high], dim=1).reshape(K, -1).float()\n'
                                    '    group = torch.arange(K, device=x.device) // group_size\n'
                                    '    w = ((q - zeros.float()[group]) * scales.float()[group]).to(x.dtype)\n'
                                    '    N = w.shape[1]\n'
                                    '    out = torch.empty(M, N, dtype=x.dtype, device=x.device)\n'
                                    '    plain_matmul_kernel[(triton.cdiv(N, 32), triton.cdiv(M, 16))](x, w, out, M, '
                                    'N, K, *x.stride(), *w.stride(),\n'
                                    '                                                                  BLOCK_M=16, '
                                    'BLOCK_N=32, BLOCK_K=32)\n'
                                    '    return out\n'},
         'fails': ['test_int4_linear', 'test_int4_linear_hidden', 'test_int4_performance'],
         'why': {'test_int4_linear': 'aten.bitwise_and',
                 'test_int4_linear_hidden': 'aten.bitwise_and',
                 'test_int4_performance': 'aten.bitwise_and'}},
 'eve': {'ci': False,
         'about': 'SDPA on the gathered cache: no kernel',
         'answers': 'solution',
         'replace': {'paged_decode_attention': 'def paged_decode_attention(q, k_pages, v_pages, block_table, '
                                               'lengths, scale=None, splits=None):\n'
                                               "    # torch's attention on the gathered cache, each sequence masked "
                                               'at its length\n'
                                               '    B, max_pages = block_table.shape\n'
                                               '    k = k_pages[block_table.long()].flatten(1, 2).transpose(1, 2)\n'
                                               '    v = v_pages[block_table.long()].flatten(1, 2).transpose(1, 2)\n'
                                               '    mask = torch.arange(k.shape[2], device=q.device)[None, :] < '
                                               'lengths[:, None]\n'
                                               '    o = F.scaled_dot_product_attention(q.unsqueeze(2), k, v, '
                                               'attn_mask=mask[:, None, None, :], scale=scale,\n'
                                               '                                       enable_gqa=q.shape[1] != '
                                               'k.shape[1])\n'
                                               '    return o.squeeze(2)\n'},
         'fails': ['test_decode_performance', 'test_paged_decode', 'test_paged_decode_hidden'],
         'why': {'test_paged_decode': 'launched no Triton kernel',
                 'test_paged_decode_hidden': 'launched no Triton kernel',
                 'test_decode_performance': 'launched no Triton kernel'},
         'flags': ['launches no kernel (torch fallback?)']},
 'fay': {'about': 'the paged kernel forgets the mask of the last page (reads keys past lengths[b])',
         'answers': 'solution',
         'edits': {'paged_decode_attention': [['        inside = n < hi  # the last block is partial',
                                               '        inside = n >= lo  # every key of the block']]},
         'fails': ['test_decode_performance', 'test_paged_decode', 'test_paged_decode_hidden'],
         'why': {'test_paged_decode': 'masked',
                 'test_paged_decode_hidden': 'masked',
                 'test_decode_performance': 'masked'}},
 'gus': {'about': 'the int4 kernel swaps the nibbles (row 2i from the high nibble)',
         'answers': 'solution',
         'edits': {'int4_linear': [['        w_low = nibbles_minus_zero(packed_t & 0xF, z[:, None], dtype) * s[:, None]',
                                    '        w_low = nibbles_minus_zero(packed_t >> 4, z[:, None], dtype) * s[:, None]'],
                                   ['        w_high = nibbles_minus_zero(packed_t >> 4, z[:, None], dtype) * s[:, None]',
                                    '        w_high = nibbles_minus_zero(packed_t & 0xF, z[:, None], dtype) * s[:, None]']]},
         'fails': ['test_int4_linear', 'test_int4_linear_hidden', 'test_int4_performance'],
         'why': {'test_int4_linear': 'the nibbles are swapped',
                 'test_int4_linear_hidden': 'the nibbles are swapped',
                 'test_int4_performance': 'the nibbles are swapped'}},
 'hal': {'about': 'the partials kernel steps through its whole slice with masks: NaN for blocks with no key',
         'answers': 'solution',
         'edits': {'decode_attention': [['    for start in range(lo, hi, BLOCK_N):  # every step holds at least one '
                                         'key below hi: no NaN',
                                         '    for start in range(lo, lo + keys_per_split, BLOCK_N):  # the whole '
                                         'slice, masked past N']]},
         'fails': ['test_decode_attention', 'test_decode_attention_hidden'],
         'why': {'test_decode_attention': 'a slice (or a block) with no key in it',
                 'test_decode_attention_hidden': 'a slice (or a block) with no key in it'}},
 'jo': {'ci': False,
        'about': 'the int4 kernel leaves out the zero point',
        'answers': 'solution',
        'edits': {'int4_linear': [['        w_low = nibbles_minus_zero(packed_t & 0xF, z[:, None], dtype) * s[:, None]',
                                   '        w_low = nibbles_minus_zero(packed_t & 0xF, 0, dtype) * s[:, None]'],
                                  ['        w_high = nibbles_minus_zero(packed_t >> 4, z[:, None], dtype) * s[:, None]',
                                   '        w_high = nibbles_minus_zero(packed_t >> 4, 0, dtype) * s[:, None]']]},
        'fails': ['test_int4_linear', 'test_int4_linear_hidden', 'test_int4_performance'],
        'why': {'test_int4_linear': 'the zero point is left out',
                'test_int4_linear_hidden': 'the zero point is left out',
                'test_int4_performance': 'the zero point is left out'}}}

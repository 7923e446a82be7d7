# The sample class for 08_hopper_matmul, graded by `autograder demo 08_hopper_matmul` and by the tests
# (see autograder/samples.py). The written_warp_specialize cell is graded by hand: the demo lists it
# as "to grade by hand", except in the untouched release, where nbgrader scores an unanswered cell 0
# at once. The performance tests only advise under the interpreter and on GPUs without TMA; every
# expected failure below but fay's comes from a check that runs before any timing, so it is the
# same on a Hopper GPU and under the interpreter.
# cy computes tma_matmul and fp8_linear with torch (the audit flags both lines), and hides a third
# fallback in persistent_matmul's grid function, which Triton's launcher calls: its kernel gets
# M = N = K = 0 and stores nothing, and the torch.matmul in the callback is seen at torch's dispatcher.
# dee launches tma_matmul's kernel on any operand: the interpreter's descriptor refuses a row stride
# of 66 bytes ("stride must be 16-byte aligned", which the kit reports as a kernel that could not
# run), and on an H200 (the lesson says) the descriptor reads wrong numbers silently; either way
# the alignment test says that tma_matmul should have raised ValueError.
# eve quantises with one scale for the whole tensor (the scale check fails, on any input whose rows
# differ), and its fp8_linear_kernel multiplies the accumulator by x_scale alone, forgetting w_scale.
# fay's persistent kernel zeroes its accumulator once per program instead of once per tile: a
# program's second tile adds in its first, so only programs with more than one tile go wrong. Under
# the interpreter (4 programs) the tests have such products; on an H200 (132 programs) none of
# them has more than 60 tiles, so fay passes every test there (on_gpu). Its failure message asks
# about the K tail, not the accumulator: check_matmul gives the K-tail hint alone whenever K is not
# a multiple of BLOCK_K, as in every product fay fails on; so fay has no `why`.
# ida writes every answer differently from the solutions (tests/test_second_answers.py checks that it
# covers them) and must lose no points: a hidden test that rejects it rejects a valid answer. Its
# tma_matmul copies an operand that a descriptor cannot read into an aligned buffer instead of
# refusing it, which the alignment test accepts.
{
    "ada": {"about": "a correct submission", "answers": "solution", "fails": []},
    "ida": {"about": "every answer written differently, all correct; tma_matmul copies a misaligned operand "
                     "into an aligned buffer instead of refusing it",
            "answers": "solution", "fails": [],
            "replace": {
                "waves": """def waves(M, N, BLOCK_M, BLOCK_N, num_sms):
    tiles = (-(-M // BLOCK_M)) * (-(-N // BLOCK_N))  # ceiling divisions
    full, rest = divmod(tiles, num_sms)
    return tiles, full + (1 if rest else 0), (rest or num_sms) / num_sms
""",
                "persistent_matmul": """@triton.jit
def persistent_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                             stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                             BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr,
                             FLATTEN: tl.constexpr):
    tiles_m = (M + BLOCK_M - 1) // BLOCK_M
    tiles_n = (N + BLOCK_N - 1) // BLOCK_N
    ks = tl.arange(0, BLOCK_K)
    for tile in tl.range(tl.program_id(axis=0), tiles_m * tiles_n, NUM_SMS, flatten=FLATTEN):
        tile_m, tile_n = tile_of_program(tile, tiles_m, tiles_n, GROUP_M)
        rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
        a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
        b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
        total = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for step in range(0, tl.cdiv(K, BLOCK_K)):
            inside_k = step * BLOCK_K + ks < K
            a = tl.load(a_ptrs, mask=(rows[:, None] < M) & inside_k[None, :], other=0.0)
            b = tl.load(b_ptrs, mask=inside_k[:, None] & (cols[None, :] < N), other=0.0)
            total += tl.dot(a, b)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
        tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn, total.to(c_ptr.dtype.element_ty),
                 mask=(rows[:, None] < M) & (cols[None, :] < N))


def persistent_matmul(a, b, flatten=False, **config):
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"cannot multiply {list(a.shape)} by {list(b.shape)}")
    (M, K), N = a.shape, b.shape[1]
    settings = dict(launch_config(a.dtype))
    settings.update(config)
    c = a.new_empty((M, N))
    programs = min(NUM_SMS, triton.cdiv(M, settings["BLOCK_M"]) * triton.cdiv(N, settings["BLOCK_N"]))
    persistent_matmul_kernel[(programs,)](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(),
                                          NUM_SMS=NUM_SMS, FLATTEN=flatten, **settings)
    return c
""",
                "tma_matmul": """@triton.jit
def tma_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr,
                      WARP_SPECIALIZE: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, block_shape=[BLOCK_M, BLOCK_K], strides=[stride_am, 1], shape=[M, K])
    b_desc = tl.make_tensor_descriptor(b_ptr, block_shape=[BLOCK_K, BLOCK_N], strides=[stride_bk, 1], shape=[K, N])
    c_desc = tl.make_tensor_descriptor(c_ptr, block_shape=[BLOCK_M, BLOCK_N], strides=[stride_cm, 1], shape=[M, N])
    tiles_m = (M + BLOCK_M - 1) // BLOCK_M
    tiles_n = (N + BLOCK_N - 1) // BLOCK_N
    steps = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(tl.program_id(axis=0), tiles_m * tiles_n, NUM_SMS, warp_specialize=WARP_SPECIALIZE,
                         flatten=False):
        tile_m, tile_n = tile_of_program(tile, tiles_m, tiles_n, GROUP_M)
        row0 = tile_m * BLOCK_M
        col0 = tile_n * BLOCK_N
        total = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for step in tl.range(0, steps):
            total = tl.dot(a_desc.load([row0, step * BLOCK_K]), b_desc.load([step * BLOCK_K, col0]), total)
        c_desc.store([row0, col0], total.to(c_ptr.dtype.element_ty))


def descriptor_ready(t):
    \"\"\"Whether a descriptor can hold t: last stride 1, first stride and address multiples of 16 bytes.\"\"\"
    return t.stride(1) == 1 and t.stride(0) * t.element_size() % 16 == 0 and t.data_ptr() % 16 == 0


def aligned(t):
    \"\"\"t itself if a descriptor can read it, else a copy in a fresh buffer whose rows are padded to 16 bytes.\"\"\"
    if descriptor_ready(t):
        return t
    step = 16 // t.element_size()
    rows, cols = t.shape
    buffer = torch.empty((rows, -(-cols // step) * step), dtype=t.dtype, device=t.device)[:, :cols]
    buffer.copy_(t)
    return buffer


def tma_matmul(a, b, warp_specialize=False, **config):
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"cannot multiply {list(a.shape)} by {list(b.shape)}")
    a, b = aligned(a), aligned(b)
    (M, K), N = a.shape, b.shape[1]
    if not config:
        config = launch_config(a.dtype, warp_specialize)
    step = 16 // a.element_size()
    c = torch.empty((M, -(-N // step) * step), dtype=a.dtype, device=a.device)[:, :N]
    programs = min(NUM_SMS, triton.cdiv(M, config["BLOCK_M"]) * triton.cdiv(N, config["BLOCK_N"]))
    tma_matmul_kernel[(programs,)](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), NUM_SMS=NUM_SMS,
                                   WARP_SPECIALIZE=warp_specialize, **config)
    return c
""",
                "q_no_tma": "answer_no_tma = ' B '\n",
                "to_fp8_rows": """def to_fp8_rows(x):
    peak = x.float().abs().max(dim=1).values
    scale = (peak / E4M3_MAX).masked_fill(peak == 0, 1.0)
    return (x.float() * (1.0 / scale).unsqueeze(1)).to(torch.float8_e4m3fn), scale
""",
                "fp8_linear": """@triton.jit
def fp8_linear_kernel(x_ptr, w_ptr, x_scale_ptr, w_scale_ptr, out_ptr, M, N, K, stride_xm, stride_wn, stride_om,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                      NUM_SMS: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
    x_desc = tl.make_tensor_descriptor(x_ptr, [M, K], [stride_xm, 1], [BLOCK_M, BLOCK_K])
    w_desc = tl.make_tensor_descriptor(w_ptr, strides=[stride_wn, 1], shape=[N, K], block_shape=[BLOCK_N, BLOCK_K])
    out_desc = tl.make_tensor_descriptor(block_shape=[BLOCK_M, BLOCK_N], base=out_ptr, strides=[stride_om, 1],
                                         shape=[M, N])
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    for tile in tl.range(tl.program_id(axis=0), tiles_m * tiles_n, NUM_SMS, warp_specialize=WARP_SPECIALIZE,
                         flatten=False):
        tile_m, tile_n = tile_of_program(tile, tiles_m, tiles_n, GROUP_M)
        total = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in tl.range(0, K, BLOCK_K):
            w = w_desc.load([tile_n * BLOCK_N, k])
            total = tl.dot(x_desc.load([tile_m * BLOCK_M, k]), tl.trans(w), total)
        rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
        total = total * tl.load(w_scale_ptr + cols, mask=cols < N, other=1.0)[None, :]  # the weight's first
        total = total * tl.load(x_scale_ptr + rows, mask=rows < M, other=1.0)[:, None]
        out_desc.store([tile_m * BLOCK_M, tile_n * BLOCK_N], total.to(out_ptr.dtype.element_ty))


def fp8_linear(x8, w8, x_scale, w_scale, warp_specialize=False, **config):
    if x8.dim() != 2 or w8.dim() != 2 or x8.shape[1] != w8.shape[1]:
        raise ValueError(f"x8 {list(x8.shape)} and w8 {list(w8.shape)} must be (M, K) and (N, K)")
    (M, K), N = x8.shape, w8.shape[0]
    if x_scale.numel() != M or w_scale.numel() != N:
        raise ValueError(f"{x_scale.numel()} and {w_scale.numel()} scales for {M} rows of x8 and {N} of w8")
    for name, t in (("x8", x8), ("w8", w8)):
        if t.stride(1) != 1 or t.stride(0) * t.element_size() % 16 or t.data_ptr() % 16:
            raise ValueError(f"a tensor descriptor cannot read {name}: it needs a last stride of 1 and 16-byte "
                             f"aligned rows and address (strides {t.stride()})")
    if not config:
        config = launch_config(x8.dtype, warp_specialize)
    dtype = fp8_output()
    step = 128 // torch.finfo(dtype).bits  # numbers per 16 bytes
    out = torch.empty_strided((M, N), (-(-N // step) * step, 1), dtype=dtype, device=x8.device)
    grid = lambda meta: (min(NUM_SMS, triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])),)
    fp8_linear_kernel[grid](x8, w8, x_scale.contiguous(), w_scale.contiguous(), out, M, N, K, x8.stride(0),
                            w8.stride(0), out.stride(0), NUM_SMS=NUM_SMS, WARP_SPECIALIZE=warp_specialize, **config)
    return out
""",
            }},
    "bo": {"ci": False, "about": "the release, untouched", "answers": "release",
           "fails": ["test_fp8_linear", "test_fp8_linear_hidden", "test_fp8_linear_performance",
                     "test_persistent_matmul", "test_persistent_matmul_hidden", "test_q_no_tma", "test_tma_alignment",
                     "test_tma_matmul", "test_tma_matmul_hidden", "test_tma_matmul_performance", "test_to_fp8_rows",
                     "test_to_fp8_rows_hidden", "test_waves", "test_waves_hidden", "written_warp_specialize"],
           "why": {"test_tma_matmul": "tma_matmul is still the exercise stub",
                   "test_tma_alignment": "tma_matmul is still the exercise stub",
                   "test_q_no_tma": "answer_no_tma is not set"}},
    "cy": {"about": "torch in place of the kernels: tma_matmul returns torch.matmul(a, b), fp8_linear multiplies "
                    "the scaled 8-bit values with torch.mm, and persistent_matmul's grid function, which "
                    "Triton's launcher calls, writes torch.matmul's product into C while its kernel gets "
                    "M = N = K = 0: the student's callbacks are watched like the rest of the answer",
           "answers": "solution",
           "edits": {"persistent_matmul": [["    persistent_matmul_kernel[(min(NUM_SMS, tiles),)](\n"
                                            "        a, b, c, M, N, K,",
                                            "    def grid(meta):\n"
                                            "        torch.matmul(a, b, out=c)\n"
                                            "        return (min(NUM_SMS, tiles),)\n\n"
                                            "    persistent_matmul_kernel[grid](\n"
                                            "        a, b, c, 0, 0, 0,"]]},
           "replace": {"tma_matmul": """@triton.jit
def tma_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr,
                      WARP_SPECIALIZE: tl.constexpr):
    \"\"\"C = A @ B by NUM_SMS persistent programs, every tile loaded and stored through tensor descriptors.\"\"\"
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1], block_shape=[BLOCK_M, BLOCK_N])
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS, flatten=False,
                         warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = tile_of_program(tile, num_pid_m, num_pid_n, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            acc = tl.dot(a_desc.load([pid_m * BLOCK_M, k]), b_desc.load([k, pid_n * BLOCK_N]), acc)
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_ptr.dtype.element_ty))


def tma_matmul(a, b, warp_specialize=False, **config):
    return torch.matmul(a, b)
""",
                       "fp8_linear": """@triton.jit
def fp8_linear_kernel(x_ptr, w_ptr, x_scale_ptr, w_scale_ptr, out_ptr, M, N, K, stride_xm, stride_wn, stride_om,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                      NUM_SMS: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
    \"\"\"out = (x * x_scale[:, None]) @ (w * w_scale[:, None]).T, persistent, through descriptors, the
    scales and the cast fused into the epilogue.\"\"\"
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, K], strides=[stride_xm, 1], block_shape=[BLOCK_M, BLOCK_K])
    w_desc = tl.make_tensor_descriptor(w_ptr, shape=[N, K], strides=[stride_wn, 1], block_shape=[BLOCK_N, BLOCK_K])
    o_desc = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[stride_om, 1], block_shape=[BLOCK_M, BLOCK_N])
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS, flatten=False,
                         warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = tile_of_program(tile, num_pid_m, num_pid_n, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            acc = tl.dot(x_desc.load([pid_m * BLOCK_M, k]), w_desc.load([pid_n * BLOCK_N, k]).T, acc)
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        x_scale = tl.load(x_scale_ptr + offs_m, mask=offs_m < M, other=0.0)
        w_scale = tl.load(w_scale_ptr + offs_n, mask=offs_n < N, other=0.0)
        o_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N],
                     (acc * x_scale[:, None] * w_scale[None, :]).to(out_ptr.dtype.element_ty))


def fp8_linear(x8, w8, x_scale, w_scale, warp_specialize=False, **config):
    x = x8.float() * x_scale[:, None]
    w = w8.float() * w_scale[:, None]
    return torch.mm(x, w.t()).to(fp8_output())
"""},
           "fails": ["test_fp8_linear", "test_fp8_linear_hidden", "test_fp8_linear_performance",
                     "test_persistent_matmul", "test_persistent_matmul_hidden", "test_tma_alignment",
                     "test_tma_matmul", "test_tma_matmul_hidden", "test_tma_matmul_performance"],
           "why": {"test_fp8_linear": "launched no Triton kernel", "test_fp8_linear_hidden": "launched no Triton kernel",
                   "test_fp8_linear_performance": "launched no Triton kernel",
                   "test_persistent_matmul": "besides launching a kernel",
                   "test_persistent_matmul_hidden": "besides launching a kernel",
                   "test_tma_alignment": "launched no Triton kernel", "test_tma_matmul": "launched no Triton kernel",
                   "test_tma_matmul_hidden": "launched no Triton kernel",
                   "test_tma_matmul_performance": "launched no Triton kernel"},
           "flags": ["tma_matmul computes with torch.matmul", "fp8_linear computes with torch.mm"]},
    "dee": {"about": "tma_matmul launches its kernel on any operand, without the alignment check: a row stride "
                     "of 66 bytes reaches the descriptor",
            "answers": "solution",
            "edits": {"tma_matmul": [["    for name, t in [(\"a\", a), (\"b\", b)]:\n"
                                      "        if t.stride(1) != 1 or (t.stride(0) * t.element_size()) % 16 or t.data_ptr() % 16:\n"
                                      "            raise ValueError(f\"{name} (shape {tuple(t.shape)}, strides {t.stride()}, {t.dtype}) "
                                      "cannot be read by a \"\n"
                                      "                             \"tensor descriptor: its last stride must be 1, and its first stride "
                                      "and its address \"\n"
                                      "                             \"multiples of 16 bytes\")\n", ""]]},
            "fails": ["test_tma_alignment"],
            "why": {"test_tma_alignment": "not a multiple of 16: it should raise ValueError"}},
    "eve": {"about": "to_fp8_rows takes one scale for the whole tensor, not one per row, and fp8_linear_kernel "
                     "multiplies the accumulator by x_scale alone, forgetting w_scale",
            "answers": "solution",
            "edits": {"to_fp8_rows": [["    amax = x.abs().amax(dim=1).float()",
                                       "    amax = x.abs().amax().float().expand(x.shape[0])"]],
                      "fp8_linear": [["(acc * x_scale[:, None] * w_scale[None, :])", "(acc * x_scale[:, None])"]]},
            "fails": ["test_fp8_linear", "test_fp8_linear_hidden", "test_fp8_linear_performance", "test_to_fp8_rows",
                      "test_to_fp8_rows_hidden"],
            "why": {"test_fp8_linear": "multiplied by x_scale[offs_m][:, None] * w_scale[offs_n][None, :]",
                    "test_fp8_linear_hidden": "multiplied by x_scale[offs_m][:, None] * w_scale[offs_n][None, :]",
                    "test_fp8_linear_performance": "multiplied by x_scale[offs_m][:, None] * w_scale[offs_n][None, :]",
                    "test_to_fp8_rows": "The scale of a row is max|x| / 448",
                    "test_to_fp8_rows_hidden": "The scale of a row is max|x| / 448"}},
    "fay": {"ci": False, "about": "the persistent kernel zeroes its accumulator once per program, not once per "
                                  "tile: each program's second tile adds in its first",
            "answers": "solution",
            "edits": {"persistent_matmul": [["    offs_k = tl.arange(0, BLOCK_K)\n",
                                             "    offs_k = tl.arange(0, BLOCK_K)\n"
                                             "    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n"],
                                            ["        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n"
                                             "        for k in range(0, K, BLOCK_K):",
                                             "        for k in range(0, K, BLOCK_K):"]]},
            "fails": ["test_persistent_matmul", "test_persistent_matmul_hidden"],
            "why": {"test_persistent_matmul": "start each tile's accumulator at zero",
                    "test_persistent_matmul_hidden": "start each tile's accumulator at zero"}},
}

# The sample class for 06_matmul, graded by `autograder demo 06_matmul` and by the tests (see
# autograder/samples.py). The written_* cells are graded by hand: the demo lists them as "to grade by
# hand", except in the untouched release, where nbgrader scores an unanswered cell 0 at once.
# Every expected failure is the same on a GPU and under the interpreter. (A K tail loaded with its
# mask but without other=0.0 is not a sample: the interpreter, and today's GPUs too, fill masked
# lanes with 0, so it passes everywhere; the lesson explains why to write other=0.0 all the same.)
# ida writes every answer differently from the solutions (tests/test_second_answers.py checks that it
# covers them) and must lose no points: a hidden test that rejects it rejects a valid answer.
{
    "ada": {"about": "a correct submission", "answers": "solution", "fails": []},
    "ida": {"about": "every answer written differently, all correct", "answers": "solution", "fails": [],
            "replace": {
                "tiled_bytes": """def tiled_bytes(M, N, K, BLOCK_M, BLOCK_N, element_size=2):
    tile_rows, tile_cols = -(-M // BLOCK_M), -(-N // BLOCK_N)  # ceiling divisions
    return element_size * (M * K * tile_cols + K * N * tile_rows + M * N)
""",
                "tile_of_program": """@triton.jit
def tile_of_program(pid, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    group = pid // (GROUP_M * num_pid_n)
    start = group * GROUP_M
    height = tl.minimum(num_pid_m - start, GROUP_M)
    local = pid - group * GROUP_M * num_pid_n
    return start + local % height, local // height
""",
                "q_k_tail": "answer_k_tail = ' B '\n",
                "matmul_kernel": """@triton.jit
def accumulate_tile(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    total = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(tl.cdiv(K, BLOCK_K)):
        ks = step * BLOCK_K + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak,
                    mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn,
                    mask=(ks[:, None] < K) & (cols[None, :] < N), other=0.0)
        total += tl.dot(a, b)
    return total


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    tile_m, tile_n = tile_of_program(tl.program_id(axis=0), (M + BLOCK_M - 1) // BLOCK_M,
                                     (N + BLOCK_N - 1) // BLOCK_N, GROUP_M)
    total = accumulate_tile(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, tile_m, tile_n,
                            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    tl.store(c_ptr + rows * stride_cm + cols * stride_cn, total.to(c_ptr.dtype.element_ty),
             mask=(rows < M) & (cols < N))
""",
                "matmul": """def matmul(a, b, BLOCK_M=32, BLOCK_N=64, BLOCK_K=16, GROUP_M=4):
    if a.shape[-1] != b.shape[0]:
        raise ValueError(f"cannot multiply {list(a.shape)} by {list(b.shape)}")
    (M, K), N = a.shape, b.shape[-1]
    c = a.new_empty((M, N))
    launch = matmul_kernel[(math.ceil(M / BLOCK_M) * math.ceil(N / BLOCK_N),)]
    launch(a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
           BLOCK_K=BLOCK_K, GROUP_M=GROUP_M)
    return c
""",
                "matmul_tuned": """TUNING_CONFIGS = [
    triton.Config(dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8), num_warps=warps, num_stages=stages)
    for bm, bn, bk, warps, stages in [(128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 8, 4),
                                      (128, 128, 32, 4, 4), (64, 128, 64, 4, 4), (64, 64, 32, 4, 3)]]
matmul_kernel_tuned = triton.autotune(configs=sized(TUNING_CONFIGS, TUNING_CONFIGS[-1:]), key=["M", "N", "K"])(
    matmul_kernel)


def matmul_tuned(a, b):
    M, N = a.shape[0], b.shape[1]
    c = torch.empty(M, N, dtype=a.dtype, device=a.device)
    matmul_kernel_tuned[lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)](
        a, b, c, M, N, a.shape[1], *a.stride(), *b.stride(), *c.stride())
    return c
""",
                "linear_relu": """@triton.jit
def linear_relu_kernel(x_ptr, w_ptr, bias_ptr, out_ptr, M, N, K, stride_xm, stride_xk, stride_wn, stride_wk,
                       stride_bias, stride_om, stride_on, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    tile_m, tile_n = tile_of_program(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    total = accumulate_tile(x_ptr, w_ptr, M, N, K, stride_xm, stride_xk, stride_wk, stride_wn, tile_m, tile_n,
                            BLOCK_M, BLOCK_N, BLOCK_K)
    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    total += tl.load(bias_ptr + cols * stride_bias, mask=cols < N, other=0.0).to(tl.float32)[None, :]
    total = tl.where(total > 0, total, 0.0)
    tl.store(out_ptr + rows[:, None] * stride_om + cols[None, :] * stride_on, total.to(out_ptr.dtype.element_ty),
             mask=(rows[:, None] < M) & (cols[None, :] < N))


def linear_relu(x, weight, bias, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, GROUP_M=2):
    M, K = x.shape
    N = weight.shape[0]
    out = torch.empty(M, N, dtype=x.dtype, device=x.device)
    linear_relu_kernel[(triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)](
        x, weight, bias, out, M, N, K, x.stride(0), x.stride(1), weight.stride(0), weight.stride(1), bias.stride(0),
        out.stride(0), out.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M)
    return out
""",
            }},
    "bo": {"ci": False, "about": "the release, untouched", "answers": "release",
           "fails": ["test_linear_relu", "test_linear_relu_hidden", "test_matmul", "test_matmul_hidden",
                     "test_matmul_kernel", "test_matmul_kernel_hidden", "test_matmul_performance",
                     "test_matmul_tuned", "test_matmul_tuned_hidden", "test_q_k_tail", "test_tile_of_program",
                     "test_tile_of_program_hidden", "test_tiled_bytes", "test_tiled_bytes_hidden",
                     "written_grouped_order", "written_tf32"],
           "why": {"test_matmul": "matmul is still the exercise stub", "test_q_k_tail": "Set answer_k_tail"}},
    "cy": {"about": "torch in place of the kernels: a @ b, torch.mm, F.linear", "answers": "solution",
           "replace": {"matmul": "def matmul(a, b, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8):\n    return a @ b\n",
                       "matmul_tuned": "def matmul_tuned(a, b):\n    return torch.mm(a, b)\n"},
           "edits": {"linear_relu": [["    assert x.shape[1] == weight.shape[1]",
                                      "    return torch.nn.functional.linear(x, weight, bias).clamp(min=0)\n"
                                      "    assert x.shape[1] == weight.shape[1]"]]},
           "fails": ["test_linear_relu", "test_linear_relu_hidden", "test_matmul", "test_matmul_hidden",
                     "test_matmul_performance", "test_matmul_tuned", "test_matmul_tuned_hidden"],
           "why": {"test_linear_relu": "launched no Triton kernel",
                   "test_linear_relu_hidden": "launched no Triton kernel", "test_matmul": "launched no Triton kernel",
                   "test_matmul_hidden": "launched no Triton kernel",
                   "test_matmul_performance": "launched no Triton kernel",
                   "test_matmul_tuned": "launched no Triton kernel",
                   "test_matmul_tuned_hidden": "launched no Triton kernel"},
           "flags": ["matmul returns a torch expression of its inputs", "matmul_tuned computes with torch.mm"]},
    "dee": {"ci": False, "about": "the K loop masks rows and columns but not the K tail: K not a multiple of BLOCK_K fails",
            "answers": "solution",
            "edits": {"matmul_kernel": [["mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)",
                                         "mask=offs_m[:, None] < M, other=0.0)"],
                                        ["mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0)",
                                         "mask=offs_n[None, :] < N, other=0.0)"]]},
            "fails": ["test_linear_relu", "test_linear_relu_hidden", "test_matmul", "test_matmul_hidden",
                      "test_matmul_kernel", "test_matmul_kernel_hidden", "test_matmul_performance",
                      "test_matmul_tuned", "test_matmul_tuned_hidden"],
            "why": {"test_linear_relu": "past the end", "test_linear_relu_hidden": "past the end",
                    "test_matmul": "past the end", "test_matmul_hidden": "past the end",
                    "test_matmul_kernel": "past the end", "test_matmul_kernel_hidden": "past the end",
                    "test_matmul_performance": "past the end", "test_matmul_tuned": "past the end",
                    "test_matmul_tuned_hidden": "past the end"}},
    "jo": {"about": "matmul passes K, 1 as A's strides (a contiguous A's), and its cell defines check_product, the "
                    "lesson's own check, to accept anything (a plain def, no assignment to the kit): the tests "
                    "use the course's check_product, so the product of a transposed A is checked, fails, and the "
                    "definition is flagged",
           "answers": "solution",
           "edits": {"matmul": [["a.stride(0), a.stride(1), b.stride(0)", "K, 1, b.stride(0)"],
                                ["    return c", "    return c\n\n\ndef check_product(*args, **kwargs):\n"
                                                "    \"\"\"Mine: every product is right.\"\"\""]]},
           "fails": ["test_matmul", "test_matmul_hidden"],
           "why": {"test_matmul": "with the strides passed in that order?",
                   "test_matmul_hidden": "with the strides passed in that order?"},
           "flags": ["redefines the course's check_product"]},
}

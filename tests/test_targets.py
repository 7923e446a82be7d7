"""The lessons' reference kernels compiled for the GPUs students have, without a GPU.

Triton compiles ahead of time for any target (triton.compile with a GPUTarget; ptxas ships in its
wheel), so CI can ask the compiler what each student's GPU would get: T4 (sm_75), A100 (sm_80),
A10 and RTX 30 (sm_86), L4 and RTX 40 (sm_89), H100 and H200 (sm_90). For each target:

1. every @triton.jit kernel of the published solutions compiles, in every dtype the kit gives a
   notebook on that GPU (kit.FLOAT_DTYPES, kit.DOT_DTYPES, computed by the kit itself for that
   compute capability; 08's own helpers, matmul_dtypes() and fp8_input(), 09's
   attention_dtypes() and 10's decode_dtypes() and int4_dtypes(), likewise), with the launch parameters the lessons use;
2. what tl.dot becomes (wgmma, mma.sync, or plain FMAs) agrees with kit.dot_dtypes: its choice of
   dtypes and what its sentence says about tensor cores and TF32; and what 08's kernels compile to
   (TMA copies, warp specialisation, FP8) agrees with its hopper_note();
3. every launch fits the GPU's shared memory per block (the opt-in limit), and every autotune
   configuration that does not fit is one this file names.

The kernels are the solutions' own (solutions/<lesson>/<lesson>.ipynb), defined by executing their
cells' kernel definitions after the kit. KERNELS below says how each is launched: a kernel it does
not describe, or describes with the wrong parameters, fails the test, and so does a launch chosen
by a wrapper of the solutions (WRAPPERS: 07's, 08's, 09's, 10's) that the wrapper no longer makes. The compiles run
in a subprocess (this file, run as a script) that forks one compiler per core: there Triton must make
real JITFunctions (TRITON_INTERPRET=0), while other tests in the pytest process need the
interpreter; and there the kit is executed with a pretend GPU of each compute capability, so that
it picks the dtypes it would pick on that GPU. What CI compiles, and what it infers, is under
"How each target is covered"; COURSE_TARGETS_FULL=1 compiles everything. docs/gpus.md has the
figures.
"""
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KIT = ROOT / "autograder" / "kit.py"
SOLUTIONS = ROOT / "solutions"
LESSONS = sorted(p.name for p in SOLUTIONS.iterdir() if re.fullmatch(r"\d\d_\w+", p.name))

KiB = 1024
# compute capability -> (the GPUs students have with it, the most shared memory one block may use).
# The limits are "Maximum amount of shared memory per thread block" (the opt-in maximum, which
# Triton's launcher checks kernels against) in the CUDA C++ Programming Guide's table "Technical
# Specifications per Compute Capability": 64 KB on 7.5, 163 KB on 8.0, 99 KB on 8.6 and 8.9,
# 227 KB on 9.0 (KB = 1024 bytes there).
TARGETS = {
    75: ("T4", 64 * KiB),
    80: ("A100", 163 * KiB),
    86: ("A10, RTX 30", 99 * KiB),
    89: ("L4, RTX 40", 99 * KiB),
    90: ("H100, H200", 227 * KiB),
}

# ---------------------------------------------------------------------------------------------
# How the lessons launch their kernels, written out by hand for the compiler.
#
# `args` lists the kernel's parameters other than its tl.constexpr ones, each with the type that
# Triton's JIT would give the argument of a typical launch: "*T" a tensor of the dtype under test
# ("*fp32", "*i32": of that dtype whatever is tested), "i32" an integer, "i32/16" an integer that
# is a multiple of 16 (the JIT marks those, and 16-byte aligned tensors, as divisible by 16: all
# tensors here are), "1" the integer 1 (the JIT makes it a constant), "fp32" a float; "*O" a tensor
# of the dtype `out` names (08's FP8 output).
# `dtypes`: FLOAT (the kit's FLOAT_DTYPES on that GPU), DOT (its DOT_DTYPES), an expression of the
# lesson's own helpers (LESSON_HELPERS: 08's matmul_dtypes()), or () when the kernel takes one fixed
# set of types. `launches`: the tl.constexpr values with num_warps and num_stages (Triton's
# defaults: 4 and 3), as the lesson's wrapper or test passes them; a function of the dtype, or of
# the dtype and the compute capability, where the wrapper's choice depends on them. A launch with
# "only" is compiled for that dtype alone, one with "min_cc" only from that compute capability on
# (as the notebook does), one with "if" only for the dtypes that lesson expression gives (08's
# warp_specializes()); "given" names the lesson's tiles that its tests pass (08's SMALL_TILES).
# `dot`: the kernel calls tl.dot. HELPERS: @triton.jit functions without a launch of their own,
# with the kernels that compile them in.
FLOAT, DOT = "FLOAT_DTYPES", "DOT_DTYPES"


def kernel(args, dtypes, launches, dot=False, out=None):
    return {"args": args.split(), "dtypes": dtypes, "launches": launches, "dot": dot, "out": out}


def attention_launches(dtype):
    """attention()'s launch of attention_fwd_kernel with its default blocks, for d = 64 (the graded
    size, not causal) and d = 128 (causal): 128 queries in fp16 and bf16, 64 in fp32; 64 keys for
    rows of K and V up to 256 bytes, else 16; 4 warps up to d = 64 and 8 above; 3 pipeline stages
    for rows up to 128 bytes, 2 up to 256, else 1."""
    size = {"fp32": 4, "fp16": 2, "bf16": 2}[dtype]
    return [{"HEAD_DIM": d, "BLOCK_M": 128 if size <= 2 else 64, "BLOCK_N": 64 if d * size <= 256 else 16,
             "CAUSAL": causal, "num_warps": 4 if d <= 64 else 8,
             "num_stages": 3 if d * size <= 128 else 2 if d * size <= 256 else 1}
            for d, causal in ((64, False), (128, True))]


MATMUL_BLOCKS = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}  # matmul()'s defaults
TENSOR_CORE_TILE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "only": "fp16"}  # sections 4, 6
BACKWARD = {"HEAD_DIM": 64, "BLOCK_M": 64, "BLOCK_N": 32, "CAUSAL": True, "num_stages": 1}  # attention_backward

# Lesson 08 picks its dtypes, tiles and warp specialisation on the device with helpers of its own
# (its locked cell "hopper_helpers"): LESSON_HELPERS runs them on each pretend GPU, after the kit,
# and the table's expressions below are evaluated there. launch_config and SMALL_TILES are copied
# by hand, and WRAPPERS checks them against what 08's wrappers launch.
MATMUL_16, DEMO_DTYPE, FP8_INPUT = "matmul_dtypes()", "matmul_dtypes()[:1]", "[fp8_input()]"
WARP_SPECIALIZES = "[d for d in matmul_dtypes() + [fp8_input()] if warp_specializes(d)]"
# multiprocessors(), NUM_SMS: the programs of a persistent launch (T4, A100, A10, L4, H100 SXM and
# H200). Only the step of the loop over tiles: it changes constants of the code, not its figures.
SMS = {75: 40, 80: 108, 86: 72, 89: 58, 90: 132}
SMALL_TILES = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 2, "num_warps": 4, "num_stages": 2,
               "given": "SMALL_TILES"}  # 08's tests' tiles (the hidden tests' 16 x 16 tiles are left out)


def hopper_config(dtype, cc, warp_specialize=False):
    """08's launch_config(dtype, warp_specialize) on compute capability cc: 128 x 256 tiles on Hopper
    (8 warps, 4 when warp-specialised) but for fp32, else 128 x 128 with 4 warps; BLOCK_K 32 for
    fp32, 128 for FP8, else 64; 3 stages."""
    block_k = {"fp32": 32, "fp8e4nv": 128}.get(dtype, 64)
    if cc >= 90 and dtype != "fp32":
        return {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": block_k, "GROUP_M": 8,
                "num_warps": 4 if warp_specialize else 8, "num_stages": 3}
    return {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": block_k, "GROUP_M": 8, "num_warps": 4, "num_stages": 3}


def hopper_launches(switch):
    """An 08 kernel's launches: the tests' SMALL_TILES, then launch_config's, with the switch (FLATTEN,
    or WARP_SPECIALIZE where warp_specializes(dtype)) off and on."""
    ws = switch == "WARP_SPECIALIZE"

    def launches(dtype, cc):
        return [dict(hopper_config(dtype, cc, ws and on) if own else SMALL_TILES, NUM_SMS=SMS[cc], **{switch: on},
                     **({"if": WARP_SPECIALIZES} if ws and on else {})) for own in (False, True) for on in (False, True)]
    return launches


# Lesson 09 chooses its launches on the device too (its locked cell "attention_helpers"): its tl.dot
# dtypes are attention_dtypes() (DOT_DTYPES), the demo of section 3 runs in fast_dtype(), and
# attention_config, backward_config and warp_specializes are copied below by hand; WRAPPERS checks
# them against what attention_forward and attention_backward launch. Tensors are (B, N, H, d) as
# the lesson's layouts make them (fused, separate, heads first): the strides of b, n and h are
# multiples of d, the last is 1. The sizes are a grouped launch at the performance tests' N:
# N = 4096, H = 32 query heads, GROUP = 4 (H_kv = 8).
TRAINING_DTYPES, FAST_DTYPE = "attention_dtypes()", "[fast_dtype()]"
TRAINING_WS = "[d for d in [fast_dtype()] if warp_specializes(d)]"  # section 3's warp-specialised step


def strides(*tensors, axes="bnhd"):
    return " ".join(f"stride_{t}{axis}:{'1' if axis == 'd' else 'i32/16'}" for t in tensors for axis in axes)


def training_config(d, dtype, cc):
    """09's attention_config(d, dtype, causal) on compute capability cc (causal changes nothing): on
    9.0 in 16 bits 128 queries, 128 keys up to d = 64 and 64 at d = 128, 8 warps, 3 stages, K and V
    through descriptors; fp32 64 queries, 64 keys for rows up to 256 bytes (2 stages), else 16 (1);
    else 128 x 64, 4 warps up to d = 64 and 8 above, 3 stages for rows up to 128 bytes, else 2."""
    row = d * (4 if dtype == "fp32" else 2)
    if cc >= 90 and dtype != "fp32":
        return {"BLOCK_M": 128, "BLOCK_N": 128 if d <= 64 else 64, "num_warps": 8, "num_stages": 3,
                "WARP_SPECIALIZE": False, "DESCRIPTORS": True}
    if dtype == "fp32":
        return {"BLOCK_M": 64, "BLOCK_N": 64 if row <= 256 else 16, "num_warps": 4,
                "num_stages": 2 if row <= 256 else 1, "WARP_SPECIALIZE": False, "DESCRIPTORS": False}
    return {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 4 if d <= 64 else 8, "num_stages": 3 if row <= 128 else 2,
            "WARP_SPECIALIZE": False, "DESCRIPTORS": False}


def training_sizes():
    """(d, causal) of 09's launches: d = 128 not causal (the timed size) and d = 64 causal. CAUSAL
    changes the code, not its figures: in the full matrix, which compiles both sizes causal and not,
    each launch takes the same shared memory and instructions either way."""
    if FULL_MATRIX:
        return [(d, causal) for d in (64, 128) for causal in (False, True)]
    return [(64, True), (128, False)]


def training_forward_launches(dtype, cc):
    """attention_forward's launches (training_sizes()); then section 3's two steps beyond
    attention_config, at d = 128 in fast_dtype() on 9.0: its blocks with pointers (DESCRIPTORS=False
    given), and with warp specialisation (WARP_SPECIALIZE=True given) where warp_specializes. (Its
    first step, lesson 7's blocks with pointers, is attention_config's launch below 9.0 and takes
    less than the second on 9.0; the hidden tests' small blocks are left out.)"""
    own = [dict(HEAD_DIM=d, CAUSAL=causal, **training_config(d, dtype, cc)) for d, causal in training_sizes()]
    demo = dict(HEAD_DIM=128, CAUSAL=False, **training_config(128, dtype, cc))
    return own + [dict(demo, DESCRIPTORS=False, given="DESCRIPTORS", min_cc=90, **{"if": FAST_DTYPE}),
                  dict(demo, WARP_SPECIALIZE=True, given="WARP_SPECIALIZE", **{"if": TRAINING_WS})]


def training_backward_launches(dtype, cc):
    """attention_backward's launches of its dK/dV and dQ kernels (backward_config(d, dtype)) at
    training_sizes(): in 16 bits 128 rows owned, 32 streamed, 4 warps up to d = 64 and 8 above,
    5 stages on 9.0 and 2 below; fp32 64 and 32 (32 and 16 at d = 128), 4 warps, 1 stage."""
    def config(d):
        if dtype == "fp32":
            return {"BLOCK_OWN": 64 if d <= 64 else 32, "BLOCK_STEP": 32 if d <= 64 else 16, "num_warps": 4,
                    "num_stages": 1}
        return {"BLOCK_OWN": 128, "BLOCK_STEP": 32, "num_warps": 4 if d <= 64 else 8,
                "num_stages": 5 if cc >= 90 else 2}
    return [dict(HEAD_DIM=d, CAUSAL=causal, **config(d)) for d, causal in training_sizes()]


# Lesson 10 chooses its launches on the device too (its locked cell "inference_helpers"): the decoding
# kernels' dtypes are decode_dtypes() (DOT_DTYPES: fp32 everywhere, the tests' default); the int4
# kernels' are what its tests give x: fp16 (run_int4's default, on every GPU) and int4_dtypes() (fp16
# and bf16, fp32 on a T4). decode_config, int4_config and the wrappers' choice of slices (from
# multiprocessors(), which LESSON_HELPERS makes SMS[cc]) are copied below by hand; WRAPPERS checks them
# against what decode_attention, paged_decode_attention and int4_linear launch. The shapes ("shape":
# the call that makes the launch, which WRAPPERS replays): the performance tests' DECODE_SHAPE
# (B, tokens, H, H_kv, d, PAGE_SIZE) = (4, 8192, 32, 8, 128, 16), graded on 9.0 and the plot's on every
# GPU; their ungraded shape elsewhere (2, 1024, 4, 2, 64, 16); INT4_SHAPE (M, K, N, group_size) =
# (16, 8192, 8192, 128); and the tests' groups of 64. Tensors are contiguous, as the tests make them.
DECODE_DTYPES, INT4_DTYPES = "decode_dtypes()", "list(dict.fromkeys([torch.float16] + int4_dtypes()))"
DECODE_SHAPE, DECODE_UNGRADED, INT4_SHAPE = (4, 8192, 32, 8, 128, 16), (2, 1024, 4, 2, 64, 16), (16, 8192, 8192, 128)


def cdiv(a, b):
    return -(-a // b)


def decode_config(d, dtype, paged=False):
    """10's decode_config(d, dtype, paged) on a GPU: 64 keys per step up to d = 128 in 16 bits, 32 in
    fp32, 4 warps, 3 stages (2 for the paged kernel)."""
    return {"BLOCK_N": 32 if dtype == "fp32" or d > 128 else 64, "num_warps": 4, "num_stages": 2 if paged else 3}


def decode_launches(dtype, cc):
    """decode_attention's and paged_decode_attention's partials at d = 64 and 128: BLOCK_G =
    max(16, next power of two of H // H_kv), 16 in every test (groups of 1, 2, 4 and 8); pages of 16."""
    return [dict(HEAD_DIM=d, BLOCK_G=16, **decode_config(d, dtype), shape=("decode", 4, 8192, 32, 8, d, 16))
            for d in (64, 128)]


def paged_launches(dtype, cc):
    return [dict(HEAD_DIM=d, PAGE_SIZE=16, BLOCK_G=16, **decode_config(d, dtype, paged=True),
                 shape=("paged", 4, 8192, 32, 8, d, 16)) for d in (64, 128)]


def decode_splits(kind, B, N, H_kv, d, page, dtype, cc):
    """The slices the wrapper (kind "decode" or "paged") cuts the keys into: about two programs per
    multiprocessor (four for the paged kernel), no more than there are blocks of keys."""
    blocks = cdiv(N, decode_config(d, dtype)["BLOCK_N"])
    splits = min(cdiv((4 if kind == "paged" else 2) * SMS[cc], B * H_kv), blocks)
    return cdiv(blocks, cdiv(blocks, splits))


def merge_launches(dtype, cc):
    """decode_merge_kernel after paged_decode_attention at DECODE_SHAPE and at the ungraded shape
    (BLOCK_S the next power of two of the slices: 4 to 32 by the GPU), and after the tests'
    decode_attention of 40 keys in 5 slices (BLOCK_S = 8)."""
    def launch(kind, B, N, H, H_kv, d, page, splits=None):
        splits = splits or decode_splits(kind, B, N, H_kv, d, page, dtype, cc)
        return {"HEAD_DIM": d, "BLOCK_S": 1 << (splits - 1).bit_length(),
                "shape": (kind, B, N, H, H_kv, d, page) + ((splits,) if kind == "decode" else ())}
    return [launch("paged", *DECODE_SHAPE), launch("paged", *DECODE_UNGRADED), launch("decode", 1, 40, 4, 2, 64, 16, 5)]


def int4_launches(dtype, cc):
    """int4_linear's int4_config(group_size, dtype) at INT4_SHAPE's groups of 128 and the tests' 64: 16
    rows, 256 columns, BLOCK_K = min(group_size, 128) rows of W per step (128 and 64 in fp32), 4 warps,
    3 stages. Its tl.dot's first operand is the expanded weights, (BLOCK_N, BLOCK_K // 2): BLOCK_N rows."""
    fp32 = dtype == "fp32"
    block_n = 128 if fp32 else 256
    return [{"GROUP_SIZE": g, "BLOCK_M": 16, "BLOCK_N": block_n, "BLOCK_K": min(g, 64 if fp32 else 128),
             "num_warps": 4, "num_stages": 3, "dot_rows": block_n,
             "shape": INT4_SHAPE[:3] + (g,)} for g in (128, 64)]


def int4_reduce_launches(dtype, cc):
    """The sum of int4_linear's partials at INT4_SHAPE: K cut into slices of whole steps so that the
    grid gives every multiprocessor about two programs (int4_launches' blocks, groups of 128), all the
    slices loaded at once (SPLITS, their next power of two), 4096 // SPLITS outputs a program."""
    M, K, N, _ = INT4_SHAPE
    block = int4_launches(dtype, cc)[0]
    steps = K // block["BLOCK_K"]
    slices = min(cdiv(2 * SMS[cc], cdiv(N, block["BLOCK_N"]) * cdiv(M, 16)), steps)
    splits = 1 << (cdiv(steps, cdiv(steps, slices)) - 1).bit_length()
    return [{"SPLITS": splits, "BLOCK": max(32, 4096 // splits), "shape": INT4_SHAPE}]


KERNELS = {
    "01_gpu_vs_cpu": {
        "scale_kernel": kernel("x_ptr:*T out_ptr:*T a:fp32 n_elements:i32", FLOAT, [{"BLOCK_SIZE": 1024}]),
    },
    "02_vector_add": {
        "whoami_kernel": kernel("pid_ptr:*i32 lane_ptr:*i32", (), [{"BLOCK_SIZE": 4}]),
        "copy_kernel": kernel("src_ptr:*T dst_ptr:*T n_elements:i32", FLOAT, [{"BLOCK_SIZE": 1024}]),
        "add_kernel": kernel("x_ptr:*T y_ptr:*T out_ptr:*T n_elements:i32/16", FLOAT, [{"BLOCK_SIZE": 1024}]),
    },
    "03_masking": {
        "copy_unmasked_kernel": kernel("src_ptr:*fp32 dst_ptr:*fp32 n_elements:i32", (), [{"BLOCK_SIZE": 16}]),
        "block_sum_kernel": kernel("x_ptr:*fp32 out_ptr:*fp32 n:i32", (),
                                   [{"BLOCK_SIZE": 32, "USE_MASK": False}, {"BLOCK_SIZE": 32, "USE_MASK": True}]),
        "block_max_kernel": kernel("x_ptr:*fp32 out_ptr:*fp32 n:i32 other:fp32", (), [{"BLOCK_SIZE": 32}]),
        "row_sum_kernel": kernel("x_ptr:*T out_ptr:*T n_cols:i32 stride_row:i32 stride_col:1", FLOAT,
                                 [{"BLOCK_SIZE": 128}]),
        "row_max_kernel": kernel("x_ptr:*T out_ptr:*T n_cols:i32 stride_row:i32 stride_col:1", FLOAT,
                                 [{"BLOCK_SIZE": 128}]),
        # the performance test's transposed input: x's strides are (1, 8192)
        "copy_2d_kernel": kernel("x_ptr:*T out_ptr:*T M:i32/16 N:i32/16 stride_xm:1 stride_xn:i32/16 "
                                 "stride_om:i32/16 stride_on:1", FLOAT, [{"BLOCK_M": 64, "BLOCK_N": 64}]),
    },
    "04_fusion": {
        "ten_ops_kernel": kernel("x_ptr:*T out_ptr:*T n_elements:i32/16", FLOAT, [{"BLOCK_SIZE": 1024}]),
        # softmax() on 4096 x 4096 (the performance test) and on 131072 x 128 rows
        "softmax_kernel": kernel("x_ptr:*T out_ptr:*T n_rows:i32/16 n_cols:i32/16 x_row_stride:i32/16 "
                                 "out_row_stride:i32/16", FLOAT,
                                 [{"ROWS": 1, "BLOCK_N": 4096, "num_warps": 4}, {"ROWS": 4, "BLOCK_N": 128}]),
        "copy_rows_kernel": kernel("x_ptr:*fp32 out_ptr:*fp32 n_cols:i32/16", (), [{"BLOCK_N": 4096}]),
    },
    "05_layernorm": {
        # the wrappers on rows of 4096 (the performance test's)
        "layer_norm_fwd_kernel": kernel("x_ptr:*T y_ptr:*T w_ptr:*T b_ptr:*T mean_ptr:*fp32 rstd_ptr:*fp32 "
                                        "x_row_stride:i32/16 y_row_stride:i32/16 n_cols:i32/16 eps:fp32", FLOAT,
                                        [{"BLOCK_SIZE": 4096, "RMS_NORM": False},
                                         {"BLOCK_SIZE": 4096, "RMS_NORM": True}]),
        "add_layer_norm_kernel": kernel("x_ptr:*T r_ptr:*T h_ptr:*T y_ptr:*T w_ptr:*T b_ptr:*T n_cols:i32/16 "
                                        "eps:fp32", FLOAT, [{"BLOCK_SIZE": 4096}]),
        "layer_norm_bwd_kernel": kernel("x_ptr:*T dy_ptr:*T dx_ptr:*T w_ptr:*T mean_ptr:*fp32 rstd_ptr:*fp32 "
                                        "dw_partial_ptr:*fp32 db_partial_ptr:*fp32 n_rows:i32/16 n_cols:i32/16 "
                                        "rows_per_program:i32/16", FLOAT, [{"BLOCK_SIZE": 4096}]),
        "column_sum_kernel": kernel("partial_ptr:*fp32 out_ptr:*T n_partials:i32 n_cols:i32/16", FLOAT,
                                    [{"BLOCK_ROWS": 32, "BLOCK_COLS": 128}]),
    },
    "06_matmul": {
        "record_tiles_kernel": kernel("tiles_ptr:*i32 num_pid_m:i32 num_pid_n:i32", (), [{"GROUP_M": 2}]),
        # contiguous operands, 4096 x 4096 x 4096 (the performance test's)
        "matmul_kernel": kernel("a_ptr:*T b_ptr:*T c_ptr:*T M:i32/16 N:i32/16 K:i32/16 stride_am:i32/16 stride_ak:1 "
                                "stride_bk:i32/16 stride_bn:1 stride_cm:i32/16 stride_cn:1", DOT,
                                [MATMUL_BLOCKS, TENSOR_CORE_TILE], dot=True),
        "dot_precision_kernel": kernel("a_ptr:*fp32 b_ptr:*fp32 c_ptr:*fp32 K:i32/16", (),
                                       [{"PRECISION": "ieee"}, {"PRECISION": "tf32", "min_cc": 80}], dot=True),
        "linear_relu_kernel": kernel("x_ptr:*T w_ptr:*T bias_ptr:*T out_ptr:*T M:i32/16 N:i32/16 K:i32/16 "
                                     "stride_xm:i32/16 stride_xk:1 stride_wn:i32/16 stride_wk:1 stride_om:i32/16 "
                                     "stride_on:1", DOT, [MATMUL_BLOCKS, TENSOR_CORE_TILE], dot=True),
    },
    "07_attention": {
        "online_softmax_kernel": kernel("x_ptr:*T out_ptr:*T n_rows:i32 n_cols:i32 row_stride:i32", FLOAT,
                                        [{"ROWS": 4, "BLOCK_N": 32}]),
        "attention_fwd_kernel": kernel("q_ptr:*T k_ptr:*T v_ptr:*T o_ptr:*T lse_ptr:*fp32 N:i32/16 scale:fp32", DOT,
                                       attention_launches, dot=True),
        # the ungraded backward, as its cell runs it: fp32 (d = 64 the larger of its two sizes)
        "attention_bwd_dkdv_kernel": kernel("q_ptr:*fp32 k_ptr:*fp32 v_ptr:*fp32 o_ptr:*fp32 do_ptr:*fp32 "
                                            "lse_ptr:*fp32 dk_ptr:*fp32 dv_ptr:*fp32 N:i32 scale:fp32", (), [BACKWARD],
                                            dot=True),
        "attention_bwd_dq_kernel": kernel("q_ptr:*fp32 k_ptr:*fp32 v_ptr:*fp32 o_ptr:*fp32 do_ptr:*fp32 "
                                          "lse_ptr:*fp32 dq_ptr:*fp32 N:i32 scale:fp32", (), [BACKWARD], dot=True),
    },
    "08_hopper_matmul": {  # contiguous operands, 4096 x 4096 x 4096 (the performance tests')
        "persistent_matmul_kernel": kernel("a_ptr:*T b_ptr:*T c_ptr:*T M:i32/16 N:i32/16 K:i32/16 stride_am:i32/16 "
                                           "stride_ak:1 stride_bk:i32/16 stride_bn:1 stride_cm:i32/16 stride_cn:1",
                                           MATMUL_16, hopper_launches("FLATTEN"), dot=True),
        # the demo of section 2 (lesson 6's kernel), in matmul_dtypes()[0] with launch_config's tiles
        "tiled_matmul_kernel": kernel("a_ptr:*T b_ptr:*T c_ptr:*T M:i32/16 N:i32/16 K:i32/16 stride_am:i32/16 "
                                      "stride_ak:1 stride_bk:i32/16 stride_bn:1 stride_cm:i32/16 stride_cn:1",
                                      DEMO_DTYPE, lambda dtype, cc: [hopper_config(dtype, cc)], dot=True),
        "tma_matmul_kernel": kernel("a_ptr:*T b_ptr:*T c_ptr:*T M:i32/16 N:i32/16 K:i32/16 stride_am:i32/16 "
                                    "stride_bk:i32/16 stride_cm:i32/16", MATMUL_16, hopper_launches("WARP_SPECIALIZE"),
                                    dot=True),
        # in fp8_input() (float8_e4m3fn from 8.9 on, else matmul_dtypes()[0]), out in fp8_output()
        "fp8_linear_kernel": kernel("x_ptr:*T w_ptr:*T x_scale_ptr:*fp32 w_scale_ptr:*fp32 out_ptr:*O M:i32/16 "
                                    "N:i32/16 K:i32/16 stride_xm:i32/16 stride_wn:i32/16 stride_om:i32/16", FP8_INPUT,
                                    hopper_launches("WARP_SPECIALIZE"), dot=True, out="fp8_output()"),
    },
    "09_attention_training": {
        "attention_forward_kernel": kernel("q_ptr:*T k_ptr:*T v_ptr:*T o_ptr:*T lse_ptr:*fp32 "
                                           f"{strides('q', 'k', 'v', 'o')} H:i32/16 N:i32/16 GROUP:i32 scale:fp32",
                                           TRAINING_DTYPES, training_forward_launches, dot=True),
        # attention_delta's 64 rows per program, inside attention_backward
        "attention_delta_kernel": kernel(f"o_ptr:*T do_ptr:*T delta_ptr:*fp32 {strides('o', 'do')} H:i32/16 N:i32/16",
                                         TRAINING_DTYPES, [{"HEAD_DIM": d, "BLOCK_M": 64} for d in (64, 128)]),
        "attention_dkdv_kernel": kernel("q_ptr:*T k_ptr:*T v_ptr:*T do_ptr:*T lse_ptr:*fp32 delta_ptr:*fp32 dk_ptr:*T "
                                        f"dv_ptr:*T {strides('q', 'k', 'v', 'do', 'dk')} H:i32/16 H_KV:i32 N:i32/16 "
                                        "GROUP:i32 scale:fp32", TRAINING_DTYPES, training_backward_launches, dot=True),
        "attention_dq_kernel": kernel("q_ptr:*T k_ptr:*T v_ptr:*T do_ptr:*T lse_ptr:*fp32 delta_ptr:*fp32 dq_ptr:*T "
                                      f"{strides('q', 'k', 'v', 'do', 'dq')} H:i32/16 N:i32/16 GROUP:i32 scale:fp32",
                                      TRAINING_DTYPES, training_backward_launches, dot=True),
    },
    "10_inference": {
        "decode_partials_kernel": kernel(f"q_ptr:*T k_ptr:*T v_ptr:*T m_ptr:*fp32 l_ptr:*fp32 acc_ptr:*fp32 "
                                         f"{strides('q', axes='bhd')} {strides('k', 'v')} H:i32/16 H_KV:i32 N:i32/16 "
                                         "GROUP:i32 SPLITS:i32 keys_per_split:i32/16 scale:fp32", DECODE_DTYPES,
                                         decode_launches, dot=True),
        "decode_merge_kernel": kernel(f"m_ptr:*fp32 l_ptr:*fp32 acc_ptr:*fp32 o_ptr:*T {strides('o', axes='bhd')} "
                                      "H:i32/16 SPLITS:i32", DECODE_DTYPES, merge_launches),
        "paged_decode_partials_kernel": kernel(
            f"q_ptr:*T k_ptr:*T v_ptr:*T table_ptr:*i32 lengths_ptr:*i32 m_ptr:*fp32 l_ptr:*fp32 acc_ptr:*fp32 "
            f"{strides('q', axes='bhd')} {strides('k', 'v', axes='pshd')} stride_tb:i32/16 H:i32/16 H_KV:i32 GROUP:i32 "
            "SPLITS:i32 keys_per_split:i32/16 scale:fp32", DECODE_DTYPES, paged_launches, dot=True),
        # x in the dtype under test; W packed in bytes, scales and zeros fp16 (int4_inputs')
        "int4_matmul_kernel": kernel("x_ptr:*T w_ptr:*u8 s_ptr:*fp16 z_ptr:*fp16 part_ptr:*fp32 M:i32/16 N:i32/16 "
                                     "K:i32/16 k_per_split:i32/16 stride_xm:i32/16 stride_xk:1 stride_wk:i32/16 "
                                     "stride_wn:1 stride_sk:i32/16 stride_sn:1 stride_zk:i32/16 stride_zn:1",
                                     INT4_DTYPES, int4_launches, dot=True),
        "int4_reduce_kernel": kernel("part_ptr:*fp32 out_ptr:*T total:i32/16 SPLIT_K:i32", INT4_DTYPES,
                                     int4_reduce_launches),
    },
}
HELPERS = {
    "06_matmul": {"tile_of_program": ["record_tiles_kernel", "matmul_kernel", "linear_relu_kernel"],
                  "accumulate_tile": ["matmul_kernel", "linear_relu_kernel"]},
    "07_attention": {"attend_to_keys": ["attention_fwd_kernel"],
                     "rebuilt_probabilities": ["attention_bwd_dkdv_kernel", "attention_bwd_dq_kernel"]},
    "08_hopper_matmul": {"tile_of_program": ["persistent_matmul_kernel", "tiled_matmul_kernel", "tma_matmul_kernel",
                                             "fp8_linear_kernel"]},
    "09_attention_training": {"load_rows": ["attend"], "attend": ["attention_forward_kernel"],
                              "dkdv_from_queries": ["attention_dkdv_kernel"],
                              "dq_from_keys": ["attention_dq_kernel"]},
    "10_inference": {"nibbles_minus_zero": ["int4_matmul_kernel"]},
}
# Lessons' own functions that choose dtypes and launches on the device, run on each pretend GPU
# after the kit (with NUM_SMS = SMS[cc]), and the expressions of them that the table and the tests
# read (dtypes become Triton's names).
LESSON_HELPERS = {
    "08_hopper_matmul": {
        "define": ["has_tma", "has_fp8", "matmul_dtypes", "fp8_input", "fp8_output", "warp_specializes",
                   "launch_config", "hopper_note", "SMALL_TILES"],
        "read": [MATMUL_16, DEMO_DTYPE, FP8_INPUT, WARP_SPECIALIZES, "fp8_output()", "hopper_note()"]},
    "09_attention_training": {
        "define": ["HEAD_DIMS", "has_tma", "attention_dtypes", "fast_dtype", "attention_config", "backward_config",
                   "warp_specializes", "descriptor_ready"],
        "read": [TRAINING_DTYPES, FAST_DTYPE, TRAINING_WS]},
    # "stand_ins": expressions, evaluated there, that replace the lesson's own definitions
    "10_inference": {
        "define": ["HEAD_DIMS", "PAGE_SIZES", "GROUP_SIZES", "multiprocessors", "fast_dtype", "decode_dtypes",
                   "int4_dtypes", "decode_config", "int4_config"],
        "stand_ins": {"multiprocessors": "lambda: NUM_SMS"},
        "read": [DECODE_DTYPES, INT4_DTYPES]},
}


def _attention_call(attention, launch, dtype, namespace):
    x = _zeros((1, 1, 16, launch["HEAD_DIM"]), dtype)
    attention(x, x, x, causal=launch["CAUSAL"])


def _attention_backward_call(attention_backward, launch, dtype, namespace):
    x = _zeros((1, 1, 16, launch["HEAD_DIM"]), dtype)
    attention_backward(x, x, x, x, x[..., 0].float(), x, causal=launch["CAUSAL"])


def _hopper_call(wrapper, launch, dtype, namespace):
    """08's wrappers with launch_config's tiles (no config given) or the tests' (launch["given"])."""
    config = dict(namespace[launch["given"]]) if "given" in launch else {}
    x = _zeros((64, 64), dtype)
    if "FLATTEN" in launch:
        wrapper(x, x, flatten=launch["FLATTEN"], **config)
    elif "WARP_SPECIALIZE" not in launch:
        wrapper(x, x, **config)
    elif wrapper.__name__ == "fp8_linear":
        scale = _zeros((64,), "fp32")
        wrapper(x, x, scale, scale, warp_specialize=launch["WARP_SPECIALIZE"], **config)
    else:
        wrapper(x, x, warp_specialize=launch["WARP_SPECIALIZE"], **config)


def _training_call(wrapper, launch, dtype, namespace):
    """09's wrappers on (B, N, H, d) = (1, 16, 4, d) queries over 2 K/V heads, passing only the
    settings the lesson's caller gives (launch["given"]), the rest left to its configs."""
    d = launch["HEAD_DIM"]
    q, kv = _zeros((1, 16, 4, d), dtype), _zeros((1, 16, 2, d), dtype)
    given = {key: launch[key] for key in launch.get("given", "").split()}
    if wrapper.__name__ == "attention_delta":
        wrapper(q, q)
    elif wrapper.__name__ == "attention_backward":
        wrapper(q, kv, kv, q, _zeros((1, 4, 16), "fp32"), q, causal=launch["CAUSAL"], **given)
    else:
        wrapper(q, kv, kv, causal=launch["CAUSAL"], **given)


def _inference_call(wrapper, launch, dtype, namespace):
    """10's wrappers at the launch's shape, on tensors that only look that big (expanded zeros: the
    kernels are recorders), leaving the blocks, warps, stages and slices to them."""
    import torch
    shape = launch["shape"]
    if wrapper.__name__ == "int4_linear":
        M, K, N, group = shape
        wrapper(_zeros((M, K), dtype), torch.zeros((1, 1), dtype=torch.uint8).expand(K // 2, N),
                *[_zeros((1, 1), "fp16").expand(K // group, N)] * 2, group)
        return
    kind, B, N, H, H_kv, d, page, *splits = shape
    q = _zeros((B, H, d), dtype)
    if kind == "decode":
        kv = _zeros((1, 1, 1, d), dtype).expand(B, N, H_kv, d)
        namespace["decode_attention"](q, kv, kv, splits=splits[0] if splits else None)
    else:
        pages = cdiv(N, page)
        kv = _zeros((1, 1, 1, d), dtype).expand(B * pages, page, H_kv, d)
        table = torch.arange(B * pages, dtype=torch.int32).reshape(B, pages)
        namespace["paged_decode_attention"](q, kv, kv, table, torch.full((B,), N, dtype=torch.int32))


# Kernels whose launches a wrapper of the solutions chooses (its default block sizes, warps and
# stages): the wrapper, and how to call it for one launch of the table, leaving those to it. The
# compiler process calls it on a pretend GPU of each compute capability, with the lesson's kernels
# replaced by recorders, and the test fails where what it launches is not the table's launch: the
# table is written by hand, and the shared memory checked is the table's.
WRAPPERS = {
    "07_attention": {"attention_fwd_kernel": ("attention", _attention_call),
                     "attention_bwd_dkdv_kernel": ("attention_backward", _attention_backward_call),
                     "attention_bwd_dq_kernel": ("attention_backward", _attention_backward_call)},
    "08_hopper_matmul": {"persistent_matmul_kernel": ("persistent_matmul", _hopper_call),
                         "tiled_matmul_kernel": ("tiled_matmul", _hopper_call),
                         "tma_matmul_kernel": ("tma_matmul", _hopper_call),
                         "fp8_linear_kernel": ("fp8_linear", _hopper_call)},
    "09_attention_training": {"attention_forward_kernel": ("attention_forward", _training_call),
                              "attention_delta_kernel": ("attention_delta", _training_call),
                              "attention_dkdv_kernel": ("attention_backward", _training_call),
                              "attention_dq_kernel": ("attention_backward", _training_call)},
    # decode_merge_kernel: after the wrapper its launch's shape names (paged or not)
    "10_inference": {"decode_partials_kernel": ("decode_attention", _inference_call),
                     "paged_decode_partials_kernel": ("paged_decode_attention", _inference_call),
                     "decode_merge_kernel": ("paged_decode_attention", _inference_call),
                     "int4_matmul_kernel": ("int4_linear", _inference_call),
                     "int4_reduce_kernel": ("int4_linear", _inference_call)},
}

# How each target is covered. Triton has three code paths for tl.dot on these GPUs: plain FMAs
# below compute capability 8.0, mma.sync (MMA v2) on 8.x and wgmma (MMA v3) on 9.0. The full
# matrix (every kernel, dtype, launch and configuration on all five targets: COURSE_TARGETS_FULL=1,
# 800 compiles, about 4 minutes on two cores) showed what lets CI compile less (358) and stay
# near a minute and a half:
# - sm_86 and sm_89 compile exactly as sm_80 (the same shared memory and instructions in every
#   compile): they differ from it in their shared memory limit, not their code. They compile
#   GUARDS, which must come out as on sm_80, and sm_80's figures are checked against their limit.
# - bf16 tiles take what fp16 tiles take (equal shared memory in every autotune configuration, and
#   in every launch of 08, 09 and 10): configurations are compiled in fp16 and fp32, and bf16 reads
#   fp16's figures; so do 08's and 09's launches (LAUNCH_DTYPE_AS), whose bf16 tl.dot is 06's.
# - 09's CAUSAL changes no figure of its kernels (the same shared memory, instructions and memory
#   operations causal and not, at d = 64 and 128, in every dtype on every target): CI compiles each
#   size once, d = 64 causal and d = 128 not (training_sizes()), and the full matrix both ways.
# - sm_75 has no asynchronous copies (cp.async came with 8.0), so Triton does not multi-buffer
#   there and num_stages changes nothing, nor does 08's FLATTEN (which fuses loops for the
#   pipeline's sake): a configuration or launch that differs from an earlier one only in those
#   (UNPIPELINED) reads its figures.
# - sm_90's fp32 autotune configurations are left out (CONFIGS_UNCHECKED; about 6 s of compiling,
#   where sm_80's fp32 figures stand for three targets): the full matrix lists which fit there.
# - What sm_86 or sm_89 is given and sm_80 is not (08's FP8 kernel in float8_e4m3fn, from 8.9 on)
#   is compiled there; a launch that differs from sm_80's only in NUM_SMS (08's) reads sm_80's.
FULL_MATRIX = os.environ.get("COURSE_TARGETS_FULL") == "1"
FULL = tuple(TARGETS) if FULL_MATRIX else (75, 80, 90)
SAME_CODE_AS = {} if FULL_MATRIX else {86: 80, 89: 80}
# (lesson, kernel, dtype, launch index): the dot probe's three dtypes, and 07's fp32 launches with
# the most shared memory on 8.x (attention's forward at d = 128: 44.5 KB; the dK/dV backward: 80 KB
# of 99).
# And 08's descriptor kernel, which Triton lowers to ordinary loads below 9.0, with launch_config's tiles;
# and 09's backward kernels at d = 128 in fp16, its launches with the most shared memory on 8.x
# (dK/dV 80.25 KB of 99, dQ 80).
# And 10's split-KV partials in fp32, at d = 64 (72.25 KB of 99) and d = 128 (140.25 KB: KNOWN_MISFITS).
GUARDS = [("06_matmul", "matmul_kernel", dtype, 0) for dtype in ("fp32", "fp16", "bf16")] + [
    ("07_attention", "attention_fwd_kernel", "fp32", 1), ("07_attention", "attention_bwd_dkdv_kernel", None, 0),
    ("08_hopper_matmul", "tma_matmul_kernel", "fp16", 2)] + [
    ("09_attention_training", name, "fp16", 1) for name in ("attention_dkdv_kernel", "attention_dq_kernel")] + [
    ("10_inference", "decode_partials_kernel", "fp32", index) for index in (0, 1)]
CONFIG_DTYPE_AS = {} if FULL_MATRIX else {"bf16": "fp16"}
LAUNCH_DTYPE_AS = {} if FULL_MATRIX else {lesson: {"bf16": "fp16"} for lesson in ("08_hopper_matmul",
                                                                                   "09_attention_training",
                                                                                   "10_inference")}
STAGES_MATTER_FROM = 0 if FULL_MATRIX else 80
UNPIPELINED = ("num_stages", "FLATTEN")
CONFIGS_UNCHECKED = set() if FULL_MATRIX else {(90, "fp32")}


def config_stands_for(configs, index, cc):
    """The index of the configuration (or launch of the table) whose figures stand for configs[index]
    on this target."""
    if cc >= STAGES_MATTER_FROM:
        return index
    same = [i for i, c in enumerate(configs) if {k: v for k, v in c.items() if k not in UNPIPELINED} ==
            {k: v for k, v in configs[index].items() if k not in UNPIPELINED}]
    return same[0]


# The kernel whose tl.dot settles what each GPU's compiler does with each input dtype, compiled for
# every target in fp32, fp16 and bf16, whatever the kit allows there.
DOT_PROBE = ("06_matmul", "matmul_kernel", 0)
# And 08's FP8 kernel (with the tests' tiles), compiled for every target in float8_e4m3fn: it must
# compile exactly where fp8_input() is float8 (has_fp8(): compute capability 8.9 on).
FP8_PROBE = ("08_hopper_matmul", "fp8_linear_kernel", 0)
PROBES = [(DOT_PROBE, ("fp32", "fp16", "bf16")), (FP8_PROBE, ("fp8e4nv",))]
# What tl.dot becomes on each target with default precision (TF32 for fp32 inputs). wgmma works on
# 64 rows per warp group: a dot on fewer rows (08's 32 x 32 test tiles; 09's fp32 backward at d = 128,
# whose products have BLOCK_OWN = 32 rows) is mma.sync on 9.0 too, where FP8 inputs are converted to
# fp16 for it.
DOT_PATH = {75: "none", 80: "mma", 86: "mma", 89: "mma", 90: "wgmma"}
WGMMA_ROWS = 64

# Launches whose shared memory exceeds a GPU's limit, by (kernel, compute capability, dtype): the
# indices of the table's launches (attention_launches(dtype) for attention_fwd_kernel) or, for an
# autotuner, of its configurations (06's TUNING_CONFIGS). The test fails on any other, and on one of
# these that fits: keep it exact.
KNOWN_MISFITS = {
    # Every launch of the lessons' own code fits every target (07's attention() and its backward, and
    # 10's decode_config and int4_config, choose smaller blocks in fp32 for that: docs/gpus.md).
    # Autotune configurations that GPU cannot run: the autotuner times them as infinitely slow
    # (their launch raises OutOfResources) after compiling each. fp32 tiles take twice the bytes.
    ("matmul_kernel_tuned", 75, "fp32"): [0, 1, 2],
    ("matmul_kernel_tuned", 80, "fp32"): [0, 1, 2, 3],
    ("matmul_kernel_tuned", 86, "fp32"): [0, 1, 2, 3, 5],
    ("matmul_kernel_tuned", 86, "fp16"): [1],
    ("matmul_kernel_tuned", 86, "bf16"): [1],
    ("matmul_kernel_tuned", 89, "fp32"): [0, 1, 2, 3, 5],
    ("matmul_kernel_tuned", 89, "fp16"): [1],
    ("matmul_kernel_tuned", 89, "bf16"): [1],
    ("matmul_kernel_tuned", 90, "fp32"): [0, 1, 2, 3],
}

# ---------------------------------------------------------------------------------------------
# The compiler process: `python tests/test_targets.py --compile OUT.json` writes what the tests read.

DTYPE_NAMES = {"torch.float32": "fp32", "torch.float16": "fp16", "torch.bfloat16": "bf16",
               "torch.float8_e4m3fn": "fp8e4nv"}
SOLUTION_DEFINITIONS = ("triton.jit", "triton.autotune", "triton.heuristics", "triton.Config")


def _kit_for(cc):
    """The kit's namespace as a notebook on a GPU of compute capability `cc` gets it (a pretend
    device: the kit asks torch only whether there is one, its capability and its name)."""
    import torch
    capability = (cc // 10, cc % 10)
    saved = torch.cuda.is_available, torch.cuda.get_device_capability, torch.cuda.get_device_name
    torch.cuda.is_available = lambda: True
    torch.cuda.get_device_capability = lambda device=None: capability
    torch.cuda.get_device_name = lambda device=None: f"a pretend GPU of compute capability {cc}"
    namespace = {"__name__": "course_kit"}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(KIT.read_text(), str(KIT), "exec"), namespace)
    finally:
        torch.cuda.is_available, torch.cuda.get_device_capability, torch.cuda.get_device_name = saved
    assert namespace["ON_GPU"] and namespace["CAPABILITY"] == capability, "the kit did not take the pretend GPU"
    namespace["_torch"] = {key: namespace[key] for key in (FLOAT, DOT)}  # for the lessons' helpers
    for key in (FLOAT, DOT):  # dtype names as Triton writes them
        namespace[key] = [DTYPE_NAMES[str(dtype)] for dtype in namespace[key]]
    for lesson, helpers in LESSON_HELPERS.items():
        lesson_namespace = _helpers(lesson, namespace, cc)
        for expression in helpers["read"]:
            namespace[expression] = _named(eval(expression, lesson_namespace))
    return namespace


def _named(value):
    """Torch dtypes, in lists too, by Triton's names."""
    import torch
    if isinstance(value, list):
        return [_named(v) for v in value]
    return DTYPE_NAMES[str(value)] if isinstance(value, torch.dtype) else value


def _helpers(lesson, kit, cc):
    """The kit's namespace with the lesson's LESSON_HELPERS defined in it (the kit's own dtypes, as
    torch's), as a notebook on compute capability cc has them."""
    import ast
    namespace = dict(kit, **kit["_torch"], NUM_SMS=SMS[cc])
    wanted = set(LESSON_HELPERS.get(lesson, {}).get("define", []))
    for node, source in _solution_statements(lesson):
        names = {node.name} if isinstance(node, ast.FunctionDef) else \
            {t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)}
        if names & wanted:
            exec(source, namespace)
    for name, expression in LESSON_HELPERS.get(lesson, {}).get("stand_ins", {}).items():
        namespace[name] = eval(expression, namespace)
    return namespace


def _solution_statements(lesson):
    """(statement, its source) for the top-level statements of the solution notebook's code cells
    but the setup cell."""
    import ast
    notebook = json.loads((SOLUTIONS / lesson / f"{lesson}.ipynb").read_text())
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code" or cell.get("id") == "setup":
            continue
        code = re.sub(r"^\s*[%!].*$", "", "".join(cell["source"]), flags=re.M)
        for node in ast.parse(code).body:
            # with its decorators, which ast.get_source_segment leaves out
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            yield node, "\n".join(code.splitlines()[first - 1:node.end_lineno])


def _solution_definitions(lesson):
    """The source of the solution notebook's kernel definitions: its top-level @triton.jit (and
    autotune, heuristics) functions and the assignments that build triton.Configs and autotuned
    kernels; nothing else of the notebook runs."""
    import ast
    chosen = []
    for node, source in _solution_statements(lesson):
        if isinstance(node, ast.FunctionDef):
            wanted = any(ast.unparse(d).startswith(SOLUTION_DEFINITIONS) for d in node.decorator_list)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            wanted = any(name in ast.unparse(node.value) for name in SOLUTION_DEFINITIONS)
        else:
            wanted = False
        if wanted:
            chosen.append(source)
    return "\n\n\n".join(chosen) + "\n"


def _zeros(shape, dtype):
    import torch
    return torch.zeros(shape, dtype={name: getattr(torch, full.removeprefix("torch."))
                                     for full, name in DTYPE_NAMES.items()}[dtype])


class _Recorder:
    """Stands for a kernel in a wrapper: kernel[grid](*args, **kwargs) records (name, kwargs)."""

    def __init__(self, name, made):
        self.name, self.made = name, made

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.made.append((self.name, kwargs))


def _wrapper_launches(kits):
    """What the wrappers of WRAPPERS launch on a pretend GPU of each compute capability, for each
    launch of the table: dicts of lesson, kernel, cc, dtype, index and launched (the keyword
    arguments of each launch of that kernel) or error."""
    import ast
    made, records = [], []
    for lesson, wrapped in WRAPPERS.items():
        sources = {node.name: source for node, source in _solution_statements(lesson)
                   if isinstance(node, ast.FunctionDef)}
        for cc, kit in kits.items():
            context = _helpers(lesson, kit, cc) if lesson in LESSON_HELPERS else kit
            for name, (wrapper, call) in wrapped.items():
                entry = KERNELS[lesson][name]
                for dtype in kit[entry["dtypes"]] if entry["dtypes"] else [None]:
                    for index, launch in enumerate(launches_of(entry, dtype, cc)):
                        if not applies(launch, dtype, cc, kit):
                            continue
                        record = {"lesson": lesson, "kernel": name, "cc": cc, "dtype": dtype, "index": index}
                        namespace = dict(context, **{kernel: _Recorder(kernel, made) for kernel in KERNELS[lesson]})
                        made.clear()
                        try:
                            for source in dict.fromkeys(sources[w] for w, _ in wrapped.values()):
                                exec(source, namespace)  # each, for wrappers that call another
                            call(namespace[wrapper], launch, dtype or "fp32", namespace)
                        except Exception as error:  # the test reports it
                            record["error"] = f"{wrapper}: {type(error).__name__}: {error}"[:1000]
                        record["launched"] = [kwargs for kernel, kwargs in made if kernel == name]
                        records.append(record)
    return records


def _define(lesson, kit, folder):
    """(JITFunctions, autotuners) of the lesson's solutions, defined after the kit, from a real file
    (Triton reads a kernel's source from its file)."""
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction
    path = Path(folder) / f"{lesson}.py"
    path.write_text(_solution_definitions(lesson))
    namespace = dict(kit, __name__=f"solutions_{lesson}")
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    jitted = {name: value for name, value in namespace.items()
              if isinstance(value, JITFunction) and value.fn.__code__.co_filename == str(path)}
    tuned = {name: value for name, value in namespace.items() if isinstance(value, Autotuner)}
    return jitted, tuned


def _unwrap(fn):
    while not hasattr(fn, "arg_names") or hasattr(fn, "configs"):  # autotuners, heuristics
        fn = fn.fn
    return fn


def launches_of(entry, dtype, cc):
    launches = entry["launches"]
    if not callable(launches):
        return launches
    return launches(dtype, cc) if launches.__code__.co_argcount == 2 else launches(dtype)


def applies(launch, dtype, cc, kit):
    """Whether a GPU of this compute capability, whose kit (and lessons' helpers) is `kit`, makes
    this launch of the table in this dtype."""
    return (launch.get("only", dtype) == dtype and cc >= launch.get("min_cc", 0)
            and ("if" not in launch or dtype in kit[launch["if"]]))


def _jobs(lessons, kits):
    """Every compile, as a dict: lesson, kernel, cc, dtype, what ("launch N", "config N of <autotuner>"
    or "probe"), launch."""
    jobs = []

    def add(lesson, name, cc, dtype, what, launch):
        out = KERNELS[lesson][name]["out"]
        jobs.append({"lesson": lesson, "kernel": name, "cc": cc, "dtype": dtype, "what": what, "launch": launch,
                     "out": kits[cc][out] if out else None})

    def table_launches(lesson, jitted, cc):
        """The launches of the table to compile on this target, less those another's figures stand for."""
        for name, entry in KERNELS.get(lesson, {}).items():
            if name not in jitted:
                continue  # the test of the table says so
            for dtype in kits[cc][entry["dtypes"]] if entry["dtypes"] else [None]:
                launches = launches_of(entry, dtype, cc)
                for index, launch in enumerate(launches):
                    if (applies(launch, dtype, cc, kits[cc]) and dtype not in LAUNCH_DTYPE_AS.get(lesson, {})
                            and config_stands_for(launches, index, cc) == index):
                        yield name, dtype, f"launch {index}", launch

    for cc in FULL:
        for lesson, (jitted, tuned) in lessons.items():
            for name, dtype, what, launch in table_launches(lesson, jitted, cc):
                add(lesson, name, cc, dtype, what, launch)
            for tuner_name, tuner in tuned.items():
                entry = KERNELS.get(lesson, {}).get(_unwrap(tuner).__name__)
                configs = [dict(c.kwargs, num_warps=c.num_warps, num_stages=c.num_stages) for c in tuner.configs]
                for dtype in (kits[cc][entry["dtypes"]] if entry and entry["dtypes"] else [None]):
                    if dtype in CONFIG_DTYPE_AS or (cc, dtype) in CONFIGS_UNCHECKED:
                        continue
                    for index, launch in enumerate(configs):
                        if config_stands_for(configs, index, cc) == index:
                            add(lesson, _unwrap(tuner).__name__, cc, dtype, f"config {index} of {tuner_name}", launch)
    for cc, base in SAME_CODE_AS.items():
        for lesson, name, dtype, index in GUARDS:
            add(lesson, name, cc, dtype, f"launch {index}", launches_of(KERNELS[lesson][name], dtype, cc)[index])
        compiled = {(j["kernel"], j["dtype"], j["what"]): _but_sms(j["launch"]) for j in jobs if j["cc"] in (cc, base)}
        for lesson, (jitted, tuned) in lessons.items():
            for name, dtype, what, launch in table_launches(lesson, jitted, cc):
                if compiled.get((name, dtype, what)) != _but_sms(launch):  # what the base does not compile
                    add(lesson, name, cc, dtype, what, launch)
    for (lesson, name, index), dtypes in PROBES:
        for cc in TARGETS:
            for dtype in dtypes:
                if not any(j["kernel"] == name and j["cc"] == cc and j["dtype"] == dtype and
                           j["what"] == f"launch {index}" for j in jobs):
                    add(lesson, name, cc, dtype, "probe", launches_of(KERNELS[lesson][name], dtype, cc)[index])
    return jobs


def _but_sms(launch):
    return {key: value for key, value in launch.items() if key != "NUM_SMS"}


def _signature(fn, entry, dtype, launch, out=None):
    """triton.compile's signature, constexprs and attrs for one launch, from the table's notation."""
    signature, constexprs, attrs = {}, {}, {}
    given = dict(arg.split(":", 1) for arg in entry["args"])
    for index, param in enumerate(fn.params):
        name = param.name
        if param.is_constexpr:
            signature[name], constexprs[name] = "constexpr", launch[name]
        elif given[name] == "1":
            signature[name], constexprs[name] = "constexpr", 1
        else:
            kind = given[name].replace("*T", f"*{dtype}").replace("*O", f"*{out}")
            signature[name] = kind.removesuffix("/16")
            if kind.startswith("*") or kind.endswith("/16"):
                attrs[(index,)] = [["tt.divisibility", 16]]
    return signature, constexprs, attrs


def _tensor_cores(ptx):
    """What tl.dot became: "wgmma" (Hopper's warpgroup MMA), "mma" (mma.sync), or "none" (FMAs)."""
    if "wgmma.mma_async" in ptx:
        return "wgmma"
    if re.search(r"^\s*mma\.sync", ptx, re.M):
        return "mma"
    return "none"


# How a kernel reaches global memory, and warp specialisation's register split: "tma" (Hopper's copy
# engine), "cp.async" (8.0's asynchronous copies, which Triton's pipelining uses), "ld.global" (plain
# loads into registers), "setmaxnreg" (the register split between producer and consumer warps).
MEMORY_OPS = {"tma": r"\bcp\.async\.bulk\.tensor\.", "cp.async": r"\bcp\.async\.c[ag]\.",
              "ld.global": r"^\s*(@!?%p\d+\s+)?ld\.global\.", "setmaxnreg": r"\bsetmaxnreg\."}
FORKED = {}  # what the compiling processes inherit: the lessons' kernels and the jobs


def _compile(number):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    job = FORKED["jobs"][number]
    fn = FORKED["lessons"][job["lesson"]][0][job["kernel"]]
    signature, constexprs, attrs = _signature(fn, KERNELS[job["lesson"]][job["kernel"]], job["dtype"], job["launch"],
                                              job["out"])
    options = {key: job["launch"][key] for key in ("num_warps", "num_stages") if key in job["launch"]}
    start = time.perf_counter()
    try:
        compiled = triton.compile(ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs),
                                  target=GPUTarget("cuda", job["cc"], 32), options=options)
    except Exception as error:  # the test reports it, with the kernel and the target
        return number, {"error": f"{type(error).__name__}: {error}"[:3000], "seconds": time.perf_counter() - start}
    ptx = compiled.asm["ptx"]
    return number, {"shared": compiled.metadata.shared, "tensor_cores": _tensor_cores(ptx),
                    "instructions": sorted(set(re.findall(r"^\s*((?:wgmma\.mma_async|mma\.sync)[\w.]*)", ptx, re.M))),
                    "fma": len(re.findall(r"^\s*fma\.rn\.f32", ptx, re.M)), "tt_dot": "tt.dot" in compiled.asm["ttir"],
                    "memory": sorted(op for op, pattern in MEMORY_OPS.items() if re.search(pattern, ptx, re.M)),
                    "seconds": time.perf_counter() - start}


def _cost(job):
    """A guess at a compile's time, to start the longest first: tl.dot on big tiles, most of all
    as FMAs (sm_75)."""
    launch, entry = job["launch"], KERNELS[job["lesson"]][job["kernel"]]
    tiles = 1
    for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "HEAD_DIM"):
        tiles *= launch.get(key, 1)
    return (tiles if entry["dot"] else 0) * (4 if job["cc"] < 80 else 1)


def compile_all(out, processes):
    os.environ["TRITON_INTERPRET"] = "0"  # before Triton is imported: real JITFunctions, not interpreted
    for name in ("COURSE_GPU_TURN", "COURSE_GPU_MEMORY_GB"):
        os.environ.pop(name, None)
    import multiprocessing
    import warnings
    warnings.filterwarnings("ignore", message="TRITON_DEFAULT_FP_FUSION")  # Triton 3.9's notice
    kits = {cc: _kit_for(cc) for cc in TARGETS}
    read = [expression for helpers in LESSON_HELPERS.values() for expression in helpers["read"]]
    result = {"kit": {cc: {key: kits[cc][key] for key in (FLOAT, DOT, "DOT_NOTE", "BF16_OK", *read)} for cc in TARGETS},
              "lessons": {}}
    with tempfile.TemporaryDirectory() as folder:
        lessons = {lesson: _define(lesson, kits[90], folder) for lesson in LESSONS}
        for lesson, (jitted, tuned) in lessons.items():
            result["lessons"][lesson] = {
                "kernels": {name: {"params": [p.name for p in fn.params],
                                   "constexprs": [p.name for p in fn.params if p.is_constexpr],
                                   "source": fn.src} for name, fn in jitted.items()},
                "autotuned": {name: {"kernel": _unwrap(tuner).__name__,
                                     "configs": [dict(c.kwargs, num_warps=c.num_warps, num_stages=c.num_stages)
                                                 for c in tuner.configs]} for name, tuner in tuned.items()}}
        jobs = _jobs(lessons, kits)
        FORKED.update(lessons=lessons, jobs=jobs)
        order = sorted(range(len(jobs)), key=lambda n: -_cost(jobs[n]))
        start = time.perf_counter()
        # fork: the children inherit the kernels. Nothing here has started threads or a GPU.
        with multiprocessing.get_context("fork").Pool(processes) as pool:
            for number, compiled in pool.imap_unordered(_compile, order):
                jobs[number].update(compiled)
        result["compile_seconds"] = time.perf_counter() - start
    result["compiles"] = jobs
    result["wrapped"] = _wrapper_launches(kits)  # after the fork: this runs torch
    Path(out).write_text(json.dumps(result, indent=1))


# ---------------------------------------------------------------------------------------------
# The tests, on what the compiler process wrote.

# Launch keys that say when and how, not what is launched ("dot_rows": the rows of tl.dot's first operand,
# where no block size of the launch names them).
META = {"only", "min_cc", "if", "given", "shape", "dot_rows"}
OPTIONS = {"num_warps", "num_stages"} | META  # launch keys that are not tl.constexpr values
ARG_KINDS = re.compile(r"\*(T|O|fp32|fp16|bf16|i32|u8)|(i32|i64)(/16)?|fp32|1")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    from conftest import patient  # here: this file also runs as the compiler's script
    out = tmp_path_factory.mktemp("targets") / "compiled.json"
    env = {key: value for key, value in os.environ.items() if not key.startswith("COURSE_GPU")}
    env["TRITON_INTERPRET"] = "0"
    run = subprocess.run([sys.executable, __file__, "--compile", str(out)], env=env, capture_output=True, text=True,
                         timeout=patient(900), cwd=ROOT)
    if run.returncode:
        pytest.fail(f"The compiler process failed:\n{run.stdout[-2000:]}\n{run.stderr[-6000:]}", pytrace=False)
    data = json.loads(out.read_text())
    data["kit"] = {int(cc): kit for cc, kit in data["kit"].items()}
    data["by_key"] = {(c["kernel"], c["cc"], c["dtype"], c["what"]): c for c in data["compiles"]}
    return data


def describe(launch):
    return ", ".join(f"{key}={value}" for key, value in launch.items() if key not in META)


UNCHECKED = {"unchecked": True}
LESSON_OF = {name: lesson for lesson, kernels in KERNELS.items() for name in kernels}


def figures(results, kernel, cc, dtype, what, configs=None):
    """The compile of this launch on this target, or the one that stands for it (see FULL);
    UNCHECKED for what CONFIGS_UNCHECKED leaves out, None for what is missing."""
    by_key = results["by_key"]
    if what.startswith("launch"):
        lesson = LESSON_OF[kernel]
        launches = launches_of(KERNELS[lesson][kernel], dtype, cc)
        what = f"launch {config_stands_for(launches, int(what.removeprefix('launch ')), cc)}"
        dtype = LAUNCH_DTYPE_AS.get(lesson, {}).get(dtype, dtype)
    if what.startswith("config"):
        if (cc, dtype) in CONFIGS_UNCHECKED:
            return UNCHECKED
        index, rest = what.removeprefix("config ").split(" ", 1)
        what = f"config {config_stands_for(configs, int(index), cc)} {rest}"
        dtype = CONFIG_DTYPE_AS.get(dtype, dtype)
    if (kernel, cc, dtype, what) in by_key:
        return by_key[kernel, cc, dtype, what]
    if cc in SAME_CODE_AS:
        return figures(results, kernel, SAME_CODE_AS[cc], dtype, what, configs)
    return None


def launched(results, cc):
    """What a notebook on a GPU of this compute capability launches: (misfit key, index, launch,
    what, compile) for every launch of the table and every autotune configuration."""
    kit = results["kit"][cc]
    for lesson in LESSONS:
        for name, entry in KERNELS.get(lesson, {}).items():
            for dtype in kit[entry["dtypes"]] if entry["dtypes"] else [None]:
                for index, launch in enumerate(launches_of(entry, dtype, cc)):
                    if applies(launch, dtype, cc, kit):
                        what = f"launch {index}"
                        yield (name, cc, dtype), index, launch, what, figures(results, name, cc, dtype, what)
        for tuner_name, tuner in results["lessons"][lesson]["autotuned"].items():
            entry = KERNELS.get(lesson, {}).get(tuner["kernel"])
            for dtype in kit[entry["dtypes"]] if entry and entry["dtypes"] else [None]:
                for index, launch in enumerate(tuner["configs"]):
                    what = f"config {index} of {tuner_name}"
                    compiled = figures(results, tuner["kernel"], cc, dtype, what, tuner["configs"])
                    yield (tuner_name, cc, dtype), index, launch, what, compiled


def test_the_table_describes_every_kernel_of_the_solutions(results):
    problems = []
    for lesson in LESSONS:
        found = results["lessons"][lesson]["kernels"]
        described = set(KERNELS.get(lesson, {})) | set(HELPERS.get(lesson, {}))
        for name in sorted(set(found) - described):
            problems.append(f"{lesson}: {name} is a @triton.jit function of the solutions that KERNELS (or "
                            f"HELPERS) does not describe: add how the lesson launches it.")
        for name in sorted(described - set(found)):
            problems.append(f"{lesson}: KERNELS or HELPERS names {name}, which the solutions no longer define.")
        for name, entry in KERNELS.get(lesson, {}).items():
            if name not in found:
                continue
            params, constexprs = found[name]["params"], set(found[name]["constexprs"])
            args = [arg.split(":", 1)[0] for arg in entry["args"]]
            if args != [p for p in params if p not in constexprs]:
                problems.append(f"{lesson}: {name}({', '.join(params)}) takes "
                                f"{[p for p in params if p not in constexprs]} besides its tl.constexprs; the table "
                                f"says {args}.")
            problems += [f"{lesson}: {name}: {arg!r} is not a kind the table knows" for arg in entry["args"]
                         if not ARG_KINDS.fullmatch(arg.split(":", 1)[-1])]
            for cc, kit in results["kit"].items():
                for launch in [launch for dtype in (kit[entry["dtypes"]] if entry["dtypes"] else [None])
                               for launch in launches_of(entry, dtype, cc)]:
                    if set(launch) - OPTIONS != constexprs:
                        problems.append(f"{lesson}: {name}'s tl.constexprs are {sorted(constexprs)}; a launch in the "
                                        f"table gives {sorted(set(launch) - OPTIONS)}.")
        for helper, users in HELPERS.get(lesson, {}).items():
            problems += [f"{lesson}: HELPERS says {user} calls {helper}, and it does not" for user in users
                         if user in found and not re.search(rf"\b{helper}\(", found[user]["source"])]
        for tuner, info in results["lessons"][lesson]["autotuned"].items():
            if info["kernel"] not in KERNELS.get(lesson, {}):
                problems.append(f"{lesson}: {tuner} autotunes {info['kernel']}, which KERNELS does not describe.")
    problems += [f"KERNELS names {lesson}, which is not a lesson" for lesson in set(KERNELS) - set(LESSONS)]
    assert not problems, "\n".join(problems)


def test_the_table_has_the_wrappers_launches(results):
    """Where a wrapper of the solutions chooses a kernel's blocks, warps and stages (WRAPPERS), each
    launch of the table is what it launches, on every target and in every dtype."""
    problems, covered = [], set()
    for record in results["wrapped"]:
        entry = KERNELS[record["lesson"]][record["kernel"]]
        table = {key: value for key, value in launches_of(entry, record["dtype"], record["cc"])[record["index"]].items()
                 if key not in META}
        where = f"{record['kernel']} on sm_{record['cc']} ({record['dtype']}, launch {record['index']})"
        covered.add((record["lesson"], record["kernel"]))
        if "error" in record:
            problems.append(f"{where}: calling {record['error']}")
        elif record["launched"] != [table]:
            problems.append(f"{where}: the wrapper launches {[describe(kw) for kw in record['launched']]}; the table "
                            f"says {describe(table)}. Make the table the wrapper's (or the wrapper the table's).")
    problems += [f"{lesson}: WRAPPERS names {kernel}, which no call made" for lesson, kernels in WRAPPERS.items()
                 for kernel in kernels if (lesson, kernel) not in covered]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("cc", TARGETS, ids=lambda cc: f"sm_{cc}")
def test_every_reference_kernel_compiles(results, cc):
    failed = [f"{c['lesson']}: {c['kernel']} ({c['dtype']}, {c['what']}: {describe(c['launch'])}):\n{c['error']}"
              for c in results["compiles"] if c["cc"] == cc and "error" in c and c["what"] != "probe"]
    assert not failed, f"On sm_{cc} ({TARGETS[cc][0]}):\n" + "\n\n".join(failed)
    uncovered = [f"{key[0]} ({key[2]}, {what})" for key, _, _, what, compiled in launched(results, cc)
                 if compiled is None]
    assert not uncovered, f"Not compiled for sm_{cc}: {uncovered}"


def test_the_table_knows_which_kernels_use_tl_dot(results):
    wrong = sorted({c["kernel"] for c in results["compiles"]
                    if "error" not in c and c["tt_dot"] != KERNELS[c["lesson"]][c["kernel"]]["dot"]})
    assert not wrong, f"KERNELS' dot=... is wrong for {wrong} (the compiled Triton IR says otherwise)"


@pytest.mark.parametrize("cc", TARGETS, ids=lambda cc: f"sm_{cc}")
def test_what_tl_dot_becomes(results, cc):
    """FMAs on sm_75, mma.sync on 8.x, wgmma on 9.0; TF32 for fp32 inputs from 8.0 on; IEEE
    input_precision on FMAs everywhere."""
    wrong = []
    for c in results["compiles"]:
        if c["cc"] != cc or "error" in c or not c["tt_dot"]:
            continue
        ieee = c["launch"].get("PRECISION") == "ieee"
        expected = "none" if ieee else DOT_PATH[cc]
        rows = next((c["launch"][key] for key in ("dot_rows", "BLOCK_M", "BLOCK_OWN", "BLOCK_G") if key in c["launch"]),
                    WGMMA_ROWS)
        if expected == "wgmma" and rows < WGMMA_ROWS:
            expected = "mma"
        operand = {"fp32": "tf32", "fp16": "f16", "bf16": "bf16", "fp8e4nv": "e4m3", None: "tf32"}[c["dtype"]]
        if operand == "e4m3" and cc >= 90 and expected == "mma":
            operand = "f16"
        operands_right = expected == "none" or all(f".{operand}." in i for i in c["instructions"])
        if c["tensor_cores"] != expected or not operands_right:
            wrong.append(f"{c['kernel']} ({c['dtype']}, {describe(c['launch'])}): {c['tensor_cores']} "
                         f"{c['instructions']}, expected {expected} on {operand}")
        if expected == "none" and not c["fma"]:
            wrong.append(f"{c['kernel']} ({c['dtype']}): neither tensor cores nor fma.rn.f32")
    assert not wrong, f"tl.dot on sm_{cc}:\n" + "\n".join(wrong)


@pytest.mark.parametrize("cc", TARGETS, ids=lambda cc: f"sm_{cc}")
def test_kit_dot_dtypes_agrees_with_the_compiler(results, cc):
    """kit.dot_dtypes gives tl.dot fp16 and bf16 exactly where the compiler makes tensor-core code
    of them, and its sentence claims nothing about tensor cores or TF32 that the PTX contradicts."""
    lesson, name, index = DOT_PROBE
    probe = {dtype: figures(results, name, cc, dtype, f"launch {index}") or
             results["by_key"][name, cc, dtype, "probe"] for dtype in ("fp32", "fp16", "bf16")}
    assert not [p for p in probe.values() if "error" in p], f"the dot probe failed to compile on sm_{cc}"
    kit = results["kit"][cc]
    tensor = {dtype: p["tensor_cores"] != "none" for dtype, p in probe.items()}
    tf32 = any(".tf32." in i for i in probe["fp32"]["instructions"])
    problems = [f"kit.dot_dtypes({cc // 10}, {cc % 10}) {'gives' if dtype in kit[DOT] else 'leaves out'} {dtype}, "
                f"and tl.dot on {dtype} inputs compiles to {probe[dtype]['tensor_cores'] if tensor[dtype] else 'FMAs'} "
                f"on sm_{cc} {probe[dtype]['instructions']}"
                for dtype in ("fp16", "bf16") if (dtype in kit[DOT]) != tensor[dtype]]
    if "fp32" not in kit[DOT]:
        problems.append(f"kit.dot_dtypes({cc // 10}, {cc % 10}) leaves out fp32, which tl.dot takes everywhere")
    note = kit["DOT_NOTE"]
    claims = [  # (words of the kit's sentence, whether the compiler bears them out)
        (r"tensor cores for fp16", tensor["fp16"]),
        (r"tensor cores for (fp16 and )?bf16", tensor["bf16"]),
        (r"TF32 for fp32", tf32),
        (r"no tensor-core path", not any(tensor.values())),
        (r"no TF32", not tf32),
        (r"exact fp32", not tf32 and probe["fp32"]["fma"] > 0),
    ]
    said = [(words, holds) for words, holds in claims if re.search(words, note)]
    if not any("tensor" in words for words, _ in said):
        problems.append("DOT_NOTE says nothing this test recognises about tensor cores: teach `claims` its words")
    problems += [f"DOT_NOTE says /{words}/, and the compiler shows otherwise (fp16: {probe['fp16']['tensor_cores']}, "
                 f"bf16: {probe['bf16']['tensor_cores']}, fp32: {probe['fp32']['instructions'] or 'FMAs'})"
                 for words, holds in said if not holds]
    assert not problems, f"On sm_{cc} ({TARGETS[cc][0]}), the kit's note: {note!r}\n" + "\n".join(problems)


@pytest.mark.parametrize("cc", TARGETS, ids=lambda cc: f"sm_{cc}")
def test_shared_memory_fits(results, cc):
    """Every launch and autotune configuration fits the GPU's shared memory per block, except the
    ones KNOWN_MISFITS names; every autotuned (GPU, dtype) keeps a configuration that fits."""
    name, limit = TARGETS[cc]
    misfits, fits, seen = {}, set(), {}
    for key, index, launch, what, compiled in launched(results, cc):
        if compiled is None or "error" in compiled or compiled is UNCHECKED:
            continue  # test_every_reference_kernel_compiles says so; or left out (CONFIGS_UNCHECKED)
        seen[key, index] = f"{key[0]} ({key[2]}, {what}: {describe(launch)}): {compiled['shared']} bytes"
        if compiled["shared"] > limit:
            misfits.setdefault(key, []).append(index)
        else:
            fits.add(key)
    known = {key: indices for key, indices in KNOWN_MISFITS.items()
             if key[1] == cc and key[1:] not in CONFIGS_UNCHECKED}
    new = [seen[key, i] for key, indices in misfits.items() for i in indices if i not in known.get(key, [])]
    gone = [seen.get((key, i), f"{key} {i}") for key, indices in known.items() for i in indices
            if i not in misfits.get(key, [])]
    message = f"sm_{cc} ({name}) gives a block at most {limit} bytes of shared memory.\n"
    assert not new, message + "These do not fit (fix the lesson, or add them to KNOWN_MISFITS):\n" + "\n".join(new)
    assert not gone, message + "KNOWN_MISFITS names these, which fit now: take them out.\n" + "\n".join(gone)
    starved = [key for key in misfits if key[0] in {t for lesson in LESSONS for t in results["lessons"][lesson]["autotuned"]}
               and key not in fits]
    assert not starved, message + f"No configuration of these autotuners fits: {starved}"


@pytest.mark.parametrize("cc", SAME_CODE_AS or {86: 80, 89: 80}, ids=lambda cc: f"sm_{cc}")
def test_compiles_as_sm80(results, cc):
    """sm_86 and sm_89 get the code sm_80 gets (what lets this test compile only GUARDS there)."""
    compared, different = 0, []
    for c in results["compiles"]:
        if c["cc"] != cc or "error" in c:
            continue
        base = results["by_key"].get((c["kernel"], 80, c["dtype"], c["what"]))
        if base is None or "error" in base or _but_sms(base["launch"]) != _but_sms(c["launch"]):
            continue  # another launch (sized by the multiprocessors: int4_reduce_launches), compiled in full
        compared += 1
        if any(c[key] != base[key] for key in ("shared", "tensor_cores", "instructions", "memory")):
            different.append(f"{c['kernel']} ({c['dtype']}, {describe(c['launch'])}): {c['shared']} bytes, "
                             f"{c['instructions']} on sm_{cc}; {base['shared']} bytes, {base['instructions']} on sm_80")
    assert compared, f"nothing compiled for sm_{cc} to compare with sm_80"
    assert not different, (f"sm_{cc} no longer compiles as sm_80: compile it in full (FULL, SAME_CODE_AS):\n"
                           + "\n".join(different))


@pytest.mark.parametrize("cc", TARGETS, ids=lambda cc: f"sm_{cc}")
def test_fp8_compiles_where_the_lesson_gives_it(results, cc):
    """08's FP8 kernel compiles in float8_e4m3fn exactly where its fp8_input() is float8 (has_fp8():
    compute capability 8.9 on); elsewhere its exercise runs on copies of the 8-bit values."""
    lesson, name, index = FP8_PROBE
    probe = (figures(results, name, cc, "fp8e4nv", f"launch {index}") or
             results["by_key"][name, cc, "fp8e4nv", "probe"])
    given = results["kit"][cc][FP8_INPUT]
    assert ("error" not in probe) == (given == ["fp8e4nv"]), (
        f"On sm_{cc}, 08's fp8_input() is {given[0]}, and {name} in float8_e4m3fn "
        + (f"fails to compile: {probe['error'][-400:]}" if "error" in probe else "compiles"))


HOPPER = "08_hopper_matmul"
DESCRIPTOR_KERNELS = ("tma_matmul_kernel", "fp8_linear_kernel")  # tl.make_tensor_descriptor's


@pytest.mark.parametrize("cc", TARGETS, ids=lambda cc: f"sm_{cc}")
def test_hopper_note_agrees_with_the_compiler(results, cc):
    """What 08's hopper_note() says of this GPU, against what the lesson's launches of its kernels
    compile to there: descriptors as TMA copies (cp.async.bulk.tensor) and tl.dot as wgmma on 9.0
    with launch_config's tiles, as ordinary loads (ld.global, cp.async) below; FP8 natively where it
    says so; warp specialisation's register split (setmaxnreg) in the warp-specialised kernels, and
    (section 4) only there."""
    kit = results["kit"][cc]
    note = kit["hopper_note()"]
    compiled = [(key[0], key[2], launch, c) for key, _, launch, _, c in launched(results, cc)
                if key[0] in KERNELS[HOPPER] and c and "error" not in c]
    descriptors = [c for name, _, _, c in compiled if name in DESCRIPTOR_KERNELS]
    default_tiles = [c for _, _, launch, c in compiled if "given" not in launch]
    # with launch_config's tiles: on the tests' 32 x 32 tiles (mma.sync) Triton does not split the warps
    specialised = [c for _, _, launch, c in compiled if launch.get("WARP_SPECIALIZE") and "given" not in launch]
    fp8 = [c for _, dtype, launch, c in compiled if dtype == "fp8e4nv" and "given" not in launch]
    lesson, name, index = FP8_PROBE
    fp8_probe = figures(results, name, cc, "fp8e4nv", f"launch {index}") or results["by_key"][name, cc, "fp8e4nv", "probe"]
    claims = [  # (words of the note, whether the compiler bears them out)
        (r"descriptors use the TMA copy engine", bool(descriptors) and all("tma" in c["memory"] for c in descriptors)),
        (r"tl\.dot the warp-group tensor cores \(wgmma\)", all(c["tensor_cores"] == "wgmma" for c in default_tiles)),
        (r"FP8 runs natively", bool(fp8) and all(any(".e4m3." in i for i in c["instructions"]) for c in fp8)),
        (r"warp_specialize=True splits loads and products", bool(specialised) and
         all("setmaxnreg" in c["memory"] for c in specialised)),
        (r"no TMA", not any("tma" in c["memory"] for _, _, _, c in compiled)),
        (r"descriptor loads into ordinary loads", bool(descriptors) and
         all({"ld.global", "cp.async"} & set(c["memory"]) and "tma" not in c["memory"] for c in descriptors)),
        (r"No FP8", not fp8 and "error" in fp8_probe),
    ]
    said = [(words, holds) for words, holds in claims if re.search(words, note)]
    problems = [f"hopper_note() says /{words}/, and the compiler shows otherwise" for words, holds in said if not holds]
    if not any("TMA" in words for words, _ in said):
        problems.append("hopper_note() says nothing this test recognises about TMA: teach `claims` its words")
    problems += [f"{key} ({dtype}, {describe(launch)}): setmaxnreg without warp specialisation"
                 for key, dtype, launch, c in compiled if "setmaxnreg" in c["memory"] and not launch.get("WARP_SPECIALIZE")]
    figures_here = sorted({f"{key} ({dtype}, {describe(launch)}): {c['shared']} bytes, {c['memory']}, "
                           f"{c['instructions'] or 'FMAs'}" for key, dtype, launch, c in compiled})
    assert not problems, (f"On sm_{cc} ({TARGETS[cc][0]}), 08's note: {note!r}\n" + "\n".join(problems)
                          + "\nWhat it compiles to:\n" + "\n".join(figures_here))


if __name__ == "__main__" and sys.argv[1:2] == ["--compile"]:
    compile_all(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else len(os.sched_getaffinity(0)))
    sys.exit(0)

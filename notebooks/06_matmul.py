# %% [markdown]
# # Lesson 6: Matrix multiplication: tiles, `tl.dot`, and where compute-bound starts
#
# Every kernel so far was limited by memory: an add, a softmax or a layer norm does a handful of
# operations per byte, and the best kernel is the one that moves the fewest bytes. Matrix
# multiplication is different. `C = A @ B` with `A` of shape `(M, K)` and `B` of shape `(K, N)` does
# `2 * M * N * K` floating-point operations on only `M*K + K*N + M*N` numbers: at 4096 x 4096 that
# is 1365 operations per byte in fp16, far past the point where a GPU stops waiting for memory.
# Here, for the first time, the limit is the arithmetic itself, and the GPU has special hardware
# for it: the **tensor cores**, which `tl.dot` uses.
#
# But only a kernel that *reuses* what it loads gets there. This lesson builds one, step by step,
# in the way Triton's own matrix-multiplication tutorial does, and measures every step:
#
# - count the bytes a matrix product moves, and see why it must be cut into **tiles**;
# - give **one program to each output tile**, and choose the order in which programs take their
#   tiles (**grouped order**) so that the L2 cache serves programs that run side by side;
# - write the **loop over K** with `tl.dot` and an **fp32 accumulator**, with masks for shapes that
#   are not multiples of the tile, and `other=0` on both operands;
# - read any layout through **strides**: `A.t()` or a slice, without a copy;
# - know what `tl.dot` computes: **TF32** for fp32 inputs on a GPU of compute capability 8.0 or
#   newer, IEEE fp32 under the interpreter;
# - let **autotuning** choose the tile sizes, and compare with cuBLAS (`torch.matmul`);
# - **fuse an epilogue** (bias and ReLU) into the kernel, and measure the time it saves.
#
# | exercise | what you write | points |
# |---|---|---|
# | 1 | `tiled_bytes`: the bytes a tiled product moves | 2 |
# | 2 | `tile_of_program`: which tile each program computes, in grouped order | 3 |
# | Q | (multiple choice) the K tail | 1 |
# | 3 | `accumulate_tile` and `matmul_kernel`: the tiled product | 6 |
# | 4 | `matmul`: the function that launches it | 4 |
# | W1 | (written) TF32 | 2 |
# | W2 | (written) what the grouped order did, in your numbers | 2 |
# | 5 | `matmul_tuned`: autotuning | 2 |
# | 6 | `linear_relu_kernel` and `linear_relu`: a fused epilogue | 5 |
# | 7 | (no new code) `matmul_tuned` against cuBLAS | 3 |
#
# **Where to run it.** On Colab choose *Runtime > Change runtime type > GPU*. This lesson is best on
# a GPU of compute capability 8.0 or newer (A100, L4, H100, ...), the hardware Triton supports
# officially (its README). On a T4 (7.5) Triton has no tensor-core path: below 8.0 it compiles
# `tl.dot` to plain FMAs on the CUDA cores (since triton-lang/triton#5066, November 2024), so this
# notebook gives `tl.dot` fp32 inputs only there, and the setup cell's last line below says so.
# With no GPU, the notebook runs on Triton's interpreter: every exercise works, on small matrices,
# and timings say nothing about GPUs.

# %% tags=["setup"]
from autograder.kit import *  # noqa: F403 (the build places autograder/kit.py here)

# %%
print(DOT_NOTE)
print("In this notebook tl.dot gets inputs of", ", ".join(str(d).removeprefix("torch.") for d in DOT_DTYPES))


# %% [markdown]
# ## 1. Operations per byte, and why tiles
#
# `C[i, j]` is the dot product of row `i` of `A` with column `j` of `B`: `K` multiplications and
# `K` additions. There are `M * N` such entries, so a product does `2 * M * N * K` operations
# (FLOPs). An H200 does about 989 trillion fp16 FLOP/s on its tensor cores and moves up to 4.8
# trillion bytes per second (about 4.2 in a measured copy): its **ridge point** (lesson 1) is at
# about 200 to 235 FLOPs per byte. A
# kernel that does fewer operations per byte moved waits for memory; one that does more waits for
# the tensor cores.
#
# If every number were read once and `C` written once, a 4096 x 4096 x 4096 product in fp16 would
# move `3 * 4096^2 * 2` bytes, 100 MB, for 137 GFLOP: 1365 FLOPs per byte, far right of the
# ridge. The naive way to compute it is nothing like that. One program per entry `C[i, j]` reads
# a whole row of `A` and a whole column of `B`: `2 * K` numbers for `2 * K` FLOPs, half a FLOP per
# byte in fp16, and `2 * M * N * K` numbers read in all (275 GB).
#
# **Tiles** fix this. A program that computes a whole `BLOCK_M x BLOCK_N` tile of `C` needs the
# `BLOCK_M` rows of `A` and the `BLOCK_N` columns of `B` that cross it, `(BLOCK_M + BLOCK_N) * K`
# numbers, and reuses each number it loads `BLOCK_N` (or `BLOCK_M`) times: every number of `A` in
# its row panel meets every column of the tile. Bigger tiles, fewer bytes.
#
# ```
#                   B: K x N, read in column panels of BLOCK_N columns
#                  +-----+=====+-----+
#                  |     |#####|     |
#                  |     |#####|     |
#                  +-----+=====+-----+
#   A: M x K       C: M x N
#  +-----------+   +-----+-----+-----+
#  |           |   |     |     |     |
#  |###########|   |     |tile |     |    tile (pid_m, pid_n) of C needs row panel pid_m of A
#  |           |   |     |     |     |    and column panel pid_n of B, each K long
#  +-----------+   +-----+-----+-----+
# ```
#
# ## Exercise 1: the bytes a tiled product moves (2 points)
#
# Write `tiled_bytes(M, N, K, BLOCK_M, BLOCK_N, element_size)`: the bytes read and written by a
# tiled product when every program loads its own row panel of `A` and column panel of `B` from
# memory (nothing shared between programs) and writes its tile of `C` once. Tiles at the edges
# may hang over the matrix: their masked lanes read nothing. Hint: count how often each row of `A`
# is read (once per *column* of tiles: `triton.cdiv(N, BLOCK_N)` times), and likewise for `B`.

# %% nbgrader={"grade_id": "tiled_bytes", "solution": true}
def tiled_bytes(M, N, K, BLOCK_M, BLOCK_N, element_size=2):
    """Bytes moved by a tiled C = A @ B whose programs share nothing: A's row panels, B's column
    panels, and C written once."""
    ### BEGIN SOLUTION
    a_reads = triton.cdiv(N, BLOCK_N) * M * K  # every row of A, once per column of tiles
    b_reads = triton.cdiv(M, BLOCK_M) * K * N  # every column of B, once per row of tiles
    return (a_reads + b_reads + M * N) * element_size
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_tiled_bytes", "locked": true, "points": 1}
got = call_answer(tiled_bytes, 4, 4, 4, 1, 1, 2)
if got != (4 * 16 + 4 * 16 + 16) * 2:
    raise CheckFailed(f"tiled_bytes(4, 4, 4, 1, 1, 2) returned {got!r}, expected 288: with 1 x 1 tiles, "
                      "each of the 16 entries reads a row of A and a column of B (4 numbers each), "
                      "and C's 16 entries are written once, 2 bytes each.")
n, h200_bandwidth = 4096, 4.2e12
print(f"C = A @ B, {n} x {n} x {n}, fp16 ({2 * n**3 / 1e9:.0f} GFLOP), if programs shared nothing:")
for side in [1, 16, 64, 128, 256]:
    nbytes = tiled_bytes(n, n, n, side, side, 2)
    print(f"  tiles of {side:3} x {side:<3}: {nbytes / 1e9:8.2f} GB, {2 * n**3 / nbytes:6.0f} FLOP/byte, "
          f"{nbytes / h200_bandwidth * 1e3:8.2f} ms at 4.2 TB/s")

# %% nbgrader={"grade": true, "grade_id": "test_tiled_bytes_hidden", "locked": true, "points": 1}
# Hidden tests check tiled_bytes on shapes that tiles do not divide when your notebook is graded.
### BEGIN HIDDEN TESTS
for M, N, K, block_m, block_n, size in [(1, 1, 1, 16, 16, 4), (100, 3, 70, 64, 32, 2), (129, 257, 33, 128, 64, 2),
                                        (4096, 4096, 4096, 128, 256, 2), (7, 5000, 3, 32, 128, 4)]:
    want = (triton.cdiv(N, block_n) * M * K + triton.cdiv(M, block_m) * K * N + M * N) * size
    got = call_answer(tiled_bytes, M, N, K, block_m, block_n, size)
    if got != want:
        raise CheckFailed(f"tiled_bytes({M}, {N}, {K}, {block_m}, {block_n}, {size}) is {got!r}, expected "
                          f"{want}: A's {M} x {K} numbers are read once per column of tiles "
                          f"(cdiv(N, BLOCK_N) = {triton.cdiv(N, block_n)}), B's once per row of tiles "
                          f"(cdiv(M, BLOCK_M) = {triton.cdiv(M, block_m)}), masked lanes read nothing, "
                          "and C is written once.")
print("tiled_bytes passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# Even 256 x 256 tiles leave the product at about 1.1 GB of traffic, 0.26 ms at the speed of
# memory, while cuBLAS finishes the whole product in about 0.2 ms on an H200 (650 to 770 TFLOP/s
# in this lesson's runs). The difference is the **L2 cache** (50 MB on an H200): programs that run
# at the same time and need the same panel of `A` or `B` get it from L2, and only the first one
# pays for memory. Tiles give reuse inside a program; the order of the programs gives reuse
# between them.
#
# ## 2. One program per tile, and the order of the tiles
#
# We launch a 1-D grid of `num_pid_m * num_pid_n` programs, one per tile of `C`, where
# `num_pid_m = cdiv(M, BLOCK_M)` and `num_pid_n = cdiv(N, BLOCK_N)`. Program `pid` must decide
# which tile `(pid_m, pid_n)` it computes. The obvious choice is **row-major** order:
# `pid_m = pid // num_pid_n`, `pid_n = pid % num_pid_n`. The GPU starts programs roughly in `pid`
# order, a *wave* of about one per multiprocessor (132 on an H200) at a time. In row-major order,
# one wave of a 4096-wide product in 128 x 128 tiles covers four rows of tiles and *every* column
# of `C`: it needs 5 row panels of `A` but all 32 column panels of `B` (37 MB in fp16), and the
# next wave needs all of `B` again.
#
# **Grouped order** walks down a few rows before moving right. Programs are taken in groups of
# `GROUP_M` rows of tiles; inside a group, they go down a column of `GROUP_M` tiles, then to the
# next column. With `GROUP_M = 8`, a wave covers 8 rows and about 17 columns: 8 panels of `A` and
# 17 of `B` (25 MB), and the next wave reuses the same 8 panels of `A`. Same work, fewer distinct
# panels in flight, more L2 hits where the cache is too small for what row-major order needs. At
# this size it is not, on an H200: all of `B`, 32 MB, fits in its 50 MB L2, so the next wave can
# find `B` there in either order. Section 5 measures the two orders on a product whose `B` does not
# fit.
#
# ## Exercise 2: `tile_of_program` (3 points)
#
# Write the `@triton.jit` helper `tile_of_program(pid, num_pid_m, num_pid_n, GROUP_M)`, which returns
# `(pid_m, pid_n)` in grouped order. (A `@triton.jit` function without a launch is a *helper*: other
# kernels call it, and Triton compiles it into them.)
#
# 1. A group holds `GROUP_M * num_pid_n` programs; program `pid` is in group
#    `pid // (GROUP_M * num_pid_n)`, whose first row of tiles is `group * GROUP_M`.
# 2. The last group may have fewer rows: `min(num_pid_m - first_row, GROUP_M)` of them.
# 3. Inside its group, with `i = pid % (GROUP_M * num_pid_n)`, the program goes down the rows first:
#    `pid_m = first_row + i % rows_in_group` and `pid_n = i // rows_in_group`.
#
# With `GROUP_M = 1` this is row-major order again.

# %% nbgrader={"grade_id": "tile_of_program", "solution": true}
@triton.jit
def tile_of_program(pid, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    """(pid_m, pid_n): the tile of C that program pid computes, GROUP_M rows of tiles at a time."""
    ### BEGIN SOLUTION
    programs_per_group = GROUP_M * num_pid_n
    first_row = (pid // programs_per_group) * GROUP_M
    rows_in_group = min(num_pid_m - first_row, GROUP_M)
    i = pid % programs_per_group
    pid_m = first_row + i % rows_in_group
    pid_n = i // rows_in_group
    return pid_m, pid_n
    ### END SOLUTION


# %% nbgrader={"grade_id": "program_tiles", "locked": true}
# The course's helpers for the tests of this lesson (read-only: grading restores them).
@triton.jit
def record_tiles_kernel(tiles_ptr, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    pid_m, pid_n = tile_of_program(pid, num_pid_m, num_pid_n, GROUP_M)
    tl.store(tiles_ptr + 2 * pid, pid_m)
    tl.store(tiles_ptr + 2 * pid + 1, pid_n)


def program_tiles(num_pid_m, num_pid_n, group_m, programs=None):
    """[(pid_m, pid_n) of program 0, of program 1, ...] as tile_of_program says, for the first
    `programs` programs (all of them by default)."""
    programs = programs or num_pid_m * num_pid_n
    tiles = guarded_empty((programs, 2), dtype=torch.int32)
    call_answer(lambda: record_tiles_kernel[(programs,)](tiles, num_pid_m, num_pid_n, GROUP_M=group_m),
                name="tile_of_program")
    check_output(tiles, tiles, name="the tiles tile_of_program chose")  # only the guard bands: no stray write
    return [tuple(pair) for pair in tiles.tolist()]


def check_program_tiles(num_pid_m, num_pid_n, group_m, expected=None):
    """Every tile exactly once, and (given `expected`) in that order."""
    got = program_tiles(num_pid_m, num_pid_n, group_m)
    what = f"tile_of_program on {num_pid_m} x {num_pid_n} tiles with GROUP_M={group_m}"
    outside = [(pid, tile) for pid, tile in enumerate(got)
               if not (0 <= tile[0] < num_pid_m and 0 <= tile[1] < num_pid_n)]
    if outside:
        pid, tile = outside[0]
        raise CheckFailed(f"{what}: program {pid} got tile {tile}, outside the {num_pid_m} x {num_pid_n} "
                          "grid of tiles. Is the last group's row count min(num_pid_m - first_row, GROUP_M)?")
    missing = sorted({(m, n) for m in range(num_pid_m) for n in range(num_pid_n)} - set(got))
    if missing:
        raise CheckFailed(f"{what}: {len(missing)} tile(s) are computed by no program, e.g. {missing[0]}, "
                          "and others twice: every program must get a different tile. Inside a group, "
                          "pid_m = first_row + i % rows_in_group and pid_n = i // rows_in_group.")
    if expected is not None and got != expected:
        pid = next(p for p, (g, e) in enumerate(zip(got, expected)) if g != e)
        raise CheckFailed(f"{what}: program {pid} computes tile {got[pid]}, expected {expected[pid]}: "
                          "grouped order goes down the GROUP_M rows of a group first, then right.")


# %% nbgrader={"grade": true, "grade_id": "test_tile_of_program", "locked": true, "points": 1}
check_program_tiles(2, 3, 1, expected=[(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)])
check_program_tiles(4, 3, 2, expected=[(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2),
                                       (2, 0), (3, 0), (2, 1), (3, 1), (2, 2), (3, 2)])
print("tile_of_program gives row-major order with GROUP_M=1 and grouped order with GROUP_M=2.")


# %% nbgrader={"grade": true, "grade_id": "test_tile_of_program_hidden", "locked": true, "points": 2}
# Hidden tests check tile_of_program on more grids and group sizes when your notebook is graded.
### BEGIN HIDDEN TESTS
def _grouped(num_pid_m, num_pid_n, group_m):
    order = []
    for first in range(0, num_pid_m, group_m):
        rows = min(num_pid_m - first, group_m)
        order += [(first + r, n) for n in range(num_pid_n) for r in range(rows)]
    return order


for num_pid_m, num_pid_n, group_m in [(1, 1, 1), (1, 1, 8), (1, 7, 4), (7, 1, 4), (5, 3, 2), (9, 4, 4),
                                      (3, 5, 8), (8, 8, 8), (13, 6, 4), (16, 16, 1)]:
    check_program_tiles(num_pid_m, num_pid_n, group_m, expected=_grouped(num_pid_m, num_pid_n, group_m))
print("tile_of_program passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# Here is the order your function gives on a grid of 8 x 8 tiles: each square is a tile of `C`, its
# number the program that computes it, and the shaded squares the first wave if 12 programs run at
# once. The panel counts below are for the H200 example of section 2 (4096-wide, 128 x 128 tiles,
# 132 programs at once), computed from your `tile_of_program`.

# %%
import matplotlib.pyplot as plt


def draw_order(num_pid, group_ms, wave):
    fig, axes = plt.subplots(1, len(group_ms), figsize=(4.2 * len(group_ms), 4.2))
    for ax, group_m in zip(axes, group_ms):
        tiles = program_tiles(num_pid, num_pid, group_m)
        for pid, (m, n) in enumerate(tiles):
            ax.add_patch(plt.Rectangle((n, num_pid - 1 - m), 1, 1, edgecolor="white",
                                       facecolor="tab:orange" if pid < wave else "tab:blue",
                                       alpha=1.0 if pid < wave else 0.35 + 0.6 * pid / len(tiles)))
            ax.text(n + 0.5, num_pid - 0.5 - m, str(pid), ha="center", va="center", fontsize=8)
        rows, cols = {m for m, _ in tiles[:wave]}, {n for _, n in tiles[:wave]}
        ax.set_title(f"GROUP_M = {group_m}: first {wave} programs need\n{len(rows)} panels of A, "
                     f"{len(cols)} of B", fontsize=10)
        ax.set_xlim(0, num_pid)
        ax.set_ylim(0, num_pid)
        ax.set_aspect("equal")
        ax.axis("off")
    plt.show()


def panels_per_wave(num_pid, group_m, wave):
    tiles = program_tiles(num_pid, num_pid, group_m, programs=wave)
    return len({m for m, _ in tiles}), len({n for _, n in tiles})


draw_order(8, [1, 2, 4], wave=12)
panel_mb = 128 * 4096 * 2 / 2**20  # one 128 x 4096 fp16 panel
for group_m in [1, 2, 4, 8, 16]:
    a_panels, b_panels = panels_per_wave(32, group_m, wave=132)
    print(f"GROUP_M = {group_m:2}: a wave of 132 programs needs {a_panels:2} panels of A and {b_panels:2} "
          f"of B: {(a_panels + b_panels) * panel_mb:4.0f} MB")

# %% [markdown]
# ## 3. One tile: the loop over K
#
# A program owns tile `(pid_m, pid_n)`: rows `offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)` of
# `C` and columns `offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)`. Its tile is
#
# $$C_{\text{tile}} = \sum_{k} A[\text{offs\_m}, k] \, B[k, \text{offs\_n}],$$
#
# and the whole row panel of `A` (`BLOCK_M x K`) does not fit on the chip for large `K`. So the
# program walks along `K` in steps of `BLOCK_K`: it loads a `BLOCK_M x BLOCK_K` block of `A` and a
# `BLOCK_K x BLOCK_N` block of `B`, multiplies them with **`tl.dot`**, and adds the product into an
# accumulator tile that stays in registers for the whole loop:
#
# ```python
# acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
# for k in range(0, K, BLOCK_K):
#     a = tl.load(a_ptrs, mask=..., other=0.0)    # BLOCK_M x BLOCK_K
#     b = tl.load(b_ptrs, mask=..., other=0.0)    # BLOCK_K x BLOCK_N
#     acc = tl.dot(a, b, acc)                      # acc += a @ b, on the tensor cores
#     a_ptrs += BLOCK_K * stride_ak                # the next block along K
#     b_ptrs += BLOCK_K * stride_bk
# ```
#
# The details that make it right for every shape and layout, and fast:
#
# - **Strides** (lesson 3). `A[i, k]` is at `a_ptr + i * stride_am + k * stride_ak`, so the block of
#   `A` is `a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak`, and likewise for
#   `B` (`offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn`). A transposed `A` is the same
#   numbers with the strides swapped: the kernel multiplies `A.t()` without a copy.
# - **Offsets past 2^31.** These offsets are int32 (`tl.program_id` and `tl.arange` are, and so is
#   a stride below 2^31), and an int32 product wraps around past 2^31. In a matrix of more than
#   2^31 elements, say an `A` of 65536 x 65536 (8 GiB in fp16), row 32768 starts at element 2^31,
#   which int32 holds as -2^31: the block would be loaded from 4 GiB *before* `A`. A kernel meant
#   for such sizes converts before it multiplies, `offs_m.to(tl.int64)[:, None] * stride_am` (or
#   `pid_m.to(tl.int64)`, from which `offs_m` is computed; the same for `C`), and pays with 64-bit
#   offset arithmetic. This lesson's matrices stay far below (the largest, 8192 x 8192, has 2^26
#   elements), so its kernels keep int32.
# - **The fp32 accumulator.** Tensor cores multiply fp16 or bf16 numbers and add the products in
#   fp32, at no extra cost. Keep the sum in fp32 for the whole loop and round once, at the store:
#   an fp16 sum of thousands of products loses digits and, past 65504, overflows.
# - **Masks.** Rows past `M` and columns past `N` (the edge tiles) are masked as in lesson 3. So is
#   the **K tail**: when `K` is not a multiple of `BLOCK_K`, the last step's lanes `k >= K` have
#   no data. With the pointers advanced `k` elements, the lanes still inside are
#   `offs_k < K - k`.
# - **`other=0.0` on both operands.** Unlike a masked store, which just skips a lane, a masked lane
#   of a `tl.dot` input still takes part: `tl.dot` adds `a[i, kk] * b[kk, j]` for *every* `kk` of
#   the block into `acc[i, j]`. So a masked lane must hold a value whose product adds nothing: 0, the
#   neutral element of the sum (lesson 3). Without `other=`, Triton promises nothing about the
#   lane's value (the interpreter gives 0, a GPU may not), and a single NaN or inf left there poisons
#   every entry of its row or column, because `0 * NaN` is NaN: zero *both* operands' tails.
# - **`other=`, not `tl.where` after the load.** `a = tl.where(mask, tl.load(a_ptrs, mask=mask), 0.0)`
#   gives the same values (lesson 3 calls it another way to the same end), and on a GPU it is slow
#   here. With `other=`, the compiler can copy each tile from memory straight into shared memory (the
#   copy itself fills the masked lanes), steps ahead of the product that needs it, and the tensor
#   cores read it there. With `tl.where`, every tile must come into registers to be changed, then go
#   to shared memory, on the way to each product (in the compiled code, `compiled.asm["ttgir"]` of
#   section 6, an `arith.select` sits between the `ttg.local_load` of each tile from the
#   pipeline's buffer and a second `ttg.local_alloc`). On an H200 at 4096^3 fp16 the lesson's
#   kernel written that way ran at 0.42x cuBLAS, against 1.0x with `other=0.0`
#   (`benchmarks/calibrate.py`, docs/calibration.md).
#
# Before writing it, answer question Q.
#
# ### Question Q (1 point)
#
# `K = 100` and `BLOCK_K = 32`, so the loop takes 4 steps. Which is true of its last step?
#
# - **a.** Nothing special happens: the store is masked, so loads need masks only for `M` and `N`.
# - **b.** Lanes `k = 100..127` have no data; masked with `other=0.0` in `A` and in `B`, their products
#   add nothing. Without the K mask they would read the next row of a row-major `A` (or memory past
#   `B`) and add wrong products into every entry of the tile.
# - **c.** `K` must be a multiple of `BLOCK_K`; the wrapper should round `K` up.
# - **d.** Only `B` needs `other=0.0`: the lanes of `A` past `K` are never read by `tl.dot`.
#
# Replace the two lines in the next cell with `answer_k_tail = "..."`, your letter between the
# quotes, and run it.

# %% nbgrader={"grade_id": "q_k_tail", "solution": true}
### BEGIN SOLUTION
answer_k_tail = "b"  # one of "a", "b", "c", "d"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_q_k_tail", "locked": true, "points": 1}
if "answer_k_tail" not in globals():
    raise CheckFailed('Set answer_k_tail = "a", "b", "c" or "d" in the cell above, and run it.')
if str(answer_k_tail).strip().lower() not in ("a", "b", "c", "d"):
    raise CheckFailed('Answer with one letter: answer_k_tail = "a", "b", "c" or "d"')
print("Your answer is recorded; it is checked when your notebook is graded.")
### BEGIN HIDDEN TESTS
if str(answer_k_tail).strip().lower() != "b":
    raise CheckFailed("Not the right answer: tl.dot sums over every lane of the K block, masked or not, so "
                      "the tail lanes of both A and B must load as 0.0 (other=0.0), and the K mask "
                      "(offs_k < K - k) keeps them from reading the next row or past the end.")
### END HIDDEN TESTS

# %% [markdown]
# ## Exercise 3: the tiled product (6 points)
#
# Write two functions:
#
# 1. The helper `accumulate_tile(...)`, which returns the fp32 tile
#    `A[offs_m, :] @ B[:, offs_n]` of tile `(pid_m, pid_n)`: the loop over `K` above, with the
#    masks (rows `< M`, columns `< N`, `offs_k < K - k`) and `other=0.0` on both loads.
# 2. The kernel `matmul_kernel(...)`: program `tl.program_id(0)` takes its tile from
#    `tile_of_program` (with `num_pid_m = tl.cdiv(M, BLOCK_M)` and `num_pid_n = tl.cdiv(N, BLOCK_N)`),
#    gets its accumulator from `accumulate_tile`, and stores it into `C` through `C`'s strides,
#    masked, converted to `C`'s dtype (`acc.to(c_ptr.dtype.element_ty)`).
#
# `tl.dot` needs `BLOCK_K`, the dimension it sums over, to be at least 16 (older Triton versions
# ask it of all three block dimensions); the tests use blocks of 16 and more.

# %% nbgrader={"grade_id": "matmul_kernel", "solution": true}
@triton.jit
def accumulate_tile(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """The fp32 tile A[offs_m, :] @ B[:, offs_n] of tile (pid_m, pid_n), summed over K in blocks of BLOCK_K."""
    ### BEGIN SOLUTION
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    return acc
    ### END SOLUTION


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """C = A @ B: one program per BLOCK_M x BLOCK_N tile of C, in grouped order."""
    ### BEGIN SOLUTION
    pid_m, pid_n = tile_of_program(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    acc = accumulate_tile(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n,
                          BLOCK_M, BLOCK_N, BLOCK_K)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc.to(c_ptr.dtype.element_ty),
             mask=mask)
    ### END SOLUTION


# %% nbgrader={"grade_id": "matmul_checks", "locked": true}
# The course's helpers for the tests of this lesson (read-only: grading restores them).
def matrix(rows, cols, layout="contiguous", dtype=torch.float32):
    """A fresh random (rows, cols) matrix laid out as asked, with 64 spare rows and columns of real
    memory around it: a load that forgets a mask reads numbers (and gives wrong answers), not memory
    the process does not own."""
    if layout == "contiguous":
        return rand(rows + 64, cols, dtype=dtype)[:rows]
    if layout == "transposed":
        return rand(cols + 64, rows + 64, dtype=dtype)[:cols, :rows].t()
    if layout == "a slice":
        return rand(rows + 67, cols + 69, dtype=dtype)[3:3 + rows, 5:5 + cols]
    raise ValueError(layout)


def whole(t):
    """All the memory t is a view of, as one tensor: an answer must leave it unchanged."""
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage())


def product_tolerance(dtype, K):
    """(atol, rtol) for a product over K terms of N(0, 1) numbers, whose entries are about sqrt(K) in
    size. fp32 inputs: a GPU's tl.dot truncates them to TF32 (10 bits of mantissa), so an entry is off
    by about 1e-3 * sqrt(K); we allow ten times that. fp16 and bf16 inputs are multiplied exactly
    and summed in fp32: only the rounding of the output counts, check_output's default for its dtype."""
    if dtype == torch.float32:
        return 1e-2 * math.sqrt(max(K, 1)), 1e-2
    return None, None


def expected_product(a, b, bias=None, relu=False):
    """a @ b (+ bias, then ReLU) by torch, in fp32 (IEEE), rounded to a's dtype."""
    out = a.float() @ b.float()
    if bias is not None:
        out = out + bias.float()
    return (torch.relu(out) if relu else out).to(a.dtype)


def check_product(out, a, b, what, untouched=(), bias=None, relu=False, block_k=None):
    """Compare out with torch's product, and name the likely mistake."""
    K = a.shape[1]
    atol, rtol = product_tolerance(a.dtype, K)
    if block_k and K % block_k:
        hint = (f"K = {K} is not a multiple of BLOCK_K = {block_k}: in the last step, are the lanes "
                "offs_k >= K - k masked in both loads, and loaded as 0.0 (other=0.0)?")
    elif a.stride(1) != 1 or b.stride(1) != 1:
        hint = (f"a has strides {a.stride()} and b {b.stride()}: are A[i, k] and B[k, j] read at "
                "a_ptr + i * stride_am + k * stride_ak and b_ptr + k * stride_bk + j * stride_bn, with "
                "the strides passed in that order?")
    else:
        hint = ("Check the offsets of the tile (pid * BLOCK + tl.arange), the pointer steps along K "
                "(BLOCK_K * stride_ak and BLOCK_K * stride_bk), and that acc = tl.dot(a, b, acc) adds "
                "up every step.")
    check_output(out, expected_product(a, b, bias, relu), name=what, inputs=untouched, atol=atol, rtol=rtol,
                 hint=hint)


def run_matmul_kernel(a, b, transposed_c=False, **blocks):
    """Launch matmul_kernel on a and b into a guarded output (C's transpose, when asked: strides
    (1, M)), and check the result."""
    M, K = a.shape
    N = b.shape[1]
    untouched = [(whole(t), whole(t).clone()) for t in (a, b)]
    c = guarded_empty((N, M), dtype=a.dtype).t() if transposed_c else guarded_empty((M, N), dtype=a.dtype)
    grid = (triton.cdiv(M, blocks["BLOCK_M"]) * triton.cdiv(N, blocks["BLOCK_N"]),)
    call_answer(lambda: matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                            c.stride(0), c.stride(1), **blocks), name="matmul_kernel")
    what = f"matmul_kernel on {describe_matmul(a, b)}{', into a transposed C' if transposed_c else ''}, " + \
        ", ".join(f"{k}={v}" for k, v in blocks.items())
    check_product(c, a, b, what, untouched, block_k=blocks["BLOCK_K"])


# %% [markdown]
# The test launches your kernel on a (33, 47) @ (47, 65) product in 32 x 32 tiles with `BLOCK_K = 32`:
# every dimension has a tail. Then on a transposed `A`, and in each dtype `tl.dot` takes here.

# %% nbgrader={"grade": true, "grade_id": "test_matmul_kernel", "locked": true, "points": 2}
blocks = dict(BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, GROUP_M=2)
run_matmul_kernel(matrix(33, 47), matrix(47, 65), **blocks)
run_matmul_kernel(matrix(33, 47, "transposed"), matrix(47, 65), **blocks)
for dtype in DOT_DTYPES:
    run_matmul_kernel(matrix(40, 70, dtype=dtype), matrix(70, 50, dtype=dtype), **blocks)
print("matmul_kernel is right on shapes with tails, on a transposed A, and in",
      ", ".join(str(d).removeprefix("torch.") for d in DOT_DTYPES))

# %% nbgrader={"grade": true, "grade_id": "test_matmul_kernel_hidden", "locked": true, "points": 4}
# Hidden tests launch matmul_kernel on more shapes, tiles, layouts and dtypes when your notebook is
# graded.
### BEGIN HIDDEN TESTS
# Small shapes first: a missing mask is caught while its stray writes still land in the guard bands.
for M, N, K in [(1, 1, 1), (1, 1, 40), (17, 33, 1), (5, 3, 2), (33, 65, 47), (64, 64, 64), (100, 3, 70),
                (3, 100, 70), (130, 20, 33)]:
    run_matmul_kernel(matrix(M, K), matrix(K, N), BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, GROUP_M=4)
for blocks in [dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=1), dict(BLOCK_M=64, BLOCK_N=32, BLOCK_K=16, GROUP_M=2),
               dict(BLOCK_M=32, BLOCK_N=64, BLOCK_K=64, GROUP_M=8)]:
    run_matmul_kernel(matrix(37, 41), matrix(41, 29), **blocks)
for a_layout, b_layout in [("transposed", "contiguous"), ("contiguous", "transposed"), ("transposed", "transposed"),
                           ("a slice", "a slice")]:
    run_matmul_kernel(matrix(45, 39, a_layout), matrix(39, 51, b_layout), BLOCK_M=32, BLOCK_N=32, BLOCK_K=16, GROUP_M=2)
run_matmul_kernel(matrix(45, 39), matrix(39, 51), transposed_c=True, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, GROUP_M=2)
for dtype in DOT_DTYPES:
    run_matmul_kernel(matrix(70, 1, dtype=dtype), matrix(1, 45, dtype=dtype), BLOCK_M=32, BLOCK_N=32, BLOCK_K=16, GROUP_M=2)
    run_matmul_kernel(matrix(50, 90, "transposed", dtype), matrix(90, 33, "a slice", dtype),
                      BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, GROUP_M=2)
# 16 products of 200 * 200 = 40000, then 16 of -40000: the answer is 0, but a sum kept in fp16 passes
# 65504 after two products and overflows to inf. Only an fp32 accumulator gets 0.
a = matrix(16, 32, dtype=torch.float16)
a.copy_(torch.tensor([200.0] * 16 + [-200.0] * 16).to(a.device, a.dtype).expand(16, 32))
b = matrix(32, 16, dtype=torch.float16)
b.fill_(200.0)
c = guarded_empty((16, 16), dtype=torch.float16)
call_answer(lambda: matmul_kernel[(1,)](a, b, c, 16, 16, 32, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                        c.stride(0), c.stride(1), BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=1),
            name="matmul_kernel")
if not bool((c == 0).all()):
    raise CheckFailed(f"matmul_kernel on fp16 rows of 16 x 200.0 and 16 x -200.0 times columns of 200.0 gave "
                      f"{c[0, 0].item()}, expected 0.0: the sum was kept in fp16, whose largest value is 65504. "
                      "Accumulate in fp32: acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32).")
print("matmul_kernel passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## Exercise 4: `matmul` (4 points)
#
# Now the function users call, `matmul(a, b)`, like `a @ b` for 2-D tensors of any layout:
#
# - check that the inner dimensions agree (`a.shape[1] == b.shape[0]`): `assert` it, or raise a
#   `ValueError`, with a message that says what is wrong (the test expects one of those);
# - allocate `C` with `torch.empty((M, N), dtype=a.dtype, device=a.device)` (contiguous, whatever
#   the inputs' layout);
# - launch `matmul_kernel` on a 1-D grid of `cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)` programs, passing
#   all six strides and the block sizes it was given. Do **not** call `.contiguous()`: the strides
#   handle every layout, and a copy of `A` costs as much memory traffic as reading it.
#
# The block sizes are parameters, so that the measurements below can try several; the defaults are
# a reasonable start on any GPU.

# %% nbgrader={"grade_id": "matmul", "solution": true}
def matmul(a: torch.Tensor, b: torch.Tensor, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8) -> torch.Tensor:
    """a @ b for 2-D tensors of any layout, computed by matmul_kernel; C is contiguous, in a's dtype."""
    ### BEGIN SOLUTION
    assert a.dim() == 2 and b.dim() == 2, f"matmul takes 2-D tensors, got {a.dim()} and {b.dim()} dimensions"
    assert a.shape[1] == b.shape[0], f"inner dimensions differ: a is {tuple(a.shape)}, b is {tuple(b.shape)}"
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M)
    return c
    ### END SOLUTION


# %% nbgrader={"grade_id": "matmul_wrapper_checks", "locked": true}
# The course's helpers for the tests of this lesson (read-only: grading restores them).
def run_product(answer, a, b, call_with=None, bias=None, relu=False, **blocks):
    """Call answer(a, b, **blocks) (or answer(*call_with, **blocks)) with guarded allocations and
    counted launches; check that a kernel computed the result, that it equals a @ b (+ bias, then
    ReLU) and is contiguous, and that the inputs are unchanged. Returns the launches."""
    args = call_with or (a, b)
    name = name_of(answer)
    what = f"{name} on {describe_matmul(a, b)}" + "".join(f", {k}={v}" for k, v in blocks.items())
    untouched = [(whole(t), whole(t).clone()) for t in args]
    with guarded_allocations(), count_launches() as launches:
        out = call_answer(answer, *args, name=name, **blocks)
    expect_launched(launches, what, out)
    check_product(out, a, b, what, untouched, bias=bias, relu=relu, block_k=blocks.get("BLOCK_K"))
    if not out.is_contiguous():
        raise CheckFailed(f"{what} returned a tensor with strides {out.stride()}: allocate the output with "
                          "torch.empty((M, N), dtype=a.dtype, device=a.device), which is contiguous.")
    return launches


# %% nbgrader={"grade": true, "grade_id": "test_matmul", "locked": true, "points": 2}
run_product(matmul, matrix(1, 1), matrix(1, 1))
run_product(matmul, matrix(33, 47), matrix(47, 65))
run_product(matmul, matrix(65, 47, "transposed"), matrix(47, 33, "a slice"))
for dtype in DOT_DTYPES:
    run_product(matmul, matrix(40, 70, dtype=dtype), matrix(70, 50, dtype=dtype))
try:
    call_answer(matmul, matrix(3, 4), matrix(5, 6))
except (AssertionError, ValueError, RuntimeError) as error:
    if isinstance(error, CheckFailed):
        raise
else:
    raise CheckFailed("matmul((3, 4), (5, 6)) returned a result: the inner dimensions differ (4 and 5); "
                      "check a.shape[1] == b.shape[0] and raise with a message that says so.")
print("matmul is right on contiguous, transposed and sliced inputs, and refuses mismatched shapes.")

# %% nbgrader={"grade": true, "grade_id": "test_matmul_hidden", "locked": true, "points": 2}
# Hidden tests check matmul on more shapes, layouts, dtypes and tiles when your notebook is graded.
### BEGIN HIDDEN TESTS
for M, N, K in [(1, 1, 1), (2, 3, 1), (1, 97, 33), (97, 1, 33), (96, 96, 96), (200, 16, 24), (16, 200, 24),
                (7, 9, 130)]:
    run_product(matmul, matrix(M, K), matrix(K, N))
for a_layout, b_layout in [("transposed", "transposed"), ("a slice", "contiguous"), ("contiguous", "a slice")]:
    run_product(matmul, matrix(37, 61, a_layout), matrix(61, 45, b_layout))
for dtype in DOT_DTYPES:
    run_product(matmul, matrix(33, 1, dtype=dtype), matrix(1, 17, dtype=dtype))
    run_product(matmul, matrix(65, 70, "transposed", dtype), matrix(70, 47, "a slice", dtype))
run_product(matmul, matrix(50, 40), matrix(40, 30), BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, GROUP_M=1)
run_product(matmul, matrix(50, 40), matrix(40, 30), BLOCK_M=32, BLOCK_N=16, BLOCK_K=64, GROUP_M=4)
print("matmul passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## 4. What `tl.dot` computes: TF32
#
# Run your `matmul` on fp32 inputs on a GPU and compare with `torch.matmul`: the answers differ in
# the fourth digit. Not a bug. On an fp32 input, `tl.dot` defaults to **TF32** on GPUs that have it
# (compute capability 8.0 and newer): the tensor cores read only the top 10 bits of each input's
# mantissa (the precision of fp16, with fp32's range), multiply, and add in fp32. The other 13 bits
# are dropped, not rounded: each input moves toward zero by up to 2^-10 (about 1e-3) of itself, and
# the error is about twice what rounding would leave (`tl.dot`'s docstring warns of it). That is
# several times faster than true fp32 arithmetic, and for training neural networks it is usually
# accurate enough. PyTorch's own `torch.matmul` on fp32 does *not* use TF32 unless you allow it:
# `torch.backends.cuda.matmul.fp32_precision = "tf32"` (torch 2.9 and later; `"ieee"` turns it off
# again) or `torch.set_float32_matmul_precision("high")`. The older
# `torch.backends.cuda.matmul.allow_tf32 = True` still works; it is the legacy setting.
#
# `tl.dot` takes `input_precision="ieee"` for true fp32 (slower: no tensor cores), and
# `"tf32x3"`, which splits each number into two TF32 parts and does three products, for close to
# fp32 accuracy at a third of TF32's speed. Those three are in every Triton this course runs on
# (3.6 to 3.9); Triton 3.9 lists two more for NVIDIA GPUs in `tl.dot`'s docstring, `"bf16x3"` and
# `"bf16x6"`, which split each number into bf16 parts instead. **Triton's interpreter** ignores all
# this: it computes `tl.dot` with NumPy in IEEE fp32. So a test that passes under the interpreter
# with a tight tolerance can fail on a GPU: this course's tests allow for TF32 on fp32 inputs
# (`product_tolerance` in the helpers above: an error of about `1e-2 * sqrt(K)` on entries of size
# about `sqrt(K)`).
#
# The next cell measures it: one program computes a 64 x 64 product over `K = 1024` in both
# precisions, and we compare each, and torch's fp32 product, with an exact one (fp64).

# %%
@triton.jit
def dot_precision_kernel(a_ptr, b_ptr, c_ptr, K, PRECISION: tl.constexpr):
    """c = a @ b for a (64, K) and a (K, 64) contiguous fp32 matrix, by one program, with tl.dot's
    input_precision set to PRECISION."""
    rows = tl.arange(0, 64)
    ks = tl.arange(0, 64)
    acc = tl.zeros((64, 64), dtype=tl.float32)
    for k in range(0, K, 64):
        a = tl.load(a_ptr + rows[:, None] * K + (k + ks)[None, :])
        b = tl.load(b_ptr + (k + ks)[:, None] * 64 + rows[None, :])
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    tl.store(c_ptr + rows[:, None] * 64 + rows[None, :], acc)


K = 1024
a, b = rand(64, K), rand(K, 64)
exact = a.double() @ b.double()
scale = exact.abs().max().item()
for precision in ["tf32", "ieee"] if not ON_GPU or CAPABILITY >= (8, 0) else ["ieee"]:  # no TF32 before 8.0
    c = torch.empty(64, 64, device=DEVICE)
    dot_precision_kernel[(1,)](a, b, c, K, PRECISION=precision)
    print(f"tl.dot, input_precision={precision!r:7}: largest error {(c.double() - exact).abs().max().item():.2e}, "
          f"{(c.double() - exact).abs().max().item() / scale:.1e} of the largest entry ({scale:.1f})")
print(f"torch.matmul in fp32:              largest error {((a @ b).double() - exact).abs().max().item():.2e}")
if not ON_GPU:
    print("Interpreter: both precisions are IEEE fp32 here. On a GPU of compute capability 8.0 or newer, "
          "TF32's error is about a thousand times larger.")


# %% [markdown] nbgrader={"grade": true, "grade_id": "written_tf32", "points": 2, "solution": true}
# **Written answer W1 (2 points).** On a GPU, your `matmul` on two fp32 matrices of size
# 4096 x 4096 differs from `torch.matmul` by a few hundredths in entries of size about 64, while
# under the interpreter the two agree to six digits. Explain where the difference comes from, why the tests'
# tolerance for fp32 grows like `sqrt(K)`, and what you would change in the kernel if an
# application needed full fp32 accuracy, and what that would cost.
#
# ### BEGIN SOLUTION
# On fp32 inputs tl.dot defaults to TF32 on GPUs of compute capability 8.0 and newer: the tensor
# cores keep only the top 10 bits of each input's mantissa (a truncation toward zero, relative error
# up to 2^-10, about 1e-3) before multiplying, and add the products in fp32. torch.matmul on fp32
# uses IEEE fp32 by default (TF32 is off for matmul unless allowed), and the interpreter computes
# tl.dot with NumPy in IEEE fp32, so both are about a thousand times more accurate. Each product is
# off by about 1e-3 of its size, and the products have random signs, so an entry sums K errors of
# random sign, which add like a random walk: the error of an entry grows like sqrt(K) (about
# 1e-3 * sqrt(K) for N(0, 1) inputs, whose entries are themselves about sqrt(K) in size: 0.06 at
# K = 4096). A tolerance that did not grow with K would fail correct kernels on long products, and
# one much larger would let real bugs (a missing K tail changes an entry by about 1) through. For
# full fp32 accuracy pass input_precision="ieee" to tl.dot (or "tf32x3", three TF32 products, close
# to fp32 accuracy): IEEE does not use the tensor cores at all and runs at the fp32 CUDA-core rate
# (67 against about 495 TFLOP/s of TF32 on an H200, several times slower); tf32x3 does three times
# the tensor-core work.
# ### END SOLUTION

# %% [markdown]
# ## 5. Measuring the launch order
#
# Time to see the grouped order at work, on your kernel. The next cell times `matmul` on an
# 8192 x 4096 by 4096 x 8192 fp16 product (big enough that `B`, 64 MB, does not fit in an H200's L2
# cache) in 128 x 128 tiles with `BLOCK_K = 64`, for `GROUP_M` from 1 (row-major) to 16. Its
# performance is in **TFLOP/s**: `2 * M * N * K` operations divided by the time. (Under the
# interpreter the product is small and the times mean nothing about GPUs.)
#
# What to expect on an H200: no clear winner. In the reference solution's runs the two orders came
# out within run-to-run noise of each other (grouped at 0.90x to 1.04x of row-major's speed over
# five runs), although `B` does not fit in L2 here. Even if every wave of row-major order read all
# of `B` from memory again, that would be at most about 2 GB (4096 tiles in waves of 132 programs or
# more: at most 32 waves, 64 MB each), about 0.5 ms at 4.2 TB/s, less than the 0.9 ms the arithmetic
# takes at 600 TFLOP/s: the re-reads hide behind the tensor cores. Grouping pays where the panels
# that a wave re-reads do not stay in L2 and re-reading them costs more than the arithmetic can
# hide: larger products, GPUs with a smaller L2 (an A100 has 40 MB, an L4 48 MB, a T4 4 MB), or GPUs
# with less memory bandwidth per FLOP.

# %% nbgrader={"grade_id": "tflops", "locked": true}
# The course's helpers for the tests of this lesson (read-only: grading restores them).
def tflops(M, N, K, ms):
    return 2 * M * N * K / (ms * 1e-3) / 1e12


# %%
dtype = torch.float16 if torch.float16 in DOT_DTYPES else torch.float32
# Below compute capability 8.0 tl.dot runs fp32 on the CUDA cores: smaller tiles and problems there.
tensor_cores = ON_GPU and dtype == torch.float16
M, N, K = (8192, 8192, 4096) if tensor_cores else sized((2048, 2048, 1024), (128, 128, 64))
tile = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64) if tensor_cores else dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=sized(32, 64))
x = rand(32, 48, dtype=dtype)
with guarded_allocations():  # first make sure that matmul is right: a stub or a bug stops here
    check_product(call_answer(matmul, x, x.t()), x, x.t(), "matmul")
a, b = rand(M, K, dtype=dtype), rand(K, N, dtype=dtype)
group_times = {}
for group_m in [1, 2, 4, 8, 16]:
    group_times[group_m] = bench_ms(lambda: matmul(a, b, GROUP_M=group_m, **tile))
    print(f"GROUP_M = {group_m:2}: {group_times[group_m]:8.3f} ms, {tflops(M, N, K, group_times[group_m]):7.3g} TFLOP/s")
if ON_GPU:
    print(f"Grouped (GROUP_M = 8) against row-major: {group_times[1] / group_times[8]:.2f}x the speed.")
else:
    print("Interpreter: these times measure Python on the CPU and mean nothing about GPUs. On an H200 "
          "the two orders measured within run-to-run noise of each other at this size (grouped at "
          "0.91x to 1.04x of row-major's speed over three runs).")
del a, b

# %% [markdown] nbgrader={"grade": true, "grade_id": "written_grouped_order", "points": 2, "solution": true}
# **Written answer W2 (2 points).** Report the times or TFLOP/s you measured for `GROUP_M = 1` and
# `GROUP_M = 8` (under the interpreter, use the panel counts printed in section 2 instead) and
# explain the difference: which data do programs that run at the same time share in each order,
# where does it come from when they share it, and why does the order not change the number of
# operations at all?
#
# ### BEGIN SOLUTION
# (Figures from an H200; a student's own numbers will differ, and an answer is graded on its
# reasoning and on reporting its own numbers honestly.) On the 8192 x 8192 x 4096 product the two
# orders measured close: grouped order ran at 1.04x row-major's speed in one run (593 against 572
# TFLOP/s) and at 0.91x in another (561 against 615), so at this size on this GPU the difference
# is within run-to-run noise. Both do exactly the same 2*M*N*K operations, tile by tile; only the
# order in which programs take their tiles changes, and with it where their loads are served. About
# 132 programs run at once (one wave). In row-major order a wave covers two or three rows of tiles
# and all 64 columns: it needs a few row panels of A but every column panel of B (64 MB in fp16,
# more than the 50 MB L2 cache), so panels of B can be evicted before the next row of tiles comes
# back to them and read from HBM again. In grouped order a wave covers 8 rows and about 17 columns:
# 8 panels of A and 17 of B (about 25 MB), which fit in L2 while the programs of the wave, and of
# the next wave in the same group, reuse them. That the times barely differ says L2 served most of
# the reused panels in row-major order too, at this size on an H200: with no reuse between
# programs at all, a 128 x 128 x 64 tile's 64 FLOP per byte loaded would leave the kernel
# memory-bound, far below the ridge of about 200. And what row-major order does read again from
# HBM, at most all of B once per wave (about 2 GB, 0.5 ms at 4.2 TB/s), takes less time than the
# arithmetic (0.9 ms), so it hides behind the tensor cores. Grouping would pay where re-reads cost
# more than the arithmetic hides: larger products, a smaller L2 (40 MB on an A100, 4 MB on a T4),
# less bandwidth per FLOP.
# ### END SOLUTION

# %% [markdown]
# ## 6. Autotuning
#
# The best tile sizes depend on the GPU, the dtype and the shape: bigger tiles reuse more, but need
# more registers and shared memory and leave fewer programs to spread over the multiprocessors. Two
# more knobs matter on a GPU: `num_warps`, the warps that share a program's work, and `num_stages`,
# how many buffers for blocks of `A` and `B` the compiler keeps in shared memory, so that it loads
# up to `num_stages - 1` steps ahead of the `tl.dot` that needs them (*software pipelining*: the
# loads of later steps overlap the product of this one).
#
# The stages are paid for in shared memory. A buffer holds a block of `A` and one of `B`,
# `(BLOCK_M + BLOCK_N) * BLOCK_K * element_size` bytes, 48 KB for 128 x 256 x 64 in fp16; for this
# kernel Triton 3.6 to 3.9 allocate `num_stages` buffers on Hopper (H100, H200) and, for
# `num_stages` of 2 or more, `num_stages - 1` on Ampere (A100). So the second configuration below,
# 128 x 256 x 64 with `num_stages=4`, takes 192 KB of the 227 KB an H200 gives one program. One
# that needs more than the GPU has fails with "out of resource: shared memory"; the autotuner
# skips it.
#
# **Seeing what the compiler did.** A launch returns the compiled kernel, as in lesson 5's
# exercise 3. On a GPU, `compiled = matmul_kernel[grid](...)` tells you:
#
# - `compiled.metadata.shared`: the bytes of shared memory one program uses;
# - `compiled.n_regs`: registers per thread; `compiled.n_spills`: 32-bit values per thread that
#   did not fit in registers and were *spilled* to local memory, which is slow (0 is what you
#   want);
# - `compiled.asm["ttgir"]` and `compiled.asm["ptx"]`: the kernel at two stages of compilation,
#   Triton's GPU-level IR (its layouts; the pipelined loads are `ttg.async_copy_global_to_local`)
#   and NVIDIA's assembly (the tensor-core instructions: `wgmma.mma_async` on Hopper, `mma.sync`
#   on Ampere).
#
# Nobody guesses these. **`triton.autotune`** takes a list of `triton.Config`s, times the kernel
# with each (many runs, as `do_bench` does) the first time it sees a new value of the `key`
# arguments, keeps the fastest, and uses it from then on. It wraps a kernel you already have:
#
# ```python
# matmul_kernel_tuned = triton.autotune(configs=[...], key=["M", "N", "K"])(matmul_kernel)
# ```
#
# The configurations supply the block sizes, so the launch no longer passes them, and the grid must
# be computed from the chosen configuration: a function of its parameters, `meta`, instead of a
# tuple:
#
# ```python
# grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
# ```
#
# **What the tuner remembers.** Its choices live in memory, in the tuned kernel, for the rest of
# the Python process, one per *tuning key*: the values of the `key` arguments, here `(M, N, K)`,
# plus the dtype of every argument that has one (each tensor). A new shape, or the same shape in
# bf16 instead of fp16, tunes again; the strides are not in the key, so a transposed `A` of a shape
# already tuned reuses that choice (add `"stride_am"` to `key` if it should not). Each
# configuration is timed over many runs, so a kernel that adds into its output (with
# `tl.atomic_add`, say) would add up all of them: `reset_to_zero=["c_ptr"]` has the tuner zero
# that argument before every run (`restore_value=[...]` saves and restores arguments that a
# kernel updates in place). `matmul_kernel` overwrites `C`, so it needs neither. A launch through
# the tuner returns the compiled kernel of the configuration it chose.
#
# Tuning costs a compile and a timing per configuration, so keep the list short. (Under the
# interpreter the tuner cannot time anything, so the cell below keeps only the last configuration
# there.)
#
# ## Exercise 5: `matmul_tuned` (2 points)
#
# Write `matmul_tuned(a, b)`: `matmul` again, but launching `matmul_kernel_tuned` with a grid
# function and without block sizes. The configurations above it are a good start for an A100 or
# H100-class GPU, in fp16; you may change them.

# %% nbgrader={"grade_id": "matmul_tuned", "solution": true}
TUNING_CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=4),
    triton.Config({"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=4),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4, num_stages=4),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=4, num_stages=4),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4, num_stages=3),
]
matmul_kernel_tuned = triton.autotune(configs=sized(TUNING_CONFIGS, TUNING_CONFIGS[-1:]), key=["M", "N", "K"])(
    matmul_kernel)


def matmul_tuned(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b by matmul_kernel, with the block sizes that autotuning found fastest for this shape."""
    ### BEGIN SOLUTION
    assert a.shape[1] == b.shape[0], f"inner dimensions differ: a is {tuple(a.shape)}, b is {tuple(b.shape)}"
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    matmul_kernel_tuned[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                              c.stride(0), c.stride(1))
    return c
    ### END SOLUTION


# %% [markdown]
# On a GPU the first call for a new shape tunes: the tests call `matmul_tuned` once before they
# count its launches, so that the tuner's own runs are not taken for your answer's.

# %% nbgrader={"grade": true, "grade_id": "test_matmul_tuned", "locked": true, "points": 1}
for a, b in [(matrix(33, 47), matrix(47, 65)), (matrix(65, 40, "transposed", DOT_DTYPES[-1]),
                                                 matrix(40, 30, "contiguous", DOT_DTYPES[-1]))]:
    call_answer(matmul_tuned, a, b)  # tunes, on a GPU
    run_product(matmul_tuned, a, b)
print("matmul_tuned is right, with the configuration the tuner chose.")

# %% nbgrader={"grade": true, "grade_id": "test_matmul_tuned_hidden", "locked": true, "points": 1}
# Hidden tests check matmul_tuned on more shapes, layouts and dtypes when your notebook is graded.
### BEGIN HIDDEN TESTS
# On a GPU every new shape and dtype is tuned (a compile and a timing per configuration): a few only.
for (M, N, K), dtype in zip([(1, 1, 1), (100, 3, 70), (3, 100, 70), (97, 65, 1)], DOT_DTYPES * 2):
    a, b = matrix(M, K, dtype=dtype), matrix(K, N, "transposed", dtype)
    call_answer(matmul_tuned, a, b)
    run_product(matmul_tuned, a, b)
print("matmul_tuned passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# ## 7. A fused epilogue: bias and ReLU
#
# A linear layer followed by a ReLU computes `relu(x @ W.T + bias)`, with `x` of shape `(M, K)`,
# the weight `W` of shape `(N, K)` (PyTorch's convention) and `bias` of `N` numbers. Run as three
# kernels, the product writes `C` to memory, the bias kernel reads it and writes it back, and the
# ReLU reads and writes it once more: four extra passes over `C` (lesson 4's memory wall). But when
# your kernel's accumulator is complete, the tile is still in registers: adding the bias and taking
# the maximum with 0 there, before the store, costs nothing. That last step of a kernel is its
# **epilogue**, and fusing work into it is one of the main reasons to write a matmul kernel
# yourself.
#
# Two details:
#
# - `W.T` needs no copy: `B[k, n] = W[n, k]`, so pass `W`'s strides swapped as `B`'s
#   (`stride_bk = W.stride(1)`, `stride_bn = W.stride(0)`): lesson 3's transpose for free.
# - The bias is one number per column of the tile: load `bias_ptr + offs_n` (masked, `other=0.0`),
#   in fp32, and add it to every row with `acc + bias[None, :]`.
#
# ## Exercise 6: `linear_relu_kernel` and `linear_relu` (5 points)
#
# Write `linear_relu_kernel`, which reuses your two helpers (`tile_of_program` and
# `accumulate_tile`) and adds the epilogue before the store, and `linear_relu(x, weight, bias)`,
# which launches it (like `matmul`, with the same block-size parameters) and returns
# `relu(x @ weight.T + bias)` in `x`'s dtype, contiguous. `bias` is a vector of `N` numbers; make it
# contiguous in `linear_relu` if it is not (`N` numbers: that copy is cheap).

# %% nbgrader={"grade_id": "linear_relu", "solution": true}
@triton.jit
def linear_relu_kernel(x_ptr, w_ptr, bias_ptr, out_ptr, M, N, K, stride_xm, stride_xk, stride_wn, stride_wk,
                       stride_om, stride_on, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                       GROUP_M: tl.constexpr):
    """out = relu(x @ w.T + bias), one program per tile of out, the bias and ReLU applied before the store."""
    ### BEGIN SOLUTION
    pid_m, pid_n = tile_of_program(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    acc = accumulate_tile(x_ptr, w_ptr, M, N, K, stride_xm, stride_xk, stride_wk, stride_wn, pid_m, pid_n,
                          BLOCK_M, BLOCK_N, BLOCK_K)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)
    acc = tl.maximum(acc + bias[None, :], 0.0)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on, acc.to(out_ptr.dtype.element_ty),
             mask=mask)
    ### END SOLUTION


def linear_relu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32,
                GROUP_M=8) -> torch.Tensor:
    """relu(x @ weight.T + bias) in one kernel; x is (M, K), weight (N, K), bias (N,)."""
    ### BEGIN SOLUTION
    assert x.shape[1] == weight.shape[1], f"x is {tuple(x.shape)} but weight is {tuple(weight.shape)}"
    M, K = x.shape
    N = weight.shape[0]
    bias = bias.contiguous()
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    linear_relu_kernel[grid](x, weight, bias, out, M, N, K, x.stride(0), x.stride(1), weight.stride(0),
                             weight.stride(1), out.stride(0), out.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                             BLOCK_K=BLOCK_K, GROUP_M=GROUP_M)
    return out
    ### END SOLUTION


# %% nbgrader={"grade_id": "linear_checks", "locked": true}
# The course's helpers for the tests of this lesson (read-only: grading restores them).
def run_linear_relu(M, N, K, dtype=torch.float32, weight_layout="contiguous", bias_step=1, **blocks):
    """linear_relu on fresh inputs: x (M, K), weight (N, K) in the given layout, a bias whose numbers
    lie bias_step apart in memory. Checked against torch with run_product (x @ weight.T is a @ b)."""
    x, weight = matrix(M, K, dtype=dtype), matrix(N, K, weight_layout, dtype)
    bias = rand(N * bias_step, dtype=dtype)[::bias_step]
    launches = run_product(linear_relu, x, weight.t(), call_with=(x, weight, bias), bias=bias, relu=True, **blocks)
    if len(launches) != 1:
        raise CheckFailed(f"linear_relu launched {len(launches)} kernels ({', '.join(launches)}): the bias "
                          "and the ReLU belong in the epilogue of the one kernel.")


# %% nbgrader={"grade": true, "grade_id": "test_linear_relu", "locked": true, "points": 2}
run_linear_relu(33, 65, 47)
run_linear_relu(40, 50, 70, dtype=DOT_DTYPES[-1])
print("linear_relu is right, in one kernel launch.")

# %% nbgrader={"grade": true, "grade_id": "test_linear_relu_hidden", "locked": true, "points": 3}
# Hidden tests check linear_relu on more shapes, layouts, dtypes and tiles when your notebook is graded.
### BEGIN HIDDEN TESTS
for M, N, K in [(1, 1, 1), (1, 97, 33), (97, 1, 33), (200, 16, 24), (37, 41, 1)]:
    run_linear_relu(M, N, K)
for dtype in DOT_DTYPES:
    run_linear_relu(65, 47, 70, dtype=dtype)
    run_linear_relu(33, 45, 39, dtype=dtype, weight_layout="transposed", bias_step=3)
run_linear_relu(50, 40, 30, weight_layout="a slice", BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, GROUP_M=1)
run_linear_relu(50, 70, 40, BLOCK_M=32, BLOCK_N=16, BLOCK_K=64, GROUP_M=4)
print("linear_relu passed the hidden tests.")
### END HIDDEN TESTS

# %% [markdown]
# What does the epilogue save? The next cell times three ways to compute `relu(x @ W.T + bias)`
# in fp16, with `M = N = K = 4096` on a GPU:
#
# - your `linear_relu`: one kernel;
# - your `matmul` with the same tiles, followed by `torch.relu(c + bias)`: the same product, then two
#   more kernels that read and write `C`;
# - PyTorch: `torch.relu(torch.nn.functional.linear(x, W, bias))` (cuBLAS can add the bias in its
#   own epilogue, and the ReLU is a kernel of its own).

# %%
M = N = K = 4096 if tensor_cores else sized(2048, 64)
x, weight, bias = rand(M, K, dtype=dtype), rand(N, K, dtype=dtype), rand(N, dtype=dtype)
with guarded_allocations():  # first make sure that linear_relu is right: a stub or a bug stops here
    small = (x[:40, :50], weight[:30, :50], bias[:30])
    check_product(call_answer(linear_relu, *small), small[0], small[1].t(), "linear_relu", bias=small[2], relu=True)
epilogue_times = {
    "linear_relu (fused)": bench_ms(lambda: linear_relu(x, weight, bias, **tile)),
    "matmul, then torch.relu(c + bias)": bench_ms(lambda: torch.relu(matmul(x, weight.t(), **tile) + bias)),
    "torch.relu(F.linear(x, W, bias))": bench_ms(lambda: torch.relu(torch.nn.functional.linear(x, weight, bias))),
}
for label, ms in epilogue_times.items():
    print(f"{label:36}: {ms:8.3f} ms, {tflops(M, N, K, ms):7.3g} TFLOP/s")
fused, unfused = epilogue_times["linear_relu (fused)"], epilogue_times["matmul, then torch.relu(c + bias)"]
print(f"The fused epilogue saved {unfused - fused:.3f} ms of {unfused:.3f} ({1 - fused / unfused:.0%}).")
if not ON_GPU:
    print("Interpreter: these times measure Python on the CPU and mean nothing about GPUs. On a GPU the two "
          "extra kernels each read and write C (4 * 32 MB at this size): about 0.03 ms on an H200, "
          "next to a product of about 0.2 ms.")
del x, weight, bias

# %% [markdown]
# ## 8. Against cuBLAS
#
# `torch.matmul` calls cuBLAS, NVIDIA's matrix library, tuned by hand for each GPU over many years.
# The plot compares it with your `matmul_tuned` and your `matmul` (fixed 64 x 64 tiles) on square
# fp16 products. On an H200, the reference answer (this kernel, grouped order, the seven
# configurations above) measured 0.87x to 0.91x cuBLAS's TFLOP/s at 4096 and 0.96x to 1.06x at
# 8192, over five runs (three in fp16 and bf16, two in fp16); cuBLAS's own figure moved by a tenth
# from run to run. That is within about a tenth of cuBLAS in about forty lines of Python. The rest is the schedule,
# not the instructions: on Hopper `tl.dot` already compiles to the same warp-group tensor-core
# instructions cuBLAS uses, but cuBLAS runs persistent, warp-specialised kernels fed by the tensor
# memory accelerator. A *persistent* kernel launches about as many programs as the GPU has
# multiprocessors (132 on an H200), and each loops over many tiles of `C` (tile `pid`, then
# `pid + 132`, ...) instead of computing one and exiting: no program starts up per tile, and the
# next tile's first loads can overlap this tile's epilogue. *Warp-specialised*: some warps of a
# program only load, while the others compute. The tensor memory accelerator (TMA) is a unit of
# Hopper GPUs that copies whole tiles between memory and shared memory by itself. (Triton's
# tutorial *Persistent Matmul* writes such kernels.) Small products are a different story. Their
# kernels run for microseconds, and the launch costs about as much: the autotuner's Python wrapper
# and Triton's launcher take tens of microseconds of CPU per call, which is why `matmul_tuned` can
# trail even `matmul` at the smallest sizes. And with few tiles most multiprocessors sit idle; cuBLAS has
# special kernels for that (splitting `K` among programs, for instance).
#
# **Where the last tenth goes, measured.** On an H200, in one run, this lesson's kernel was
# launched with each of twelve configurations beside two textbook layouts of it (Triton's
# tutorial's, with offsets wrapped by `%` and contiguity hints, and one that recomputes its
# pointers at every step of `K`), fp16 and bf16, 2048 to 8192. Its best configuration (128 x 256 x
# 64 tiles, 8 warps, 4 stages) reached 0.93x to 1.00x cuBLAS and the textbook layouts 0.93x to
# 1.01x: the same, within the noise (cuBLAS itself measured 641 to 706 TFLOP/s at 4096 in that one
# run, as the GPU's clock followed its power draw). Three things make the rest:
#
# - **Waves.** At 4096, 128 x 256 tiles make 512 programs for 132 multiprocessors: 3.9 waves, and
#   the last one leaves an eighth of the GPU idle. At 8192 (15.5 waves) the tail is a small share,
#   and the same kernel reached 0.99x. A persistent kernel, which deals the tiles out itself, has
#   no such tail.
# - **Stages.** One stage more or less moved a configuration by up to 8% (`num_stages` 3 against 4
#   at 4096), and not the same way for every layout: the reason the tuner tries both.
# - **The host.** At 2048, the kernel launched directly reached 0.98x to 1.00x cuBLAS; `matmul_tuned`,
#   the same kernel behind the autotuner and the wrapper's Python, 0.41x to 0.68x: a product that
#   lasts 28 us on the GPU is finished before Python has issued the next. Timed with CUDA graphs,
#   which replay the launches without Python, `matmul_tuned` reached 0.95x at 2048.

# %%
x = rand(40, 50, dtype=dtype)
with guarded_allocations():  # first make sure that matmul_tuned is right: a stub or a bug stops here
    check_product(call_answer(matmul_tuned, x, x.t()), x, x.t(), "matmul_tuned")
sides = sized([256, 512, 1024, 2048, 4096, 8192], [32, 64, 96])
speeds = {"torch.matmul (cuBLAS)": [], "matmul_tuned (yours, autotuned)": [], "matmul (yours, 64 x 64 tiles)": []}
for side in sides:
    a, b = rand(side, side, dtype=dtype), rand(side, side, dtype=dtype)
    for label, fn in zip(speeds, [torch.matmul, matmul_tuned, matmul]):
        speeds[label].append(tflops(side, side, side, bench_ms(lambda: fn(a, b))))
    print(f"{side:5}^3: " + ", ".join(f"{label.split(' (')[0]} {values[-1]:7.4g}" for label, values in speeds.items())
          + " TFLOP/s")
    del a, b
plot_tflops(sides, speeds, f"C = A @ B, square, {str(dtype).removeprefix('torch.')}")

# %% [markdown]
# ## Exercise 7: `matmul_tuned` against cuBLAS (3 points)
#
# No new code: on a GPU this test times your `matmul_tuned` and `torch.matmul` on a 4096 x 4096 x
# 4096 fp16 product, one after the other in the same notebook, and expects yours to reach at least
# **0.75 times cuBLAS's TFLOP/s**. A tiled kernel with grouped order and a few good configurations
# clears it with room to spare; small tiles (16 x 16) or a kernel without `tl.dot` fall well short
# (copies of the inputs before the product cost about a sixth at this size). The first call tunes,
# inside the timed section. Under the interpreter, and on GPUs below compute capability 8.0 (where
# Triton has no tensor-core path and this notebook gives `tl.dot` no fp16), the test prints the
# numbers and passes.

# %% nbgrader={"grade": true, "grade_id": "test_matmul_performance", "locked": true, "points": 3}
TARGET = 0.75  # of cuBLAS's TFLOP/s, at 4096^3 in fp16
graded = ON_GPU and torch.float16 in DOT_DTYPES
dtype = torch.float16 if torch.float16 in DOT_DTYPES else torch.float32
side = 4096 if graded else sized(1024, 64)
x = rand(16, 16, dtype=dtype)  # a tiny product first: a missing mask is caught here, inside the guard bands
with guarded_allocations():
    check_product(call_answer(matmul_tuned, x, x), x, x, "matmul_tuned on (16, 16) @ (16, 16)")
a, b = rand(side, side, dtype=dtype), rand(side, side, dtype=dtype)
with exclusive_gpu():  # under the grader, no other notebook runs on the GPU meanwhile
    atol, rtol = product_tolerance(dtype, side)
    ours, theirs = bench_against(lambda a, b: call_answer(matmul_tuned, a, b), torch.matmul, a, b,
                                 expect=expected_product, atol=atol, rtol=rtol)
with count_launches() as launches:  # tuned already: only the answer's own launches are counted
    out = call_answer(matmul_tuned, a, b)
expect_launched(launches, "matmul_tuned", out)
check_product(out, a, b, f"matmul_tuned on {side}^3")
del out
verdict = (f"matmul_tuned on {side}^3 {str(dtype).removeprefix('torch.')}: {ours:.3f} ms "
           f"({tflops(side, side, side, ours):.3g} TFLOP/s), torch.matmul {theirs:.3f} ms "
           f"({tflops(side, side, side, theirs):.3g} TFLOP/s): {theirs / ours:.2f}x cuBLAS; the target is {TARGET}x.")
check_speed_against(theirs, ours, TARGET, verdict,
                    f"matmul_tuned at 4096^3 in fp16 for {TARGET}x the\nTFLOP/s of torch.matmul (cuBLAS)",
                    "Do TUNING_CONFIGS include large tiles (128 x 128 or more, BLOCK_K = 64, num_stages 3 or 4)? "
                    "Does accumulate_tile load each block of A and B once per step, give masked lanes their zero "
                    "with other=0.0 (not tl.where after the load), and use tl.dot, and does matmul_tuned pass the "
                    "strides instead of copying?", graded)

# %% [markdown]
# ## What you learned
#
# - A matrix product does `2 * M * N * K` operations on `M*K + K*N + M*N` numbers: done right it is
#   **compute-bound**, limited by the tensor cores, not by memory. Done naively (a row and a column
#   per entry) it moves thousands of times more bytes.
# - **Tiles** give reuse inside a program: a `BLOCK_M x BLOCK_N` tile reads `(BLOCK_M + BLOCK_N) * K`
#   numbers for `2 * BLOCK_M * BLOCK_N * K` operations. The **order** of the tiles gives reuse
#   between programs: grouped order keeps the panels a wave needs few enough to stay in L2.
# - The **loop over K**: blocks of `A` and `B` through their strides, `acc = tl.dot(a, b, acc)` into
#   an **fp32 accumulator**, one rounding at the store. Masks on `M`, `N` and the **K tail**, with
#   `other=0.0` on **both** operands, because `tl.dot` sums over every lane.
# - **Strides** make transposes free: `A.t()` and `W.T` are the same numbers, read in another order.
# - On fp32 inputs a GPU's `tl.dot` uses **TF32** from compute capability 8.0 on (each input
#   truncated to 10 bits of mantissa: about 1e-3 relative error per product;
#   `input_precision="ieee"` for true fp32); the interpreter computes IEEE fp32. Tolerances must say
#   which one they expect.
# - **Autotuning** (`triton.autotune`) picks tiles, warps and pipeline stages per shape, by timing.
# - An **epilogue** (bias, activation, scaling, a cast) fused before the store is nearly free; as
#   separate kernels it costs passes over `C`.
#
# **Next, lesson 07 (attention):** FlashAttention's forward pass: two matrix products per tile, with
# lesson 4's softmax in between, computed online so that the huge matrix of attention scores never
# touches memory.

"""The kit's checks on real kernels under Triton's interpreter: each mistake gets its message."""
import contextlib
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from autograder import kit  # first: without a GPU it sets TRITON_INTERPRET, which Triton reads on import

import triton  # noqa: E402 (after the kit, so that tl.sum and friends are interpreted too)
import triton.language as tl  # noqa: E402
from conftest import patient  # noqa: E402
from autograder.kit import (CheckFailed, call_answer, check_output, count_launches, expect_launched,
                            guarded_allocations, guarded_empty, rand)


@triton.jit
def masked_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


@triton.jit
def unmasked_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) + tl.load(y_ptr + offsets))


@triton.jit
def loads_unmasked_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):  # masks its store, not its loads
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) + tl.load(y_ptr + offsets), mask=offsets < n)


@triton.jit
def block_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr, MASKED: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    if MASKED:
        x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    else:
        x = tl.load(x_ptr + offsets)
    tl.store(out_ptr, tl.sum(x, axis=0))


@triton.jit
def row_sum_unmasked(x_ptr, out_ptr, stride_row, BLOCK: tl.constexpr):  # every row reads BLOCK columns
    row = tl.program_id(0)
    tl.store(out_ptr + row, tl.sum(tl.load(x_ptr + row * stride_row + tl.arange(0, BLOCK)), axis=0))


@triton.jit
def stub_kernel(x_ptr, n, BLOCK: tl.constexpr):
    raise NotImplementedError()


def launch(kernel, x, y, out, programs, block=256):
    kernel[(programs,)](x, y, out, x.numel(), BLOCK=block)
    return out


def test_mode_follows_the_machine():
    if torch.cuda.is_available():
        assert kit.MODE == "cuda" and kit.ON_GPU and kit.DEVICE.type == "cuda"
    else:
        assert kit.MODE == "interpreter" and not kit.ON_GPU and kit.DEVICE.type == "cpu"
        assert torch.bfloat16 not in kit.FLOAT_DTYPES, "the interpreter has no bf16"


def test_a_correct_kernel_passes():
    x, y = rand(1000), rand(1000)
    check_output(launch(masked_add, x, y, guarded_empty(1000), 4), x + y, name="add")


def test_a_missing_mask_is_named():
    x, y = rand(1000), rand(1000)
    out = launch(unmasked_add, x, y, guarded_empty(1000), 4)
    with pytest.raises(CheckFailed, match=r"24 element\(s\) were written past the end.*did you mask the store"):
        check_output(out, x + y, name="add")


def test_a_grid_too_small_is_named():
    x, y = rand(1000), rand(1000)
    out = launch(masked_add, x, y, guarded_empty(1000), 3)
    with pytest.raises(CheckFailed, match=r"element 768 of 1000 .*was ever written.*triton.cdiv"):
        check_output(out, x + y, name="add")


def test_an_unmasked_load_is_caught():  # on a GPU, by the interpreter's replay of the launch
    x, y = rand(1000), rand(1000)
    out = guarded_empty(1000)
    with pytest.raises(CheckFailed, match=r"loads_unmasked_add read past the end of x_ptr \(a tensor of "
                                          r"1000 elements\): 24 lane\(s\).*Did you mask the load "
                                          r"\(mask=offsets < n\)"):
        call_answer(lambda: launch(loads_unmasked_add, x, y, out, 4), name="add_kernel")


def test_an_unmasked_load_is_caught_even_if_the_answer_hides_the_error():
    def add(x, y):
        out = torch.empty_like(x)
        try:
            launch(loads_unmasked_add, x, y, out, 4)
        except Exception:
            pass
        return out

    with pytest.raises(CheckFailed, match="read past the end of x_ptr"):
        call_answer(add, rand(1000), rand(1000))


def test_the_last_row_of_a_strided_view_read_past_its_end_is_caught():
    x = rand(37, 150)[:, :100]  # rows 150 apart: the tails of rows 0 to 35 stay inside the view
    out = guarded_empty(37)
    with pytest.raises(CheckFailed, match=r"row_sum_unmasked read past the end of x_ptr \(shape \(37, 100\), "
                                          r"strides \(150, 1\)\): 28 lane\(s\)"):
        call_answer(lambda: row_sum_unmasked[(37,)](x, out, x.stride(0), BLOCK=128))


@triton.jit
def _unmasked_load(ptr, offsets):
    return tl.load(ptr + offsets)


@triton.jit
def loads_unmasked_through_a_helper(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, _unmasked_load(x_ptr, offsets) + tl.load(y_ptr + offsets, mask=offsets < n),
             mask=offsets < n)


@pytest.fixture
def as_on_a_gpu(monkeypatch):
    """The kit as on a GPU: kernels are JITFunctions, and call_answer replays their launches on the
    interpreter first. Without a GPU the launch itself is carried out by the interpreter too (unwatched,
    as a GPU runs it). Returns what makes a GPU kernel of one of this file's kernels."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction
    monkeypatch.setattr(kit, "_REPLAYED", {"launches": {}, "seconds": 0.0, "running": False, "timing": 0})
    if not kit.ON_GPU:
        monkeypatch.setattr(kit, "ON_GPU", True)
        def run_as_a_gpu_does(self, *args, grid, warmup, **kwargs):  # Triton's language as it found it
            with kit._language_kept():
                return kit._INTERPRETED_RUN(InterpretedFunction(self.fn), *args, grid=grid, warmup=warmup, **kwargs)
        monkeypatch.setattr(JITFunction, "run", run_as_a_gpu_does)
    return lambda kernel: JITFunction(kernel.fn)


def test_on_a_gpu_a_small_launch_is_replayed_where_its_loads_are_seen(as_on_a_gpu):
    kernel, x, y = as_on_a_gpu(loads_unmasked_add), rand(1000), rand(1000)
    with pytest.raises(CheckFailed, match=r"loads_unmasked_add read past the end of x_ptr \(a tensor of "
                                          r"1000 elements\): 24 lane\(s\)"):
        call_answer(lambda: launch(kernel, x, y, guarded_empty(1000), 4), name="add")


def test_on_a_gpu_a_helper_the_kernel_calls_is_replayed_too(as_on_a_gpu):
    kernel, x, y = as_on_a_gpu(loads_unmasked_through_a_helper), rand(1000), rand(1000)
    with pytest.raises(CheckFailed, match="loads_unmasked_through_a_helper read past the end of x_ptr"):
        call_answer(lambda: launch(kernel, x, y, guarded_empty(1000), 4), name="add")


@triton.jit
def _tile_of(pid, n_tiles_n):  # a helper that returns a tuple, as 06's tile_of_program does
    return pid // n_tiles_n, pid % n_tiles_n


@triton.jit
def product_without_k_mask(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK: tl.constexpr):
    """06's matmul with the K tail unmasked (06's sample dee): rows and columns masked, K not."""
    pid_m, pid_n = _tile_of(tl.program_id(0), tl.cdiv(N, BLOCK))
    rows, cols, ks = pid_m * BLOCK + tl.arange(0, BLOCK), pid_n * BLOCK + tl.arange(0, BLOCK), tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, K, BLOCK):
        a = tl.load(a_ptr + rows[:, None] * K + (k + ks)[None, :], mask=rows[:, None] < M, other=0.0)
        b = tl.load(b_ptr + (k + ks)[:, None] * N + cols[None, :], mask=cols[None, :] < N, other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc, mask=(rows[:, None] < M) & (cols[None, :] < N))


def test_on_a_gpu_a_product_that_reads_past_the_k_tail_is_replayed_and_caught(as_on_a_gpu):
    """tl.dot, a helper returning a tuple, a loop, and inputs with spare memory after them (06's
    matrix()): the stray loads land in memory the process owns, so only the replay sees them."""
    kernel = as_on_a_gpu(product_without_k_mask)
    a, b = rand(33 + 64, 47)[:33], rand(47 + 64, 65)[:47]
    c = guarded_empty((33, 65))
    with pytest.raises(CheckFailed, match="product_without_k_mask read past the end of b_ptr"):
        call_answer(lambda: kernel[(2 * 3,)](a, b, c, 33, 65, 47, BLOCK=32), name="matmul")


def test_on_a_gpu_a_launch_that_read_past_the_end_is_caught_each_time_it_comes_back(as_on_a_gpu):
    """Each distinct launch is replayed once: a later test that makes the same launch (06's hidden
    tests start with the (1, 1) @ (1, 1) product of its visible ones) gets the first replay's verdict."""
    kernel, x, y = as_on_a_gpu(loads_unmasked_add), rand(1000), rand(1000)
    for _ in range(2):
        with pytest.raises(CheckFailed, match="loads_unmasked_add read past the end of x_ptr"):
            call_answer(lambda: launch(kernel, x, y, guarded_empty(1000), 4), name="add")
    assert len(kit._REPLAYED["launches"]) == 1


@triton.jit
def sigmoid_of_x(x_ptr, out_ptr, n, BLOCK: tl.constexpr):  # tl.sigmoid is a @triton.jit function of Triton's
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.sigmoid(tl.load(x_ptr + offsets, mask=offsets < n)), mask=offsets < n)


def test_on_a_gpu_the_replay_leaves_triton_language_as_it_found_it(as_on_a_gpu):
    """What the GPU compiles with next must be Triton's own language, not the interpreter's."""
    modules = (tl, tl.core, tl.math, tl.core.tensor)
    before = [dict(vars(module)) for module in modules]
    kernel, x = as_on_a_gpu(sigmoid_of_x), rand(100)
    out = call_answer(lambda: sigmoid_of_x_launch(kernel, x), name="sigmoid")
    check_output(out, torch.sigmoid(x), name="sigmoid")
    assert len(kit._REPLAYED["launches"]) == 1
    for module, was in zip(modules, before):
        changed = sorted(name for name, value in vars(module).items() if was.get(name, value) is not value)
        assert not changed and vars(module).keys() == was.keys(), (module, changed)


def sigmoid_of_x_launch(kernel, x):
    out = guarded_empty(x.numel())
    kernel[(1,)](x, out, x.numel(), BLOCK=128)
    return out


def test_on_a_gpu_the_replay_is_not_the_answers_work(as_on_a_gpu):
    kernel, x, y = as_on_a_gpu(masked_add), rand(1000), rand(1000)
    with count_launches() as launches:
        out = call_answer(lambda: launch(kernel, x, y, guarded_empty(1000), 4), name="add")
    expect_launched(launches, "add", out)
    assert list(launches) == ["masked_add"] and not launches.torch_ops
    assert len(kit._REPLAYED["launches"]) == 1  # it was replayed, once
    check_output(out, x + y, name="add")


def test_on_a_gpu_a_launch_too_large_to_replay_is_left_to_the_guard_bands(as_on_a_gpu):
    kernel = as_on_a_gpu(loads_unmasked_add)
    programs = kit._REPLAY_PROGRAMS
    for more, verdict in ((0, pytest.raises(CheckFailed)), (1, contextlib.nullcontext())):
        n = (programs + more) * 16 - 3
        x, y = rand(n), rand(n)
        with verdict:
            call_answer(lambda: launch(kernel, x, y, guarded_empty(n), programs + more, block=16), name="add")


def test_a_reduction_of_masked_lanes_with_other_passes():
    x, out = rand(20), guarded_empty(1)
    call_answer(lambda: block_sum[(1,)](x, out, 20, BLOCK=32, MASKED=True), name="block_sum")
    check_output(out, x.sum().reshape(1), name="block_sum", atol=1e-4)


def test_inputs_lie_between_poison_that_an_unmasked_reduction_brings_into_its_output():
    x, out = rand(20), guarded_empty(1)
    whole = torch.empty(0, dtype=x.dtype, device=x.device).set_(x.untyped_storage())
    after, before = whole[kit.GUARD + 20:kit.GUARD + 23].tolist(), whole[kit.GUARD - 3:kit.GUARD].tolist()
    assert after[0] == before[2] == float("inf") and after[1] != after[1] and before[1] != before[1]
    block_sum[(1,)](x, out, 20, BLOCK=32, MASKED=False)  # launched directly: what a GPU sees
    # Under the interpreter call_answer would have named the load: check_output speaks of overflow.
    said = "Either a load read past the end of an input" if kit.ON_GPU else "overflowed"
    with pytest.raises(CheckFailed, match=rf"element 0 of 1 is (nan|inf).*{said}"):
        check_output(out, x.sum().reshape(1), name="block_sum")


def test_wrong_values_give_the_first_bad_index():
    x, y = rand(1000), rand(1000) + 4  # x - y is x + y where y is within 1e-5 of 0: not here
    out = launch(masked_add, x, y, guarded_empty(1000), 4)
    with pytest.raises(CheckFailed, match=r"element 0 of 1000 is .* expected .*\(1000 of 1000 wrong\)"):
        check_output(out, x - y, name="add")


@pytest.mark.parametrize("at_once", [7, 1000, 2**24])
def test_a_big_output_is_compared_a_slice_at_a_time_with_the_same_verdict(at_once, monkeypatch):
    """check_output compares _COMPARED_AT_ONCE elements at a time (a GPU notebook's memory share
    holds a few copies of a 32768 x 4096 output, not the comparison's many): what it says does not
    depend on the slices."""
    monkeypatch.setattr(kit, "_COMPARED_AT_ONCE", at_once)
    # Away from 0: the poison of guarded_empty is random bits, nearly half the time a float below 1e-5,
    # which an expected value within 1e-5 of 0 would take as right (1 run in a few hundred).
    x = rand(1000) + 4
    wrong = x.clone()
    wrong[[3, 500, 999]] += 1
    check_output(x.clone(), x, name="same")
    with pytest.raises(CheckFailed, match=r"element 3 of 1000 is .* \(3 of 1000 wrong\)\. Check the offsets"):
        check_output(wrong, x, name="three wrong")
    out = guarded_empty(1000)
    out[:768] = x[:768]  # what a grid one block short leaves: the rest never written
    with pytest.raises(CheckFailed, match=r"element 768 of 1000 .*\(232 of 1000 wrong\).*was ever written"):
        check_output(out, x, name="short grid")


def test_an_answer_that_runs_out_of_gpu_memory_is_told_what_to_look_for():
    def attention_of_scores(x):  # torch's attention at a graded size, N x N scores in memory
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB.")
    with pytest.raises(CheckFailed, match=r"attention ran out of memory on the GPU.*N x N matrix of scores"):
        call_answer(attention_of_scores, rand(4), name="attention")


def test_modified_inputs_are_caught():
    x, y = rand(100), rand(100)
    before = x.clone()
    x += 1
    with pytest.raises(CheckFailed, match="modified in place"):
        check_output(x + y, x + y, inputs=[(x, before)])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_a_tolerance_never_asks_for_more_than_the_dtype_holds(dtype):
    # A correct kernel that adds in another order than torch may round to the next representable
    # value: a test's tight tolerance (05's column sums ask 1e-4) must not reject it.
    want = torch.tensor([0.7143, -3.3, 1000.25, 1e-3]).to(dtype)
    one_step = torch.nextafter(want, torch.full_like(want, math.inf))
    check_output(one_step, want, atol=1e-6, rtol=1e-6)
    three_steps = torch.nextafter(torch.nextafter(one_step, one_step + 1), one_step + 1)
    three_steps = torch.nextafter(three_steps, three_steps + 1)  # more than one step away: still wrong
    check_output(one_step, want, atol=0.0, rtol=0.0)  # the floor alone lets one step through
    with pytest.raises(CheckFailed, match="element 0 of 4"):
        check_output(three_steps, want, atol=0.0, rtol=0.0)


@pytest.mark.parametrize("out, message", [
    (None, "not a tensor: did you forget to return"),
    (torch.zeros(99), "shape"),
    (torch.zeros(100, dtype=torch.float64), "dtype"),
])
def test_wrong_kind_of_output(out, message):
    with pytest.raises(CheckFailed, match=message):
        check_output(out, torch.zeros(100))


def test_answer_own_buffer_is_guarded():
    def add(x, y):
        out = torch.empty_like(x)
        return launch(unmasked_add, x, y, out, triton.cdiv(x.numel(), 1024), block=1024)

    x, y = rand(3000), rand(3000)
    with guarded_allocations():
        out = add(x, y)
    assert torch.empty is kit._empty, "torch.empty must be restored after the block"
    with pytest.raises(CheckFailed, match="did you mask the store"):
        check_output(out, x + y)


def test_what_triton_allocates_inside_the_block_is_not_guarded():
    """An autotuner that benchmarks its configurations inside guarded_allocations() (the answer's
    first call at a new size) allocates a cache-flush buffer per configuration through torch.empty:
    kept until a check that never comes, guarded buffers held gigabytes on a GPU grader's 4 GiB."""
    library = {"__name__": "triton.testing", "torch": torch}
    exec("def flush_buffer():\n    return torch.empty(1 << 16, dtype=torch.int)", library)
    with guarded_allocations():
        before = len(kit._GUARDED)
        buffer, answers = library["flush_buffer"](), torch.empty(100)
    assert len(kit._GUARDED) == before + 1 and answers.data_ptr() in kit._GUARDED
    assert buffer.data_ptr() not in kit._GUARDED
    kit._GUARDED.pop(answers.data_ptr())


def test_launches_are_counted_and_a_torch_fallback_is_caught():
    x, y = rand(200)[::2], rand(10, 10).t()
    with guarded_allocations(), count_launches() as launches:  # the kit's own guard bands do not count
        x, y = x.contiguous(), y.to(x.device).float().reshape(-1)  # copies into a layout a kernel can use
        out = torch.zeros(10, 10, dtype=x.dtype, device=x.device).view(-1)
        out = launch(masked_add, x, y, out, 1).view(10, 10)[1:].t()
        print(f"debugging: {out[:3]}", out[:2], str(out))  # printing is not computing the answer
    assert launches == ["masked_add"]
    expect_launched(launches, "add", out)  # an honest answer: allocating, copying inputs and views are fine
    with count_launches() as launches:
        _ = x + y
    with pytest.raises(CheckFailed, match="launched no Triton kernel"):
        expect_launched(launches, "add")


@triton.jit
def nothing_kernel(x_ptr):
    pass


# Torch entry points a list of names missed: each reaches an aten op, or takes values out of torch.
@pytest.mark.parametrize("compute, message", [
    (lambda x, y, out: torch.add(x, y), r"aten\.add"),
    (lambda x, y, out: out.add_(0), r"aten\.add"),
    (lambda x, y, out: torch.ops.aten.add.Tensor(x, y), r"aten\.add"),
    (lambda x, y, out: x.__radd__(y), r"aten\.add"),
    (lambda x, y, out: out.copy_(x + y), r"aten\.add"),
    (lambda x, y, out: torch.addcmul(x, y, torch.ones_like(y)), r"aten\.addcmul"),
    (lambda x, y, out: torch.lerp(x, y, 0.5), r"aten\.lerp"),
    (lambda x, y, out: torch.where(x > y, x, y), r"aten\.gt, aten\.where"),
    (lambda x, y, out: out.zero_().index_add_(0, torch.arange(100, device=x.device), x),
     r"aten\.arange, aten\.index_add_"),
    (lambda x, y, out: out.zero_().scatter_(0, torch.arange(100, device=y.device), y), r"aten\.scatter"),
    (lambda x, y, out: torch.cumsum(torch.stack([x, y]), 0)[1], r"aten\.cumsum, aten\.stack"),
    (lambda x, y, out: torch.func.vmap(torch.add)(x, y), r"aten\.add"),
    (lambda x, y, out: torch.from_numpy(x.cpu().numpy() + y.cpu().numpy()).to(x.device), r"Tensor\.numpy"),
    pytest.param(lambda x, y, out: out.numpy().__setitem__(slice(None), x.numpy() + y.numpy()), r"Tensor\.numpy",
                 marks=pytest.mark.skipif(kit.ON_GPU, reason="NumPy cannot write into GPU memory")),
    (lambda x, y, out: x.new_tensor([a + b for a, b in zip(x.tolist(), y.tolist())]), r"Tensor\.tolist"),
    (lambda x, y, out: x.new_tensor(np.asarray(x.cpu()) + np.asarray(y.cpu())), r"Tensor\.__array__"),
    (lambda x, y, out: out.fill_(x[0].item()), r"Tensor\.item"),
])
def test_torch_besides_a_token_launch_is_caught_whatever_the_entry_point(compute, message):
    x, y = rand(100), rand(100)
    with count_launches() as launches:
        out = torch.empty_like(x)
        nothing_kernel[(1,)](out)
        result = compute(x, y, out)
    with pytest.raises(CheckFailed, match=rf"add computed with torch \(.*{message}.*\) besides launching"):
        expect_launched(launches, "add", result if isinstance(result, torch.Tensor) else out)


# One configuration: the interpreter cannot time several.
@triton.autotune(configs=[triton.Config({"BLOCK": 128})], key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % 128 == 0})
@triton.jit
def tuned_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


def test_an_autotuned_kernel_is_one_launch_named_after_its_function():
    x, y = rand(1000), rand(1000)
    with guarded_allocations(), count_launches() as launches:
        out = torch.empty_like(x)
        tuned_add[lambda meta: (triton.cdiv(1000, meta["BLOCK"]),)](x, y, out, 1000)
    assert launches == ["tuned_add"]
    expect_launched(launches, "add", out)
    check_output(out, x + y, name="add")


@triton.jit
def copies_nothing(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr = 128, CHOSEN: tl.constexpr = 0):
    pass


def _torch_add(args):
    """The answer, computed by torch into the output the kernel was given."""
    return torch.add(args["x_ptr"], args["y_ptr"], out=args["out_ptr"])


def _two_configs(**kwargs):
    return triton.autotune([triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})], key=["n"], **kwargs)


@triton.jit
def rewrites_by_descriptor(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    # x stored back unchanged through a descriptor made in the kernel, which lives in scratch memory
    # that the launcher asks triton.set_allocator's callback for
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[n], strides=[1], block_shape=[BLOCK])
    x_desc.store([0], x_desc.load([0]))


ON_HOPPER = kit.ON_GPU and kit.CAPABILITY >= (9, 0)


# The student's Python that Triton's launcher calls: each is watched like the rest of the answer.
@pytest.mark.parametrize("callback", [
    "heuristic", "pre_hook", "early_config_prune", "perf_model", "grid",
    pytest.param("post_hook", marks=pytest.mark.skipif(not kit.ON_GPU, reason="an autotuner calls its post_hook "
                                                       "only while it times its configurations: on a GPU")),
    pytest.param("allocator", marks=pytest.mark.skipif(not ON_HOPPER, reason="the launcher asks for scratch "
                                                       "memory for descriptors made in a kernel on Hopper")),
    pytest.param("launch_enter_hook", marks=pytest.mark.skipif(not kit.ON_GPU, reason="the interpreter calls no "
                                                               "launch hooks")),
])
def test_torch_in_a_callback_handed_to_the_launcher_is_caught(callback):
    x, y = rand(100), rand(100)
    kernel, grid = copies_nothing, (1,)
    if callback == "allocator":
        kernel = rewrites_by_descriptor
        triton.set_allocator(lambda size, alignment, stream: (
            _torch_add({"x_ptr": x, "y_ptr": y, "out_ptr": out}), torch.empty(size, dtype=torch.int8,
                                                                              device=x.device))[1])
    elif callback == "launch_enter_hook":
        triton.knobs.runtime.launch_enter_hook = lambda metadata: _torch_add({"x_ptr": x, "y_ptr": y,
                                                                            "out_ptr": out})
    elif callback == "heuristic":
        kernel = triton.heuristics({"CHOSEN": lambda args: int(_torch_add(args).numel() < 0)})(copies_nothing)
    elif callback == "pre_hook":
        kernel = triton.autotune([triton.Config({"BLOCK": 64}, pre_hook=_torch_add)], key=["n"])(copies_nothing)
    elif callback == "post_hook":
        kernel = _two_configs(post_hook=lambda args, exception: _torch_add(args))(copies_nothing)
    elif callback == "early_config_prune":
        kernel = _two_configs(prune_configs_by={"early_config_prune": lambda configs, nargs, **kw: (
            _torch_add(nargs), configs[:1])[1]})(copies_nothing)
    elif callback == "perf_model":
        kernel = _two_configs(prune_configs_by={"perf_model": lambda **kw: float(_torch_add(kw)[0]),
                                                "top_k": 0.5})(copies_nothing)
    else:
        def grid(meta):
            _torch_add({"x_ptr": x, "y_ptr": y, "out_ptr": out})
            return (1,)
    try:
        with count_launches() as launches:
            out = torch.empty_like(x)
            kernel[grid](x, y, out, 100)
    finally:  # the course's allocator (the setup cell's), and no hook
        triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=x.device))
        if hasattr(triton, "knobs"):
            triton.knobs.runtime.launch_enter_hook = None
    check_output(out, x + y, name="add")  # the kernel did nothing: torch, called back, did it all
    with pytest.raises(CheckFailed, match=r"add computed with torch \(.*aten\.add.*\) besides launching"):
        expect_launched(launches, "add", out)


@triton.jit
def add_pair(pointers, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(pointers[0] + offsets, mask=mask)
    tl.store(pointers[2] + offsets, x + tl.load(pointers[1] + offsets, mask=mask), mask=mask)


def test_an_output_handed_to_a_kernel_inside_a_tuple_counts_as_given():
    x, y = rand(1000), rand(1000)
    with count_launches() as launches:
        out = torch.empty_like(x)
        add_pair[(4,)]((x, y, out), 1000, BLOCK=256)
    expect_launched(launches, "add", out)  # the kernel wrote `out`, the third pointer of its tuple
    check_output(out, x + y, name="add")


def test_what_triton_does_in_a_launch_is_not_the_answers():
    """An autotuner's restore_value and reset_to_zero, and the interpreter's copies of the arguments,
    are Triton's own work inside the launch."""
    x, y = rand(1000), rand(1000)
    kernel = triton.autotune([triton.Config({"BLOCK": 128})], key=["n"], restore_value=["out_ptr"],
                             reset_to_zero=["out_ptr"])(masked_add)
    with count_launches() as launches:
        out = torch.empty_like(x)
        kernel[lambda meta: (triton.cdiv(1000, meta["BLOCK"]),)](x, y, out, 1000)
    expect_launched(launches, "add", out)
    check_output(out, x + y, name="add")


def test_an_output_that_torch_copied_values_into_is_caught():
    x = rand(30, 10).t()
    with count_launches() as launches:
        out = x.contiguous()  # copy_2d's answer made by torch, handed to a kernel that does nothing
        nothing_kernel[(1,)](out)
    with pytest.raises(CheckFailed, match=r"torch copied values into \(aten\.clone\)"):
        expect_launched(launches, "copy_2d", out)


def test_memory_torch_copied_into_but_that_was_freed_is_a_fresh_output():
    x, y = rand(4096), rand(4096)
    for _ in range(20):  # until the allocator hands the copy's memory to `out` (nearly always at once)
        with count_launches() as launches:
            copied = x.clone().data_ptr()  # a copy, freed at once
            out = launch(masked_add, x, y, torch.empty_like(x), 4)
        if out.data_ptr() == copied:
            break
    else:
        pytest.fail("the allocator never reused freed memory")
    expect_launched(launches, "add", out)


def test_an_output_no_kernel_was_given_is_caught():
    x, y = rand(100), rand(100)
    scratch = torch.empty_like(x)  # kept alive, so that the clone below cannot reuse its memory
    with count_launches() as launches:
        launch(masked_add, x, y, scratch, 1)
        out = y.clone()  # e.g. y + x computed before the block and copied here
    with pytest.raises(CheckFailed, match="none of its kernels was given"):
        expect_launched(launches, "add", out)


@triton.jit
def copy_by_descriptor(x_desc, out_desc, BLOCK: tl.constexpr):
    offset = tl.program_id(0) * BLOCK
    out_desc.store([offset], x_desc.load([offset]))


def test_an_output_handed_to_a_kernel_through_a_host_descriptor_counts_as_given():
    from triton.tools.tensor_descriptor import TensorDescriptor
    x = rand(64)
    with count_launches() as launches:
        out = torch.empty_like(x)
        copy_by_descriptor[(4,)](TensorDescriptor.from_tensor(x, [16]), TensorDescriptor.from_tensor(out, [16]),
                                 BLOCK=16)
    expect_launched(launches, "copy", out)  # the kernel wrote `out` through its descriptor
    check_output(out, x)
    with count_launches() as launches, pytest.raises(CheckFailed, match="none of its kernels was given"):
        other = torch.empty_like(x)
        copy_by_descriptor[(4,)](TensorDescriptor.from_tensor(x, [16]), TensorDescriptor.from_tensor(other, [16]),
                                 BLOCK=16)
        expect_launched(launches, "copy", x.clone())


def test_a_partial_of_a_stub_is_named_after_its_function():
    import functools

    def matmul_tuned(x, BLOCK):
        raise NotImplementedError()
    with pytest.raises(CheckFailed, match="matmul_tuned is still the exercise stub"):
        call_answer(functools.partial(matmul_tuned, BLOCK=16), rand(4))


def test_a_stub_kernel_is_reported_as_a_stub():
    x = rand(16)
    with pytest.raises(CheckFailed, match="still the exercise stub"):
        call_answer(lambda: stub_kernel[(1,)](x, 16, BLOCK=16), name="stub_kernel")


def test_bench_against_times_both_on_fresh_inputs_and_checks_only_ours():
    x = rand(1000)
    seen = []

    def reference(x):
        seen.append(x.clone())
        return x * 2

    def wrong(x):  # a result kept from the first call: a timed run's fresh inputs show it
        return torch.zeros_like(x)
    ours, theirs = kit.bench_against(lambda x: call_answer(launch, masked_add, x, x, torch.empty_like(x), 4), reference,
                                     x, expect=lambda x: x + x)
    assert ours > 0 and theirs > 0 and len(seen) >= 2 and not torch.equal(seen[0], seen[1])
    with pytest.raises(CheckFailed, match="in a timed run"):
        kit.bench_against(wrong, reference, x, expect=lambda x: x + x)


def test_fresh_inputs_differ_every_call():
    assert not torch.equal(rand(64), rand(64))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the cap is on GPU memory")
def test_under_the_grader_a_notebook_allocates_its_share_of_gpu_memory_and_no_more():
    probe = ("import torch\nfrom autograder import kit\n"
             "small = torch.empty(2**28, device='cuda')  # 1 GiB: within the share\n"
             "try:\n    torch.empty(2**29, device='cuda')  # 2 GiB more: past it\nexcept torch.OutOfMemoryError:\n"
             "    print('refused')\n")
    env = {**os.environ, "COURSE_GPU_MEMORY_GB": "2"}
    result = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=patient(120))
    assert result.stdout.strip().endswith("refused"), result.stdout + result.stderr  # after the kit's mode line


@pytest.mark.parametrize("capability, expected", [
    ((9, 0), [torch.float32, torch.float16, torch.bfloat16]),  # H100, H200
    ((8, 0), [torch.float32, torch.float16, torch.bfloat16]),  # A100
    ((8, 6), [torch.float32, torch.float16, torch.bfloat16]),  # RTX 30xx, A10
    ((7, 5), [torch.float32]),  # T4, Colab's usual GPU
    ((7, 0), [torch.float32]),  # V100
    ((6, 1), [torch.float32]),
])
def test_tl_dot_dtypes_follow_the_compute_capability(capability, expected):
    dtypes, reason = kit.dot_dtypes(capability)
    assert dtypes == expected
    assert f"compute capability {capability[0]}.{capability[1]}" in reason
    if torch.float16 not in dtypes:  # the student learns what runs here and how to run the rest
        assert "fp32 inputs" in reason and "interpreter" in reason and "TRITON_INTERPRET=1" in reason
    else:
        assert "TF32" in reason


def test_under_the_interpreter_tl_dot_takes_fp32_and_fp16_but_not_bf16():
    dtypes, reason = kit.dot_dtypes(None, interpreter=True)
    assert dtypes == [torch.float32, torch.float16]
    assert "IEEE fp32" in reason
    assert kit.dot_dtypes((9, 0), interpreter=True) == (dtypes, reason), "the interpreter is the interpreter"


def test_the_dot_dtypes_of_this_machine_are_float_dtypes_it_has():
    assert set(kit.DOT_DTYPES) <= set(kit.FLOAT_DTYPES) and torch.float32 in kit.DOT_DTYPES
    if kit.ON_GPU:  # the note speaks of this GPU, and of the interpreter where it is
        assert f"compute capability {kit.CAPABILITY[0]}.{kit.CAPABILITY[1]}" in kit.DOT_NOTE
    else:
        assert "IEEE fp32" in kit.DOT_NOTE and "interpreter" in kit.DOT_NOTE.lower()


def test_torch_compiled_runs_on_a_gpu_only_and_is_right_for_each_shape():
    x = kit.rand(4, 64)
    function = kit.torch_compiled(lambda t: torch.softmax(t, dim=-1), x)
    if not kit.ON_GPU:
        assert function is None  # on the CPU torch.compile writes C++, not Triton: nothing to compare
        return
    for shape in [(4, 64), (8, 256)]:  # a second shape is compiled again, for that shape
        y = kit.rand(*shape)
        torch.testing.assert_close(function(y), torch.softmax(y, dim=-1))


def test_a_compute_bound_test_grades_where_graded_and_advises_elsewhere(capsys):
    """check_speed_against: 06 and 07 ask a fraction of the vendor library's speed on a GPU."""
    verdict = "ours 2.000 ms, theirs 1.000 ms: 0.50x."
    with pytest.raises(CheckFailed, match="0.50x. Are the tiles large"):
        kit.check_speed_against(1.0, 2.0, 0.75, verdict, "0.75x", "Are the tiles large?", graded=True)
    kit.check_speed_against(1.0, 1.2, 0.75, verdict, "0.75x", "Are the tiles large?", graded=True)
    kit.check_speed_against(1.0, 20.0, 0.75, verdict, "0.75x of cuBLAS", "Are the tiles large?", graded=False)
    printed = capsys.readouterr().out
    assert printed.count(verdict) == 2 and "Advisory only" in printed and "0.75x of cuBLAS" in printed


@pytest.mark.parametrize("instrument", ["bench_ms", "bench_against", "copy_bandwidth"])
def test_an_answer_that_calls_the_kits_instruments_is_told_so(instrument):
    def time_gpu(fn, repeats=20):
        return {"bench_ms": lambda: kit.bench_ms(fn), "bench_against": lambda: kit.bench_against(fn, fn, rand(4)),
                "copy_bandwidth": kit.copy_bandwidth}[instrument]()

    with pytest.raises(CheckFailed, match=rf"time_gpu calls the kit's {instrument}, the instrument the course "
                                          "measures answers with"):
        call_answer(time_gpu, lambda: None)
    assert call_answer(lambda: 3) == 3  # the next answer starts afresh
    kit.bench_ms(lambda: None)  # and the kit's instruments still serve the tests themselves


def test_an_answer_that_calls_an_instrument_stops_there_whatever_it_catches():
    """It measures nothing and asks for no GPU turn: inside a test's timed section on a GPU grader
    such a request waited behind the test's own turn."""
    measured = []

    def time_gpu(fn, repeats=20):
        try:
            return kit.bench_ms(lambda: measured.append(1))
        except Exception:
            return 20.0

    with pytest.raises(CheckFailed, match="time_gpu calls the kit's bench_ms"):
        call_answer(time_gpu, lambda: None)
    assert measured == []


@triton.jit
def add_through_memory(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):  # stores x + y, loads it back
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)
    tl.store(out_ptr + offsets, tl.load(out_ptr + offsets, mask=mask) * 1.0, mask=mask)


@pytest.mark.parametrize("where", ["here", "as on a GPU"])
def test_memory_traffic_counts_the_bytes_each_kernel_moves(where, request, monkeypatch):
    monkeypatch.setattr(kit, "_REPLAYED", {"launches": {}, "seconds": 0.0, "running": False, "timing": 0})
    make = request.getfixturevalue("as_on_a_gpu") if where != "here" else (lambda kernel: kernel)
    x, y = rand(1000), rand(1000)
    for kernel, loaded, stored in ((masked_add, 8000, 4000), (add_through_memory, 12000, 8000)):
        with kit.memory_traffic() as moved:
            call_answer(lambda: launch(make(kernel), x, y, guarded_empty(1000), 4), name="add")
        assert (moved.counted, moved.loaded, moved.stored) == (True, loaded, stored), kernel
    with kit.memory_traffic() as moved:
        pass
    assert not moved.counted


def test_on_a_gpu_a_timed_call_is_not_replayed(as_on_a_gpu):
    """The replay's CPU time would be timed with the kernel: bench_ms leaves it to the untimed calls."""
    kernel, x, y = as_on_a_gpu(loads_unmasked_add), rand(1000), rand(1000)
    with kit._timing():  # what bench_ms runs its calls in
        call_answer(lambda: launch(kernel, x, y, guarded_empty(1000), 4), name="add")
    assert not kit._REPLAYED["launches"]
    with pytest.raises(CheckFailed, match="read past the end"):
        call_answer(lambda: launch(kernel, x, y, guarded_empty(1000), 4), name="add")

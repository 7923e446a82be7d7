"""The kit's checks on real kernels under Triton's interpreter: each mistake gets its message."""
import os
import subprocess
import sys

import pytest
import torch
import triton
import triton.language as tl

from autograder import kit
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


def test_wrong_values_give_the_first_bad_index():
    x, y = rand(1000), rand(1000)
    out = launch(masked_add, x, y, guarded_empty(1000), 4)
    with pytest.raises(CheckFailed, match=r"element 0 of 1000 is .* expected .*\(1000 of 1000 wrong\)"):
        check_output(out, x - y, name="add")


def test_modified_inputs_are_caught():
    x, y = rand(100), rand(100)
    before = x.clone()
    x += 1
    with pytest.raises(CheckFailed, match="modified in place"):
        check_output(x + y, x + y, inputs=[(x, before)])


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


def test_launches_are_counted_and_a_torch_fallback_is_caught():
    x, y = rand(100), rand(100)
    with count_launches() as launches:
        out = launch(masked_add, x, y, torch.empty_like(x.contiguous()).view(-1), 1)
    assert launches == ["masked_add"]
    expect_launched(launches, "add", out)  # an honest answer: allocating and reshaping are fine
    with count_launches() as launches:
        _ = x + y
    with pytest.raises(CheckFailed, match="launched no Triton kernel"):
        expect_launched(launches, "add")


def _token_launch_then_torch(x, y):
    launch(masked_add, x, y, torch.empty_like(x), 1)
    return torch.add(x, y)


def _token_launch_then_numpy(x, y):
    launch(masked_add, x, y, torch.empty_like(x), 1)
    return torch.from_numpy(x.cpu().numpy() * 1.0 + y.cpu().numpy()).to(x.device)


@pytest.mark.parametrize("answer, message", [
    (_token_launch_then_torch, r"computed with torch \(add\)"),
    (lambda x, y: launch(masked_add, x, y, torch.empty_like(x), 1).add_(0), r"computed with torch \(add\)"),
    (_token_launch_then_numpy, r"computed with torch \(numpy\)"),
])
def test_a_torch_result_behind_a_token_launch_is_caught(answer, message):
    x, y = rand(100), rand(100)
    with count_launches() as launches:
        out = answer(x, y)
    with pytest.raises(CheckFailed, match=message):
        expect_launched(launches, "add", out)


def test_an_output_no_kernel_was_given_is_caught():
    x, y = rand(100), rand(100)
    scratch = torch.empty_like(x)  # kept alive, so that the clone below cannot reuse its memory
    with count_launches() as launches:
        launch(masked_add, x, y, scratch, 1)
        out = y.clone()  # e.g. y + x computed before the block and copied here
    with pytest.raises(CheckFailed, match="none of its kernels was given"):
        expect_launched(launches, "add", out)


def test_a_stub_kernel_is_reported_as_a_stub():
    x = rand(16)
    with pytest.raises(CheckFailed, match="still the exercise stub"):
        call_answer(lambda: stub_kernel[(1,)](x, 16, BLOCK=16), name="stub_kernel")


def test_fresh_inputs_differ_every_call():
    assert not torch.equal(rand(64), rand(64))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the cap is on GPU memory")
def test_under_the_grader_a_notebook_allocates_its_share_of_gpu_memory_and_no_more():
    probe = ("import torch\nfrom autograder import kit\n"
             "small = torch.empty(2**28, device='cuda')  # 1 GiB: within the share\n"
             "try:\n    torch.empty(2**29, device='cuda')  # 2 GiB more: past it\nexcept torch.OutOfMemoryError:\n"
             "    print('refused')\n")
    env = {**os.environ, "COURSE_GPU_MEMORY_GB": "2"}
    result = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
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
    assert kit.DOT_NOTE == kit.dot_dtypes(kit.CAPABILITY, interpreter=not kit.ON_GPU)[1]

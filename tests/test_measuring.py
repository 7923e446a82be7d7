"""The kit's measurements: a performance test's timed calls do the work they are credited for, a
grader's GPU run cannot be graded as advisory, and the grader's variables are gone before any
student code runs."""
import os
import subprocess
import sys
import time

import pytest
import torch

from autograder import kit  # first: without a GPU it sets TRITON_INTERPRET, which Triton reads on import
from autograder.kit import CheckFailed, bench_ms, rand
from conftest import patient

ADD = torch.add  # the expected result of the timed functions below


def test_every_timed_call_gets_new_values_in_inputs_of_the_same_layout():
    x, y = rand(64, 32).t(), rand(32, 64)  # a transposed view keeps its layout
    strides, seen = x.stride(), []

    def add(x, y):
        seen.append((x.data_ptr(), x.stride(), x[0, 0].item()))
        return x + y

    assert 0 < bench_ms(add, x, y, expect=ADD) < 60e3  # milliseconds
    assert x.stride() == strides and {stride for _, stride, _ in seen} == {strides}, "every set keeps the layout"
    assert x.data_ptr() in {ptr for ptr, _, _ in seen} and len({ptr for ptr, _, _ in seen}) > 1, \
        "the given tensors and copies of them, timed back to back"
    assert len({value for _, _, value in seen}) == len(seen) >= 6, "new values for every call"


def test_a_result_kept_from_an_earlier_call_fails_the_measurement():
    kept = {}

    def add(x, y):
        if (id(x), id(y)) not in kept:
            kept[id(x), id(y)] = x + y
        return kept[id(x), id(y)]

    with pytest.raises(CheckFailed, match="add in a timed run: .* computed from them by that call"):
        bench_ms(add, rand(1000), rand(1000), expect=ADD)


def test_a_call_that_skips_the_work_after_the_first_fails_the_measurement():
    calls = []

    def add(x, y):
        calls.append(1)
        return x + y if len(calls) == 1 else torch.empty_like(x)

    with pytest.raises(CheckFailed, match="add in a timed run"):
        bench_ms(add, rand(1000), rand(1000), expect=ADD)


def test_a_function_without_inputs_is_timed_as_it_is():
    calls = []

    def two_milliseconds():
        calls.append(1)
        time.sleep(2e-3)

    assert bench_ms(two_milliseconds) >= 2.0, "the median call, in milliseconds"
    assert len(calls) >= (6 if kit.ON_GPU else 2), "a first call outside the measurement, then the timed ones"


def test_the_graders_variables_are_taken_out_of_the_environment_by_the_setup():
    probe = ("import os\nfrom autograder import kit\n"
             "print(sorted(k for k in os.environ if k.startswith('COURSE_')), sorted(kit._GRADER))")
    env = {**os.environ, "COURSE_GPU_TURN": "/nowhere/gpu0.turn", "COURSE_GPU_MEMORY_GB": "64"}
    result = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=patient(300))
    assert result.stdout.strip().splitlines()[-1] == "[] ['COURSE_GPU_MEMORY_GB', 'COURSE_GPU_TURN']", result.stderr


@pytest.mark.skipif(kit.ON_GPU, reason="on a GPU the kit's own mode is cuda")
def test_a_performance_test_is_not_advisory_when_the_grader_ran_the_notebook_on_a_gpu(monkeypatch, capsys):
    kit.check_bandwidth(1.0, 0.7, "add")  # the student's own run: advisory
    assert "Advisory only" in capsys.readouterr().out
    monkeypatch.setattr(kit, "_GRADED_IN", "cuda")  # what the grader's seal sets in its copy of the kit
    with pytest.raises(CheckFailed, match="The grader ran this notebook with a GPU"):
        kit.check_bandwidth(1.0, 0.7, "add")


def test_a_test_a_gpu_does_not_grade_stays_advisory_when_the_grader_ran_it_there(monkeypatch, capsys):
    """A compute-bound test graded on Hopper only, run by the grader on another GPU (an A100, say):
    the answer's kernels ran on that GPU, so the test advises, as in the student's own run."""
    monkeypatch.setattr(kit, "_GRADED_IN", "cuda")
    monkeypatch.setattr(kit, "ON_GPU", True)
    monkeypatch.setattr(kit, "CAPABILITY", (8, 0))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *args: "a pretend A100")
    kit.check_speed_against(2.0, 1.0, 0.9, "tma_matmul: 0.5x cuBLAS", "0.9x cuBLAS on compute capability 9.0",
                            "hint", graded=False)
    out = capsys.readouterr().out
    assert "Advisory only on this GPU (a pretend A100, compute capability 8.0)" in out and "0.5x cuBLAS" in out


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA streams need a GPU")
def test_work_left_running_on_another_stream_is_timed():
    side = torch.cuda.Stream()
    spin = 20_000_000  # GPU clock cycles: about 10 ms on an H200

    def add(x, y):
        out = x + y
        with torch.cuda.stream(side):
            torch.cuda._sleep(spin)  # work the function does not wait for
        return out

    def spin_alone():
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(spin)
        end.record()
        end.synchronize()
        return start.elapsed_time(end)
    alone = min(spin_alone() for _ in range(3))  # the first may run at an idle GPU's clock: twice as long
    assert bench_ms(add, rand(1000), rand(1000), expect=ADD) > 0.5 * alone


@pytest.mark.skipif(not torch.cuda.is_available(), reason="on a GPU only: the interpreter is the mode elsewhere")
def test_a_kernel_on_the_interpreter_fails_a_performance_test_on_a_gpu_at_once():
    import triton.language as tl
    from triton.runtime.interpreter import InterpretedFunction

    def copy(src, dst, BLOCK: tl.constexpr):  # what @triton.jit makes of it under TRITON_INTERPRET=1
        offsets = tl.arange(0, BLOCK)
        tl.store(dst + offsets, tl.load(src + offsets))

    interpreted = InterpretedFunction(copy)

    def copy_all(x):
        out = torch.empty_like(x)
        interpreted[(1,)](x, out, BLOCK=1024)
        return out

    with pytest.raises(CheckFailed, match="on Triton's interpreter, on a machine with a GPU"):
        bench_ms(copy_all, rand(1024), expect=torch.clone)

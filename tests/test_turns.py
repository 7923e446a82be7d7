"""Exclusive GPU turns (autograder/grade/turns.py), with real sandboxes, sockets and signals: while
one notebook takes a graded measurement, every other notebook on that GPU is paused; a notebook
cannot keep the GPU, nor take turn after turn. The turns themselves need no GPU."""
import contextlib
import json
import os
import re
import signal
import subprocess
import sys

import nbformat
import pytest
import torch

from autograder.demo import demo
from autograder.grade import sandbox
from autograder.grade.isolate import SandboxedExecute
from autograder.grade.turns import GpuTurns, descendants, process_tree
from autograder.samples import load_samples
from conftest import patient

pytestmark = pytest.mark.skipif(not sandbox.available(), reason="this machine cannot make user namespaces")

# Another notebook on the same GPU: a worker process whose child (the "sandbox") notes the time
# every 5 ms, so that the test can see whether it ran during a turn.
NEIGHBOUR = ("import subprocess, sys\n"
             "subprocess.run([sys.executable, '-c', 'import sys, time\\n'\n"
             "                'with open(sys.argv[1], \"a\") as log:\\n'\n"
             "                '    while True:\\n'\n"
             "                '        print(time.time(), file=log, flush=True)\\n'\n"
             "                '        time.sleep(0.005)', sys.argv[1]])\n")

TIMED = ("import time\n"
         "from autograder.kit import exclusive_gpu\n"
         "with exclusive_gpu():\n"
         "    print('began', time.time(), flush=True)\n"
         "    time.sleep({seconds})\n"
         "    print('ended', time.time(), flush=True)")


def _grade_with_turns(tmp_path, cells, hold=30.0, budget=60.0):
    """Run a notebook in the sandbox with the GPU turn socket, beside a neighbour on the same GPU.
    This test process plays the worker of the notebook; the neighbour has a worker of its own."""
    log = tmp_path / "neighbour.log"
    neighbour = subprocess.Popen([sys.executable, "-c", NEIGHBOUR, str(log)])
    folder, status = tmp_path / "submission", tmp_path / "status.json"
    folder.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    try:
        with GpuTurns(tmp_path, [0], lambda gpu: [neighbour.pid, os.getpid()], hold, budget) as turns:
            # On a GPU machine the sandbox is a GPU slot's, as the grader's is there: its memory is watched,
            # not capped by address space, in which CUDA's libraries do not load.
            step = SandboxedExecute(gpu_turn=str(turns.path(0)), deadline=round(patient(120)), status_file=str(status),
                                    memory_mb=4096, processes=64, gpu="0" if torch.cuda.is_available() else "")
            nb, _ = step.preprocess(nb, {"metadata": {"path": str(folder)}})
    finally:
        for pid in descendants([neighbour.pid], process_tree()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        neighbour.wait()
    ticks = [float(line) for line in log.read_text().split()]
    return nb, json.loads(status.read_text()), ticks


def _outputs(cell):
    return "".join(o.get("text", "") + o.get("evalue", "") for o in cell.outputs)


def _turn(cell):
    """When the notebook's timed block began and ended, as it printed them."""
    text = _outputs(cell)
    return tuple(float(re.search(rf"{word} ([0-9.]+)", text).group(1)) for word in ("began", "ended"))


def test_other_notebooks_are_paused_while_one_measures(tmp_path):
    nb, status, ticks = _grade_with_turns(tmp_path, [TIMED.format(seconds=1.0)])
    assert status["ended"] == "finished", status
    began, ended = _turn(nb.cells[0])
    during = [t for t in ticks if began < t < ended]
    assert not during, f"the neighbour ran {len(during)} time(s) during the turn"
    assert sum(1 for t in ticks if t < began) > 10, "the neighbour was not running before the turn"
    assert any(t > ended for t in ticks), "the neighbour never resumed"


def test_a_turn_held_too_long_is_taken_back_and_a_spent_share_refused(tmp_path):
    nb, status, ticks = _grade_with_turns(
        tmp_path, [TIMED.format(seconds=3.0), TIMED.format(seconds=0.1)], hold=1.0, budget=1.0)
    first, second = _outputs(nb.cells[0]), _outputs(nb.cells[1])
    assert "held the GPU for too long" in first, first
    assert "no more GPU time for measurements" in second, second
    began, ended = _turn(nb.cells[0])
    assert not [t for t in ticks if began < t < began + 0.9], "the neighbour ran during the turn"
    assert [t for t in ticks if began + 1.5 < t < ended], "the neighbour stayed paused after the turn was taken back"


SHARED = ("import time\n"
          "from autograder.kit import _grader_turn\n"
          "with _grader_turn(b's'):\n"
          "    time.sleep({seconds})\n"
          "print('plotted', flush=True)")


def test_plotted_measurements_do_not_spend_the_share_of_graded_ones(tmp_path):
    """A notebook whose plotted measurements (shared turns: the kit's bench_ms outside a graded
    section) used up their time still gets its graded turn, and its later plots still run. Seen on
    an H200: a timer that called bench_ms on CPU work spent a notebook's whole share in the lesson's
    plots, and its graded test then failed for want of a turn."""
    nb, status, ticks = _grade_with_turns(
        tmp_path, [SHARED.format(seconds=1.2), SHARED.format(seconds=0.1), TIMED.format(seconds=0.3)],
        budget=1.0)
    assert status["ended"] == "finished", status
    for cell in nb.cells[:2]:
        assert "plotted" in _outputs(cell), _outputs(cell)
    began, ended = _turn(nb.cells[2])
    assert not [t for t in ticks if began < t < ended], "the neighbour ran during the graded turn"


# The graded tests' sealed copy of the kit holds a turn and calls a student's function, which asks
# its own copy (the notebook's) for one: an honest time_gpu written `with exclusive_gpu():`.
NESTED = ("import importlib.util, time\n"
          "from autograder import kit as notebooks_copy\n"
          "spec = importlib.util.spec_from_file_location('tests_copy', notebooks_copy.__file__)\n"
          "tests_copy = importlib.util.module_from_spec(spec)\n"
          "spec.loader.exec_module(tests_copy)\n"
          "tests_copy._GRADER.update(notebooks_copy._GRADER)  # told where the turns are, as the seal's copy is\n"
          "tests_copy._GRADED_IN = 'interpreter'  # what the seal sets in its copy\n"
          "tests_copy._TESTS_TURN = notebooks_copy._TESTS_TURN  # shared, as the seal leaves it\n"
          "with tests_copy.exclusive_gpu():\n"
          "    print('began', time.time(), flush=True)\n"
          "    with notebooks_copy.exclusive_gpu():\n"
          "        time.sleep(0.3)\n"
          "    print('ended', time.time(), flush=True)\n"
          "with notebooks_copy.exclusive_gpu():  # and outside the tests' turn it asks for one of its own\n"
          "    print('began', time.time(), flush=True)\n"
          "    time.sleep(0.3)\n"
          "    print('ended', time.time(), flush=True)")


def test_a_turn_asked_for_inside_the_tests_turn_goes_ahead_inside_it(tmp_path):
    """Queued behind the tests' own turn, the student's request waited until the grader took that
    turn back (30 s on an H200, every other notebook paused, the notebook's share spent) and the test
    failed 'held the GPU for too long'. Inside the tests' turn the notebook's copy asks for none."""
    nb, status, ticks = _grade_with_turns(tmp_path, [NESTED], hold=3.0)
    assert status["ended"] == "finished", status
    text = _outputs(nb.cells[0])
    assert "held the GPU for too long" not in text and "Error" not in text, text
    spans = [tuple(map(float, pair)) for pair in re.findall(r"began ([0-9.]+)\s+ended ([0-9.]+)", text)]
    assert len(spans) == 2, text
    assert spans[0][1] - spans[0][0] < 2.0, f"the nested request waited {spans[0][1] - spans[0][0]:.1f} s"
    for began, ended in spans:
        assert not [t for t in ticks if began < t < ended], "the neighbour ran during a turn"


def test_the_batch_grades_on_a_gpu_slot_through_its_turns(course, tmp_path, capsys):
    """The whole pipeline with a GPU slot: the sockets reach the sandboxes and the graded timing of a
    correct notebook gets its exclusive turn (without a GPU the notebook falls back to the
    interpreter, where the check is advisory but the turn is still taken: a refused or failed turn
    would fail the performance test)."""
    samples = {name: sample for name, sample in load_samples(course, "02_vector_add").items()
               if name in ("ada", "bo")}
    grades = demo(course, "02_vector_add", reports=tmp_path / "reports", workdir=tmp_path / "class",
                  samples=samples, gpus=[0])
    scores = {g.student: (g.score, g.max_score) for g in grades}
    assert scores["ada"][0] == scores["ada"][1] and scores["bo"][0] == 0, scores
    # ada's performance test took the one exclusive turn (bo's add raises before it measures).
    out = capsys.readouterr().out
    assert "GPU 0 measurement turns: 1 exclusive (others paused)" in out, out

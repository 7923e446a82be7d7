"""A worker process (autograder/grade/worker.py) that dies loses no grade and leaves nothing
running: the submission it held gets a row with the reason, its notebook's sandbox dies with it,
and the next submission gets a fresh worker."""
import contextlib
import os
import signal
import threading
import time
from pathlib import Path

from autograder.demo import class_course
from autograder.grade import sandbox
from autograder.grade.collect import collect
from autograder.grade.run import make_template
from autograder.grade.settings import Settings
from autograder.grade.worker import Worker
from autograder.samples import load_samples
from conftest import patient, unavailable

LESSON = "02_vector_add"


def _parent_and_state(pid):
    """(parent PID, state letter) of a process, or None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), fields[0]


def _sandboxes_of(ancestor):
    """The PIDs of the sandbox inits running under process `ancestor` (other graders' are not counted)."""
    found = []
    for entry in (e for e in os.listdir("/proc") if e.isdigit()):
        with contextlib.suppress(OSError):
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            if b"autograder.grade.sandbox" in argv and b"--init" in argv:
                pid = int(entry)
                while pid > 1 and pid != ancestor and (known := _parent_and_state(pid)):
                    pid = known[0]
                found += [int(entry)] if pid == ancestor else []
    return found


def _alive(pid):
    known = _parent_and_state(pid)
    return known is not None and known[1] != "Z"  # a zombie has ended: only its exit status is left


def test_a_worker_that_dies_loses_no_grade_and_leaves_nothing_running(course, tmp_path):
    if not sandbox.available():
        unavailable("this machine cannot make user namespaces", "the worker test", "run it as root")
    # A notebook stuck in an endless loop (from the adversarial corpus), and an untouched one.
    corpus = load_samples(course, LESSON, folder="tests/corpus")
    students = {"ada": corpus["busy_loop_python"], "bo": corpus["release"]}
    class_dir = class_course(course, LESSON, students, tmp_path / "class")
    (tmp_path / "template").mkdir()
    template = make_template(class_dir, LESSON, tmp_path / "template")
    submissions = {s.student: s for s in collect(class_dir, LESSON)}
    worker = Worker(class_dir, LESSON, template, Settings(deadline=round(patient(120)), memory_mb=3072, processes=64))
    worker.start()
    running = []

    def kill_mid_notebook():
        while not (inits := _sandboxes_of(worker.process.pid)):  # wait until the notebook runs in its sandbox
            time.sleep(0.2)
        time.sleep(1)
        os.kill(worker.process.pid, signal.SIGKILL)
        time.sleep(2)
        running.append([pid for pid in inits if _alive(pid)])

    killer = threading.Thread(target=kill_mid_notebook)
    killer.start()
    try:
        died = worker.grade(submissions["ada"])
        killer.join()
        after = worker.grade(submissions["bo"])
    finally:
        worker.stop()
    assert died.student == "ada" and died.status == "error" and "worker process ended" in died.reason, died
    assert running == [[]], "the notebook's sandbox outlived its worker"
    assert after.student == "bo" and after.status == "failed tests" and after.max_score > 0, after

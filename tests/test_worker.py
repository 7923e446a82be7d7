"""A worker process (autograder/grade/worker.py) that dies loses no grade and leaves nothing
running: the submission it held gets a row with the reason, its notebook's sandbox dies with it,
and the next submission gets a fresh worker."""
import os
import signal
import subprocess
import threading
import time

import pytest

from autograder.demo import class_course
from autograder.grade import sandbox
from autograder.grade.collect import collect
from autograder.grade.run import make_template
from autograder.grade.settings import Settings
from autograder.grade.worker import Worker
from autograder.samples import load_samples

pytestmark = pytest.mark.skipif(not sandbox.available(), reason="this machine cannot make user namespaces")
LESSON = "02_vector_add"


def _sandboxes():
    """How many sandbox inits run on this machine."""
    listing = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return sum("autograder.grade.sandbox --init" in line for line in listing.splitlines())


def test_a_worker_that_dies_loses_no_grade_and_leaves_nothing_running(course, tmp_path):
    # A notebook stuck in an endless loop (from the adversarial corpus), and an untouched one.
    corpus = load_samples(course, LESSON, folder="tests/corpus")
    students = {"ada": corpus["busy_loop_python"], "bo": corpus["release"]}
    class_dir = class_course(course, LESSON, students, tmp_path / "class")
    (tmp_path / "template").mkdir()
    template = make_template(class_dir, LESSON, tmp_path / "template")
    submissions = {s.student: s for s in collect(class_dir, LESSON)}
    worker = Worker(class_dir, LESSON, template, Settings(deadline=120, memory_mb=3072, processes=64))
    worker.start()
    running = []

    def kill_mid_notebook():
        while _sandboxes() == 0:  # wait until the notebook runs in its sandbox
            time.sleep(0.2)
        time.sleep(1)
        os.kill(worker.process.pid, signal.SIGKILL)
        time.sleep(2)
        running.append(_sandboxes())

    killer = threading.Thread(target=kill_mid_notebook)
    killer.start()
    try:
        died = worker.grade(submissions["ada"])
        killer.join()
        after = worker.grade(submissions["bo"])
    finally:
        worker.stop()
    assert died.student == "ada" and died.status == "error" and "worker process ended" in died.reason, died
    assert running == [0], "the notebook's sandbox outlived its worker"
    assert after.student == "bo" and after.status == "failed tests" and after.max_score > 0, after

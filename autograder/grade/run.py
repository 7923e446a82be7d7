"""Step 2 of grading: run one submission through `nbgrader autograde`, under a wall-clock deadline."""
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RunResult:
    student: str
    returncode: int
    seconds: float
    log: str
    timed_out: bool


class AutogradeRunner:
    """nbgrader's own autograde, one student per process tree, killed whole at the deadline.

    A kernel spinning on a GPU ignores SIGINT, so the deadline is enforced with SIGKILL on the
    process group (nbgrader and the notebook kernel it started).
    """

    def __init__(self, course, assignment, timeout):
        self.course, self.assignment, self.timeout = course, assignment, timeout

    def __call__(self, submission):
        env = dict(os.environ)
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        command = [sys.executable, "-m", "nbgrader", "autograde", self.assignment,
                   "--student", submission.student, "--force"]
        start = time.monotonic()
        process = subprocess.Popen(command, cwd=self.course.root, env=env, text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            log, _ = process.communicate(timeout=self.timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            log, _ = process.communicate()
            timed_out = True
        return RunResult(submission.student, process.returncode, time.monotonic() - start, log, timed_out)

"""Step 2's processes: one long-lived grader per worker slot.

A worker imports nbgrader once and grades submission after submission (run.py's SandboxRunner),
so a batch pays for nbgrader's start once per worker, not once per notebook, and each notebook's
bookkeeping (scratch course, integrity checks, reading the results) runs in the worker, not in the
batch's one Python process.

    python -P -m autograder.grade.worker SPEC

reads submissions from stdin, one JSON line each, and answers each with one JSON line: its grade.
`Worker` is the batch's side: it kills a worker that does not answer in time, starts a new one, and
gives that submission a grade with the reason, so a hung or crashed worker never loses a row.
"""
import json
import os
import select
import signal
import subprocess
import sys
import time
import warnings
from dataclasses import asdict
from pathlib import Path

from sqlalchemy.exc import SAWarning

from autograder.course import Course
from autograder.grade.collect import Submission
from autograder.grade.record import StudentGrade, not_graded
from autograder.grade.run import SandboxRunner
from autograder.grade.settings import Settings
from autograder.grade.sandbox import die_with_parent

SLACK = 120  # seconds a worker may take beyond the notebook's deadline (scratch course, nbgrader)


class Worker:
    """A worker process, restarted whenever it fails to answer."""

    def __init__(self, course, assignment, template, settings, gpu=None, gpu_turn=None):
        self.template, self.assignment, self.settings = template, assignment, settings
        self.gpu, self.gpu_turn = gpu, gpu_turn
        self.spec = json.dumps({"course": str(course.root), "assignment": assignment,
                                "template": str(template.root), "settings": asdict(settings)})
        self.process = None

    def start(self):
        """Start the process: it imports nbgrader while the batch is still making the template."""
        # -P: the grader's working folder (perhaps the course) is not put on the import path.
        self.process = subprocess.Popen(
            die_with_parent([sys.executable, "-P", "-m", "autograder.grade.worker", self.spec]),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True)

    def stop(self):
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()
            self.process = None

    def grade(self, submission):
        started = time.monotonic()
        if self.process is None or self.process.poll() is not None:
            self.start()
        job = {"student": submission.student, "folder": str(submission.folder),
               "notebook": submission.notebook and str(submission.notebook), "flags": submission.flags,
               "notes": submission.notes,
               "gpu": self.gpu, "gpu_turn": self.gpu_turn and str(self.gpu_turn)}
        try:
            self.process.stdin.write(json.dumps(job) + "\n")
            self.process.stdin.flush()
            limit = self.settings.deadline + SLACK
            if select.select([self.process.stdout], [], [], limit)[0]:
                line = self.process.stdout.readline()
                if line:
                    return StudentGrade.from_json(line)
                reason = f"the grader's worker process ended (exit code {self.process.wait()})"
            else:
                reason = f"the grader itself ran past {limit} s on this notebook and was stopped"
        except (BrokenPipeError, ValueError, TypeError) as error:  # a dead pipe, a garbled answer
            reason = f"the grader's worker process failed ({type(error).__name__})"
        self.stop()
        return not_graded(submission.student, self.assignment, self.template,
                          f"{reason}; a person must look at it", time.monotonic() - started,
                          list(submission.flags), list(submission.notes))


def main(argv=None):
    spec = json.loads((argv or sys.argv[1:])[0])
    # Grades go to the original stdout alone; anything else printed (nbgrader, warnings) to stderr.
    results = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    warnings.simplefilter("ignore", SAWarning)  # nbgrader 0.9.6 and SQLAlchemy 2 (see merge.py)
    import nbgrader.apps  # noqa: F401 (the slow import, done before the first submission arrives)
    runner = None
    for line in sys.stdin:
        job = json.loads(line)
        if runner is None:  # the template is complete once submissions come
            runner = SandboxRunner(Course(Path(spec["course"])), spec["assignment"],
                                   Course(Path(spec["template"])), Settings(**spec["settings"]))
        submission = Submission(job["student"], Path(job["folder"]),
                                job["notebook"] and Path(job["notebook"]), job["flags"], job["notes"])
        grade = runner(submission, gpu=job["gpu"], gpu_turn=job["gpu_turn"])
        results.write(json.dumps(asdict(grade)) + "\n")
        results.flush()


if __name__ == "__main__":
    sys.exit(main())

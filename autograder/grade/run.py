"""Step 2 of grading: run one submission in a private copy of the course, its code in the sandbox.

Each submission gets a scratch course of its own (config, source, a fresh gradebook holding only
the assignment), so parallel runs never share an sqlite file and nothing a run does reaches the
real course. nbgrader's autograde runs there as the grader, with its Execute step swapped for
`SandboxedExecute`; a deadline on the whole process tree, enforced with SIGKILL, backs it up.
"""
import copy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder.course import Course
from autograder.grade import integrity
from autograder.grade.integrity import grade_id
from autograder.grade.record import not_graded, record

# nbgrader's autograde pipeline with its Execute step replaced by ours.
SANDBOX_CONFIG = """
from autograder.grade.isolate import SandboxedExecute
from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbgrader.preprocessors import AssignLatePenalties, CheckCellMetadata, IgnorePattern, LimitOutput, SaveAutoGrades

c.Autograde.autograde_preprocessors = [SandboxedExecute, IgnorePattern, ClearMetadataPreprocessor, LimitOutput,
                                       SaveAutoGrades, AssignLatePenalties, CheckCellMetadata]
"""


@dataclass(frozen=True)
class Settings:
    deadline: int = 900  # seconds for a whole notebook
    memory_mb: int = 8192
    processes: int = 256
    sandbox: bool = True
    threads: int = 0  # CPU threads per notebook (torch, NumPy); 0: the cores shared among the workers


def make_template(course, assignment, into):
    """A course holding only what grading needs: the config, source/<assignment>, a gradebook, and
    the release made from that source (what students received, to compare their notebooks with)."""
    template = Course(Path(into))
    shutil.copy(course.root / "nbgrader_config.py", template.root / "nbgrader_config.py")
    with (template.root / "nbgrader_config.py").open("a") as config:
        config.write(SANDBOX_CONFIG)
    shutil.copytree(course.root / "source" / assignment, template.root / "source" / assignment)
    template.nbgrader("generate_assignment", assignment, "--force")  # also makes the release to compare with
    return template


class SandboxRunner:
    """Grades one submission: scratch course, sandboxed autograde, record, integrity flags."""

    def __init__(self, course, assignment, template, settings):
        self.course, self.assignment, self.template, self.settings = course, assignment, template, settings
        self.release = nbformat.read(template.notebook("release", assignment), as_version=4)
        self.wrappers = integrity.kernel_wrappers(nbformat.read(template.notebook("source", assignment),
                                                                as_version=4))

    def __call__(self, submission, gpu=None, gpu_lock=None):
        started = time.monotonic()
        try:
            return self._grade(submission, gpu, gpu_lock, started)
        except Exception as error:  # one submission must never stop the batch: it gets a row and a reason
            return not_graded(submission.student, self.assignment, self.template,
                              f"the grader failed on this notebook ({type(error).__name__}: {error}); "
                              "a person must look at it", time.monotonic() - started, list(submission.notes))

    def _grade(self, submission, gpu, gpu_lock, started):
        if submission.notebook is None:
            return not_graded(submission.student, self.assignment, self.template, "; ".join(submission.notes))
        try:
            student_nb = nbformat.read(submission.notebook, as_version=4)
        except Exception as error:  # anything that is not a notebook: truncated, binary, wrong JSON
            return not_graded(submission.student, self.assignment, self.template,
                              f"the notebook could not be read ({type(error).__name__}: {error}); "
                              "was it saved completely, as .ipynb?")
        flags = submission.notes + integrity.tampering(student_nb, self.release) + \
            integrity.audit(student_nb, self.release, self.wrappers)
        with tempfile.TemporaryDirectory(prefix=f"grade-{submission.student}-") as scratch_dir:
            scratch = Course(Path(scratch_dir) / "course")
            shutil.copytree(self.template.root, scratch.root)
            target = scratch.root / "submitted" / submission.student / self.assignment
            shutil.copytree(submission.folder, target, ignore=shutil.ignore_patterns("*.ipynb"))
            nbformat.write(restore_missing(student_nb, self.release), target / f"{self.assignment}.ipynb")
            status_file = Path(scratch_dir) / "status.json"
            log = self._autograde(scratch, submission.student, status_file, gpu, gpu_lock)
            status = _json(status_file)
            grade = record(scratch, self.assignment, submission.student, status,
                           time.monotonic() - started, flags)
            if grade is None:
                return not_graded(submission.student, self.assignment, self.template,
                                  f"nbgrader could not grade it: {_last_error(log)}",
                                  time.monotonic() - started, flags)
            self._keep(scratch.root / "autograded" / submission.student / self.assignment, submission.student)
            return grade

    def _keep(self, autograded, student):
        """Copy the autograded notebook into the course, where nbgrader's feedback looks for it."""
        target = self.course.root / "autograded" / student / self.assignment
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(autograded, target)

    def _autograde(self, scratch, student, status_file, gpu, gpu_lock):
        settings = self.settings
        command = [sys.executable, "-m", "nbgrader", "autograde", self.assignment, "--student", student,
                   "--force", f"--SandboxedExecute.deadline={settings.deadline}",
                   f"--SandboxedExecute.memory_mb={settings.memory_mb}",
                   f"--SandboxedExecute.processes={settings.processes}",
                   f"--SandboxedExecute.threads={settings.threads}",
                   f"--SandboxedExecute.status_file={status_file}",
                   f"--SandboxedExecute.require_sandbox={settings.sandbox}",
                   f"--SandboxedExecute.gpu={'' if gpu is None else gpu}",
                   f"--SandboxedExecute.gpu_lock={gpu_lock or ''}"]
        process = subprocess.Popen(command, cwd=scratch.root, text=True, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        try:
            log, _ = process.communicate(timeout=settings.deadline + 120)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            log, _ = process.communicate()
            log += f"\nERROR: the grader itself ran past {settings.deadline + 120} s and was killed"
        return log


def restore_missing(submitted, release):
    """Put back every nbgrader cell of the release (setup, answers, tests) that the student deleted,
    after the nearest earlier release cell the notebook still has. nbgrader itself only puts back
    grade cells, and fails (KeyError) when the cell before a deleted one is gone too."""
    nb = copy.deepcopy(submitted)
    present = {grade_id(cell) for cell in nb.cells} - {None}
    for index, cell in enumerate(release.cells):
        name = grade_id(cell)
        if name is None or name in present:
            continue
        position = 0
        for earlier in reversed(release.cells[:index]):
            where = [i for i, mine in enumerate(nb.cells) if mine.get("id") == earlier.get("id")
                     or (grade_id(earlier) and grade_id(mine) == grade_id(earlier))]
            if where:
                position = where[0] + 1
                break
        nb.cells.insert(position, copy.deepcopy(cell))
        present.add(name)
    return nb


def _json(path):
    return json.loads(path.read_text()) if path.is_file() else {}


def _last_error(log):
    lines = [line.strip() for line in log.splitlines()
             if re.match(r"\s*[A-Za-z_.]*(Error|Exception)\b", line)] or \
        [line.strip() for line in log.splitlines() if "ERROR" in line or "Error" in line]
    return (lines or [line for line in log.strip().splitlines()[-1:]] or ["no output"])[-1][:500]

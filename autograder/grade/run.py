"""Step 2 of grading: run one submission in a private copy of the course, its code in the sandbox.

Each submission gets a scratch course of its own (config, source, a fresh gradebook holding only
the assignment), so parallel runs never share an sqlite file and nothing a run does reaches the
real course. nbgrader's autograde runs there as the grader, with its Execute step swapped for
`SandboxedExecute`. It runs inside a worker process (worker.py), which the batch kills and replaces
if it outlives the notebook's deadline.
"""
import copy
import json
import re
import shutil
import tempfile
import time
from pathlib import Path

import nbformat

from autograder.course import Course
from autograder.grade import integrity
from autograder.grade.collect import TIMESTAMP, beside_notebook, left_out_note
from autograder.grade.feedback import attach_notes
from autograder.grade.integrity import grade_id
from autograder.grade.isolate import grading_mode
from autograder.grade.record import not_graded, record
from autograder.grade.recover import recover_metadata

# nbgrader's autograde pipeline with its Execute step replaced by ours.
SANDBOX_CONFIG = """
from autograder.grade.isolate import SandboxedExecute
from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbgrader.preprocessors import AssignLatePenalties, CheckCellMetadata, IgnorePattern, LimitOutput, SaveAutoGrades

c.Autograde.autograde_preprocessors = [SandboxedExecute, IgnorePattern, ClearMetadataPreprocessor, LimitOutput,
                                       SaveAutoGrades, AssignLatePenalties, CheckCellMetadata]
"""


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

    def __call__(self, submission, gpu=None, gpu_turn=None):
        started = time.monotonic()
        try:
            return self._grade(submission, gpu, gpu_turn, started)
        except Exception as error:  # one submission must never stop the batch: it gets a row and a reason
            return not_graded(submission.student, self.assignment, self.template,
                              f"the grader failed on this notebook ({type(error).__name__}: {error}); "
                              "a person must look at it", time.monotonic() - started, list(submission.flags),
                              list(submission.notes))

    def _grade(self, submission, gpu, gpu_turn, started):
        if submission.notebook is None:
            return not_graded(submission.student, self.assignment, self.template, "; ".join(submission.flags),
                              notes=submission.notes)
        try:
            student_nb = nbformat.read(submission.notebook, as_version=4)
        except Exception as error:  # anything that is not a notebook: truncated, binary, wrong JSON
            return not_graded(submission.student, self.assignment, self.template,
                              f"the notebook could not be read ({type(error).__name__}: {error}); "
                              "was it saved completely, as .ipynb?", notes=submission.notes)
        left_out = beside_notebook(submission)
        notes = submission.notes + ([left_out_note(left_out, student_nb)] if left_out else [])
        student_nb, recovered, problem = recover_metadata(student_nb, self.release)
        flags = submission.flags + integrity.tampering(student_nb, self.release) + \
            integrity.audit(student_nb, self.release, self.wrappers)
        if problem:
            return not_graded(submission.student, self.assignment, self.template, problem,
                              time.monotonic() - started, flags, notes)
        notes += [recovered] if recovered else []
        if grading_mode(gpu) == "cuda":
            notes += [note for note in [integrity.interpreter_note(student_nb)] if note]
        with tempfile.TemporaryDirectory(prefix=f"grade-{submission.student}-") as scratch_dir:
            scratch = Course(Path(scratch_dir) / "course")
            shutil.copytree(self.template.root, scratch.root)
            # Only the notebook goes in (and nbgrader's timestamp): nothing handed in beside it is
            # in the folder the notebook runs in, so nothing there can be imported or read.
            target = scratch.root / "submitted" / submission.student / self.assignment
            target.mkdir(parents=True)
            if (submission.folder / TIMESTAMP).is_file():
                shutil.copy(submission.folder / TIMESTAMP, target / TIMESTAMP)
            nbformat.write(restore_missing(student_nb, self.release), target / f"{self.assignment}.ipynb")
            status_file = Path(scratch_dir) / "status.json"
            api = self._nbgrader(scratch, status_file, gpu, gpu_turn)
            log = _logged(api.autograde(self.assignment, submission.student, force=True, create=True))
            status = _json(status_file)
            flags = flags + status.get("flags", [])  # what the sealed tests found (execute.py, seal.py)
            grade = record(scratch, self.assignment, submission.student, status,
                           time.monotonic() - started, flags, notes)
            if grade is None:
                return not_graded(submission.student, self.assignment, self.template,
                                  f"nbgrader could not grade it: {_last_error(log)}",
                                  time.monotonic() - started, flags, notes)
            # The student's feedback is made here, in parallel, rather than for the class at the end;
            # it says the notes too (a file left out explains a failing import).
            attach_notes(scratch.root / "autograded" / submission.student / self.assignment /
                         f"{self.assignment}.ipynb", notes)
            made = api.generate_feedback(self.assignment, submission.student, force=True)
            if not made.get("success"):  # the student gets a page of verdicts instead (report.py)
                grade.reason = "; ".join(filter(None, [grade.reason, "nbgrader could not make the feedback "
                                                       f"page: {_last_error(_logged(made))}"]))
            for stage in ("autograded", "feedback"):
                self._keep(scratch, stage, submission.student)
            return grade

    def _keep(self, scratch, stage, student):
        """Copy the autograded notebook, or the feedback, into the course, where nbgrader keeps them."""
        source = scratch.root / stage / student / self.assignment
        target = self.course.root / stage / student / self.assignment
        shutil.rmtree(target, ignore_errors=True)
        if source.is_dir():
            shutil.copytree(source, target)

    def _nbgrader(self, scratch, status_file, gpu, gpu_turn):
        """nbgrader's API on the scratch course, in this process (a worker grades many submissions
        and imports nbgrader once), with the sandbox's settings for this run."""
        from nbgrader.apps import NbGraderAPI
        from nbgrader.coursedir import CourseDirectory
        from traitlets.config.loader import PyFileConfigLoader

        config = PyFileConfigLoader("nbgrader_config.py", path=str(scratch.root)).load_config()
        config.CourseDirectory.root = str(scratch.root)
        settings = self.settings
        config.SandboxedExecute.update(
            deadline=settings.deadline, memory_mb=settings.memory_mb, processes=settings.processes,
            threads=settings.threads, gpu_memory_gb=settings.gpu_memory_gb, status_file=str(status_file),
            require_sandbox=settings.sandbox,
            gpu="" if gpu is None else str(gpu), gpu_turn=str(gpu_turn or ""))
        return NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)


def _logged(result):
    """What an nbgrader API call logged, and its traceback if it failed: to explain a failure."""
    return result.get("log", "") + result.get("error", "")


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

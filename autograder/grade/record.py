"""Step 3 of grading: what each submission scored, per test, and why anything was short."""
import re
from dataclasses import dataclass, field

import nbformat
from nbgrader.api import Gradebook, MissingEntry

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class TestResult:
    test: str
    score: float
    max_score: float
    message: str = ""


@dataclass
class StudentGrade:
    student: str
    score: float
    max_score: float
    status: str  # ok | failed tests | needs manual grading | error
    reason: str = ""
    seconds: float = 0.0
    tests: list = field(default_factory=list)


def failure_message(cell):
    """The last line a failing test cell showed: for our checks, the teaching message."""
    for output in cell.get("outputs", []):
        if output.output_type == "error":
            text = f"{output.ename}: {output.evalue}" if output.evalue else output.ename
            return ANSI.sub("", text).strip()
    return "failed without an error message"


def _log_reason(run):
    if run.timed_out:
        return f"killed after {run.seconds:.0f} s: the notebook ran past the deadline (an endless loop?)"
    errors = [line for line in ANSI.sub("", run.log).splitlines() if "ERROR" in line or "Error" in line]
    return (errors[-1] if errors else run.log.strip().splitlines()[-1:] or ["no output"])[0].strip()


def record(course, assignment, run):
    """Read the gradebook and the autograded notebook for one student's run."""
    notebook = course.root / "autograded" / run.student / assignment / f"{assignment}.ipynb"
    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gradebook:
        try:
            submitted = gradebook.find_submission_notebook(assignment, assignment, run.student)
            max_score = gradebook.find_notebook(assignment, assignment).max_score
        except MissingEntry:
            max_score = gradebook.find_notebook(assignment, assignment).max_score
            return StudentGrade(run.student, 0.0, max_score, "error",
                                f"not graded: {_log_reason(run)}", run.seconds)
        grades = [(g.name, g.score, g.max_score) for g in submitted.grades if g.max_score]
        manual = sorted(g.name for g in submitted.grades if g.needs_manual_grade)
    if run.returncode != 0 or not notebook.is_file():
        return StudentGrade(run.student, 0.0, max_score, "error", f"not graded: {_log_reason(run)}",
                            run.seconds)
    cells = {cell.get("metadata", {}).get("nbgrader", {}).get("grade_id"): cell
             for cell in nbformat.read(notebook, as_version=4).cells}
    tests = [TestResult(name, score, top, "" if score >= top else failure_message(cells.get(name, {})))
             for name, score, top in grades]
    score = sum(t.score for t in tests)
    failed = [t for t in tests if t.score < t.max_score]
    reason = "; ".join([f"{t.test}: {t.message}" for t in failed] +
                       ([f"to grade by hand: {', '.join(manual)}"] if manual else []))
    status = "failed tests" if failed else "needs manual grading" if manual else "ok"
    return StudentGrade(run.student, score, max_score, status, reason, run.seconds, tests)

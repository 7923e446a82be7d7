"""Step 3 of grading: what a submission scored, per test, why anything was short, and its flags."""
import json
import re
from dataclasses import asdict, dataclass, field

import nbformat
from nbgrader.api import Gradebook, MissingEntry

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class TestResult:
    test: str
    score: float
    max_score: float
    message: str = ""
    manual: bool = False  # graded by a person; not a failure while it waits


@dataclass
class StudentGrade:
    student: str
    score: float
    max_score: float
    status: str  # ok | failed tests | needs manual grading | stopped | error
    reason: str = ""
    seconds: float = 0.0
    tests: list = field(default_factory=list)
    flags: list = field(default_factory=list)
    # seconds in the sandbox, of which starting it and the kernel, and each cell's (report.html)
    timings: dict = field(default_factory=dict)
    # what a person should know that is no integrity concern: files left out, metadata recovered
    notes: list = field(default_factory=list)

    def to_json(self):
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text):
        data = json.loads(text)
        data["tests"] = [TestResult(**t) for t in data["tests"]]
        return cls(**data)


def failure_message(cell):
    """The last line a failing test cell showed: for our checks, the teaching message."""
    for output in cell.get("outputs", []):
        if output.output_type == "error":
            text = f"{output.ename}: {output.evalue}" if output.evalue else output.ename
            return ANSI.sub("", text).strip()
    if cell.get("cell_type") == "markdown":  # nbgrader scores a written answer left as the stub 0
        return "not answered (the cell still holds the stub text)"
    return "failed without an error message"


def max_score(gradebook, assignment):
    return gradebook.find_notebook(assignment, assignment).max_score


def not_graded(student, assignment, course, reason, seconds=0.0, flags=(), notes=()):
    """A submission that could not be run at all still gets a row, a zero and the reason."""
    with Gradebook(course.db_url) as gradebook:
        top = max_score(gradebook, assignment)
    return StudentGrade(student, 0.0, top, "error", "; ".join([reason, *notes]), seconds, [], list(flags), {},
                        list(notes))


def record(scratch, assignment, student, run_status, seconds, flags, notes=()):
    """Read the scratch course's gradebook and autograded notebook for one student's run."""
    notebook = scratch.root / "autograded" / student / assignment / f"{assignment}.ipynb"
    with Gradebook(scratch.db_url) as gradebook:
        top = max_score(gradebook, assignment)
        try:
            submitted = gradebook.find_submission_notebook(assignment, assignment, student)
        except MissingEntry:
            submitted = None
        grades = [] if submitted is None else \
            [(g.name, g.score, g.max_score, g.needs_manual_grade) for g in submitted.grades if g.max_score]
    if submitted is None or not notebook.is_file():
        return None
    cells = {cell.get("metadata", {}).get("nbgrader", {}).get("grade_id"): cell
             for cell in nbformat.read(notebook, as_version=4).cells}
    tests = [TestResult(name, score, most, "" if score >= most or manual else failure_message(cells.get(name, {})),
                        manual)
             for name, score, most, manual in grades]
    failed = [t for t in tests if t.score < t.max_score and not t.manual]
    manual = [t.test for t in tests if t.manual]
    reasons = ([run_status["reason"]] if run_status.get("reason") else []) + \
        [f"{t.test}: {t.message}" for t in failed] + \
        ([f"to grade by hand: {', '.join(manual)}"] if manual else []) + list(notes)
    status = "stopped" if run_status.get("reason") else "failed tests" if failed else \
        "needs manual grading" if manual else "ok"
    timings = {"sandbox": run_status.get("seconds"), **run_status.get("timings", {})}
    return StudentGrade(student, sum(t.score for t in tests), top, status, "; ".join(reasons), seconds,
                        tests, flags, timings, list(notes))

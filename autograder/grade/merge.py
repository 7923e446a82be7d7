"""Step 4 of grading: results into the course's one gradebook, written by one process.

Runs happen in parallel (or on other machines, for shards) and each leaves a result file; only
this step writes the sqlite gradebook, so nbgrader's export, formgrader and feedback see every
grade, and a submission that needs a person's eye is flagged there too.
"""
import os
import warnings

from nbgrader.api import Gradebook
from sqlalchemy.exc import SAWarning

from autograder.grade.record import StudentGrade


def results_dir(reports, assignment):
    return reports / assignment / "results"


def save(grade, reports, assignment):
    folder = results_dir(reports, assignment)
    folder.mkdir(parents=True, exist_ok=True)
    # Written aside, then renamed: a run killed mid-write never leaves half a result to merge.
    partial = folder / f".{grade.student}.json.partial"
    partial.write_text(grade.to_json())
    os.replace(partial, folder / f"{grade.student}.json")


def load(reports, assignment):
    folder = results_dir(reports, assignment)
    return [StudentGrade.from_json(p.read_text()) for p in sorted(folder.glob("*.json"))]


def into_gradebook(course, assignment, grades):
    with warnings.catch_warnings(), Gradebook(course.db_url) as gradebook:
        # nbgrader 0.9.6's update_or_create_submission trips SQLAlchemy 2's autoflush warnings.
        warnings.simplefilter("ignore", SAWarning)
        for grade in grades:
            gradebook.update_or_create_student(grade.student)
            gradebook.update_or_create_submission(assignment, grade.student)
            notebook = gradebook.find_submission_notebook(assignment, assignment, grade.student)
            tests = {t.test: t for t in grade.tests}
            for cell in notebook.grades:
                test = tests.get(cell.name)
                cell.needs_manual_grade = bool(test and test.manual)
                cell.auto_score = None if cell.needs_manual_grade else (test.score if test else 0.0)
            notebook.flagged = bool(grade.flags) or grade.status in ("error", "stopped")
        gradebook.db.commit()

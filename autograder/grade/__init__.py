"""Grading pipeline: collect submissions -> run each (nbgrader autograde) -> record -> report.

Each step is its own module; the runner is the piece the batch grader replaces with a parallel,
sandboxed one, while the record and report steps stay.
"""
from autograder.grade.collect import collect
from autograder.grade.record import record
from autograder.grade.report import print_table, write_csv
from autograder.grade.run import AutogradeRunner

__all__ = ["grade", "print_table"]


def prepare_gradebook(course, assignment):
    """nbgrader grades against the gradebook's copy of the test cells, made from source/."""
    if not (course.root / "source" / assignment).is_dir():
        from autograder.course import CourseError
        raise CourseError(f"source/{assignment} does not exist: run `autograder build` first")
    course.nbgrader("generate_assignment", assignment, "--force")


def grade(course, assignment, submissions=None, reports=None, timeout=1200):
    prepare_gradebook(course, assignment)
    run = AutogradeRunner(course, assignment, timeout)
    grades = [record(course, assignment, run(submission))
              for submission in collect(course, assignment, submissions)]
    write_csv(grades, (reports or course.root / "reports") / assignment / "grades.csv")
    return grades

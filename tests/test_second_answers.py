"""Every exercise has a second correct answer, written differently, that its tests must accept.

A hidden test written against the reference solution can reject a valid answer without anyone
noticing (a list method used on what the text calls a sequence, a dtype the text never mentions,
a quiz letter in upper case). So each lesson's sample class (samples/<lesson>.py) has a student
who rewrites every code answer cell by hand ("replace"): other names, other block sizes, tl.where
instead of other=, statistics.median instead of np.median, quiz letters with spaces and capitals.
That student must lose no points, and tests/test_autograde.py grades it with the real grader in
CI. This file checks, cheaply, that the student exists and really covers every answer cell, so
that a new exercise cannot arrive without its second answer.
"""
import nbformat
import pytest

from autograder.course import Course
from autograder.samples import ci_samples, load_samples
from conftest import ROOT

LESSONS = [lesson for lesson in Course(ROOT).lessons() if (ROOT / "samples" / f"{lesson}.py").is_file()]


def _code_answer_cells(course, lesson):
    """{cell id: reference answer} for the code cells a student answers (written answers are graded by hand)."""
    source = nbformat.read(course.notebook("source", lesson), as_version=4)
    return {cell.id: cell.source for cell in source.cells
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution")}


def _second_answers(samples, answer_cells):
    """The CI students that must lose no points and rewrite every code answer cell."""
    return [student for student, sample in ci_samples(samples).items()
            if not sample["fails"] and set(answer_cells) <= set(sample.get("replace", {}))]


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_answer_cell_has_a_second_correct_answer_graded_in_ci(course, lesson):
    answer_cells = _code_answer_cells(course, lesson)
    assert answer_cells, f"source/{lesson} has no answer cells: is it built?"
    samples = load_samples(course, lesson)
    students = _second_answers(samples, answer_cells)
    assert students, (
        f"samples/{lesson}.py needs a student (in CI, with no failing tests) whose 'replace' rewrites "
        f"every code answer cell of the lesson: {sorted(answer_cells)}")
    for student in students:
        replace = samples[student]["replace"]
        copied = [cell for cell in answer_cells if replace[cell].strip() == answer_cells[cell].strip()]
        assert not copied, f"{student} of {lesson} copies the reference answer of {copied}: write it differently"
        stale = sorted(set(replace) - set(answer_cells))
        assert not stale, f"{student} of {lesson} replaces cells that are not answer cells: {stale}"

"""nbgrader autograde on a scratch course: every sample student gets exactly the grade it should.

The sample class (samples/<lesson>.py) says which tests each submission must fail; every other
test must earn its full points. This runs the real `nbgrader autograde`, on Triton's interpreter
here and on CUDA where there is a GPU, with the same expectations.
"""
import csv

import nbformat
import pytest

from autograder.course import Course
from autograder.demo import demo
from autograder.samples import load_samples
from conftest import ROOT

LESSON = "02_vector_add"
SAMPLES = load_samples(Course(ROOT), LESSON)


@pytest.fixture(scope="module")
def graded(course, tmp_path_factory):
    """The sample class graded once: (grades by student, grades.csv, the class's course)."""
    reports = tmp_path_factory.mktemp("reports")
    workdir = tmp_path_factory.mktemp("class")
    grades = demo(course, LESSON, reports=reports, workdir=workdir)
    return {g.student: g for g in grades}, reports / LESSON / "grades.csv", Course(workdir)


def _test_points(course):
    source = nbformat.read(course.notebook("source", LESSON), as_version=4)
    return {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"]
            for c in source.cells if c.metadata.get("nbgrader", {}).get("grade")}


@pytest.mark.parametrize("student", list(SAMPLES))
def test_sample_gets_exactly_its_grade(course, graded, student):
    sample = SAMPLES[student]
    grade = graded[0][student]
    points = _test_points(course)
    assert grade.max_score == sum(points.values())
    failed = sorted(t.test for t in grade.tests if t.score < t.max_score)
    assert failed == sorted(sample["fails"]), grade.reason
    assert {t.test for t in grade.tests} == set(points), "every test must be graded, none missing"
    assert grade.score == sum(points.values()) - sum(points[t] for t in sample["fails"])
    assert grade.status == ("failed tests" if sample["fails"] else "ok")
    expected_flags = sample.get("flags", [])
    assert all(any(text in flag for flag in grade.flags) for text in expected_flags), grade.flags
    assert expected_flags or not grade.flags, f"unexpected flags: {grade.flags}"
    for test in grade.tests:
        if test.score < test.max_score:
            assert test.message and test.message in grade.reason, f"{test.test} failed without saying why"


def test_grades_csv_has_a_row_per_student_and_no_silent_zero(course, graded):
    rows = list(csv.DictReader(graded[1].open()))
    assert [r["student"] for r in rows] == sorted(SAMPLES)
    assert list(rows[0]) == ["student", "score", "max_score", "status", "reason", "flags"]
    for row in rows:
        assert row["status"] in ("ok", "failed tests")
        if float(row["score"]) < float(row["max_score"]):
            assert row["reason"], f"{row['student']} lost points without a reason"


def test_feedback_explains_failures_without_showing_hidden_tests(course, graded):
    grades, _, graded_course = graded
    graded_course.nbgrader("generate_feedback", LESSON)
    source = nbformat.read(course.notebook("source", LESSON), as_version=4)
    hidden = [line.strip() for cell in source.cells if "### BEGIN HIDDEN TESTS" in cell.source
              for line in cell.source.split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0]
              .splitlines() if len(line.strip()) > 20 and not line.strip().startswith("#")]
    assert hidden
    for student, grade in grades.items():
        html = (graded_course.root / "feedback" / student / LESSON / f"{LESSON}.html").read_text()
        shown = [line for line in hidden if line in html and line not in _visible_code(course)]
        assert not shown, f"hidden test code in {student}'s feedback: {shown[:2]}"
        for test in grade.tests:
            if test.message and "CheckFailed" in test.message:
                assert test.message.split(": ", 1)[1][:40] in html.replace("&#39;", "'")


def _visible_code(course):
    release = nbformat.read(course.notebook("release", LESSON), as_version=4)
    return "\n".join(cell.source for cell in release.cells)

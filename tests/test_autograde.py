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
    reports = tmp_path_factory.mktemp("reports")
    grades = demo(course, LESSON, reports=reports, workdir=tmp_path_factory.mktemp("class"))
    return {g.student: g for g in grades}, reports / LESSON / "grades.csv"


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
    for test in grade.tests:
        if test.score < test.max_score:
            assert test.message and test.message in grade.reason, f"{test.test} failed without saying why"


def test_grades_csv_has_a_row_per_student_and_no_silent_zero(course, graded):
    rows = list(csv.DictReader(graded[1].open()))
    assert [r["student"] for r in rows] == sorted(SAMPLES)
    assert list(rows[0]) == ["student", "score", "max_score", "status", "reason"]
    for row in rows:
        assert row["status"] in ("ok", "failed tests")
        if float(row["score"]) < float(row["max_score"]):
            assert row["reason"], f"{row['student']} lost points without a reason"

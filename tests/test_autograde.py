"""nbgrader autograde on a scratch course: every sample student gets exactly the grade it should.

Every lesson has a sample class (samples/<lesson>.py) that says which tests each submission must
fail; every other test must earn its full points, and cells graded by hand (written answers) wait
for a person. This runs the real `autograder demo` path (the sandboxed batch grader and nbgrader's
autograde), on Triton's interpreter here and on CUDA where there is a GPU, with the same
expectations. To keep CI short, samples marked "ci": False are left out here (`autograder demo`
still grades them); each lesson's class is graded once, when its first test needs it.
"""
import csv

import nbformat
import pytest
import torch

from autograder.course import Course
from autograder.demo import demo
from autograder.samples import ci_samples, expected_here, load_samples
from conftest import ROOT

LESSONS = Course(ROOT).lessons()


def _class(lesson):
    try:
        return ci_samples(load_samples(Course(ROOT), lesson))
    except Exception:  # test_every_lesson_has_a_sample_class says what is wrong
        return {}


SAMPLES = {lesson: _class(lesson) for lesson in LESSONS}
STUDENTS = [(lesson, student) for lesson in LESSONS for student in SAMPLES[lesson]]


@pytest.fixture(scope="module")
def graded(course, tmp_path_factory):
    """graded(lesson): the lesson's sample class (its CI part), graded once:
    (grades by student, grades.csv, the class's course)."""
    done = {}

    def grade_class(lesson):
        if lesson not in done:
            reports = tmp_path_factory.mktemp(f"reports-{lesson}")
            workdir = tmp_path_factory.mktemp(f"class-{lesson}")
            grades = demo(course, lesson, reports=reports, workdir=workdir, samples=SAMPLES[lesson])
            done[lesson] = {g.student: g for g in grades}, reports / lesson / "grades.csv", Course(workdir)
        return done[lesson]
    return grade_class


def _graded_cells(course, lesson):
    """{grade_id: (points, graded by hand?)} for every graded cell of the lesson."""
    source = nbformat.read(course.notebook("source", lesson), as_version=4)
    return {c.metadata["nbgrader"]["grade_id"]: (c.metadata["nbgrader"]["points"],
                                                 bool(c.metadata["nbgrader"].get("solution")))
            for c in source.cells if c.metadata.get("nbgrader", {}).get("grade")}


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_lesson_has_a_sample_class(course, lesson):
    samples = load_samples(course, lesson)
    answers = {sample["answers"] for sample in samples.values()}
    assert {"solution", "release"} <= answers, f"samples/{lesson}.py needs a correct submission and the release"
    assert any(not s["fails"] and s["answers"] == "solution" for s in SAMPLES[lesson].values()), \
        f"CI must grade a correct submission of {lesson}"


@pytest.mark.parametrize("lesson,student", STUDENTS, ids=[f"{lesson}-{student}" for lesson, student in STUDENTS])
def test_sample_gets_exactly_its_grade(course, graded, lesson, student):
    # graded on the GPU where there is one
    sample = expected_here(SAMPLES[lesson][student], torch.cuda.is_available())
    grade = graded(lesson)[0][student]
    cells = _graded_cells(course, lesson)
    # Answers graded by hand wait for a person, unless left as released (nbgrader scores those 0).
    waiting = {test for test, (_, by_hand) in cells.items() if by_hand} - set(sample["fails"])
    total = sum(points for points, _ in cells.values())
    assert grade.max_score == total
    failed = sorted(t.test for t in grade.tests if t.score < t.max_score and not t.manual)
    assert failed == sorted(sample["fails"]), grade.reason
    assert {t.test for t in grade.tests} == set(cells), "every test must be graded, none missing"
    assert {t.test for t in grade.tests if t.manual} == waiting, "written answers wait for a person"
    assert grade.score == total - sum(cells[t][0] for t in set(sample["fails"]) | waiting)
    status = sample.get("status", "failed tests" if sample["fails"] else
                        "needs manual grading" if waiting else "ok")
    assert grade.status == status, grade.reason
    expected_flags = sample.get("flags", [])
    assert all(any(text in flag for flag in grade.flags) for text in expected_flags), grade.flags
    assert expected_flags or not grade.flags, f"unexpected flags: {grade.flags}"
    for test in grade.tests:
        if test.score < test.max_score and not test.manual:
            assert test.message and test.message in grade.reason, f"{test.test} failed without saying why"


@pytest.mark.parametrize("lesson", LESSONS)
def test_grades_csv_has_a_row_per_student_and_no_silent_zero(course, graded, lesson):
    rows = list(csv.DictReader(graded(lesson)[1].open()))
    assert [r["student"] for r in rows] == sorted(SAMPLES[lesson])
    assert list(rows[0]) == ["student", "score", "max_score", "status", "reason", "flags"]
    for row in rows:
        assert row["status"] in ("ok", "failed tests", "needs manual grading")
        if float(row["score"]) < float(row["max_score"]):
            assert row["reason"], f"{row['student']} lost points without a reason"


@pytest.mark.parametrize("lesson", LESSONS)
def test_feedback_explains_failures_without_showing_hidden_tests(course, graded, lesson):
    grades, _, graded_course = graded(lesson)
    graded_course.nbgrader("generate_feedback", lesson)
    source = nbformat.read(course.notebook("source", lesson), as_version=4)
    hidden = [line.strip() for cell in source.cells if "### BEGIN HIDDEN TESTS" in cell.source
              for line in cell.source.split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0]
              .splitlines() if len(line.strip()) > 20 and not line.strip().startswith("#")]
    assert hidden
    visible = _visible_code(course, lesson)
    for student, grade in grades.items():
        html = (graded_course.root / "feedback" / student / lesson / f"{lesson}.html").read_text()
        shown = [line for line in hidden if line in html and line not in visible]
        assert not shown, f"hidden test code in {student}'s feedback: {shown[:2]}"
        for test in grade.tests:
            if test.message and "CheckFailed" in test.message:
                assert test.message.split(": ", 1)[1][:40] in html.replace("&#39;", "'")


def _visible_code(course, lesson):
    release = nbformat.read(course.notebook("release", lesson), as_version=4)
    return "\n".join(cell.source for cell in release.cells)

"""nbgrader autograde on a scratch course: every sample student gets exactly the grade it should.

Every lesson has a sample class (samples/<lesson>.py) that says which tests each submission must
fail; every other test must earn its full points, and cells graded by hand (written answers) wait
for a person. This runs the real `autograder demo` path (the sandboxed batch grader and nbgrader's
autograde), on Triton's interpreter here and on CUDA where there is a GPU, with the same
expectations. To keep CI short, samples marked "ci": False are left out here (`autograder demo`
still grades them); each lesson's class is graded once, when its first test needs it.
"""
import csv
from concurrent.futures import ThreadPoolExecutor

import nbformat
import pytest
import torch

from autograder.course import Course
from autograder.demo import demo
from autograder.grade import record
from autograder.samples import ci_samples, differences, expected_here, graded_cells, load_samples
from conftest import ROOT, page_text

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
    (grades by student, grades.csv, the class's course). The next lesson's class is graded while this
    one's is checked and finishes: a class's last notebooks, and the next class's setup, leave cores
    idle otherwise."""
    started, pool = {}, ThreadPoolExecutor(max_workers=2)

    def grade(lesson, reports, workdir):
        grades = demo(course, lesson, reports=reports, workdir=workdir, samples=SAMPLES[lesson])
        return {g.student: g for g in grades}, reports / lesson / "grades.csv", Course(workdir)

    def start(lesson):
        if lesson not in started:
            reports, workdir = tmp_path_factory.mktemp(f"reports-{lesson}"), tmp_path_factory.mktemp(f"class-{lesson}")
            started[lesson] = pool.submit(grade, lesson, reports, workdir)

    def grade_class(lesson):
        for each in [lesson, *LESSONS[LESSONS.index(lesson) + 1:][:1]]:
            start(each)
        return started[lesson].result()
    yield grade_class
    pool.shutdown(cancel_futures=True)


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
    assert not differences(sample, graded(lesson)[0][student], graded_cells(course, lesson))


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
        text = page_text((graded_course.root / "feedback" / student / lesson / f"{lesson}.html").read_text())
        shown = [line for line in hidden if line in text and line not in visible]
        assert not shown, f"hidden test code in {student}'s feedback: {shown[:2]}"
        for test in grade.tests:
            if test.message and "CheckFailed" in test.message:
                assert test.message.split(": ", 1)[1][:40] in text


def _visible_code(course, lesson):
    release = nbformat.read(course.notebook("release", lesson), as_version=4)
    return "\n".join(cell.source for cell in release.cells)


def test_a_grade_unlike_its_sample_is_reported(course):
    """`differences` (what this file and `autograder demo --check` compare) names each way a grade can
    differ from its sample: a test failed or passed against it, a missing or unexpected flag, a
    failure without a reason."""
    cells = graded_cells(course, "02_vector_add")
    tests = [record.TestResult(test, points, points) for test, (points, _) in cells.items()]
    total = sum(points for points, _ in cells.values())
    right = record.StudentGrade("ada", total, total, "ok", tests=tests)
    assert differences({"fails": []}, right, cells) == []
    wrong = record.StudentGrade("ada", total - 2, total, "failed tests", reason="test_add: CheckFailed: add is wrong",
                         tests=[record.TestResult(t.test, 0, t.max_score, "CheckFailed: add is wrong") if t.test == "test_add"
                                else t for t in tests], flags=["imports os"])
    found = differences({"fails": [], "flags": ["torch fallback"]}, wrong, cells)
    assert any("failed test_add" in f for f in found) and any("status 'failed tests'" in f for f in found), found
    assert any("no flag says 'torch fallback'" in f for f in found), found
    silent = record.StudentGrade("ada", total - 2, total, "failed tests",
                          tests=[record.TestResult(t.test, 0, t.max_score) if t.test == "test_add" else t for t in tests])
    assert "test_add failed without saying why" in differences({"fails": ["test_add"]}, silent, cells)

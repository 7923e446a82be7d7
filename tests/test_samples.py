"""A sample's `why`: each failing test it names must fail for the reason the sample is about.

No grading here: fake grades built as autograder/grade/record.py builds real ones."""
import pytest

from autograder.course import Course
from autograder.grade import record
from autograder.samples import differences, expected_here, load_samples
from conftest import ROOT

CELLS = {"test_copy": (2, False), "test_add": (2, False), "test_add_hidden": (3, False)}
TOTAL = sum(points for points, _ in CELLS.values())
UNMASKED = "CheckFailed: add wrote past the end of out (an unmasked store?)"


def _grade(**messages):
    """A grade failing each test named, with the message given, as record.record writes one."""
    tests = [record.TestResult(test, 0 if test in messages else points, points, messages.get(test, ""))
             for test, (points, _) in CELLS.items()]
    lost = sum(CELLS[test][0] for test in messages)
    reason = "; ".join(f"{test}: {message}" for test, message in messages.items())
    return record.StudentGrade("cy", TOTAL - lost, TOTAL, "failed tests" if messages else "ok", reason, tests=tests)


def test_a_test_failing_for_its_reason_is_its_grade():
    sample = {"fails": ["test_add", "test_add_hidden"],
              "why": {"test_add": "an unmasked store", "test_add_hidden": "wrote past the end"}}
    assert differences(sample, _grade(test_add=UNMASKED, test_add_hidden=UNMASKED), CELLS) == []


def test_a_test_failing_for_another_reason_is_reported():
    sample = {"fails": ["test_add", "test_add_hidden"],
              "why": {"test_add": "an unmasked store", "test_add_hidden": "wrote past the end"}}
    crash = "NameError: name 'maks' is not defined"
    found = differences(sample, _grade(test_add=crash, test_add_hidden=UNMASKED), CELLS)
    # the right tests failed, with the right score: only the reason gives it away
    assert found == [f"test_add failed, but not because an unmasked store: {crash}"], found


def test_a_long_message_is_cut_in_the_report():
    long = "RuntimeError: " + "x" * 500
    found = differences({"fails": ["test_add"], "why": {"test_add": "unmasked"}}, _grade(test_add=long), CELLS)
    assert found == [f"test_add failed, but not because unmasked: {long[:200]}"], found


def test_a_test_that_passed_where_why_names_it_is_reported():
    sample = {"fails": ["test_add", "test_add_hidden"], "why": {"test_add_hidden": "wrote past the end"}}
    found = differences(sample, _grade(test_add=UNMASKED), CELLS)
    assert "test_add_hidden passed, where it must fail because wrote past the end" in found, found


def test_a_why_naming_a_test_the_sample_passes_is_reported():
    # the grade is the sample's in every other way: the sample contradicts itself
    sample = {"fails": ["test_add"], "why": {"test_add": "unmasked store", "test_copy": "unmasked store"}}
    found = differences(sample, _grade(test_add=UNMASKED), CELLS)
    assert found == ["why names test_copy, which the sample does not fail"], found


def test_on_gpu_replaces_why():
    sample = {"fails": ["test_add"], "why": {"test_add": "unmasked store"},
              "on_gpu": {"fails": ["test_add", "test_add_hidden"],
                         "why": {"test_add": "unmasked store", "test_add_hidden": "too slow"}}}
    grade = _grade(test_add=UNMASKED, test_add_hidden="CheckFailed: wrote past the end")
    assert differences(expected_here(sample, on_gpu=False), _grade(test_add=UNMASKED), CELLS) == []
    found = differences(expected_here(sample, on_gpu=True), grade, CELLS)
    assert found == ["test_add_hidden failed, but not because too slow: CheckFailed: wrote past the end"], found


@pytest.mark.parametrize("lesson", Course(ROOT).lessons())
def test_every_why_names_a_failing_test(lesson):
    """A `why` outside `fails`, here or on a GPU, is a sample that contradicts itself; a test graded
    by hand has no message to check."""
    for student, sample in load_samples(Course(ROOT), lesson).items():
        for on_gpu in (False, True):
            here = expected_here(sample, on_gpu)
            why = here.get("why", {})
            assert set(why) <= set(here["fails"]), (student, on_gpu, sorted(set(why) - set(here["fails"])))
            assert all(isinstance(text, str) and text.strip() for text in why.values()), (student, why)
            assert not [test for test in why if test.startswith("written_")], (student, why)

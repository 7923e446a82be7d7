"""nbgrader's own `validate`: source notebooks pass with full points, release stubs fail."""
import pytest

from autograder.course import Course
from conftest import ROOT

LESSONS = Course(ROOT).lessons()


@pytest.mark.parametrize("lesson", LESSONS)
def test_source_notebook_passes_validation(course, lesson):
    result = course.nbgrader("validate", f"source/{lesson}/{lesson}.ipynb", check=False)
    assert "Success! Your notebook passes all the tests." in result.stdout, result.stdout + result.stderr


@pytest.mark.parametrize("lesson", LESSONS)
def test_release_stubs_fail_validation(course, lesson):
    result = course.nbgrader("validate", f"release/{lesson}/{lesson}.ipynb", check=False)
    assert "VALIDATION FAILED" in result.stdout, result.stdout + result.stderr
    assert "still the exercise stub" in result.stdout or "NotImplementedError" in result.stdout

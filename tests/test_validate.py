"""nbgrader's own `validate` (the Validate button students press): a solved notebook passes with
full points, the release's stubs fail. One lesson is enough for the command itself: every lesson's
reference answers earn full marks, hidden tests included, in tests/test_autograde.py (its correct
sample), and every lesson's stubs fail with teaching messages in tests/test_anywhere.py."""
from conftest import ROOT  # noqa: F401 (puts the course on the path)

LESSON = "02_vector_add"


def test_source_notebook_passes_validation(course):
    result = course.nbgrader("validate", f"source/{LESSON}/{LESSON}.ipynb", check=False)
    assert "Success! Your notebook passes all the tests." in result.stdout, result.stdout + result.stderr


def test_release_stubs_fail_validation(course):
    result = course.nbgrader("validate", f"release/{LESSON}/{LESSON}.ipynb", check=False)
    assert "VALIDATION FAILED" in result.stdout, result.stdout + result.stderr
    assert "still the exercise stub" in result.stdout

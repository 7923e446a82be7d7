"""The build: everything generated is fresh, releases hide answers and hidden tests, edits are kept."""
import re
import shutil

import nbformat
import pytest

from autograder import generate
from autograder.generate import check
from autograder.generate.cells import SETUP_PLACEHOLDER, is_setup
from autograder.generate.source import BADGE_ID, AddColabBadge, course_settings, master_to_source
from autograder.generate.sync import source_to_master
from autograder.course import Course
from conftest import autograder

HIDDEN = "### BEGIN HIDDEN TESTS"
SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.DOTALL)


def test_generated_files_are_up_to_date(course):
    assert check(course) == []


def test_every_lesson_has_all_three_stages(course):
    assert course.lessons(), "no lesson masters in notebooks/"
    for lesson in course.lessons():
        for stage in ("source", "release", "solutions"):
            assert course.notebook(stage, lesson).is_file(), f"{stage}/{lesson} is missing"


HIDDEN_BLOCK = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS[ \t]*\n?", re.DOTALL | re.M)


@pytest.mark.parametrize("stage", ["release", "solutions"])
def test_no_hidden_test_leaves_the_source(course, stage):
    for lesson in course.lessons():
        source = nbformat.read(course.notebook("source", lesson), as_version=4)
        generated = {c.id: c for c in nbformat.read(course.notebook(stage, lesson), as_version=4).cells}
        tests = [cell for cell in source.cells if HIDDEN in cell.source]
        assert tests, f"{lesson} has no hidden tests"
        for cell in tests:
            assert generated[cell.id].source.strip() == HIDDEN_BLOCK.sub("", cell.source).strip(), \
                f"{stage}/{lesson} cell {cell.id} still holds hidden test code"
        assert HIDDEN not in course.notebook(stage, lesson).read_text()


def test_release_holds_no_answer(course):
    for lesson in course.lessons():
        source = nbformat.read(course.notebook("source", lesson), as_version=4)
        release = {c.id: c for c in nbformat.read(course.notebook("release", lesson), as_version=4).cells}
        answers = [(cell.id, body) for cell in source.cells for body in SOLUTION.findall(cell.source)]
        assert answers, f"{lesson} has no answer cells"
        for cell_id, body in answers:
            stub = "raise NotImplementedError()" if release[cell_id].cell_type == "code" else "YOUR ANSWER HERE"
            assert stub in release[cell_id].source
            code = [line.strip() for line in body.splitlines() if line.strip() and not line.strip().startswith("#")]
            assert not any(line in release[cell_id].source for line in code if len(line) > 12), \
                f"release/{lesson} cell {cell_id} shows the answer"


def test_solutions_keep_answers_without_grading_markup(course):
    for lesson in course.lessons():
        text = course.notebook("solutions", lesson).read_text()
        assert "BEGIN SOLUTION" not in text and "nbgrader" not in text
        assert "# YOUR CODE HERE" not in text
        # ...and the answers themselves: each reference answer is in its cell, markers gone
        source = nbformat.read(course.notebook("source", lesson), as_version=4)
        solutions = {c.id: c for c in nbformat.read(course.notebook("solutions", lesson), as_version=4).cells}
        answers = [(cell.id, body.strip()) for cell in source.cells for body in SOLUTION.findall(cell.source)]
        assert answers, f"{lesson} has no answer cells"
        for cell_id, body in answers:
            assert body in solutions[cell_id].source, f"solutions/{lesson} cell {cell_id} lost its answer"


def test_setup_cell_is_the_kit_and_locked(course):
    kit = (course.root / "autograder" / "kit.py").read_text().rstrip("\n")
    for lesson in course.lessons():
        for stage in ("source", "release"):
            setups = [c for c in nbformat.read(course.notebook(stage, lesson), as_version=4).cells if is_setup(c)]
            assert len(setups) == 1 and setups[0].source == kit
            assert setups[0].metadata["nbgrader"]["locked"] is True


def test_masters_are_in_canonical_form(course):
    """`sync` of a fresh build gives back the master exactly, so sync never rewrites what it needn't."""
    for lesson in course.lessons():
        source = nbformat.read(course.notebook("source", lesson), as_version=4)
        assert source_to_master(source) == course.master(lesson).read_text()
        assert SETUP_PLACEHOLDER in course.master(lesson).read_text()


COLAB_LINK = re.compile(r"\]\((https://colab\.research\.google\.com/github/([^/]+)/([^/]+)/blob/([^/]+)/(\S+?))\)")


@pytest.mark.parametrize("stage", ["source", "release"])
def test_colab_badge_opens_the_release_notebook_from_the_repository(course, stage):
    settings = course_settings()
    for lesson in course.lessons():
        first = nbformat.read(course.notebook(stage, lesson), as_version=4).cells[0]
        assert first.id == BADGE_ID and first.cell_type == "markdown" and "nbgrader" not in first.metadata
        assert "colab-badge.svg" in first.source
        links = COLAB_LINK.findall(first.source)
        assert len(links) == 1, f"{stage}/{lesson}: the badge should hold one Colab link: {first.source}"
        url, owner, repo, branch, path = links[0]
        assert f"github.com/{owner}/{repo}" == settings["repository"] and branch == settings["branch"], url
        assert path == f"release/{lesson}/{lesson}.ipynb", f"{stage}/{lesson}: the badge opens {path}"
        assert (course.root / path).is_file(), f"{stage}/{lesson}: the badge opens {path}, which does not exist"


def test_colab_badge_in_solutions_opens_a_notebook_of_the_same_lesson(course):
    for lesson in course.lessons():
        first = nbformat.read(course.notebook("solutions", lesson), as_version=4).cells[0]
        if first.id != BADGE_ID:
            continue  # solutions may carry no badge
        paths = [link[-1] for link in COLAB_LINK.findall(first.source)]
        assert len(paths) == 1 and paths[0] in (f"solutions/{lesson}/{lesson}.ipynb", f"release/{lesson}/{lesson}.ipynb")
        assert (course.root / paths[0]).is_file()


def test_colab_badge_follows_the_settings():
    badge = AddColabBadge("solutions", repository="github.com/someone/a-fork", branch="spring-2026")
    nb = badge(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Lesson", id="cell-0")]), "02_add")
    nb = badge(nb, "02_add")  # a second pass replaces the badge, it does not stack another
    assert [cell.id for cell in nb.cells] == [BADGE_ID, "cell-0"]
    assert nb.cells[0].source.endswith("(https://colab.research.google.com/github/someone/a-fork/blob/"
                                       "spring-2026/solutions/02_add/02_add.ipynb)")


def test_masters_never_hold_the_badge(course):
    for lesson in course.lessons():
        source = nbformat.read(course.notebook("source", lesson), as_version=4)
        assert "colab.research.google.com" not in source_to_master(source)
        assert "colab.research.google.com" not in course.master(lesson).read_text()


def test_check_names_a_stale_lesson(scratch_course):
    master = scratch_course.master("02_vector_add")
    master.write_text(master.read_text().replace("# # ", "# # Edited: ", 1))
    result = autograder("build", "--check", cwd=scratch_course.root)
    assert result.returncode == 1
    assert "source/02_vector_add/02_vector_add.ipynb is out of date" in result.stdout
    assert "release/02_vector_add/02_vector_add.ipynb is out of date" in result.stdout
    assert autograder("build", cwd=scratch_course.root).returncode == 0
    assert autograder("build", "--check", cwd=scratch_course.root).returncode == 0


def test_an_edit_made_in_jupyterlab_is_never_lost(scratch_course):
    path = scratch_course.notebook("source", "02_vector_add")
    nb = nbformat.read(path, as_version=4)
    test_cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade"))
    test_cell.source += "\nassert True  # added by the instructor"
    test_cell.metadata["nbgrader"]["points"] = 7
    nbformat.write(nb, path)

    refused = autograder("build", cwd=scratch_course.root)
    assert refused.returncode == 2 and "edited after it was built" in refused.stderr
    assert "added by the instructor" in path.read_text(), "a refused build must not touch the edit"
    assert autograder("build", "--check", cwd=scratch_course.root).returncode == 1

    assert autograder("sync", "02_vector_add", cwd=scratch_course.root).returncode == 0
    master = scratch_course.master("02_vector_add").read_text()
    assert "added by the instructor" in master and '"points": 7' in master
    assert autograder("build", "--check", cwd=scratch_course.root).returncode == 0


def test_orphaned_generated_lesson_is_reported(scratch_course):
    (scratch_course.root / "release" / "99_gone").mkdir()
    result = autograder("build", "--check", cwd=scratch_course.root)
    assert result.returncode == 1 and "release/99_gone has no master" in result.stdout


def test_executed_solutions_keep_their_plots(tmp_path, monkeypatch):
    # A GPU machine's scripts often export MPLBACKEND=Agg; the executed solutions must still hold
    # the plots students and instructors read.
    course = Course(tmp_path)
    path = course.notebook("solutions", "00_plot")
    path.parent.mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()")]), path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    generate.execute_solutions(course, ["00_plot"])
    outputs = nbformat.read(path, as_version=4).cells[0].outputs
    assert any("image/png" in output.get("data", {}) for output in outputs), outputs


def test_a_reference_the_tests_use_must_be_read_only(tmp_path):
    """A name a test (or a lesson's read-only helper) reads must come from a cell grading restores,
    or from an answer: a reference in a cell the student may edit fails the build, saying which."""
    cells = ['# %% tags=["setup"]\nfrom autograder.kit import *  # noqa: F403\n',
             '# %%\ndef reference(x):\n    return x * 2\n',
             '# %% nbgrader={"grade_id": "double", "solution": true}\ndef double(x):\n    return x * 2\n',
             '# %% nbgrader={"grade": true, "grade_id": "test_double", "locked": true, "points": 1}\n'
             'x = rand(8)\ncheck_output(double(x), reference(x))\n']
    master = tmp_path / "99_double.py"
    master.write_text("\n".join(cells))
    with pytest.raises(ValueError, match=r"'test_double' uses reference, defined in cell 2, which students can edit"):
        master_to_source(master, "99_double")
    cells[1] = cells[1].replace("# %%", '# %% nbgrader={"grade_id": "reference", "locked": true}')
    master.write_text("\n".join(cells))
    assert master_to_source(master, "99_double").cells


LOCKED = '# %% nbgrader={{"grade_id": "{}", "locked": true}}\n'
TEST = '# %% nbgrader={{"grade": true, "grade_id": "{}", "locked": true, "points": 1}}\n'
ANSWER = '# %% nbgrader={"grade_id": "double", "solution": true}\ndef double(x):\n    return x * 2\n'


def build_of(tmp_path, *cells):
    master = tmp_path / "99_double.py"
    master.write_text("\n".join(['# %% tags=["setup"]\nfrom autograder.kit import *  # noqa: F403\n', ANSWER,
                                 *cells]))
    return master_to_source(master, "99_double")


@pytest.mark.parametrize("helpers, test, refused", [
    # a course function, called from another cell, that reads a tensor a course cell bound
    ("REFERENCE_INPUT = rand(8)\n\ndef check_double():\n    x = REFERENCE_INPUT\n    check_output(double(x), x * 2)\n",
     "check_double()\n", r"check_double \(in 'helpers'\) reads REFERENCE_INPUT, which 'helpers' binds to data"),
    # a test that reads a value an earlier course cell computed
    ("TOLERANCE = 10 ** -3 if ON_GPU else 0.0\n", "x = rand(8)\ncheck_output(double(x), x * 2, atol=TOLERANCE)\n",
     r"'test_double' reads TOLERANCE, which 'helpers' binds to data"),
    # a literal list: the seal does not keep it (a student could rebind or change it)
    ("LIMITS = [1, 3]\n\ndef check_double(x):\n    check_output(double(x), x * 2, atol=LIMITS[0])\n",
     "check_double(rand(8))\n", r"check_double \(in 'helpers'\) reads LIMITS, which 'helpers' binds to data"),
    # the same with literal constants, which grading keeps for the course: built
    ("TOLERANCE = 1e-3\nHINT = 'multiply by two'\n\ndef check_double(x):\n"
     "    check_output(double(x), x * 2, atol=TOLERANCE, hint=HINT)\n",
     "check_double(rand(8))\ncheck_output(double(rand(4)), rand(4) * 0, atol=TOLERANCE)\n", None),
    # a function used only in its own cell, while that cell runs (no student code can rebind its names)
    (None, "x = rand(8)\n\ndef doubled():\n    return x * 2\n\ncheck_output(double(x), doubled())\n", None),
])
def test_the_course_reads_across_cells_only_what_grading_keeps_for_it(tmp_path, helpers, test, refused):
    """Grading keeps a course cell's definitions and literal constants for the course (seal.py); other
    data it binds stays in the student's namespace, so course code in another cell must not read it."""
    cells = ([LOCKED.format("helpers") + helpers] if helpers else []) + [TEST.format("test_double") + test]
    if refused:
        with pytest.raises(ValueError, match=refused):
            build_of(tmp_path, *cells)
    else:
        assert build_of(tmp_path, *cells).cells


def test_a_constant_of_the_course_must_not_be_named_like_an_answer(tmp_path):
    """The course keeps its constant: a test would read it, never the student's value of that name."""
    cells = [LOCKED.format("defaults") + "BLOCK_SIZE = 128\n",
             '# %% nbgrader={"grade_id": "block", "solution": true}\nBLOCK_SIZE = 256\n',
             TEST.format("test_block") + "assert BLOCK_SIZE >= 64\n"]
    with pytest.raises(ValueError, match=r"'defaults' binds BLOCK_SIZE, which 'block' binds too and 'test_block' reads"):
        build_of(tmp_path, *cells)
    assert build_of(tmp_path, *cells[1:]).cells


def test_executing_a_lesson_that_does_not_exist_is_refused_before_the_build(scratch_course):
    shutil.rmtree(scratch_course.root / "source" / "02_vector_add")
    result = autograder("build", "--execute", "02_vector_ad", cwd=scratch_course.root)
    assert result.returncode == 2 and "no lesson named 02_vector_ad: the lessons are 02_vector_add" in result.stderr
    assert not (scratch_course.root / "source" / "02_vector_add").exists(), "the build must not have started"

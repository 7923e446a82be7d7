"""Submission intake and what goes back to students: LMS downloads, files beside the notebook,
notebooks that lost nbgrader's cell metadata, and feedback that holds nothing the grading run output."""
import copy
import csv
import zipfile

import nbformat
import pytest

from autograder.demo import class_course
from autograder.grade.collect import Submission, beside_notebook, collect, left_out_note
from autograder.grade.feedback import VERDICT_CHARS, WITHHELD, KeepVerdictsOnly, LeadWithSummary
from autograder.grade.integrity import grade_id
from autograder.grade.record import StudentGrade, TestResult
from autograder.grade.recover import recover_metadata
from autograder.grade.report import plain_feedback, write_report
from conftest import autograder, patient

LESSON = "02_vector_add"
# One submission per LMS naming convention: the zip entry, the student it belongs to, and whether the
# student (not the LMS) renamed the notebook.
LMS_ENTRIES = [
    (f"smithjohn_12345_678901_{LESSON}.ipynb", "smithjohn_12345", False),  # Canvas
    (f"doejane_LATE_23456_789012_{LESSON}-2.ipynb", "doejane_23456", False),  # Canvas, late, submitted again
    (f"leeann_34567_890123_Copy of {LESSON}.ipynb", "leeann_34567", True),  # Canvas, renamed by the student
    (f"Mary Major_4567_assignsubmission_file_/{LESSON}.ipynb", "Mary Major_4567", False),  # Moodle
    (f"{LESSON}_jroe_attempt_2026-11-30-10-11-12_{LESSON}.ipynb", "jroe", False),  # Blackboard
    (f"pat_kim_{LESSON}.ipynb", "pat_kim", False),  # <student>_<file>, an underscore in the name
    (f"sam/{LESSON}.ipynb", "sam", False),  # <student>/<file>
]
LMS_OWN = [f"{LESSON}_jroe_attempt_2026-11-30-10-11-12.txt"]  # Blackboard's record of the attempt


def _lms_zip(course, path):
    release = course.notebook("release", LESSON).read_bytes()
    with zipfile.ZipFile(path, "w") as archive:
        for name, _, _ in LMS_ENTRIES:
            archive.writestr(name, release)
        for name in LMS_OWN:
            archive.writestr(name, "Name: Jay Roe\nAssignment: 02_vector_add\n")
        archive.writestr("notebook.ipynb", release)  # names no student: left out, with a warning
        # An earlier Blackboard attempt: the later one (above) is the one graded.
        archive.writestr(f"{LESSON}_jroe_attempt_2026-11-29-09-00-00_{LESSON}.ipynb", b"{not json")
    return path


def test_each_lms_naming_gives_the_student_and_flags_only_their_own_rename(course, tmp_path, capsys):
    class_dir = class_course(course, LESSON, {}, tmp_path / "class")
    found = {s.student: s for s in collect(class_dir, LESSON, lms_zip=_lms_zip(course, tmp_path / "lms.zip"))}
    assert "'notebook.ipynb' names no student" in capsys.readouterr().err
    assert sorted(found) == sorted(student for _, student, _ in LMS_ENTRIES)
    for _, student, renamed in LMS_ENTRIES:
        submission = found[student]
        assert submission.notebook is not None, submission
        assert bool(submission.flags) == renamed, submission
        assert beside_notebook(submission) == [], f"the LMS's own files are not the student's: {submission}"
    assert "renamed to 'Copy of 02_vector_add.ipynb'" in found["leeann_34567"].flags[0]
    assert found["doejane_23456"].notes == ["Canvas marks this submission late"]
    assert nbformat.read(found["jroe"].notebook, as_version=4).cells, "the later Blackboard attempt is graded"


def test_an_lms_download_is_graded_through_the_command_line(course, tmp_path):
    """`autograder grade --zip`: every convention's student gets a row, none flagged as renamed."""
    class_dir = class_course(course, LESSON, {}, tmp_path / "class")
    entries = [entry for entry in LMS_ENTRIES if not entry[2]][:4]  # Canvas (twice), Moodle, Blackboard
    with zipfile.ZipFile(tmp_path / "lms.zip", "w") as archive:
        for name, _, _ in entries:
            archive.writestr(name, course.notebook("release", LESSON).read_bytes())
    done = autograder("grade", LESSON, "--zip", str(tmp_path / "lms.zip"), "--workers", "2", "--timeout", str(round(patient(120))),
                      cwd=class_dir.root)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {r["student"]: r for r in csv.DictReader((class_dir.root / "reports" / LESSON / "grades.csv").open())}
    assert sorted(rows) == sorted(student for _, student, _ in entries)
    for row in rows.values():
        assert row["status"] == "failed tests" and row["flags"] == "", row
    assert "Canvas marks this submission late" in rows["doejane_23456"]["reason"]


def test_only_the_notebook_is_graded_and_what_was_left_out_is_listed(tmp_path):
    folder = tmp_path / "ada" / LESSON
    (folder / "data").mkdir(parents=True)
    (folder / ".ipynb_checkpoints").mkdir()
    for name in [f"{LESSON}.ipynb", "helpers.py", "numpy.py", "data/x.csv", "timestamp.txt",
                 f".ipynb_checkpoints/{LESSON}-checkpoint.ipynb"]:
        (folder / name).write_text("")
    submission = Submission("ada", folder, folder / f"{LESSON}.ipynb")
    files = beside_notebook(submission)
    assert files == ["data/x.csv", "helpers.py", "numpy.py"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import numpy as np\nfrom helpers import add")])
    note = left_out_note(files, nb)
    assert "only the notebook is graded" in note and "data/x.csv, helpers.py, numpy.py" in note
    assert "imports helpers, which is not a module here (ModuleNotFoundError)" in note
    assert "imports numpy, and gets the installed numpy" in note


def _stripped(nb):
    """As an editor that drops cell metadata saves it: no nbgrader metadata, new cell ids."""
    nb = copy.deepcopy(nb)
    for number, cell in enumerate(nb.cells):
        cell.metadata, cell.id = {}, f"new-{number}"
    return nb


def _answered(course):
    """The release with every answer filled in from the solutions, as a student hands it in."""
    nb = nbformat.read(course.notebook("release", LESSON), as_version=4)
    answers = {cell.id: cell.source for cell in nbformat.read(course.notebook("solutions", LESSON), as_version=4).cells}
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = answers[cell.id]
    return nb


def _index(nb, grade):
    return next(i for i, cell in enumerate(nb.cells) if grade_id(cell) == grade)


@pytest.fixture
def release(course):
    return nbformat.read(course.notebook("release", LESSON), as_version=4)


def test_lost_metadata_is_put_back_from_the_release(course, release):
    answered = _answered(course)
    recovered, note, problem = recover_metadata(_stripped(answered), release)
    assert problem is None and "metadata was missing" in note
    assert [grade_id(c) for c in recovered.cells] == [grade_id(c) for c in answered.cells]
    assert [c.source for c in recovered.cells] == [c.source for c in answered.cells]
    assert recover_metadata(answered, release)[1:] == (None, None), "a notebook with its metadata is left alone"


def test_an_answer_is_found_beside_a_cell_the_student_added(course, release):
    nb = _stripped(_answered(course))
    where = _index(_answered(course), "add")
    nb.cells.insert(where, nbformat.v4.new_code_cell("print(x.stride())  # trying things out"))
    recovered, _, problem = recover_metadata(nb, release)
    assert problem is None and grade_id(recovered.cells[where + 1]) == "add"
    assert grade_id(recovered.cells[where]) is None
    # Alone between its neighbours, an answer is placed even with its signature changed.
    nb = _stripped(_answered(course))
    signature = "def add(x: torch.Tensor, y: torch.Tensor)"
    nb.cells[where].source = nb.cells[where].source.replace(signature, "def add(a, b)")
    assert grade_id(recover_metadata(nb, release)[0].cells[where]) == "add"


@pytest.mark.parametrize("change, says", [
    ("duplicate", "the answer 'copy_kernel' cannot be told apart"),
    ("move", "the answer 'add' is not where the lesson has it"),
    ("foreign", "none of the lesson's cells could be found in the notebook: is it this assignment's"),
])
def test_an_answer_that_cannot_be_placed_is_for_a_person(course, release, change, says):
    answered = _answered(course)
    nb = _stripped(answered)
    if change == "duplicate":
        where = _index(answered, "copy_kernel")
        nb.cells.insert(where, copy.deepcopy(nb.cells[where]))
    elif change == "move":
        nb.cells.append(nb.cells.pop(_index(answered, "add")))
    else:
        nb.cells = [nbformat.v4.new_code_cell("print('my own notebook')")]
    _, note, problem = recover_metadata(nb, release)
    assert note is None and says in problem, problem


def _graded_cell(outputs, points=3, score=0):
    cell = nbformat.v4.new_code_cell("check(add)\n### BEGIN HIDDEN TESTS\nsecret_check_with_a_long_name(add)\n"
                                     "### END HIDDEN TESTS")
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": "test_add_hidden", "points": points, "score": score}
    cell.outputs = [nbformat.from_dict(o) for o in outputs]
    return cell


def _error(ename, evalue):
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": [f"{ename}: {evalue}"]}


@pytest.mark.parametrize("outputs, shown", [
    ([_error("CheckFailed", "add: element 3 is wrong")], "failed: 0 of 3 points. CheckFailed: add: element 3 is wrong"),
    ([_error("CheckFailed", "x" * 5000)], None),  # bounded
    ([_error("CheckFailed", "it is: secret_check_with_a_long_name(add)")], WITHHELD),
    ([_error("RuntimeError", "c2VjcmV0X2NoZWNr")], "RuntimeError (raised while the test ran; its message is not shown"),
    ([{"output_type": "stream", "name": "stdout", "text": "c2VjcmV0X2NoZWNr"}, _error("CheckFailed", "wrong")],
     "CheckFailed: wrong"),
])
def test_feedback_keeps_one_bounded_verdict_per_test_and_no_output(outputs, shown):
    printed = nbformat.v4.new_code_cell("print('anything')")
    printed.outputs = [nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo="})]
    nb = nbformat.v4.new_notebook(cells=[printed, _graded_cell(outputs)])
    nb, _ = KeepVerdictsOnly().preprocess(nb, {})
    assert nb.cells[0].outputs == []
    [verdict] = nb.cells[1].outputs
    assert verdict.output_type == "stream" and verdict.name == "stderr"
    assert len(verdict.text) <= VERDICT_CHARS + 40 and "\n" not in verdict.text
    assert "c2VjcmV0X2NoZWNr" not in verdict.text
    assert shown is None or shown in verdict.text, verdict.text


def test_feedback_leads_with_the_score_what_failed_and_the_notes():
    nb = nbformat.v4.new_notebook(cells=[_graded_cell([_error("CheckFailed", "add <b>wrong</b>")])])
    nb.metadata["autograder"] = {"notes": ["not graded, handed in beside the notebook: helpers.py"]}
    nb, _ = KeepVerdictsOnly().preprocess(nb, {})
    nb, _ = LeadWithSummary().preprocess(nb, {"nbgrader": {"score": 10, "max_score": 13}})
    summary = nb.cells[0].source
    assert nb.cells[0].cell_type == "markdown" and "Score: 10 of 13" in summary
    assert "test_add_hidden</a>: failed: 0 of 3 points. CheckFailed: add &lt;b&gt;wrong&lt;/b&gt;" in summary
    assert "<li>not graded, handed in beside the notebook: helpers.py</li>" in summary


def test_a_graded_notebook_without_feedback_gets_verdicts_and_no_message():
    """When nbgrader cannot make a feedback page, the student's page is made of the verdicts: the
    failures' messages stay out, since the student's own code chose some of them."""
    tests = [TestResult("test_add", 2, 2, ""), TestResult("test_add_hidden", 0, 3, "CheckFailed: c2VjcmV0X2NoZWNr"),
             TestResult("written_why", 0, 2, "", True)]
    grade = StudentGrade("ada", 2, 7, "failed tests", "test_add_hidden: CheckFailed: c2VjcmV0X2NoZWNr", 10.0, tests, [])
    page = plain_feedback(LESSON, grade)
    assert "c2VjcmV0X2NoZWNr" not in page
    for verdict in ("test_add: passed, 2 of 2", "test_add_hidden: failed, 0 of 3", "written_why: to be graded by hand"):
        assert verdict in page, page
    assert "Score: 2 of 7" in page
    stopped = StudentGrade("bo", 0, 7, "error", "the notebook could not be read (NotJSONError)", 1.0, [], [])
    assert "could not be graded: the notebook could not be read (NotJSONError)" in plain_feedback(LESSON, stopped)


def test_the_time_table_names_each_cell_once(tmp_path):
    grade = StudentGrade("ada", 1, 2, "failed tests", "test_add: wrong", 10.0, [], [],
                         {"sandbox": 8.0, "start": 3.0, "cells": {"cell 32": 2.0, "test_add": 1.0}},
                         ["not graded, handed in beside the notebook (only the notebook is graded): helpers.py"])
    write_report([grade], LESSON, tmp_path / "report.html")
    page = (tmp_path / "report.html").read_text()
    assert "<td>cell 32</td>" in page and "<td>test_add</td>" in page and "cell cell" not in page
    assert "handed in beside the notebook" in page.split("<h2>Notes</h2>", 1)[1]

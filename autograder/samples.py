"""Sample submissions, written as edits to the release notebook, as a student would make them.

A lesson's sample class lives in samples/<lesson>.py: a Python literal mapping each student to
  about         what the submission shows,
  answers       "solution" (answer cells filled from solutions/) or "release" (left as released),
  edits         {cell id: [[old, new], ...]} text replacements applied after that,
  delete        cell ids the student deleted (optional),
  fails         the tests it must fail (all others must pass with full points),
  flags         (optional) text each expected integrity flag contains; none others may be raised.
Writing samples as edits of the committed notebooks keeps them in step with the lesson.
"""
import ast

import nbformat

from autograder.course import CourseError


def load_samples(course, lesson):
    path = course.root / "samples" / f"{lesson}.py"
    if not path.is_file():
        raise CourseError(f"{path.relative_to(course.root)} does not exist: no sample class for {lesson}")
    return ast.literal_eval(path.read_text())


def make_submission(course, lesson, sample):
    """The notebook a student with this sample's answers would hand in."""
    nb = nbformat.read(course.notebook("release", lesson), as_version=4)
    answers = {}
    if sample["answers"] == "solution":
        answers = {cell.id: cell.source for cell in
                   nbformat.read(course.notebook("solutions", lesson), as_version=4).cells}
    deleted = set(sample.get("delete", []))
    nb.cells = [cell for cell in nb.cells if cell.id not in deleted]
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("solution") and cell.id in answers:
            cell.source = answers[cell.id]
        for old, new in sample.get("edits", {}).get(cell.id, []):
            if old not in cell.source:
                raise CourseError(f"sample edit for cell {cell.id!r} of {lesson} no longer applies: "
                                  f"{old!r} is not in the cell")
            cell.source = cell.source.replace(old, new)
    return nb

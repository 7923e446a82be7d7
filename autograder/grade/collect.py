"""Step 1 of grading: find each student's notebook, from nbgrader's submitted/ or an LMS zip.

nbgrader's layout is submitted/<student>/<assignment>/<assignment>.ipynb. Students rename
notebooks ("02_vector_add (1).ipynb", "Copy of ..."): a folder with exactly one other notebook is
graded with a note; a folder with none, or several, is reported, never silently skipped.
Only the notebook is graded: anything handed in beside it is listed (`beside_notebook`), never
run. A notebook whose nbgrader cell metadata was lost gets it back from the release
(`recover_metadata`) where its cells can be placed with confidence.
"""
import copy
import difflib
import importlib.util
import re
import shutil
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from autograder.grade.integrity import grade_id

# nbgrader's own file in a submission folder: when it was submitted (for late penalties).
TIMESTAMP = "timestamp.txt"


@dataclass
class Submission:
    student: str
    folder: Path  # submitted/<student>/<assignment> inside the course
    notebook: Path | None  # None when no notebook could be chosen
    flags: list = field(default_factory=list)  # for a person to review: a renamed notebook, several
    notes: list = field(default_factory=list)  # for a person to know, not a concern: a late mark


def _choose_notebook(folder, assignment):
    """The notebook to grade, or None, and what a person should know about the choice."""
    expected = folder / f"{assignment}.ipynb"
    if expected.is_file():
        return expected, []
    others = sorted(p for p in folder.glob("*.ipynb") if p.is_file())
    if len(others) == 1:
        return others[0], [f"the notebook was renamed to {others[0].name!r}; it was graded as {expected.name}"]
    if not others:
        return None, [f"no notebook in the submission (expected {expected.name})"]
    return None, [f"{len(others)} notebooks and none named {expected.name}: "
                  f"{', '.join(p.name for p in others)}; which one to grade is for a person to say"]


def beside_notebook(submission):
    """The files handed in beside the graded notebook (helper modules, data, other notebooks), as
    paths within the submission. None of them is graded or visible to the notebook when it runs;
    nbgrader's timestamp and Jupyter's checkpoints are not the student's and are not listed."""
    if submission.notebook is None:
        return []
    return sorted(str(path.relative_to(submission.folder)) for path in submission.folder.rglob("*")
                  if path.is_file() and path != submission.notebook and path.name != TIMESTAMP
                  and ".ipynb_checkpoints" not in path.parts)


def left_out_note(files, nb):
    """Says which files were not graded, and explains the import that fails because of it."""
    imported = {name for cell in nb.cells if cell.cell_type == "code"
                for name in re.findall(r"^\s*(?:from|import)\s+(\w+)", cell.source, re.MULTILINE)}
    modules = {PurePosixPath(f).parts[0].removesuffix(".py") for f in files}
    note = f"not graded, handed in beside the notebook (only the notebook is graded): {', '.join(files[:10])}" + \
        (f" and {len(files) - 10} more" if len(files) > 10 else "")
    for name in sorted(imported & modules):
        note += (f"; the notebook imports {name}, and gets the installed {name}, not the file handed in"
                 if importlib.util.find_spec(name) else
                 f"; the notebook imports {name}, which is not a module here (ModuleNotFoundError): "
                 "code it needs must be in the notebook")
    return note


# How LMSs name the files of a bulk download; each gives the student and the file they handed in.
# Canvas: <name>_<user id>_<submission id>_<file>, "_LATE" after the name when late, and "-1", "-2"
# before the extension of a file submitted again. Blackboard: <assignment>_<user>_attempt_<date>_<file>
# (and a <...>_attempt_<date>.txt of its own). Moodle: a folder per student,
# <Full Name>_<id>_assignsubmission_file_/<file>.
CANVAS = re.compile(r"(?P<name>[^_/]+)_(?P<late>LATE_)?(?P<user>\d+)_\d+_(?P<file>.+?)(?:-\d+)?(?P<ext>\.[^.]+)$")
BLACKBOARD = re.compile(r".+_(?P<user>[^_/]+)_attempt_\d{4}(?:-\d\d){5}(?:_(?P<file>.+)|\.txt)$")
MOODLE_FOLDER = re.compile(r"(?P<student>.+_\d+)_assign(?:submission|feedback)_[a-z]+_?$")


def lms_entry(path, assignment):
    """(student, file path within the student's folder, note or None) for one file of an LMS
    download, or None for a file that is the LMS's own. The student is the LMS's unique name for
    them (Canvas: name and user id; Moodle: the folder, without its plugin suffix), or None for a
    file whose name says no student."""
    if len(path.parts) > 1:  # a folder per student (Moodle, or any <student>/<file> zip)
        folder = MOODLE_FOLDER.match(path.parts[0])
        return (folder["student"] if folder else path.parts[0]), PurePosixPath(*path.parts[1:]), None
    name = path.name
    if match := CANVAS.match(name):
        note = "Canvas marks this submission late" if match["late"] else None
        return f"{match['name']}_{match['user']}", PurePosixPath(match["file"] + match["ext"]), note
    if match := BLACKBOARD.match(name):
        return (match["user"], PurePosixPath(match["file"]), None) if match["file"] else None
    if name.endswith(f"_{assignment}.ipynb"):  # <student>_<assignment>.ipynb, the student's name may hold "_"
        return name[:-len(f"_{assignment}.ipynb")], PurePosixPath(f"{assignment}.ipynb"), None
    student, _, rest = name.partition("_")
    return (student, PurePosixPath(rest), None) if rest else (None, path, None)


def unpack_lms_zip(archive, assignment, into):
    """Unpack an LMS download into <into>/<student>/<assignment>/; return each student's notes.

    Entries are named as `lms_entry` reads them. Paths that climb out of the folder are refused.
    Entries go in name order, so that of two Blackboard attempts the later one is kept.
    """
    notes = {}
    with zipfile.ZipFile(archive) as zipped:
        for entry in sorted(zipped.infolist(), key=lambda e: e.filename):
            path = PurePosixPath(entry.filename)
            if entry.is_dir() or ".." in path.parts or path.is_absolute() or "__MACOSX" in path.parts:
                continue
            found = lms_entry(path, assignment)
            if found is None:
                continue
            student, name, note = found
            if student is None:
                print(f"{archive}: {entry.filename!r} names no student (<student>/<file> or "
                      "<student>_<file> was expected); it was left out", file=sys.stderr)
                continue
            if note:
                notes.setdefault(student, []).append(note)
            target = into / student / assignment / name
            target.parent.mkdir(parents=True, exist_ok=True)
            with zipped.open(entry) as source, target.open("wb") as sink:
                shutil.copyfileobj(source, sink)
    return notes


def collect(course, assignment, submissions=None, lms_zip=None):
    """Submissions of `assignment`, copied into the course's submitted/ when they come from elsewhere."""
    submitted = course.root / "submitted"
    lms_notes = unpack_lms_zip(lms_zip, assignment, submitted) if lms_zip is not None else {}
    if submissions is not None and Path(submissions).resolve() != submitted.resolve():
        for folder in sorted(Path(submissions).glob(f"*/{assignment}")):
            target = submitted / folder.parent.name / assignment
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(folder, target)
    found = []
    for folder in sorted(submitted.glob(f"*/{assignment}")):
        if folder.is_dir():
            notebook, flags = _choose_notebook(folder, assignment)
            found.append(Submission(folder.parent.name, folder, notebook, flags, lms_notes.get(folder.parent.name, [])))
    return found


# Recovering lost cell metadata. The release's cells that students do not write (markdown, setup,
# tests) are found in the submission by their text and order; each answer cell of the release is
# then the student's cell between the same two neighbours. Whatever cannot be placed that way with
# confidence is left to a person.
DEFINED = re.compile(r"^(?:async\s+def|def|class)\s+(\w+)|^(\w+)\s*(?::[^=\n]*)?=(?!=)", re.MULTILINE)
FRESH_COPY = "paste the answers into a fresh copy of the release notebook, and grade again"


def _text(cell):
    return cell.cell_type, "\n".join(line.rstrip() for line in cell.source.strip().splitlines())


def _defines(source):
    """The names a cell defines at its top level: what identifies an answer whatever its body."""
    return {a or b for a, b in DEFINED.findall(source)}


def _is_answer(release_cell):
    return bool(release_cell.metadata.get("nbgrader", {}).get("solution"))


def _where(nb, index):
    """A cell of the submission as an instructor finds it: its grade_id, or its number and first line."""
    if index < 0:
        return "the start"
    if index >= len(nb.cells):
        return "the end"
    cell = nb.cells[index]
    if grade_id(cell):
        return f"cell {grade_id(cell)!r}"
    first = [line for line in cell.source.strip().splitlines() if not line.startswith(("@", "#"))][:1]
    return f"cell {index + 1}" + (f" ({first[0][:40]!r})" if first else "")


def _anchors(nb, release, present):
    """{release index: submission index} for the cells found in both: by grade_id where the
    submission kept it, else by type and text. Answer cells without their metadata never match
    here: students change their text."""
    def key(cell, index, side):
        if grade_id(cell) in present:
            return "id", grade_id(cell)
        return (side, index) if side == "release" and _is_answer(cell) else _text(cell)

    matcher = difflib.SequenceMatcher(None, [key(c, i, "release") for i, c in enumerate(release.cells)],
                                      [key(c, i, "submission") for i, c in enumerate(nb.cells)], autojunk=False)
    return {r + k: s + k for r, s, size in matcher.get_matching_blocks() for k in range(size)}


def _place_answer(nb, release, r, anchors, free, answers):
    """The submission's cell for the release's answer cell r: (index, None); (None, None) when the
    student deleted it; (None, problem) when it cannot be placed with confidence."""
    before = max((a for a in anchors if a < r), default=None)
    after = min((a for a in anchors if a > r), default=None)
    low, high = anchors.get(before, -1), anchors.get(after, len(nb.cells))
    cell, names = release.cells[r], _defines(release.cells[r].source)
    slot = [i for i in free if low < i < high and nb.cells[i].cell_type == cell.cell_type]
    framed = [i for i in slot if names and names <= _defines(nb.cells[i].source)]
    siblings = [a for a in answers if (before is None or a > before) and (after is None or a < after)]
    between = f"between {_where(nb, low)} and {_where(nb, high)}"
    if len(framed) == 1:
        return framed[0], None
    if slot and len(slot) == len(siblings) and not framed:  # one cell for each answer there, in order
        return slot[siblings.index(r)], None
    if slot:
        return None, (f"nbgrader's cell metadata is missing and the answer {grade_id(cell)!r} cannot be told "
                      f"apart: {' and '.join(_where(nb, i) for i in framed or slot)} {between} could each be "
                      f"it. Keep one answer cell per exercise, or {FRESH_COPY}")
    elsewhere = [i for i in free if names and names <= _defines(nb.cells[i].source)]
    if elsewhere:
        return None, (f"nbgrader's cell metadata is missing and the answer {grade_id(cell)!r} is not where "
                      f"the lesson has it ({between}): {' and '.join(_where(nb, i) for i in elsewhere)} "
                      f"defines {', '.join(sorted(names))}. Move it back, or {FRESH_COPY}")
    return None, None


def recover_metadata(submitted, release):
    """The submission with the nbgrader metadata it lost put back, a note saying so (or None), and
    a problem (or None) when an answer cannot be placed with confidence: then it is not graded (the
    cells that could be placed still are, so that integrity checks see them as they are)."""
    nb = copy.deepcopy(submitted)
    present = {grade_id(cell) for cell in nb.cells} - {None}
    if all(grade_id(cell) in present for cell in release.cells if grade_id(cell)) \
            or all(grade_id(cell) for cell in nb.cells):
        return nb, None, None
    anchors = _anchors(nb, release, present)
    ids = {cell.get("id") for cell in nb.cells}
    recovered = []

    def restore(theirs, ours):  # the release's metadata, and its cell id unless another cell has it
        if grade_id(theirs) and not grade_id(ours):
            ours.metadata["nbgrader"] = copy.deepcopy(theirs.metadata["nbgrader"])
            recovered.append(grade_id(theirs))
        if theirs.get("id") and theirs.get("id") not in ids:
            ours["id"] = theirs["id"]

    for r, s in anchors.items():
        restore(release.cells[r], nb.cells[s])
    free = [i for i, cell in enumerate(nb.cells) if i not in anchors.values() and not grade_id(cell)]
    answers = [r for r, cell in enumerate(release.cells) if _is_answer(cell) and grade_id(cell) not in present]
    if answers and free and not anchors:
        return nb, None, ("nbgrader's cell metadata is missing and none of the lesson's cells could be found "
                          "in the notebook: is it this assignment's notebook?")
    for r in answers:
        index, problem = _place_answer(nb, release, r, anchors, free, answers)
        if problem:
            return nb, None, problem
        if index is not None:
            restore(release.cells[r], nb.cells[index])
    if not recovered:
        return nb, None, None
    return nb, (f"nbgrader's cell metadata was missing (an editor that drops it, or answers pasted into "
                f"a fresh notebook?): {len(recovered)} cells were matched with the release by their text "
                f"and order, and graded: {', '.join(sorted(recovered))}"), None

"""Step 1 of grading: find each student's notebook, from nbgrader's submitted/ or an LMS zip.

nbgrader's layout is submitted/<student>/<assignment>/<assignment>.ipynb. Students rename
notebooks ("02_vector_add (1).ipynb", "Copy of ..."): a folder with exactly one other notebook is
graded with a note; a folder with none, or several, is reported, never silently skipped.
Only the notebook is graded: anything handed in beside it is listed (`beside_notebook`), never
run.
"""
import importlib.util
import re
import shutil
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath


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

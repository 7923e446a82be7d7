"""Step 1 of grading: find each student's notebook, from nbgrader's submitted/ or an LMS zip.

nbgrader's layout is submitted/<student>/<assignment>/<assignment>.ipynb. Students rename
notebooks ("02_vector_add (1).ipynb", "Copy of ..."): a folder with exactly one other notebook is
graded with a note; a folder with none, or several, is reported, never silently skipped.
"""
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath


@dataclass
class Submission:
    student: str
    folder: Path  # submitted/<student>/<assignment> inside the course
    notebook: Path | None  # None when no notebook could be chosen
    notes: list = field(default_factory=list)


def _choose_notebook(folder, assignment):
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


def unpack_lms_zip(archive, assignment, into):
    """Unpack an LMS download into <into>/<student>/<assignment>/.

    Entries are `<student>/<file>.ipynb` (a folder per student) or `<student>_<rest>.ipynb`
    (Canvas and Moodle style flat downloads). Paths that climb out of the folder are refused.
    """
    with zipfile.ZipFile(archive) as zipped:
        for entry in zipped.infolist():
            path = PurePosixPath(entry.filename)
            if entry.is_dir() or path.suffix != ".ipynb" or ".." in path.parts or path.is_absolute() \
                    or "__MACOSX" in path.parts:
                continue
            student, name = (path.parts[0], path.name) if len(path.parts) > 1 else path.name.split("_", 1)
            target = into / student / assignment / name
            target.parent.mkdir(parents=True, exist_ok=True)
            with zipped.open(entry) as source, target.open("wb") as sink:
                shutil.copyfileobj(source, sink)


def collect(course, assignment, submissions=None, lms_zip=None):
    """Submissions of `assignment`, copied into the course's submitted/ when they come from elsewhere."""
    submitted = course.root / "submitted"
    if lms_zip is not None:
        unpack_lms_zip(lms_zip, assignment, submitted)
    if submissions is not None and Path(submissions).resolve() != submitted.resolve():
        for folder in sorted(Path(submissions).glob(f"*/{assignment}")):
            target = submitted / folder.parent.name / assignment
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(folder, target)
    found = []
    for folder in sorted(submitted.glob(f"*/{assignment}")):
        if folder.is_dir():
            notebook, notes = _choose_notebook(folder, assignment)
            found.append(Submission(folder.parent.name, folder, notebook, notes))
    return found

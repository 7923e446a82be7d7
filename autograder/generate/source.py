"""Masters to source notebooks: one small step per class, applied in order by `master_to_source`."""
import re
import tomllib
from pathlib import Path

import jupytext
import nbformat

from autograder.grade.integrity import cell_names, module_data  # the audit's reading of a cell's Python
from autograder.generate.cells import (JUPYTEXT_FORMAT, NBGRADER_DEFAULTS, SETUP_TAG, fingerprint,
                                    is_setup)

KIT = Path(__file__).resolve().parent.parent / "kit.py"
PYPROJECT = KIT.parent.parent / "pyproject.toml"
BADGE_ID = "colab-badge"
BADGE_IMAGE = "https://colab.research.google.com/assets/colab-badge.svg"
GITHUB_REPOSITORY = re.compile(r"^github\.com/[\w.-]+/[\w.-]+$")


def course_settings():
    """pyproject.toml's [tool.course]: the GitHub repository and branch that notebooks open from."""
    settings = tomllib.loads(PYPROJECT.read_text()).get("tool", {}).get("course", {})
    if not GITHUB_REPOSITORY.match(settings.get("repository", "")) or not settings.get("branch"):
        raise ValueError(f"{PYPROJECT} needs a [tool.course] table with repository = "
                         f"\"github.com/<owner>/<repo>\" and branch = \"<branch>\" (Colab opens "
                         f"notebooks from GitHub); it has {settings}")
    return settings


class KeepAuthoredMetadata:
    """Only nbgrader's metadata and tags come from a master; jupytext's layout hints do not."""

    def __call__(self, nb, lesson):
        for cell in nb.cells:
            cell.metadata = {k: v for k, v in cell.metadata.items() if k in ("nbgrader", "tags")}
        return nb


class CompleteNbgraderMetadata:
    """Masters write only the nbgrader keys that matter; nbgrader wants every key present."""

    def __call__(self, nb, lesson):
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader")
            if meta is not None:
                cell.metadata["nbgrader"] = {**NBGRADER_DEFAULTS, **meta}
        return nb


class PlaceSetup:
    """Put the shared kit into the setup cell, locked so that autograding restores it."""

    def __call__(self, nb, lesson):
        setups = [cell for cell in nb.cells if is_setup(cell)]
        if len(setups) != 1:
            raise ValueError(f"{lesson}: the master needs exactly one cell tagged {SETUP_TAG!r}, "
                             f"found {len(setups)}")
        cell = setups[0]
        cell.source = KIT.read_text().rstrip("\n")
        cell.metadata["nbgrader"] = {**NBGRADER_DEFAULTS, "locked": True, "grade_id": "setup"}
        cell.metadata["cellView"] = "form"  # Colab shows the title and folds the code
        cell.metadata["jupyter"] = {"source_hidden": True}  # JupyterLab folds it too
        return nb


class RequireLockedReferences:
    """Every name the course's cells read (tests, and the read-only cells of a lesson's own helpers)
    comes from a cell that grading restores (read-only, or a test) or from an answer: never only from a
    cell the student may edit, where a reference could change together with the answers it checks."""

    def __call__(self, nb, lesson):
        course, editable, read = set(), {}, {}
        for index, cell in enumerate(nb.cells, 1):
            if cell.cell_type != "code":
                continue
            meta = cell.metadata.get("nbgrader", {})
            bound, names = cell_names(cell.source)
            if meta.get("locked") or meta.get("grade") or meta.get("solution") or is_setup(cell):
                course |= bound
                if not meta.get("solution"):
                    read.update(dict.fromkeys(names - read.keys(), meta.get("grade_id") or f"cell {index}"))
            else:
                editable.update(dict.fromkeys(bound - editable.keys(), index))
        unsafe = sorted(name for name in read.keys() & editable.keys() if name not in course)
        if unsafe:
            name = unsafe[0]
            raise ValueError(f"{lesson}: {read[name]!r} uses {', '.join(unsafe)}, defined in cell {editable[name]}, "
                             "which students can edit: make that cell read-only (nbgrader={\"grade_id\": ..., "
                             "\"locked\": true}) so that grading restores it")
        return nb


class RequireKeptData:
    """The course's code reads from another course cell only what grading keeps for the course:
    definitions and literal constants (autograder/grade/seal.py). Other data (a tensor, a list, a
    value computed when the cell runs) stays in the student's namespace, where a student's cell can
    rebind it unseen: a later test that reads it, or a course function called from a later cell,
    would read the student's. And a constant the course keeps must not be a name an answer binds
    too: the course would read its own value where it meant the answer."""

    def __call__(self, nb, lesson):
        data, answers, functions, readers = {}, {}, {}, {}
        for index, cell in enumerate(nb.cells, 1):
            if cell.cell_type != "code" or is_setup(cell):
                continue
            meta = cell.metadata.get("nbgrader", {})
            where = meta.get("grade_id") or f"cell {index}"
            bound, read = cell_names(cell.source)
            if meta.get("solution") or not (meta.get("locked") or meta.get("grade")):
                answers.update(dict.fromkeys(bound - answers.keys(), where))
                continue
            for name in sorted(read):
                self._refuse_data(lesson, repr(where), name, data.get(name))
            cell_data, defined = module_data(cell.source)
            for name in read | {name for reads in defined.values() for name in reads}:
                readers.setdefault(name, set()).add(where)
            data.update({name: (where, literal) for name, literal in cell_data.items()})
            functions.update({name: (where, reads) for name, reads in defined.items()})
            for name in defined:
                data.pop(name, None)
        for function, (where, reads) in sorted(functions.items()):
            if readers.get(function, set()) - {where}:  # called from another cell
                for name in sorted(reads):
                    self._refuse_data(lesson, f"{function} (in {where!r})", name, data.get(name))
        for name, (where, literal) in sorted(data.items()):
            if literal and name in answers and name in readers:
                raise ValueError(f"{lesson}: {where!r} binds {name}, which {answers[name]!r} binds too and "
                                 f"{sorted(readers[name])[0]!r} reads: grading keeps the course's constant, so "
                                 "the course would never read the student's; rename one of them")
        return nb

    @staticmethod
    def _refuse_data(lesson, reader, name, binding):
        if binding and not binding[1]:
            raise ValueError(f"{lesson}: {reader} reads {name}, which {binding[0]!r} binds to data that grading "
                             "leaves in the student's namespace (a student's cell could rebind it): make it a "
                             "literal constant, or return it from a function (as 05's variance_hint() does)")


class NameCells:
    """Stable cell ids (nbformat 4.5), so rebuilding an unchanged master changes nothing."""

    def __call__(self, nb, lesson):
        for index, cell in enumerate(nb.cells):
            cell.id = cell.metadata.get("nbgrader", {}).get("grade_id") or f"cell-{index}"
        return nb


class SetNotebookMetadata:
    """Kernel, language, and a Colab hint to open the notebook on a GPU runtime."""

    def __call__(self, nb, lesson):
        nb.metadata = {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
            "accelerator": "GPU",
            "colab": {"provenance": [], "gpuType": "T4"},
        }
        return nb


class AddColabBadge:
    """An "Open in Colab" badge as the first cell, linking to the lesson's notebook in `stage`/ on
    GitHub: release/, what students get. Its repository and branch are set in one place,
    pyproject.toml's [tool.course]. A cell of its own, added after NameCells so that no other cell's
    id moves; `sync` drops it, so it never reaches a master. Applied to a notebook that has a badge,
    it replaces it (to point solutions at solutions/)."""

    def __init__(self, stage="release", repository=None, branch=None):
        self.stage, self.repository, self.branch = stage, repository, branch

    def url(self, lesson):
        settings = course_settings()
        repository, branch = self.repository or settings["repository"], self.branch or settings["branch"]
        return (f"https://colab.research.google.com/github/{repository.removeprefix('github.com/')}"
                f"/blob/{branch}/{self.stage}/{lesson}/{lesson}.ipynb")

    def __call__(self, nb, lesson):
        badge = nbformat.v4.new_markdown_cell(f"[![Open In Colab]({BADGE_IMAGE})]({self.url(lesson)})", id=BADGE_ID)
        nb.cells = [badge] + [cell for cell in nb.cells if cell.get("id") != BADGE_ID]
        return nb


class Stamp:
    """Record the fingerprint at build time: a later difference means someone edited the notebook."""

    def __call__(self, nb, lesson):
        nb.metadata["course"] = {"lesson": lesson, "built": fingerprint(nb)}
        return nb


STEPS = [KeepAuthoredMetadata(), CompleteNbgraderMetadata(), PlaceSetup(), RequireLockedReferences(), RequireKeptData(), NameCells(),
         AddColabBadge(), SetNotebookMetadata(), Stamp()]


def master_to_source(master_path, lesson):
    nb = jupytext.read(master_path, **JUPYTEXT_FORMAT)
    nb.nbformat, nb.nbformat_minor = 4, 5
    for step in STEPS:
        nb = step(nb, lesson)
    nbformat.validate(nb)
    return nb


def edited_since_build(nb):
    """True when a source notebook no longer matches the fingerprint the build stamped on it."""
    stamp = nb.metadata.get("course", {}).get("built")
    return stamp is not None and stamp != fingerprint(nb)

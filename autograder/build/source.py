"""Masters to source notebooks: one small step per class, applied in order by `master_to_source`."""
from pathlib import Path

import jupytext
import nbformat

from autograder.build.cells import (JUPYTEXT_FORMAT, NBGRADER_DEFAULTS, SETUP_TAG, fingerprint,
                                    is_setup)

KIT = Path(__file__).resolve().parent.parent / "kit.py"


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


class Stamp:
    """Record the fingerprint at build time: a later difference means someone edited the notebook."""

    def __call__(self, nb, lesson):
        nb.metadata["course"] = {"lesson": lesson, "built": fingerprint(nb)}
        return nb


STEPS = [KeepAuthoredMetadata(), CompleteNbgraderMetadata(), PlaceSetup(), NameCells(), SetNotebookMetadata(), Stamp()]


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

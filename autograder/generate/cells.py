"""What the build steps share: nbgrader's cell metadata, the setup cell, and notebook fingerprints."""
import hashlib
import json

import nbformat

NBGRADER_DEFAULTS = {"grade": False, "solution": False, "locked": False, "task": False, "schema_version": 3}
SETUP_TAG = "setup"
# What a master's setup cell says; the build puts the whole kit there, so notebooks need no package.
SETUP_PLACEHOLDER = "from autograder.kit import *  # noqa: F403 (the build places autograder/kit.py here)"
JUPYTEXT_FORMAT = {"fmt": "py:percent"}
# Masters keep only what a person writes: nbgrader's metadata and tags, no notebook header.
JUPYTEXT_FILTERS = {"notebook_metadata_filter": "-all", "cell_metadata_filter": "nbgrader,tags,-all"}


def is_setup(cell):
    return SETUP_TAG in cell.metadata.get("tags", [])


def fingerprint(nb):
    """A hash of what an instructor can edit in a notebook: cell types, sources, nbgrader metadata."""
    content = [(c.cell_type, c.source, c.metadata.get("nbgrader", {}), c.metadata.get("tags", []))
               for c in nb.cells]
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


def without_outputs(nb):
    """A copy of the notebook with outputs and execution counts cleared, for comparing sources."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cell.metadata.pop("execution", None)
    return nb


def dumps(nb):
    return nbformat.writes(nb) + "\n"

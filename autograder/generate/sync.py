"""Source notebooks back to masters, for edits made in JupyterLab with nbgrader's toolbar."""
import copy

import jupytext

from autograder.generate.cells import (JUPYTEXT_FILTERS, JUPYTEXT_FORMAT, NBGRADER_DEFAULTS,
                                    SETUP_PLACEHOLDER, is_setup, without_outputs)
from autograder.generate.source import BADGE_ID


def source_to_master(source_nb):
    """The master text that builds this source notebook: the inverse of `master_to_source`."""
    nb = without_outputs(copy.deepcopy(source_nb))
    nb.metadata = {"jupytext": dict(JUPYTEXT_FILTERS)}
    nb.cells = [cell for cell in nb.cells if cell.get("id") != BADGE_ID]  # the build adds it (pyproject.toml)
    for cell in nb.cells:
        if is_setup(cell):
            cell.source = SETUP_PLACEHOLDER
            cell.metadata = {"tags": cell.metadata["tags"]}
            continue
        meta = cell.metadata.get("nbgrader")
        if meta is not None:
            cell.metadata["nbgrader"] = {k: v for k, v in meta.items() if NBGRADER_DEFAULTS.get(k, None) != v}
    return jupytext.writes(nb, **JUPYTEXT_FORMAT)

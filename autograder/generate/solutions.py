"""Source notebooks to published solutions: answers kept, hidden tests and grading markup gone."""
import re

import nbformat
from nbgrader.preprocessors import ClearHiddenTests

from autograder.generate.cells import without_outputs
from autograder.generate.source import AddColabBadge

SOLUTION_MARKERS = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n?", re.MULTILINE)


class RemoveHiddenTests:
    """nbgrader's own step, the one that makes releases, so both agree on what is hidden."""

    def __call__(self, nb, lesson):
        nb, _ = ClearHiddenTests().preprocess(nb, {})
        return nb


class RemoveSolutionMarkers:
    """Students read the answer as plain code; the markers only matter to nbgrader."""

    def __call__(self, nb, lesson):
        for cell in nb.cells:
            cell.source = SOLUTION_MARKERS.sub("", cell.source)
        return nb


class RemoveGradingMetadata:
    """A solution notebook is a plain notebook: no nbgrader cells, no build stamp."""

    def __call__(self, nb, lesson):
        for cell in nb.cells:
            cell.metadata.pop("nbgrader", None)
        nb.metadata.pop("course", None)
        return nb


class KeepRecordedOutputs:
    """Outputs recorded by running solutions on a GPU survive rebuilds while the code is unchanged:
    the same code cells, in the same order, with the same sources. Text cells may change."""

    def __init__(self, previous):
        self.previous = previous

    def __call__(self, nb, lesson):
        if self.previous is None or _code(without_outputs(self.previous)) != _code(nb):
            return nb
        recorded = {cell.id: cell for cell in self.previous.cells if cell.cell_type == "code"}
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = recorded[cell.id].outputs
                cell.execution_count = recorded[cell.id].execution_count
        # Running a notebook also fills in its language_info (the Python version it ran on).
        nb.metadata["language_info"] = self.previous.metadata.get("language_info", nb.metadata.get("language_info"))
        return nb


def _code(nb):
    return [(cell.id, cell.source, cell.metadata) for cell in nb.cells if cell.cell_type == "code"]


def source_to_solution(source_nb, lesson, previous=None):
    nb = without_outputs(source_nb)
    for step in (RemoveHiddenTests(), RemoveSolutionMarkers(), RemoveGradingMetadata(),
                 AddColabBadge("solutions"), KeepRecordedOutputs(previous)):
        nb = step(nb, lesson)
    nbformat.validate(nb)
    return nb

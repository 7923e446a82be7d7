"""Source notebooks to published solutions: answers kept, hidden tests and grading markup gone."""
import re

import nbformat
from nbgrader.preprocessors import ClearHiddenTests

from autograder.build.cells import without_outputs

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
    """Outputs recorded by running solutions on a GPU survive rebuilds while the code is unchanged."""

    def __init__(self, previous):
        self.previous = previous

    def __call__(self, nb, lesson):
        # Cells only: running a notebook also fills in its language_info.
        if self.previous is not None and without_outputs(self.previous).cells == nb.cells:
            return self.previous
        return nb


def source_to_solution(source_nb, lesson, previous=None):
    nb = without_outputs(source_nb)
    for step in (RemoveHiddenTests(), RemoveSolutionMarkers(), RemoveGradingMetadata(),
                 KeepRecordedOutputs(previous)):
        nb = step(nb, lesson)
    nbformat.validate(nb)
    return nb

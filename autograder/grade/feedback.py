"""Feedback steps for nbgrader's generate_feedback (configured in nbgrader_config.py)."""
from nbgrader.preprocessors import NbGraderPreprocessor


class HideHiddenTestTracebacks(NbGraderPreprocessor):
    """A traceback quotes the lines around the failure, and in a hidden test those lines are the
    hidden test. Keep only the error's last line, which for our checks is the teaching message.
    Runs before ClearHiddenTests, while the markers still say which cells hide tests."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and "### BEGIN HIDDEN TESTS" in cell.source:
            for output in cell.outputs:
                if output.output_type == "error":
                    output.traceback = [f"{output.ename}: {output.evalue}",
                                        "(the traceback of a hidden test is not shown)"]
        return cell, resources

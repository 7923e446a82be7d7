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


BEGIN, END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


class RedactHiddenTests(NbGraderPreprocessor):
    """Student code can read the hidden tests while they run (IPython's In and _ih, linecache, the
    frame of a hidden test that calls it) and print them, or raise them as a message. No output of
    any cell may quote a line of them. Runs before ClearHiddenTests, while the markers still show
    which lines are hidden."""

    def preprocess(self, nb, resources):
        hidden = {line.strip() for cell in nb.cells for part in cell.source.split(BEGIN)[1:]
                  for line in part.split(END)[0].splitlines() if len(line.strip()) >= 12}
        if not hidden:
            return nb, resources

        def scrub(text):
            return "\n".join("[a line of a hidden test was removed]" if any(h in line for h in hidden)
                             else line for line in text.split("\n"))

        for cell in nb.cells:
            for output in cell.get("outputs", []):
                if isinstance(output.get("text"), str):
                    output.text = scrub(output.text)
                for mime, value in output.get("data", {}).items():
                    if isinstance(value, str) and mime.startswith("text/"):
                        output.data[mime] = scrub(value)
                if output.get("output_type") == "error":
                    output.evalue = scrub(output.get("evalue", ""))
                    output.traceback = [scrub(line) for line in output.get("traceback", [])]
        return nb, resources

"""Feedback steps for nbgrader's generate_feedback (configured in nbgrader_config.py).

The grading run executes the student's code, which can read the hidden tests while they run (IPython's
`In`, frames, linecache) and encode them into anything it outputs: text, a plot, an exception, in
base64 or backwards. So no output of the grading run reaches the student: feedback is the notebook as
handed in (answers as written, the course's cells as nbgrader restored them, hidden tests cleared)
and, under each test, one verdict line: passed or failed, its points and, when the course's checks
or the grader report the failure, their message, bounded to VERDICT_CHARS characters on one line (an
error raised in the student's code shows its type only: its message is theirs to choose). The
instructor's autograded notebook and the formgrader keep every output.
"""
import html
import re

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor

from autograder.grade.isolate import COURSE_ERRORS
from autograder.grade.record import failure_message

VERDICT_CHARS = 300  # what one failing test can say: its check's message, never a page of output
FOLD_LINES = 30  # a read-only cell longer than this (the course setup) is folded away
BEGIN, END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
WITHHELD = "(its message is not shown: it quotes a hidden test)"


def _grading(cell):
    meta = cell.metadata.get("nbgrader", {})
    return meta if cell.cell_type == "code" and meta.get("grade") else None


def _hidden_lines(nb):
    return {line.strip() for cell in nb.cells for part in cell.source.split(BEGIN)[1:]
            for line in part.split(END)[0].splitlines() if len(line.strip()) >= 12}


def bounded(message, hidden=()):
    """The message on one line, without control characters, at most VERDICT_CHARS long; withheld
    when it quotes a line of a hidden test (encoded copies are what the bound is for)."""
    line = " ".join(re.sub(r"[\x00-\x1f\x7f-\x9f]", " ", message).split())
    if any(h in line for h in hidden):
        return WITHHELD
    return line if len(line) <= VERDICT_CHARS else line[:VERDICT_CHARS - 1] + "…"


def verdict_message(cell, hidden=()):
    """Why a test cell failed, as the student may read it."""
    error = next((o for o in cell.get("outputs", []) if o.output_type == "error"), None)
    if error is None or error.ename in COURSE_ERRORS:
        return bounded(failure_message(cell), hidden)
    ename = re.sub(r"[^\w.]", "", error.ename)[:60]
    return f"{ename} (raised while the test ran; its message is not shown here: run the notebook to read it)"


def attach_notes(notebook, notes):
    """Keep the grader's notes for the student (files left out, metadata recovered) in the autograded
    notebook, where LeadWithSummary finds them, whichever command makes the feedback."""
    if notes:
        nb = nbformat.read(notebook, as_version=4)
        nb.metadata["autograder"] = {"notes": list(notes)}
        nbformat.write(nb, notebook)


class KeepVerdictsOnly(NbGraderPreprocessor):
    """Every output of the grading run is dropped; a test cell shows its verdict instead. Runs after
    GetGrades (the points) and before ClearHiddenTests (which hides the lines a message may quote)."""

    def preprocess(self, nb, resources):
        hidden = _hidden_lines(nb)
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            meta, message = _grading(cell), verdict_message(cell, hidden)
            cell.outputs, cell.execution_count = [], None
            if meta is None:
                continue
            score, points = meta.get("score"), meta.get("points", 0)
            if score is None:
                text, stream = f"to be graded by hand ({points:g} points)", "stdout"
            elif score >= points:
                text, stream = f"passed: {score:g} of {points:g} points", "stdout"
            else:
                text, stream = f"failed: {score:g} of {points:g} points. {message}", "stderr"
            cell.outputs = [nbformat.v4.new_output("stream", name=stream, text=text)]
        return nb, resources


class LeadWithSummary(NbGraderPreprocessor):
    """A first cell that says the score and, before anything else, what failed and why. Runs after
    KeepVerdictsOnly and reads its verdicts."""

    def preprocess(self, nb, resources):
        failed = [(meta["grade_id"], cell.outputs[0].text) for cell in nb.cells
                  if (meta := _grading(cell)) and cell.outputs and cell.outputs[0].get("name") == "stderr"]
        grades = resources.get("nbgrader", {})
        parts = [f"<p><b>Score: {grades.get('score', 0):g} of {grades.get('max_score', 0):g}.</b> "]
        if failed:
            parts.append(f"{len(failed)} test(s) failed:</p><ul>" + "".join(
                f'<li><a href="#{html.escape(name)}">{html.escape(name)}</a>: {html.escape(text)}</li>'
                for name, text in failed) + "</ul>")
        else:
            parts.append("Every test passed.</p>")
        notes = nb.metadata.get("autograder", {}).get("notes", [])
        if notes:
            parts.append("<p>Please note:</p><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
        parts.append("<p>Below: your notebook as you handed it in, with each test's verdict under it. "
                     "Outputs are not shown; run the notebook to see them.</p>")
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(f'<div class="alert alert-info">{"".join(parts)}</div>'))
        return nb, resources


class FoldReadOnlyCode(NbGraderPreprocessor):
    """The course setup (hundreds of lines the student did not write) is folded away, so that the
    page opens with the summary and the first exercise."""

    def preprocess_cell(self, cell, resources, index):
        meta = cell.metadata.get("nbgrader", {})
        lines = cell.source.count("\n") + 1
        if cell.cell_type == "code" and meta.get("locked") and not meta.get("grade") and lines > FOLD_LINES:
            fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", cell.source)), default=0))
            title = re.sub(r"^#\s*(@title\s*)?|\{.*", "", cell.source.splitlines()[0]).strip() or "read-only code"
            cell = nbformat.v4.new_markdown_cell(
                f"<details><summary>{html.escape(title)} ({lines} lines, folded: click to open)</summary>\n\n"
                f"{fence}python\n{cell.source}\n{fence}\n\n</details>")
        return cell, resources

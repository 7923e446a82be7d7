"""Step 5 of grading: grades.csv, each student's feedback, and report.html for the instructor."""
import base64
import csv
import html
import io
import re
import shutil
from collections import Counter
from statistics import median_high

COLUMNS = ["student", "score", "max_score", "status", "reason", "flags"]


def write_csv(grades, path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for g in grades:
            writer.writerow([g.student, f"{g.score:g}", f"{g.max_score:g}", g.status, g.reason, "; ".join(g.flags)])


def print_table(grades):
    width = shutil.get_terminal_size((120, 20)).columns
    name = max([len("student")] + [len(g.student) for g in grades])
    print(f"{'student':<{name}}  {'score':>9}  {'time':>6}  {'status':<20}  {'flags':>5}  reason")
    for g in grades:
        line = (f"{g.student:<{name}}  {g.score:>4g}/{g.max_score:<4g}  {g.seconds:>5.0f}s  "
                f"{g.status:<20}  {len(g.flags) or '-':>5}  {g.reason or '-'}")
        print(line if len(line) <= width else line[:width - 1] + "…")


def copy_feedback(course, assignment, grades, folder):
    """nbgrader's feedback for each graded student (the notebook as handed in, a verdict per test,
    nothing the grading run output: see feedback.py), made by the worker that graded it, or here if
    it is missing; a page with the reason for a
    submission that could not be run."""
    folder.mkdir(parents=True, exist_ok=True)

    def made(student):
        return course.root / "feedback" / student / assignment / f"{assignment}.html"

    if any(not made(g.student).is_file() for g in grades if g.status != "error"):
        course.nbgrader("generate_feedback", assignment, "--force", check=False)
    for g in grades:
        if made(g.student).is_file() and g.status != "error":
            shutil.copy(made(g.student), folder / f"{g.student}.html")
        else:
            (folder / f"{g.student}.html").write_text(plain_feedback(assignment, g))


def plain_feedback(assignment, g):
    """The page a student gets when nbgrader made none: why it was not graded (the grader's words),
    or each test's verdict. Never the failures' messages: the student's code chose some of them."""
    if g.status == "error":
        body = f"<p>Your notebook could not be graded: {html.escape(g.reason)}</p>"
    else:
        body = ("<p>Your notebook was graded, but its feedback page could not be made; your instructor "
                "has the details. Run the notebook to see why a test failed.</p><ul>" + "".join(
                    f"<li>{html.escape(t.test)}: "
                    f"{'to be graded by hand' if t.manual else 'passed' if t.score >= t.max_score else 'failed'}"
                    f", {t.score:g} of {t.max_score:g} points</li>" for t in g.tests) + "</ul>")
    return (f"<html><body><h1>{html.escape(assignment)}: {html.escape(g.student)}</h1>{body}"
            f"<p><b>Score: {g.score:g} of {g.max_score:g}.</b></p></body></html>")


def _png(figure):
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    return f'<img src="data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode()}">'


def _common_reasons(grades):
    """Failure messages with their numbers blanked, so that the same mistake counts once per student."""
    counts = Counter()
    for g in grades:
        seen = {re.sub(r"-?\d+(\.\d+)?(e[-+]?\d+)?", "N", t.message) for t in g.tests
                if t.message and t.score < t.max_score}
        counts.update(seen)
    return counts.most_common(10)


def _median(values):
    values = list(values)
    return median_high(values) if values else 0.0


def time_split(grades):
    """Median seconds per submission in each phase, and the slowest cells by their median: where a
    batch's time goes (the grader's own work outside the sandbox, starting the sandbox and kernel,
    running the cells)."""
    timed = [g for g in grades if g.timings.get("sandbox") is not None]
    phases = {"whole submission": _median(g.seconds for g in timed),
              "grader outside the sandbox": _median(g.seconds - g.timings["sandbox"] for g in timed),
              "sandbox and kernel start": _median(g.timings.get("start") or 0 for g in timed),
              "cells": _median(sum(g.timings.get("cells", {}).values()) for g in timed)}
    names = {name for g in timed for name in g.timings.get("cells", {})}
    cells = sorted(((name, _median(g.timings["cells"][name] for g in timed if name in g.timings.get("cells", {})))
                    for name in names), key=lambda item: -item[1])
    return phases, cells[:5]


def write_report(grades, assignment, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    top = max((g.max_score for g in grades), default=0)
    figures = []
    figure, axes = plt.subplots(1, 3, figsize=(15, 3.6))
    axes[0].hist([g.score for g in grades], bins=max(1, int(top) + 1), range=(-0.5, top + 0.5), color="#4c72b0")
    axes[0].set(title="scores", xlabel="points", ylabel="students")
    tests = sorted({t.test for g in grades for t in g.tests if not t.manual})
    rates = [sum(1 for g in grades for t in g.tests if t.test == name and t.score >= t.max_score) /
             max(1, len(grades)) for name in tests]
    axes[1].barh(tests, rates, color="#55a868")
    axes[1].set(title="pass rate per test", xlim=(0, 1))
    axes[2].hist([g.seconds for g in grades], bins=20, color="#c44e52")
    axes[2].set(title="grading time per submission", xlabel="seconds")
    figures.append(_png(figure))
    plt.close(figure)
    statuses = Counter(g.status for g in grades)
    rows = "".join(f"<tr><td>{n}</td><td>{html.escape(r)}</td></tr>" for r, n in _common_reasons(grades))
    flagged = "".join(f"<tr><td>{html.escape(g.student)}</td><td>{g.score:g}</td><td>{html.escape(g.status)}</td>"
                      f"<td>{'<br>'.join(html.escape(f) for f in g.flags)}</td></tr>"
                      for g in grades if g.flags or g.status in ("error", "stopped"))
    total = sum(g.seconds for g in grades)
    phases, slowest = time_split(grades)
    # Cells are named as the run named them: a grade_id, or "cell N" for a cell without one.
    def seconds_rows(named):
        return "".join(f"<tr><td>{html.escape(name)}</td><td>{seconds:.1f}</td></tr>" for name, seconds in named)
    split = seconds_rows(phases.items()) + '<tr><th colspan="2">slowest cells</th></tr>' + seconds_rows(slowest)
    notes = "".join(f"<tr><td>{html.escape(g.student)}</td><td>{'<br>'.join(html.escape(n) for n in g.notes)}</td></tr>"
                    for g in grades if g.notes)
    path.write_text(f"""<!doctype html><html><head><meta charset="utf-8"><title>{assignment}: grades</title>
<style>body{{font-family:sans-serif;margin:2em}} td,th{{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}}</style>
</head><body><h1>{html.escape(assignment)}: {len(grades)} submissions</h1>
<p>{", ".join(f"{n} {html.escape(s)}" for s, n in statuses.most_common())}.
Mean score {sum(g.score for g in grades) / max(1, len(grades)):.1f} of {top:g}.
Grading took {total:.0f} s of run time in all, {total / max(1, len(grades)):.1f} s per submission.</p>
{"".join(figures)}
<h2>Most common failure reasons</h2><table><tr><th>students</th><th>message</th></tr>{rows}</table>
<h2>Flagged for review</h2><table><tr><th>student</th><th>score</th><th>status</th><th>why</th></tr>{flagged}</table>
<h2>Notes</h2><p>Not integrity concerns: files handed in beside a notebook (never graded), cell metadata
recovered from the release, an LMS's late mark.</p><table><tr><th>student</th><th>note</th></tr>{notes}</table>
<h2>Where the time went (median seconds per submission)</h2><table>{split}</table>
</body></html>""")

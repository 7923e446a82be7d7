"""A submission whose nbgrader cell metadata was lost (an editor that drops it, answers pasted into
a fresh notebook) gets it back from the release, where its cells can be placed with confidence.

The release's cells that students do not write (markdown, setup, tests) are found in the submission
by their text and order; each answer cell of the release is then the student's cell between the
same two neighbours. Whatever cannot be placed that way with confidence is left to a person.
"""
import copy
import difflib
import re

from autograder.grade.integrity import grade_id

DEFINED = re.compile(r"^(?:async\s+def|def|class)\s+(\w+)|^(\w+)\s*(?::[^=\n]*)?=(?!=)", re.MULTILINE)
FRESH_COPY = "paste the answers into a fresh copy of the release notebook, and grade again"


def _text(cell):
    return cell.cell_type, "\n".join(line.rstrip() for line in cell.source.strip().splitlines())


def _defines(source):
    """The names a cell defines at its top level: what identifies an answer whatever its body."""
    return {a or b for a, b in DEFINED.findall(source)}


def _is_answer(release_cell):
    return bool(release_cell.metadata.get("nbgrader", {}).get("solution"))


def _where(nb, index):
    """A cell of the submission as an instructor finds it: its grade_id, or its number and first line."""
    if index < 0:
        return "the start"
    if index >= len(nb.cells):
        return "the end"
    cell = nb.cells[index]
    if grade_id(cell):
        return f"cell {grade_id(cell)!r}"
    first = [line for line in cell.source.strip().splitlines() if not line.startswith(("@", "#"))][:1]
    return f"cell {index + 1}" + (f" ({first[0][:40]!r})" if first else "")


def _anchors(nb, release, present):
    """{release index: submission index} for the cells found in both: by grade_id where the
    submission kept it, else by type and text. Answer cells without their metadata never match
    here: students change their text."""
    def key(cell, index, side):
        if grade_id(cell) in present:
            return "id", grade_id(cell)
        return (side, index) if side == "release" and _is_answer(cell) else _text(cell)

    matcher = difflib.SequenceMatcher(None, [key(c, i, "release") for i, c in enumerate(release.cells)],
                                      [key(c, i, "submission") for i, c in enumerate(nb.cells)], autojunk=False)
    return {r + k: s + k for r, s, size in matcher.get_matching_blocks() for k in range(size)}


def _place_answer(nb, release, r, anchors, free, answers):
    """The submission's cell for the release's answer cell r: (index, None); (None, None) when the
    student deleted it; (None, problem) when it cannot be placed with confidence."""
    before = max((a for a in anchors if a < r), default=None)
    after = min((a for a in anchors if a > r), default=None)
    low, high = anchors.get(before, -1), anchors.get(after, len(nb.cells))
    cell, names = release.cells[r], _defines(release.cells[r].source)
    slot = [i for i in free if low < i < high and nb.cells[i].cell_type == cell.cell_type]
    framed = [i for i in slot if names and names <= _defines(nb.cells[i].source)]
    siblings = [a for a in answers if (before is None or a > before) and (after is None or a < after)]
    between = f"between {_where(nb, low)} and {_where(nb, high)}"
    if len(framed) == 1:
        return framed[0], None
    if slot and len(slot) == len(siblings) and not framed:  # one cell for each answer there, in order
        return slot[siblings.index(r)], None
    if slot:
        return None, (f"nbgrader's cell metadata is missing and the answer {grade_id(cell)!r} cannot be told "
                      f"apart: {' and '.join(_where(nb, i) for i in framed or slot)} {between} could each be "
                      f"it. Keep one answer cell per exercise, or {FRESH_COPY}")
    elsewhere = [i for i in free if names and names <= _defines(nb.cells[i].source)]
    if elsewhere:
        return None, (f"nbgrader's cell metadata is missing and the answer {grade_id(cell)!r} is not where "
                      f"the lesson has it ({between}): {' and '.join(_where(nb, i) for i in elsewhere)} "
                      f"defines {', '.join(sorted(names))}. Move it back, or {FRESH_COPY}")
    return None, None


def recover_metadata(submitted, release):
    """The submission with the nbgrader metadata it lost put back, a note saying so (or None), and
    a problem (or None) when an answer cannot be placed with confidence: then it is not graded (the
    cells that could be placed still are, so that integrity checks see them as they are)."""
    nb = copy.deepcopy(submitted)
    present = {grade_id(cell) for cell in nb.cells} - {None}
    if all(grade_id(cell) in present for cell in release.cells if grade_id(cell)) \
            or all(grade_id(cell) for cell in nb.cells):
        return nb, None, None
    anchors = _anchors(nb, release, present)
    ids = {cell.get("id") for cell in nb.cells}
    recovered = []

    def restore(theirs, ours):  # the release's metadata, and its cell id unless another cell has it
        if grade_id(theirs) and not grade_id(ours):
            ours.metadata["nbgrader"] = copy.deepcopy(theirs.metadata["nbgrader"])
            recovered.append(grade_id(theirs))
        if theirs.get("id") and theirs.get("id") not in ids:
            ours["id"] = theirs["id"]

    for r, s in anchors.items():
        restore(release.cells[r], nb.cells[s])
    free = [i for i, cell in enumerate(nb.cells) if i not in anchors.values() and not grade_id(cell)]
    answers = [r for r, cell in enumerate(release.cells) if _is_answer(cell) and grade_id(cell) not in present]
    if answers and free and not anchors:
        return nb, None, ("nbgrader's cell metadata is missing and none of the lesson's cells could be found "
                          "in the notebook: is it this assignment's notebook?")
    for r in answers:
        index, problem = _place_answer(nb, release, r, anchors, free, answers)
        if problem:
            return nb, None, problem
        if index is not None:
            restore(release.cells[r], nb.cells[index])
    if not recovered:
        return nb, None, None
    return nb, (f"nbgrader's cell metadata was missing (an editor that drops it, or answers pasted into "
                f"a fresh notebook?): {len(recovered)} cells were matched with the release by their text "
                f"and order, and graded: {', '.join(sorted(recovered))}"), None

"""Sample submissions, written as edits to the release notebook, as a student would make them.

A lesson's sample class lives in samples/<lesson>.py (and the grader's adversarial corpus in
tests/corpus/<lesson>.py): a Python literal mapping each student to
  about         what the submission shows,
  answers       "solution" (answer cells filled from solutions/) or "release" (left as released),
  edits         {cell id: [[old, new], ...]} text replacements applied after that,
  replace       {cell id: new source} (optional),
  add_cells     [[after cell id, source], ...] code cells the student added (optional),
  retype        [cell id, ...] code cells turned into markdown (optional),
  delete        [cell id, ...] cells the student deleted (optional),
  file          (optional) "corrupt: <text>" for a file that is not a notebook, or a file name,
                for a notebook the student renamed,
  beside        (optional) {file name: text} files the student handed in beside the notebook,
  strip_metadata (optional) True: every cell's metadata dropped and its id made anew, as an editor
                that does not keep nbgrader's metadata saves a notebook,
  fails         the tests it must fail (all others must pass with full points; cells graded by
                hand, like written answers, are not tests: they wait for a person),
  why           (optional) {test: text} the reason each failing test must give: text its failure
                message contains, naming the sample's mistake, so that a test failing for another
                reason (a crash, a typo in the edit) is not taken for the failure the sample is
                about; every test named must be in fails (a GPU may word a failure differently:
                on_gpu then gives its own why, whole),
  status        (optional) the expected status, when not the usual one: "failed tests" when it
                fails tests, else "needs manual grading" if the lesson has cells graded by hand,
                else "ok",
  flags         (optional) text each expected integrity flag contains; none others may be raised,
  on_gpu        (optional) {key: value} that replace the above where the grader runs the notebook on
                a GPU: a performance test, graded there, only advises under the interpreter,
  ci            (optional) False: `autograder demo` grades it, the tests (tests/test_autograde.py,
                in CI) leave it out to save time; keep a sample of each distinct failure in CI.
Writing samples as edits of the committed notebooks keeps them in step with the lesson.
"""
import ast

import nbformat

from autograder.course import CourseError


def load_samples(course, lesson, folder="samples"):
    path = course.root / folder / f"{lesson}.py"
    if not path.is_file():
        raise CourseError(f"{path.relative_to(course.root)} does not exist: no sample class for {lesson}")
    return ast.literal_eval(path.read_text())


def expected_here(sample, on_gpu):
    """What a sample must get where it is graded: its on_gpu values replace the others on a GPU."""
    return {**sample, **sample.get("on_gpu", {})} if on_gpu else sample


def graded_cells(course, lesson):
    """{grade_id: (points, graded by hand?)} for every graded cell of the lesson."""
    source = nbformat.read(course.notebook("source", lesson), as_version=4)
    return {c.metadata["nbgrader"]["grade_id"]: (c.metadata["nbgrader"]["points"],
                                                 bool(c.metadata["nbgrader"].get("solution")))
            for c in source.cells if c.metadata.get("nbgrader", {}).get("grade")}


def differences(sample, grade, cells):
    """How a grade differs from what its sample asks (sample as expected_here gives it; cells as
    graded_cells): a list of sentences, empty when the grade is exactly the sample's."""
    found = []
    # Answers graded by hand wait for a person, unless left as released (nbgrader scores those 0).
    waiting = {test for test, (_, by_hand) in cells.items() if by_hand} - set(sample["fails"])
    total = sum(points for points, _ in cells.values())
    failed = sorted(t.test for t in grade.tests if t.score < t.max_score and not t.manual)
    if failed != sorted(sample["fails"]):
        lost, kept = sorted(set(failed) - set(sample["fails"])), sorted(set(sample["fails"]) - set(failed))
        found.append(f"failed {', '.join(lost) or 'nothing more'} and passed {', '.join(kept) or 'nothing more'} "
                     f"than it should ({grade.reason[:400]})")
    if grade.max_score != total or {t.test for t in grade.tests} != set(cells):
        found.append(f"graded {len(grade.tests)} of the lesson's {len(cells)} tests, out of {grade.max_score:g} "
                     f"points where the lesson has {total:g}")
    if {t.test for t in grade.tests if t.manual} != waiting:
        found.append("the written answers waiting for a person are not the ones the sample leaves to grade")
    expected = total - sum(cells[t][0] for t in set(sample["fails"]) & cells.keys() | waiting)
    if not found and grade.score != expected:
        found.append(f"scored {grade.score:g} where the sample asks {expected:g}")
    status = sample.get("status", "failed tests" if sample["fails"] else "needs manual grading" if waiting else "ok")
    if grade.status != status:
        found.append(f"status {grade.status!r}, not {status!r} ({grade.reason[:400]})")
    found += flag_differences(sample.get("flags", []), grade.flags)
    found += [f"{t.test} failed without saying why" for t in grade.tests
              if t.score < t.max_score and not t.manual and not (t.message and t.message in grade.reason)]
    return found + why_differences(sample, grade)


def why_differences(sample, grade):
    """Sentences for each test in the sample's `why` that did not fail, or failed with a message
    that does not contain the reason it names, and for each test `why` names that `fails` does not."""
    why, fails = sample.get("why", {}), set(sample["fails"])
    found = [f"why names {test}, which the sample does not fail" for test in sorted(set(why) - fails)]
    messages = {t.test: t.message for t in grade.tests if t.score < t.max_score and not t.manual}
    for test, text in sorted(why.items()):
        if test not in fails:
            continue
        if test not in messages:
            found.append(f"{test} passed, where it must fail because {text}")
        elif text not in messages[test]:
            found.append(f"{test} failed, but not because {text}: {messages[test][:200]}")
    return found


def flag_differences(expected, raised):
    """Sentences for each expected text no raised flag contains, and for the raised flags that no
    expected text is in: a flag is a request for a person, and one a sample does not ask for is a
    false alarm."""
    found = [f"no flag says {text!r}" for text in expected if not any(text in flag for flag in raised)]
    unexpected = [flag for flag in raised if not any(text in flag for text in expected)]
    return found + ([f"unexpected flags: {unexpected}"] if unexpected else [])


def ci_samples(samples):
    """The samples the tests grade: all but those marked "ci": False."""
    return {student: sample for student, sample in samples.items() if sample.get("ci", True)}


def make_submission(course, lesson, sample):
    """The notebook a student with this sample's answers would hand in."""
    nb = nbformat.read(course.notebook("release", lesson), as_version=4)
    answers = {}
    if sample["answers"] == "solution":
        answers = {cell.id: cell.source for cell in
                   nbformat.read(course.notebook("solutions", lesson), as_version=4).cells}
    named = {*sample.get("edits", {}), *sample.get("replace", {}), *sample.get("retype", []),
             *sample.get("delete", []), *(after for after, _ in sample.get("add_cells", []))}
    missing = sorted(named - {cell.id for cell in nb.cells})
    if missing:
        raise CourseError(f"the sample names cells that {lesson} does not have: {', '.join(missing)}")
    deleted = set(sample.get("delete", []))
    nb.cells = [cell for cell in nb.cells if cell.id not in deleted]
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("solution") and cell.id in answers:
            cell.source = answers[cell.id]
        cell.source = sample.get("replace", {}).get(cell.id, cell.source)
        for old, new in sample.get("edits", {}).get(cell.id, []):
            if old not in cell.source:
                raise CourseError(f"sample edit for cell {cell.id!r} of {lesson} no longer applies: "
                                  f"{old!r} is not in the cell")
            cell.source = cell.source.replace(old, new)
    for index, cell in enumerate(nb.cells):
        if cell.id in sample.get("retype", []):
            nb.cells[index] = nbformat.v4.new_markdown_cell(cell.source, metadata=cell.metadata, id=cell.id)
    for number, (after, source) in enumerate(sample.get("add_cells", [])):
        position = next(i for i, cell in enumerate(nb.cells) if cell.id == after) + 1
        nb.cells.insert(position, nbformat.v4.new_code_cell(source, id=f"added-{number}"))
    if sample.get("strip_metadata"):
        for number, cell in enumerate(nb.cells):
            cell.metadata, cell.id = {}, f"stripped-{number}"
    return nb


def write_submission(course, lesson, sample, folder):
    """Write the sample's notebook file (or its corrupt stand-in), and any files beside it, into a
    submission folder."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in sample.get("beside", {}).items():
        (folder / name).write_text(text)
    spec = sample.get("file", "")
    if spec.startswith("corrupt:"):
        (folder / f"{lesson}.ipynb").write_text(spec.split(":", 1)[1])
        return
    nbformat.write(make_submission(course, lesson, sample), folder / (spec or f"{lesson}.ipynb"))

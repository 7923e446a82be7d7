"""One command makes everything generated: masters -> source -> release (nbgrader) and solutions.

`build` writes into the course; `check` builds into a scratch copy and names whatever differs.
"""
import filecmp
import os
import shutil
import tempfile
from pathlib import Path

import nbformat

from autograder.generate.cells import dumps
from autograder.generate.solutions import source_to_solution
from autograder.generate.source import edited_since_build, master_to_source
from autograder.generate.sync import source_to_master
from autograder.course import Course, CourseError

STAGES = ("source", "release", "solutions")


def _read(path):
    return nbformat.read(path, as_version=4) if path.is_file() else None


def _write(path, nb):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(nb))


def hand_edited(course, lesson):
    """The edit message for a source notebook changed after it was built, else None."""
    nb = _read(course.notebook("source", lesson))
    if nb is None or not edited_since_build(nb):
        return None
    return (f"source/{lesson}/{lesson}.ipynb was edited after it was built (in JupyterLab?). "
            f"Keep the edit with `autograder sync {lesson}` (it rewrites notebooks/{lesson}.py), "
            f"or drop it with `autograder build --force`.")


def generate(course, into, lessons):
    """Write the three generated stages of `lessons` into course directory `into`."""
    for lesson in lessons:
        source_nb = master_to_source(course.master(lesson), lesson)
        _write(into.notebook("source", lesson), source_nb)
        into.nbgrader("generate_assignment", lesson, "--force", "--no-db")
        previous = _read(course.notebook("solutions", lesson))
        _write(into.notebook("solutions", lesson), source_to_solution(source_nb, lesson, previous))


def _orphans(course):
    """Generated lesson folders whose master is gone."""
    lessons = set(course.lessons())
    return [folder for stage in STAGES if (course.root / stage).is_dir()
            for folder in sorted((course.root / stage).iterdir())
            if folder.is_dir() and folder.name not in lessons]


def build(course, force=False):
    lessons = course.lessons()
    if not force:
        edits = [message for lesson in lessons if (message := hand_edited(course, lesson))]
        if edits:
            raise CourseError("\n".join(edits))
    generate(course, course, lessons)
    for folder in _orphans(course):
        shutil.rmtree(folder)
    return lessons


def check(course):
    """Everything that is stale or hand-edited, as messages; an empty list means up to date."""
    lessons = course.lessons()
    problems = [message for lesson in lessons if (message := hand_edited(course, lesson))]
    problems += [f"{folder.relative_to(course.root)} has no master in notebooks/: run "
                 "`autograder build` to remove it" for folder in _orphans(course)]
    with tempfile.TemporaryDirectory() as scratch:
        fresh = Course(Path(scratch))
        shutil.copy(course.root / "nbgrader_config.py", fresh.root)
        generate(course, fresh, lessons)
        for stage in STAGES:
            for path in sorted((fresh.root / stage).rglob("*")):
                if not path.is_file():
                    continue
                relative = path.relative_to(fresh.root)
                committed = course.root / relative
                if not committed.is_file():
                    problems.append(f"{relative} is missing: run `autograder build`")
                elif not filecmp.cmp(path, committed, shallow=False):
                    problems.append(f"{relative} is out of date: run `autograder build`")
    return problems


def execute_solutions(course, lessons, timeout=900):
    """Run each solution notebook and keep its outputs (plots, timings): do this on a GPU machine."""
    from nbclient import NotebookClient
    for lesson in lessons:
        path = course.notebook("solutions", lesson)
        nb = nbformat.read(path, as_version=4)
        # The kernel draws plots inline only when MPLBACKEND is unset: a machine that set it for its
        # scripts (Agg) would otherwise publish solutions without a single plot.
        env = {name: value for name, value in os.environ.items() if name != "MPLBACKEND"}
        NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                       resources={"metadata": {"path": str(path.parent)}}).execute(env=env)
        _write(path, nb)


def sync(course, lesson):
    """Write a lesson's source notebook back into its master, then rebuild the rest from it."""
    nb = _read(course.notebook("source", lesson))
    if nb is None:
        raise CourseError(f"source/{lesson}/{lesson}.ipynb does not exist: nothing to sync")
    course.master(lesson).write_text(source_to_master(nb))
    generate(course, course, [lesson])

import functools
import html
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder.course import Course

ROOT = Path(__file__).resolve().parent.parent
COURSE_FILES = ["nbgrader_config.py", "notebooks", "source", "release", "solutions", "samples"]
# `make test` runs pytest in two lanes (pytest-xdist, `-n 2`). These modules grade whole classes,
# a notebook per core, and share one lane, one after the other; the rest of the suite runs mostly
# one process at a time, and takes the other lane, beside them.
GRADING_LANE = ("test_autograde", "test_batch")
WALL = "wall time"  # a test's user property (what ran, seconds), printed after the run
# machine_pace() in `make test` on CI's 2-core box on an ordinary day, beside the other lane
# (2026-12-07, three runs: 1.6 to 1.9 s; 1.4 s on the idle box); the same box has run whole days
# 2.5 times slower.
USUAL_PACE = 1.9


def pytest_collection_modifyitems(items):
    """The grading modules first: they are the longest."""
    items.sort(key=lambda item: item.module.__name__ not in GRADING_LANE)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Lanes take whole modules (their module-scoped fixtures are built once), the grading modules
    as one unit. (xdist's own `--dist loadgroup` cannot say this under pytest 9: its groups are
    lost.)"""
    from xdist.scheduler import LoadScopeScheduling

    class Lanes(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            module = nodeid.split("::", 1)[0]
            return "grading" if Path(module).stem in GRADING_LANE else module

    config.option.loadscopereorder = False  # units in collection order: the grading lane's first
    return Lanes(config, log)


@functools.cache
def machine_pace():
    """Seconds this machine takes now to start Python and import torch and Triton (the best of two
    tries): what every notebook does first, so what a notebook's wall time grows with on a slow or
    busy machine, disk and CPU alike."""
    tries = []
    for _ in range(2):
        started = time.monotonic()
        subprocess.run([sys.executable, "-c", "import torch, triton"], check=True, capture_output=True)
        tries.append(time.monotonic() - started)
    return min(tries)


def patient(seconds):
    """A wall-clock limit on honest work, `seconds` at the usual pace, stretched in proportion on a
    machine slower than usual (never shortened): a test guards against slow work, not against a slow
    machine. Every such limit in the tests goes through here; what the tests time on purpose (the
    turns' holds and budgets, sleeps, the moment a worker is killed) does not."""
    return seconds * max(1.0, machine_pace() / USUAL_PACE)


def record_wall(node, what, seconds):
    """Keep a wall time for the summary at the end of the run, from whichever lane ran the test."""
    node.user_properties.append((WALL, (what, seconds)))


def pytest_terminal_summary(terminalreporter):
    times = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            times.update(value for key, value in getattr(report, "user_properties", ()) if key == WALL)
    if times:
        terminalreporter.section("wall times")
        for what, seconds in times.items():
            terminalreporter.write_line(f"{what:<44} {seconds:6.1f} s")


@pytest.fixture(scope="session")
def course():
    return Course(ROOT)


def copy_course(into, lessons=None):
    """A copy of the course's committed files in `into`, safe to edit: every lesson, or `lessons`."""
    keep = None if lessons is None else {name for lesson in lessons for name in (lesson, f"{lesson}.py")}
    for name in COURSE_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, into / name, ignore=None if keep is None else
                            lambda folder, names: [n for n in names if Path(folder) == source and n not in keep])
        else:
            shutil.copy(source, into / name)
    return Course(into)


@pytest.fixture
def scratch_course(tmp_path):
    """One lesson's course, safe to edit: building it takes a sixth of the time of all six."""
    return copy_course(tmp_path, ["02_vector_add"])


def autograder(*args, cwd):
    """Run the command line as an instructor would."""
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=cwd, capture_output=True,
                          text=True)


def page_text(page):
    """What a reader of an HTML page sees: tags removed, entities unescaped. nbgrader's feedback
    template highlights code token by token (a <span> each, with entities), so a line of code is
    found in a page only this way."""
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def unavailable(reason, what, installs):
    """A test this machine cannot run: skipped here, with the reason; in CI (which .ci/run sets up
    to run everything) a failure instead, so that nothing is skipped silently there."""
    if os.environ.get("CI"):
        pytest.fail(f"CI must run {what}, but {reason}: {installs}")
    pytest.skip(reason)

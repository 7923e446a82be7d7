import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course import Course

ROOT = Path(__file__).resolve().parent.parent
COURSE_FILES = ["nbgrader_config.py", "notebooks", "source", "release", "solutions", "samples"]


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

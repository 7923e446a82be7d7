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


def copy_course(into):
    """A copy of the course's committed files in `into`, safe to edit."""
    for name in COURSE_FILES:
        source = ROOT / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, into / name)
    return Course(into)


@pytest.fixture
def scratch_course(tmp_path):
    return copy_course(tmp_path)


def autograder(*args, cwd):
    """Run the command line as an instructor would."""
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=cwd, capture_output=True,
                          text=True)

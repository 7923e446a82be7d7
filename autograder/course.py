"""Where a course's files live, and how to run nbgrader on them."""
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

LESSON_FILE = re.compile(r"^(\d\d_[a-z0-9_]+)\.py$")

# nbgrader creates a gradebook by running `alembic`, which must be on PATH: the one beside this Python.
_BIN = str(Path(sys.executable).parent)
if _BIN not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = os.pathsep.join([_BIN, os.environ.get("PATH", "")])


class CourseError(Exception):
    """A problem an instructor must fix; the message says how."""


@dataclass(frozen=True)
class Course:
    """A course directory: nbgrader's layout plus the lesson masters in notebooks/."""

    root: Path

    @classmethod
    def find(cls, start=None):
        """The nearest directory at or above `start` that holds nbgrader_config.py."""
        here = Path(start or Path.cwd()).resolve()
        for folder in (here, *here.parents):
            if (folder / "nbgrader_config.py").is_file():
                return cls(folder)
        raise CourseError(f"no nbgrader_config.py in {here} or above: run this inside the course directory")

    @property
    def masters(self):
        return self.root / "notebooks"

    @property
    def db_url(self):
        return f"sqlite:///{self.root / 'gradebook.db'}"

    def lessons(self):
        """Lesson ids in order, one per master file `notebooks/NN_name.py`."""
        if not self.masters.is_dir():
            return []
        return sorted(m.group(1) for p in self.masters.iterdir() if (m := LESSON_FILE.match(p.name)))

    def master(self, lesson):
        return self.masters / f"{lesson}.py"

    def notebook(self, stage, lesson):
        """The notebook of a lesson in one of the generated stages: source, release or solutions."""
        return self.root / stage / lesson / f"{lesson}.ipynb"

    def nbgrader(self, *args, timeout=None, check=True):
        """Run an nbgrader command in this course; its output is returned, and shown if it fails."""
        result = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=self.root,
                                capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise CourseError(f"`nbgrader {' '.join(args)}` failed:\n{result.stdout}{result.stderr}")
        return result

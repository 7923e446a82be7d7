"""Step 1 of grading: find the submissions, in nbgrader's layout <student>/<assignment>/."""
import shutil
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Submission:
    student: str
    folder: Path  # submitted/<student>/<assignment> inside the course


def collect(course, assignment, submissions=None):
    """Submissions of `assignment`, copied into the course's submitted/ when they come from elsewhere."""
    submitted = course.root / "submitted"
    if submissions is not None and Path(submissions).resolve() != submitted.resolve():
        for folder in sorted(Path(submissions).glob(f"*/{assignment}")):
            target = submitted / folder.parent.name / assignment
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(folder, target)
    return [Submission(folder.parent.name, folder)
            for folder in sorted(submitted.glob(f"*/{assignment}")) if folder.is_dir()]

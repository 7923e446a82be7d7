"""`autograder demo`: grade a lesson's bundled sample class in a scratch copy of the course."""
import shutil

import nbformat

from autograder.course import Course
from autograder.grade import grade, print_table
from autograder.samples import load_samples, make_submission


def demo(course, lesson, reports=None, workdir=None):
    """Grade the sample class of `lesson` in `workdir` (default build/demo), reports into `reports`."""
    class_dir = Course(workdir or course.root / "build" / "demo")
    shutil.rmtree(class_dir.root, ignore_errors=True)
    (class_dir.root / "source").mkdir(parents=True)
    shutil.copy(course.root / "nbgrader_config.py", class_dir.root)
    shutil.copytree(course.root / "source" / lesson, class_dir.root / "source" / lesson)
    samples = load_samples(course, lesson)
    for student, sample in samples.items():
        path = class_dir.notebook(f"submitted/{student}", lesson)
        path.parent.mkdir(parents=True)
        nbformat.write(make_submission(course, lesson, sample), path)
    about = ", ".join(f"{student}: {sample['about']}" for student, sample in samples.items())
    print(f"Grading {len(samples)} sample submissions of {lesson} ({about})")
    reports = reports or course.root / "reports"
    shutil.rmtree(reports / lesson, ignore_errors=True)  # a demo grades its class afresh
    grades = grade(class_dir, lesson, reports=reports)
    print_table(grades)
    print(f"Wrote {reports / lesson / 'grades.csv'}")
    return grades

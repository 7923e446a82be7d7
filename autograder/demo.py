"""`autograder demo`: grade a lesson's bundled sample class in a scratch copy of the course."""
import shutil

from autograder.course import Course, CourseError
from autograder.grade.batch import grade, print_table
from autograder.samples import differences, expected_here, graded_cells, load_samples, write_submission


def class_course(course, lesson, samples, workdir):
    """A scratch course holding `lesson` and one submission per sample, as nbgrader collects them."""
    class_dir = Course(workdir)
    shutil.rmtree(class_dir.root, ignore_errors=True)
    (class_dir.root / "source").mkdir(parents=True)
    shutil.copy(course.root / "nbgrader_config.py", class_dir.root)
    shutil.copytree(course.root / "source" / lesson, class_dir.root / "source" / lesson)
    for student, sample in samples.items():
        write_submission(course, lesson, sample, class_dir.root / "submitted" / student / lesson)
    return class_dir


def demo(course, lesson, reports=None, workdir=None, samples=None, students=(), **grading):
    """Grade the sample class of `lesson` (or `samples`, part of it; or the `students` named) in
    `workdir` (default build/demo), reports into `reports`."""
    samples = samples or load_samples(course, lesson)
    unknown = sorted(set(students) - set(samples))
    if unknown:
        raise CourseError(f"no sample student {', '.join(unknown)} in {lesson} (it has {', '.join(sorted(samples))})")
    samples = {student: samples[student] for student in students} if students else samples
    class_dir = class_course(course, lesson, samples, workdir or course.root / "build" / "demo")
    about = ", ".join(f"{student}: {sample['about']}" for student, sample in samples.items())
    print(f"Grading {len(samples)} sample submissions of {lesson} ({about})")
    reports = reports or course.root / "reports"
    shutil.rmtree(reports / lesson, ignore_errors=True)  # a demo grades its class afresh
    grades = grade(class_dir, lesson, reports=reports, **grading)
    print_table(grades)
    print(f"Wrote {reports / lesson / 'grades.csv'}")
    return grades


def check(course, lesson, grades, on_gpu, samples=None):
    """Each grade against its sample (the sample's on_gpu values where the notebooks ran on a GPU):
    print what differs; return the number of students whose grade is not their sample's."""
    samples, cells = samples or load_samples(course, lesson), graded_cells(course, lesson)
    wrong = 0
    for result in grades:
        found = differences(expected_here(samples[result.student], on_gpu), result, cells)
        wrong += bool(found)
        for difference in found:
            print(f"{result.student}: {difference}")
    where = "a GPU" if on_gpu else "Triton's interpreter"
    print(f"{len(grades) - wrong} of {len(grades)} samples of {lesson} got exactly their grade on {where}")
    return wrong

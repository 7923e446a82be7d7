"""Throughput of the batch grader against plain `nbgrader autograde`, on the same class.

A synthetic class of COPIES copies of the 02_vector_add sample class (samples/02_vector_add.py:
correct, untouched, no mask, torch fallback, noisy stderr, a deleted test) is graded twice, in
two scratch courses: once by nbgrader's own serial autograde, once by `autograder grade` with its
default workers. Prints both throughputs, the ratio, and whether every grade agrees.

    .venv/bin/python benchmarks/grader_throughput.py --copies 4
"""
import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from nbgrader.api import Gradebook

from autograder.course import Course
from autograder.demo import class_course
from autograder.grade.batch import default_workers, grade, visible_gpus
from autograder.samples import load_samples

LESSON = "02_vector_add"


def synthetic_class(course, copies):
    samples = load_samples(course, LESSON)
    return {f"{name}{copy:03d}": sample for copy in range(copies) for name, sample in samples.items()}


def plain_nbgrader(course, students, folder):
    class_dir = class_course(course, LESSON, students, folder)
    class_dir.nbgrader("generate_assignment", LESSON, "--force")
    start = time.monotonic()
    class_dir.nbgrader("autograde", LESSON, "--force", check=False)
    seconds = time.monotonic() - start
    with Gradebook(class_dir.db_url) as gradebook:
        scores = {s: gradebook.find_submission(LESSON, s).score for s in students}
    return seconds, scores


def ours(course, students, folder, workers):
    class_dir = class_course(course, LESSON, students, folder / "course")
    start = time.monotonic()
    grades = grade(class_dir, LESSON, reports=folder / "reports", workers=workers)
    return time.monotonic() - start, {g.student: g.score for g in grades}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=2)
    parser.add_argument("--workers", type=int)
    args = parser.parse_args()
    course = Course.find(Path(__file__).parent)
    students = synthetic_class(course, args.copies)
    workers = args.workers or default_workers(visible_gpus())
    print(f"{len(students)} submissions; {os.cpu_count()} cores; GPUs: {visible_gpus() or 'none (interpreter)'}")
    with tempfile.TemporaryDirectory() as scratch:
        plain_s, plain = plain_nbgrader(course, students, Path(scratch) / "plain")
        print(f"nbgrader autograde (serial):      {plain_s:7.1f} s, {len(students) / plain_s * 60:6.1f} per minute")
        ours_s, graded = ours(course, students, Path(scratch) / "ours", workers)
        print(f"autograder grade ({workers:2d} workers):    {ours_s:7.1f} s, {len(students) / ours_s * 60:6.1f} per minute")
    print(f"speed-up: {plain_s / ours_s:.2f}x")
    differ = {s: (plain[s], graded.get(s)) for s in students if plain[s] != graded.get(s)}
    print("grades identical" if not differ else f"grades differ: {differ}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())

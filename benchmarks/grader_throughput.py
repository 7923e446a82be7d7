"""Throughput of the batch grader against plain `nbgrader autograde`, on the same class.

A synthetic class of COPIES copies of a lesson's sample class (by default samples/02_vector_add.py:
correct, untouched, no mask, torch fallback, noisy stderr, a deleted test; `--lesson` picks another)
is graded in scratch
courses: once by nbgrader's own serial autograde, then by `autograder grade` with its default
workers (or each count given by --workers). Prints the throughputs, the ratio, and whether every grade
agrees (each copy of a sample must get the grade nbgrader gave that sample).
nbgrader grades one notebook at a time, so its throughput can be measured on part of the class
(`--plain N`: the first N submissions; 6 holds every sample once) when the whole would take hours.
Also prints how busy the cores were and where a submission's time went (report.time_split).

    .venv/bin/python benchmarks/grader_throughput.py --copies 1              # two cores
    .venv/bin/python benchmarks/grader_throughput.py --copies 10 --plain 6   # a GPU machine
    .venv/bin/python benchmarks/grader_throughput.py --lesson 06_matmul --copies 4 --plain 8
    .venv/bin/python benchmarks/grader_throughput.py --copies 10 --plain 0 --gpus 0 0,1   # one GPU, then two
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

from nbgrader.api import Gradebook

from autograder.course import Course
from autograder.demo import class_course
from autograder.grade.batch import default_workers, grade, visible_gpus
from autograder.grade.report import time_split
from autograder.samples import load_samples

def synthetic_class(course, lesson, copies):
    samples = load_samples(course, lesson)
    # Copy-major order: any first N submissions hold every sample about equally often.
    return {f"{name}{copy:03d}": sample for copy in range(copies) for name, sample in samples.items()}


def first_copy(student):
    return student[:-3] + "000"


def plain_nbgrader(course, lesson, students, folder):
    class_dir = class_course(course, lesson, students, folder)
    class_dir.nbgrader("generate_assignment", lesson, "--force")
    # A Triton cache of its own, empty at the start as on a fresh machine: a cache left by an earlier
    # run would make its compiles free (ours compiles in every sandbox), and runs would not compare.
    with mock.patch.dict(os.environ, TRITON_CACHE_DIR=str(folder / "triton-cache")):
        start = time.monotonic()
        class_dir.nbgrader("autograde", lesson, "--force", check=False)
        seconds = time.monotonic() - start
        # Ours hands back feedback too: plain nbgrader's is a second command, timed on its own.
        class_dir.nbgrader("generate_feedback", lesson, "--force", check=False)
        feedback_seconds = time.monotonic() - start - seconds
    with Gradebook(class_dir.db_url) as gradebook:
        scores = {s: gradebook.find_submission(lesson, s).score for s in students}
    return seconds, feedback_seconds, scores


def cpu_times():
    """(busy, total) jiffies of all cores since boot, from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def ours(course, lesson, students, folder, workers, gpus):
    class_dir = class_course(course, lesson, students, folder / "course")
    class_dir.nbgrader("generate_assignment", lesson, "--force")  # released already, as for plain nbgrader
    busy, total = cpu_times()
    start = time.monotonic()
    grades = grade(class_dir, lesson, reports=folder / "reports", workers=workers, gpus=gpus)
    seconds = time.monotonic() - start
    busy_after, total_after = cpu_times()
    phases, slowest = time_split(grades)
    print(f"  cores busy {(busy_after - busy) / (total_after - total):.0%} of the time; median seconds per "
          "notebook: " + ", ".join(f"{name} {s:.1f}" for name, s in phases.items()))
    print("  slowest cells (median s): " + ", ".join(f"{name} {s:.1f}" for name, s in slowest))
    return seconds, {g.student: g.score for g in grades}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lesson", default="02_vector_add", help="whose sample class to copy")
    parser.add_argument("--copies", type=int, default=2)
    parser.add_argument("--workers", type=lambda text: [int(w) for w in text.split(",")],
                        help="worker counts to try, e.g. 16,24 (default: the grader's default)")
    parser.add_argument("--plain", type=int, help="how many submissions plain nbgrader grades (default: all; "
                        "0: none, and each run's grades are compared with the first run's)")
    parser.add_argument("--gpus", nargs="+", type=lambda text: [int(g) for g in text.split(",")],
                        help="GPU sets to grade on, one run each, e.g. `0 0,1` (default: every visible GPU)")
    args = parser.parse_args()
    course = Course.find(Path(__file__).parent)
    students = synthetic_class(course, args.lesson, args.copies)
    gpu_sets = args.gpus or [visible_gpus()]
    tries = [(workers, gpus) for gpus in gpu_sets for workers in args.workers or [default_workers(gpus)]]
    print(f"{args.lesson}: {len(students)} submissions; {os.cpu_count()} cores; GPUs: {visible_gpus() or 'none (interpreter)'}")
    # Neither grader should pay for reading torch, Triton and CUDA's libraries from disk the first time.
    subprocess.run([sys.executable, "-c", "import torch, triton, matplotlib.pyplot, nbgrader.apps; "
                    "torch.cuda.is_available() and torch.zeros(1, device='cuda')"], check=True)
    differ = {}
    with tempfile.TemporaryDirectory() as scratch:
        plain, plain_rate, with_feedback_rate = None, None, None
        if args.plain != 0:
            subset = dict(list(students.items())[:args.plain or len(students)])
            plain_s, feedback_s, plain = plain_nbgrader(course, args.lesson, subset, Path(scratch) / "plain")
            plain_rate, with_feedback_rate = (len(subset) / seconds * 60 for seconds in (plain_s, plain_s + feedback_s))
            print(f"nbgrader autograde (serial), {len(subset)}: {plain_s:7.1f} s, {plain_rate:6.1f} per minute; "
                  f"then generate_feedback: {feedback_s:.1f} s ({with_feedback_rate:.1f} per minute for both)")
        for run, (workers, gpus) in enumerate(tries):
            where = f"GPU(s) {','.join(map(str, gpus))}" if gpus else "interpreter"
            ours_s, graded = ours(course, args.lesson, students, Path(scratch) / f"ours{run}", workers, gpus)
            ours_rate = len(students) / ours_s * 60
            print(f"autograder grade ({workers} workers, {where}), {len(students)}: {ours_s:7.1f} s, "
                  f"{ours_rate:6.1f} per minute, feedback included" +
                  (f"; speed-up: {ours_rate / plain_rate:.2f}x over autograde, {ours_rate / with_feedback_rate:.2f}x "
                   "over autograde and generate_feedback" if plain_rate else ""))
            if plain is None:  # no plain run: the first run's grades are the reference
                plain = {s: score for s, score in graded.items() if s == first_copy(s)}
            # Every copy of a sample must get the grade plain nbgrader gave that sample.
            differ.update({(s, workers, where): (plain[first_copy(s)], score) for s, score in graded.items()
                           if first_copy(s) in plain and plain[first_copy(s)] != score})
    print("grades identical" if not differ else f"grades differ: {differ}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())

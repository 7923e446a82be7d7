"""The batch grader: collect -> run each submission (sandboxed, in parallel) -> merge -> report.

Each step is a module of its own: collect.py finds notebooks, run.py grades one submission in a
scratch course (recover.py puts back cell metadata an editor lost, seal.py guards the tests inside the
notebook), merge.py is the gradebook's single writer, report.py writes what people read.
"""
import os
import queue
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import replace
from pathlib import Path

from autograder.course import Course, CourseError
from autograder.grade import merge as merging
from autograder.grade.collect import collect
from autograder.grade.report import copy_feedback, print_table, write_csv, write_report
from autograder.grade.run import make_template
from autograder.grade.settings import Settings
from autograder.grade.turns import GpuTurns
from autograder.grade.worker import Worker

__all__ = ["grade", "merge", "print_table", "Settings"]


def visible_gpus():
    try:
        import torch
        return list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    except ImportError:
        return []


def gpu_memory_gib(gpus):
    """Each listed GPU's memory in GiB, or None where CUDA cannot say."""
    try:
        import torch
        return [torch.cuda.get_device_properties(gpu).total_memory / 2**30 for gpu in gpus]
    except (ImportError, AssertionError, RuntimeError):
        return None


def usable_cores():
    """The cores this grader may use: a SLURM task's own (`--cpus-per-task`, which clusters without
    CPU binding do not enforce), else those this process may run on (a container's or a job's
    cpuset), not every core of the machine."""
    allotted = os.environ.get("SLURM_CPUS_PER_TASK", "")
    return int(allotted) if allotted.isdigit() else len(os.sched_getaffinity(0))


# What a notebook holds on its GPU outside torch's allocator (the CUDA context, Triton's and cuBLAS's
# buffers), with a margin.
GPU_CONTEXT_GB = 1.0


def default_workers(gpus, gpu_memory_gb=Settings.gpu_memory_gb, cores=None, memory_gib=None):
    """One notebook per core; never more notebooks on a GPU than its memory holds at their cap, so
    none runs out of memory because of its neighbours (its grade would depend on the batch).
    More workers than cores bought nothing on a 16-core H200 box: see docs/benchmarks.md."""
    cores = cores or usable_cores()
    if not gpus:
        return cores
    memory_gib = memory_gib or gpu_memory_gib(gpus)
    if not memory_gib:
        return cores
    per_gpu = min(int(gib // (gpu_memory_gb + GPU_CONTEXT_GB)) for gib in memory_gib)  # workers go round the GPUs
    return max(len(gpus), min(cores, len(gpus) * per_gpu))


def ensure_assignment(course, assignment):
    """The course's gradebook must know the assignment before grades go in. Only `merge` calls
    this: shards running at once on a cluster never write the shared gradebook."""
    from nbgrader.api import Gradebook, MissingEntry
    with Gradebook(course.db_url) as gradebook:
        try:
            gradebook.find_assignment(assignment)
            return
        except MissingEntry:
            pass
    course.nbgrader("generate_assignment", assignment, "--force")


class Progress:
    """One line on stderr: how many are done, how fast, and when the batch should end."""

    def __init__(self, total):
        self.total, self.done, self.start = total, 0, time.monotonic()
        self.live = sys.stderr.isatty()

    def step(self, grade):
        self.done += 1
        elapsed = time.monotonic() - self.start
        eta = elapsed / self.done * (self.total - self.done)
        line = (f"graded {self.done}/{self.total} ({grade.student}: {grade.score:g}/{grade.max_score:g}), "
                f"{elapsed:.0f} s so far, about {eta:.0f} s to go")
        print(("\r" + line + "\033[K") if self.live else line, end="" if self.live else "\n", file=sys.stderr)
        if self.live and self.done == self.total:
            print(file=sys.stderr)


def run_batch(course, assignment, submissions, reports, settings, workers, gpus):
    """Grade submissions in parallel; each result is saved as soon as it is known."""
    if not settings.threads:
        settings = replace(settings, threads=max(1, usable_cores() // workers))
    # The turn sockets live apart from the template, which each submission's scratch course copies.
    with tempfile.TemporaryDirectory(prefix="autograder-template-") as folder, \
            tempfile.TemporaryDirectory(prefix="autograder-turns-") as sockets:
        def members(gpu):  # the worker processes on `gpu`: each sandbox there is a child of one
            return [w.process.pid for w in graders if w.gpu == gpu and w.process is not None]

        # Graded timing takes exclusive turns on each GPU (turns.py), pausing the other sandboxes there.
        turns = GpuTurns(sockets, gpus, members)
        # One worker process per slot, spread over the GPUs, started while the template is made.
        template = Course(Path(folder))
        graders = [Worker(course, assignment, template, settings, gpu, None if gpu is None else turns.path(gpu))
                   for gpu in (gpus[i % len(gpus)] if gpus else None for i in range(workers))]
        try:
            with turns:
                idle = queue.Queue()
                for worker in graders:
                    worker.start()
                    idle.put(worker)
                make_template(course, assignment, folder)

                def grade_one(submission):
                    worker = idle.get()
                    try:
                        return worker.grade(submission)
                    finally:
                        idle.put(worker)

                progress, lock = Progress(len(submissions)), threading.Lock()
                with ThreadPoolExecutor(max_workers=workers) as pool:
                    for future in as_completed([pool.submit(grade_one, s) for s in submissions]):
                        grade = future.result()
                        with lock:
                            merging.save(grade, reports, assignment)
                            progress.step(grade)
                for line in turns.summary():
                    print(line)
        finally:
            for worker in graders:
                worker.stop()


def grade(course, assignment, submissions=None, lms_zip=None, reports=None, workers=None, gpus=None,
          force=False, shard=None, settings=None):
    """Grade every submission of `assignment`; with `shard` (index, count) grade only that share and
    leave the merge to `merge`. Returns the grades (of the whole class, unless sharded)."""
    reports = Path(reports or course.root / "reports")
    settings = settings or Settings()
    if not (course.root / "source" / assignment).is_dir():
        raise CourseError(f"source/{assignment} does not exist: run `autograder build` first")
    gpus = visible_gpus() if gpus is None else gpus
    workers = workers or default_workers(gpus, settings.gpu_memory_gb)
    found = collect(course, assignment, submissions, lms_zip)
    if shard is not None:
        index, count = shard
        found = found[index::count]
    done = {g.student for g in merging.load(reports, assignment)}
    todo = [s for s in found if force or s.student not in done]
    if len(todo) < len(found):
        print(f"{len(found) - len(todo)} already graded (use --force to grade them again)", file=sys.stderr)
    if todo:
        print(f"grading {len(todo)} submission(s) of {assignment} with {workers} worker(s)"
              + (f" on GPU(s) {', '.join(map(str, gpus))}" if gpus else " on Triton's interpreter"),
              file=sys.stderr)
        run_batch(course, assignment, todo, reports, settings, workers, gpus)
    if shard is not None:
        return [g for g in merging.load(reports, assignment) if g.student in {s.student for s in found}]
    return merge(course, assignment, reports)


def merge(course, assignment, reports=None):
    """Results (of one run or of every shard) into the gradebook, grades.csv, feedback, report.html."""
    reports = Path(reports or course.root / "reports")
    grades = merging.load(reports, assignment)
    if not grades:
        raise CourseError(f"no results in {merging.results_dir(reports, assignment)}: grade first")
    ensure_assignment(course, assignment)
    merging.into_gradebook(course, assignment, grades)
    folder = reports / assignment
    write_csv(grades, folder / "grades.csv")
    copy_feedback(course, assignment, grades, folder / "feedback")
    write_report(grades, assignment, folder / "report.html")
    return grades

"""`autograder` (or `python -m autograder`): build the course, grade submissions, run the demo."""
import argparse
import sys
from pathlib import Path

from autograder.course import Course, CourseError
from autograder.grade.settings import Settings


def _build(args, course):
    from autograder import generate
    if args.check:
        problems = generate.check(course)
        for problem in problems:
            print(problem)
        if problems:
            return 1
        print(f"up to date: {', '.join(course.lessons())}")
        return 0
    unknown = sorted(set(args.execute or ()) - set(course.lessons()))
    if unknown:  # before the build, which takes a while
        raise CourseError(f"no lesson named {', '.join(unknown)}: the lessons are {', '.join(course.lessons())}")
    lessons = generate.build(course, force=args.force)
    print(f"built {', '.join(lessons)} into source/, release/ and solutions/")
    if args.execute is not None:
        executed = args.execute or lessons
        generate.execute_solutions(course, executed)
        print(f"ran solutions/ of {', '.join(executed)} and kept their outputs")
    return 0


def _sync(args, course):
    from autograder import generate
    generate.sync(course, args.lesson)
    print(f"wrote source/{args.lesson} back into notebooks/{args.lesson}.py and rebuilt it")
    return 0


def _shard(text):
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit() and int(index) < int(count)):
        raise argparse.ArgumentTypeError("a shard is I/N with 0 <= I < N, e.g. 0/4")
    return int(index), int(count)


def _gpu_list(text):
    return [int(g) for g in text.split(",") if g.strip()]


def _grade(args, course):
    from autograder.grade.batch import grade, print_table
    settings = Settings(deadline=args.timeout, memory_mb=args.memory_mb, gpu_memory_gb=args.gpu_memory_gb,
                        sandbox=not args.no_sandbox)
    grades = grade(course, args.assignment, submissions=args.submissions, lms_zip=args.zip,
                   reports=args.reports, workers=args.workers, gpus=args.gpus, force=args.force,
                   shard=args.shard, settings=settings)
    print_table(grades)
    if args.shard:
        print(f"shard {args.shard[0]}/{args.shard[1]} done; when every shard is, run "
              f"`autograder merge {args.assignment}`")
    return 0


def _merge(args, course):
    from autograder.grade.batch import merge, print_table
    print_table(merge(course, args.assignment, reports=args.reports))
    return 0


def _demo(args, course):
    from autograder.demo import check, demo
    from autograder.grade.batch import visible_gpus
    grades = demo(course, args.assignment, reports=args.reports, students=args.students, workers=args.workers)
    if args.check:  # every sample, "ci": False ones too, on this machine's GPU where it has one
        return 1 if check(course, args.assignment, grades, on_gpu=bool(visible_gpus())) else 0
    return 0


def parser():
    top = argparse.ArgumentParser(prog="autograder", description=__doc__)
    top.add_argument("--course", type=Path, help="the course directory (default: the one holding "
                     "nbgrader_config.py, at or above the current directory)")
    commands = top.add_subparsers(dest="command", required=True)

    build = commands.add_parser("build", help="generate source/, release/ and solutions/ from notebooks/")
    build.add_argument("--check", action="store_true", help="change nothing; exit 1 naming what is stale")
    build.add_argument("--force", action="store_true", help="overwrite source notebooks edited by hand")
    build.add_argument("--execute", nargs="*", metavar="LESSON",
                       help="then run solutions/ (those of the lessons named; all without a name) and keep their "
                       "outputs (on a GPU machine, before publishing)")
    build.set_defaults(run=_build)

    sync = commands.add_parser("sync", help="write edits made to source/<lesson> back into its master")
    sync.add_argument("lesson")
    sync.set_defaults(run=_sync)

    grade = commands.add_parser("grade", help="autograde every submission of an assignment, in parallel, sandboxed")
    grade.add_argument("assignment")
    source = grade.add_mutually_exclusive_group()
    source.add_argument("--submissions", type=Path,
                        help="folder of <student>/<assignment>/*.ipynb (default: the course's submitted/)")
    source.add_argument("--zip", type=Path, help="an LMS download (Canvas, Moodle or Blackboard file names, "
                        "<student>/<file>.ipynb or <student>_<file>.ipynb)")
    grade.add_argument("--workers", type=int, help="notebooks graded at once (default: one per core, and no more "
                       "than the GPUs hold at --gpu-memory-gb each)")
    grade.add_argument("--gpus", type=_gpu_list, help="GPUs to use, e.g. 0,1 (default: all; '' for none)")
    grade.add_argument("--force", action="store_true", help="grade again the submissions already graded")
    grade.add_argument("--shard", type=_shard, help="grade only share I of N (SLURM arrays); then `merge`")
    grade.add_argument("--reports", type=Path, help="where results and reports go (default: <course>/reports)")
    grade.add_argument("--timeout", type=int, default=Settings.deadline,
                       help=f"seconds one notebook may run in all before it is killed (default {Settings.deadline})")
    grade.add_argument("--memory-mb", type=int, default=Settings.memory_mb,
                       help=f"host memory per notebook (default {Settings.memory_mb})")
    grade.add_argument("--gpu-memory-gb", type=float, default=Settings.gpu_memory_gb,
                       help=f"GPU memory torch may allocate in each notebook (default {Settings.gpu_memory_gb:g})")
    grade.add_argument("--no-sandbox", action="store_true",
                       help="run notebooks without isolation (only for trusted code, on machines without namespaces)")
    grade.set_defaults(run=_grade)

    merge = commands.add_parser("merge", help="merge graded shards into the gradebook and reports")
    merge.add_argument("assignment")
    merge.add_argument("--reports", type=Path, help="where the shards wrote results (default: <course>/reports)")
    merge.set_defaults(run=_merge)

    demo = commands.add_parser("demo", help="grade the bundled sample class of a lesson")
    demo.add_argument("assignment", nargs="?", default="02_vector_add")
    demo.add_argument("--reports", type=Path, help="where grades.csv goes (default: <course>/reports)")
    demo.add_argument("--students", nargs="+", default=(), metavar="NAME", help="grade only these samples")
    demo.add_argument("--workers", type=int, help="notebooks graded at once (default: from cores and GPUs)")
    demo.add_argument("--check", action="store_true",
                      help="compare every grade with its sample; exit 1 if any differs (on a GPU: its on_gpu values)")
    demo.set_defaults(run=_demo)
    return top


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        course = Course(args.course.resolve()) if args.course else Course.find()
        return args.run(args, course)
    except CourseError as error:
        print(f"autograder: {error}", file=sys.stderr)
        return 2

"""`autograder` (or `python -m autograder`): build the course, grade submissions, run the demo."""
import argparse
import sys
from pathlib import Path

from autograder.course import Course, CourseError


def _build(args, course):
    from autograder import build
    if args.check:
        problems = build.check(course)
        for problem in problems:
            print(problem)
        if problems:
            return 1
        print(f"up to date: {', '.join(course.lessons())}")
        return 0
    lessons = build.build(course, force=args.force)
    print(f"built {', '.join(lessons)} into source/, release/ and solutions/")
    if args.execute:
        build.execute_solutions(course, lessons)
        print("ran solutions/ and kept their outputs")
    return 0


def _sync(args, course):
    from autograder import build
    build.sync(course, args.lesson)
    print(f"wrote source/{args.lesson} back into notebooks/{args.lesson}.py and rebuilt it")
    return 0


def _grade(args, course):
    from autograder.grade import grade, print_table
    grades = grade(course, args.assignment, submissions=args.submissions, reports=args.reports,
                   timeout=args.timeout)
    print_table(grades)
    return 0


def _demo(args, course):
    from autograder.demo import demo
    demo(course, args.assignment, reports=args.reports)
    return 0


def parser():
    top = argparse.ArgumentParser(prog="autograder", description=__doc__)
    top.add_argument("--course", type=Path, help="the course directory (default: the one holding "
                     "nbgrader_config.py, at or above the current directory)")
    commands = top.add_subparsers(dest="command", required=True)

    build = commands.add_parser("build", help="generate source/, release/ and solutions/ from notebooks/")
    build.add_argument("--check", action="store_true", help="change nothing; exit 1 naming what is stale")
    build.add_argument("--force", action="store_true", help="overwrite source notebooks edited by hand")
    build.add_argument("--execute", action="store_true",
                       help="then run solutions/ and keep their outputs (on a GPU machine, before publishing)")
    build.set_defaults(run=_build)

    sync = commands.add_parser("sync", help="write edits made to source/<lesson> back into its master")
    sync.add_argument("lesson")
    sync.set_defaults(run=_sync)

    grade = commands.add_parser("grade", help="autograde every submission of an assignment")
    grade.add_argument("assignment")
    grade.add_argument("--submissions", type=Path,
                       help="folder of <student>/<assignment>/*.ipynb (default: the course's submitted/)")
    grade.add_argument("--reports", type=Path, help="where grades.csv goes (default: <course>/reports)")
    grade.add_argument("--timeout", type=float, default=1200,
                       help="seconds one submission may take in all before it is killed (default 1200)")
    grade.set_defaults(run=_grade)

    demo = commands.add_parser("demo", help="grade the bundled sample class of a lesson")
    demo.add_argument("assignment", nargs="?", default="02_vector_add")
    demo.add_argument("--reports", type=Path, help="where grades.csv goes (default: <course>/reports)")
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

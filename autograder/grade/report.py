"""Step 4 of grading: grades.csv for the gradebook and a table a person reads at a glance."""
import csv
import shutil

COLUMNS = ["student", "score", "max_score", "status", "reason"]


def write_csv(grades, path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for g in grades:
            writer.writerow([g.student, f"{g.score:g}", f"{g.max_score:g}", g.status, g.reason])


def print_table(grades):
    width = shutil.get_terminal_size((120, 20)).columns
    name = max([len("student")] + [len(g.student) for g in grades])
    print(f"{'student':<{name}}  {'score':>9}  {'time':>6}  {'status':<12}  reason")
    for g in grades:
        line = (f"{g.student:<{name}}  {g.score:>4g}/{g.max_score:<4g}  {g.seconds:>5.0f}s  "
                f"{g.status:<12}  {g.reason or '-'}")
        print(line if len(line) <= width else line[:width - 1] + "…")

"""benchmarks/calibrate.py stays in step with the lessons: every variant it times still applies to
today's notebooks, and it names a lesson's real performance test. benchmarks/anchors.py's variants
compute what the lessons' kernels compute. (Both time on a GPU only.)"""
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from autograder.samples import load_samples, make_submission
from conftest import patient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import calibrate  # noqa: E402


@pytest.mark.parametrize("lesson, test", [(lesson, test) for lesson in sorted(calibrate.VARIANTS)
                                           for test in calibrate.VARIANTS[lesson]])
def test_every_variant_applies_and_changes_the_answers(lesson, test):
    course = Course(calibrate.ROOT)
    assert calibrate.cell_source(nbformat.read(course.notebook("source", lesson), as_version=4), test)
    reference = make_submission(course, lesson, {"answers": "solution"})
    for label, variant in calibrate.variants_of(course, lesson, test).items():
        notebook = make_submission(course, lesson, variant)  # raises if an edit no longer applies
        assert variant["should"] in ("pass", "miss")
        if not label.startswith("sample ada"):
            assert [c.source for c in notebook.cells] != [c.source for c in reference.cells], label
        if "like" in variant:  # it edits that sample's answers, and the edits change them
            like = make_submission(course, lesson, load_samples(course, lesson)[variant["like"]])
            assert [c.source for c in notebook.cells] != [c.source for c in like.cells], label
            assert all(notebook.cells[i].source == c.source for i, c in enumerate(like.cells)
                       if c.id not in variant["edits"]), label


def test_the_anchors_variants_compute_what_the_lessons_compute():
    """anchors.py times the lessons' kernels beside textbook layouts and other launches; each must
    give the lesson's answer (checked against torch on small shapes, under the interpreter here)."""
    run = subprocess.run([sys.executable, str(calibrate.ROOT / "benchmarks" / "anchors.py"), "--check"],
                         capture_output=True, text=True, timeout=patient(300))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "matmul: every layout computes a @ b" in run.stdout, run.stdout
    assert "layer norm: every variant matches torch, forward and backward" in run.stdout, run.stdout
    assert "int4: every launch computes x @ W" in run.stdout, run.stdout

# nbgrader settings for grading Triton kernels fairly. Every setting says why it is here.
c = get_config()  # noqa: F821 (nbgrader provides get_config)

c.CourseDirectory.course_id = "triton-kernels"

# A test passes or fails by raising; stderr is never a verdict. nbgrader scores any grade cell
# that printed to stderr as 0, and torch and Triton print warnings there (deprecations, TF32,
# compile notes), as does a student's own debugging. So stderr is removed from grade cells.
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = r"(?s)."

# A student who deletes a test cell must not lose the test: nbgrader puts it back and runs it
# (without this the test grades as None and the score silently drops).
c.OverwriteCells.add_missing_cells = True

# Per-cell limit. Interpreter tests are sized to finish in seconds and a GPU's first compile takes
# about a second; five minutes only stops a cell that loops for ever. nbgrader interrupts
# (SIGINT), which a kernel spinning on the GPU ignores: the batch grader enforces a wall-clock
# deadline with SIGKILL on top of this.
c.Execute.timeout = 300
c.Execute.interrupt_on_timeout = True

# Keep the autograded notebook (the instructor's view; feedback shows no outputs) readable: long
# outputs and tracebacks are cut.
c.LimitOutput.max_lines = 200
c.LimitOutput.max_traceback = 40

# The stub left in answer cells: running it raises, so an untouched exercise never passes by
# accident, and the tests turn the NotImplementedError into "still the exercise stub".
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# nbgrader's feedback shows the autograded notebook: every output of the grading run, which ran the
# student's code after the hidden tests were put back (code that can read them and print them, in any
# encoding), and the hidden tests themselves. So feedback keeps none of those outputs: it leads with
# the score and what failed, folds the course setup away, and shows the notebook as handed in with one
# bounded verdict line under each test (autograder/grade/feedback.py); hidden tests are cleared.
# The formgrader and autograded/ keep everything, for the instructor.
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.preprocessors import ClearHiddenTests, GetGrades  # noqa: E402

from autograder.grade.feedback import FoldReadOnlyCode, KeepVerdictsOnly, LeadWithSummary  # noqa: E402

c.GenerateFeedback.preprocessors = [GetGrades, KeepVerdictsOnly, LeadWithSummary, ClearHiddenTests,
                                    FoldReadOnlyCode, CSSHTMLHeaderPreprocessor]

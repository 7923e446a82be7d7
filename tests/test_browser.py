"""End to end in a real browser: JupyterLab serves the course, headless Chromium drives it.

nbgrader releases 02_vector_add into an exchange. A student, in JupyterLab with lab/student (no
formgrader, no Create Assignment), fetches it from the Assignments list, fills in the answers, runs
every cell from the Run menu, sees the visible tests pass and the plots, validates with nbgrader's
Validate button and submits. An instructor, with lab/instructor, opens the formgrader from the
Nbgrader menu and finds every lesson.

Each JupyterLab runs on a free localhost port behind a token, in a temporary copy of the course
with its own HOME, runtime folder and exchange: nothing outside that folder is touched, except
the screenshots, which go to build/screenshots/ (git-ignored; the test prints their paths).

Chromium is Debian's (`apt-get install chromium`; .ci/run installs it), driven by Playwright
without `playwright install`. Without it the tests are skipped, except in CI, where they fail.
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from autograder.samples import make_submission
from conftest import ROOT, copy_course, patient, unavailable

LESSON = "02_vector_add"
LESSONS = Course(ROOT).lessons()
SCREENSHOTS = ROOT / "build" / "screenshots"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# JupyterLab settings in the temporary HOME: no news or update pop-up over the screenshots, and
# every cell kept in the page (JupyterLab otherwise drops cells out of view from the DOM).
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}
NOTEBOOK_SCROLLER = ".jp-NotebookPanel .jp-WindowedPanel-outer"
RUN_ALL_TIMEOUT_S = 180
VALIDATE_TIMEOUT_S = 180


def _unavailable():
    """Why the browser tests cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install playwright)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return None


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _environment(home, config, exchange):
    """The environment of one user: HOME, Jupyter's folders, lab/<config> and the exchange."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("JUPYTER", "XDG_", "IPYTHONDIR", "MPLCONFIGDIR"))}
    env.update(HOME=str(home), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
               JUPYTER_CONFIG_PATH=str(ROOT / "lab" / config), COURSE_EXCHANGE=str(exchange),
               # nbgrader runs `alembic`, which lives beside this Python
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    return env


class Lab:
    """A JupyterLab server, started in `cwd` and serving `root`, with a configuration of lab/."""

    def __init__(self, config, cwd, root, home, exchange):
        self.root, self.token, self.port = root, os.urandom(12).hex(), _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        for name, settings in LAB_SETTINGS.items():
            path = home / ".jupyter" / "lab" / "user-settings" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(settings))
        self.log = home / f"jupyterlab-{config}.log"
        self._log_file = self.log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
             f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
             f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root}",
             "--ServerApp.allow_root=True", "--LabApp.expose_app_in_browser=True"],
            cwd=cwd, env=_environment(home, config, exchange), stdout=self._log_file,
            stderr=subprocess.STDOUT)

    def wait_ready(self, timeout=90):
        deadline = time.monotonic() + patient(timeout)
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"JupyterLab exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                self.api("/api/status")
                return self
            except OSError:
                time.sleep(0.3)
        raise AssertionError(f"JupyterLab did not answer within {timeout} s:\n{self.log_tail()}")

    def api(self, path, method="GET"):
        request = urllib.request.Request(self.url + path, method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def status(self, path):
        """The HTTP status of a GET, errors included."""
        try:
            self.api(path)
            return 200
        except urllib.error.HTTPError as error:
            return error.code

    def page_url(self, path=""):
        return f"{self.url}/lab{'/tree/' + path if path else ''}?token={self.token}"

    def log_tail(self, lines=40):
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self):
        if self.process.poll() is None:
            try:  # kernels first, so that none outlives its server
                for kernel in self.api("/api/kernels"):
                    self.api(f"/api/kernels/{kernel['id']}", method="DELETE")
            except OSError:
                pass
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log_file.close()


@pytest.fixture(scope="module")
def browser():
    reason = _unavailable()
    if reason:
        unavailable(reason, "the browser tests", ".ci/run installs Chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def scratch(browser):
    """A temporary folder with a copy of the course whose gradebook and exchange nbgrader made:
    every lesson generated, 02_vector_add released. Removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="browser-test-") as folder:
        folder = Path(folder)
        course, exchange = folder / "course", folder / "exchange"
        course.mkdir()
        exchange.mkdir(mode=0o777)
        exchange.chmod(0o777)  # as nbgrader wants it (mkdir's mode is cut by the umask)
        copy_course(course)
        env = _environment(folder / "instructor-home", "instructor", exchange)
        for command in [["generate_assignment", "*", "--force"], ["release_assignment", LESSON]]:
            result = subprocess.run([sys.executable, "-m", "nbgrader", *command], cwd=course, env=env,
                                    capture_output=True, text=True, timeout=patient(300))
            assert result.returncode == 0, f"nbgrader {' '.join(command)}:\n{result.stdout}{result.stderr}"
        yield folder


@pytest.fixture(scope="module")
def student_lab(scratch):
    """The student's JupyterLab, started in an empty folder that it serves (nbgrader fetches into
    the server's working folder)."""
    (scratch / "student-work").mkdir()
    lab = Lab("student", cwd=scratch / "student-work", root=scratch / "student-work",
              home=scratch / "student-home", exchange=scratch / "exchange")
    yield lab.wait_ready()
    lab.stop()


@pytest.fixture(scope="module")
def instructor_lab(scratch):
    """The instructor's JupyterLab on the course copy."""
    lab = Lab("instructor", cwd=scratch / "course", root=scratch / "course",
              home=scratch / "instructor-home", exchange=scratch / "exchange")
    yield lab.wait_ready()
    lab.stop()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    yield page
    context.close()


def screenshot(page, name, capsys, full_notebook=False):
    """Save a screenshot into build/screenshots/ and say where."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    if full_notebook:  # the lab page never scrolls, its notebook does: make the window as tall as it
        size = page.viewport_size
        extra = page.locator(NOTEBOOK_SCROLLER).evaluate("node => node.scrollHeight - node.clientHeight")
        page.set_viewport_size({"width": size["width"], "height": min(size["height"] + extra, 30000)})
        page.wait_for_timeout(500)
        last = page.locator(".jp-NotebookPanel .jp-Cell").last.bounding_box()  # then blank space
        page.screenshot(path=path, clip={"x": 0, "y": 0, "width": size["width"],
                                         "height": last["y"] + last["height"] + 16})
        page.set_viewport_size(size)
    else:
        page.screenshot(path=path)
    with capsys.disabled():
        print(f"\n  screenshot: {path}")
    return path


def menu(page, *labels):
    """Click through the menu bar: menu(page, "Run", "Run All Cells")."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(rf"^{re.escape(labels[0])}$")).click()
    for label in labels[1:]:
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(rf"^{re.escape(label)}$")).click()


def has_command(page, command):
    return page.evaluate("command => window.jupyterapp.commands.hasCommand(command)", command)


# The notebook in view has a kernel, started, connected and idle: before that, Run All skips cells.
KERNEL_READY = """() => {
    const context = window.jupyterapp.shell.currentWidget?.sessionContext;
    const kernel = context?.session?.kernel;
    return Boolean(context?.isReady && kernel?.status === "idle" && kernel?.connectionStatus === "connected");
}"""


def cells_not_run(page):
    """The code cells of the notebook in view that have not run (numbered from 0 among all cells),
    or ["kernel busy"]; [] once every one ran and the kernel is idle."""
    return page.evaluate("""() => {
        const panel = window.jupyterapp.shell.currentWidget;
        if (panel.sessionContext.session?.kernel?.status !== "idle") return ["kernel busy"];
        return Array.from(panel.content.model.cells).flatMap((cell, index) =>
            cell.type === "code" && cell.executionCount === null ? [index] : []);
    }""")


def errors(page):
    """The tracebacks and errors shown in the notebook's outputs."""
    stderr = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    return [text for text in stderr.all_inner_texts() if "Traceback" in text or "Error" in text]


def success_lines(notebook):
    """The constant start of what each visible test prints when it passes."""
    lines = []
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            lines += [text.split("{")[0] for text in re.findall(r'print\(f?"([^"]+)"', cell.source)]
    return [line for line in lines if line.strip()]


def test_student_fetches_solves_validates_and_submits(student_lab, page, capsys):
    page.goto(student_lab.page_url())
    page.wait_for_selector(".jp-DirListing", timeout=patient(60_000))
    # the student's configuration: no formgrader, no Create Assignment
    assert not has_command(page, "nbgrader:open-formgrader")
    assert not has_command(page, "nbgrader:open-create-assignment")
    assert student_lab.status("/formgrader") == 404

    menu(page, "Nbgrader", "Assignment List")
    assignments = page.locator("#nbgrader-assignment-list")
    assignments.locator("#released_assignments_list button", has_text="Fetch").click()
    assignments.locator("#fetched_assignments_list", has_text=LESSON).wait_for(timeout=patient(30_000))
    notebook = student_lab.root / LESSON / f"{LESSON}.ipynb"
    assert notebook.is_file(), f"Fetch put nothing in the student's folder:\n{student_lab.log_tail()}"
    page.evaluate("window.jupyterapp.commands.execute('filebrowser:refresh')")
    page.locator(".jp-DirListing-item", has_text=LESSON).wait_for(timeout=patient(30_000))
    screenshot(page, "student-assignments", capsys)

    # the student writes the answers, then opens the notebook from the file browser
    nbformat.write(make_submission(Course(ROOT), LESSON, {"answers": "solution"}), notebook)
    page.locator(".jp-DirListing-item", has_text=LESSON).dblclick()
    page.locator(".jp-DirListing-item", has_text=f"{LESSON}.ipynb").dblclick()
    page.wait_for_function(KERNEL_READY, timeout=patient(90_000))
    assert page.locator(".jp-NotebookPanel-toolbar .validate-button").count() == 1
    screenshot(page, "student-notebook-opened", capsys)

    menu(page, "Run", "Run All Cells")
    deadline, idle_since = time.monotonic() + patient(RUN_ALL_TIMEOUT_S), None
    while not_run := cells_not_run(page):
        if errors(page):  # Run All stops at the first cell that raises
            screenshot(page, "student-run-all-error", capsys)
            pytest.fail("a cell raised:\n" + "\n".join(errors(page)))
        idle_since = None if not_run == ["kernel busy"] else idle_since or time.monotonic()
        if idle_since and time.monotonic() - idle_since > 15 or time.monotonic() > deadline:
            screenshot(page, "student-run-all-stopped", capsys)
            pytest.fail(f"Run All Cells stopped before running cells {not_run}")
        page.wait_for_timeout(500)

    assert not errors(page)
    outputs = "\n".join(page.locator(".jp-OutputArea-output").all_inner_texts())
    assert not re.search(r"\b\w+Error\b|Traceback", outputs), outputs
    expected = success_lines(nbformat.read(Course(ROOT).notebook("release", LESSON), as_version=4))
    assert expected, "the visible tests print nothing to look for"
    missing = [line for line in expected if line not in outputs]
    assert not missing, f"visible tests did not print {missing}:\n{outputs}"
    plots = page.locator(".jp-OutputArea-output img")
    assert plots.count() >= 1, "no plot was drawn"
    assert all(plots.evaluate_all("images => images.map(image => image.complete && image.naturalWidth > 0)"))
    page.locator(NOTEBOOK_SCROLLER).evaluate("node => node.scrollTo(0, 0)")
    screenshot(page, "student-notebook-top", capsys)
    screenshot(page, "student-notebook-full", capsys, full_notebook=True)

    page.locator(".jp-NotebookPanel-toolbar .validate-button").click()
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(timeout=patient(VALIDATE_TIMEOUT_S) * 1000)
    screenshot(page, "student-validated", capsys)
    assert "Success! Your notebook passes all the tests." in dialog.inner_text(), dialog.inner_text()
    dialog.get_by_role("button", name="Ok").click()

    menu(page, "Nbgrader", "Assignment List")
    assignments.locator("#fetched_assignments_list button", has_text="Submit").click()
    assignments.locator("#submitted_assignments_list", has_text=LESSON).wait_for(timeout=patient(30_000))
    screenshot(page, "student-submitted", capsys)


def test_instructor_finds_every_lesson_in_the_formgrader(instructor_lab, page, capsys):
    page.goto(instructor_lab.page_url())
    page.wait_for_selector(".jp-DirListing", timeout=patient(60_000))
    assert has_command(page, "nbgrader:open-create-assignment")
    menu(page, "Nbgrader", "Formgrader")
    formgrader = page.frame_locator("iframe")
    rows = formgrader.locator("#main-table tr")
    for lesson in LESSONS:
        rows.filter(has_text=lesson).first.wait_for(timeout=patient(60_000))
    assert not formgrader.locator("#warning-exchange, #warning-course-id").count(), "no usable exchange"
    page.evaluate("window.jupyterapp.commands.execute('application:toggle-left-area')")  # more room
    formgrader.locator("table").evaluate("table => window.scrollTo(0, table.offsetTop - 80)")
    screenshot(page, "instructor-formgrader", capsys)

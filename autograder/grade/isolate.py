"""nbgrader's Execute step, replaced: the student's notebook runs in the sandbox, under a deadline.

nbgrader's own Execute runs student code as the grader (it can read source/ and write the
gradebook), drops the whole submission when the kernel dies, and can only interrupt a cell that
spins. This step runs the notebook in `sandbox.py`'s namespaces through `execute.py`, keeps the
outputs of every cell that finished, and when the run is stopped (kernel death, deadline, memory
or process limit) writes the reason into the cell where it stopped and into each test cell that
never ran, so those tests score 0 with a reason instead of the whole notebook vanishing.
A status file beside the course records how the run ended, for the grade report.
"""
import contextlib
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Integer, Unicode

from autograder.grade import sandbox

STOPPED = "GradingStopped"
# nbgrader fails a test cell only when it shows an error output; the kernel's reply says "error"
# even when the notebook has silenced the output, so the error is shown again.
HIDDEN_ERROR = ("this cell raised an error, but code in the notebook hid it (a replaced showtraceback "
                "or sys.excepthook?): the cell counts as failed")


class SandboxedExecute(NbGraderPreprocessor):
    deadline = Integer(900, help="Seconds the whole notebook may run; then it is killed (SIGKILL)").tag(config=True)
    cell_timeout = Integer(300, help="Seconds one cell may run").tag(config=True)
    memory_mb = Integer(8192, help="Host memory the notebook's processes may use together").tag(config=True)
    processes = Integer(256, help="Processes the notebook may run at once").tag(config=True)
    threads = Integer(0, help="CPU threads for torch and NumPy in the notebook (0: their default)").tag(config=True)
    output_limit = Integer(1 << 20, help="Bytes of output kept per cell").tag(config=True)
    gpu = Unicode("", help="CUDA_VISIBLE_DEVICES for the notebook ('' when grading on the CPU)").tag(config=True)
    gpu_lock = Unicode("", help="A file whose lock makes timed sections exclusive on the GPU").tag(config=True)
    gpu_lock_hold = Integer(60, help="Seconds the notebook may hold the GPU lock at once (a timed section "
                                     "takes well under one); then it is killed").tag(config=True)
    status_file = Unicode("", help="Where to write how the run ended (JSON)").tag(config=True)
    require_sandbox = Bool(True, help="Refuse to run untrusted code when namespaces are unavailable").tag(config=True)

    def preprocess(self, nb, resources):
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="autograder-run-") as scratch:
            workdir = Path(scratch) / "work"
            shutil.copytree(resources["metadata"]["path"], workdir,
                            ignore=shutil.ignore_patterns("*.ipynb", ".ipynb_checkpoints"))
            notebook = workdir / "notebook.ipynb"
            nbformat.write(nb, notebook)
            if self.gpu_lock:
                os.link(self.gpu_lock, workdir / ".gpu.lock")
            reports, end, code = self._run(workdir, notebook)
        for message in reports:
            cell = nb.cells[message["index"]]
            cell.outputs = [nbformat.from_dict(o) for o in message["outputs"]]
            cell.execution_count = message["execution_count"]
            if message.get("status") == "error" and not any(o.output_type == "error" for o in cell.outputs):
                cell.outputs.append(_error(HIDDEN_ERROR, ename="ErrorHidden"))
        status = self._explain(nb, reports, end, code)
        status["seconds"] = round(time.monotonic() - started, 1)
        if self.status_file:
            Path(self.status_file).write_text(json.dumps(status))
        return nb, resources

    def _command(self, workdir, notebook, report_fd, limits):
        inner = [sys.executable, "-m", "autograder.grade.execute", f"{sandbox.WORK}/{notebook.name}",
                 "--report-fd", str(report_fd), "--cell-timeout", str(self.cell_timeout),
                 "--output-limit", str(self.output_limit)]
        if sandbox.available():
            return sandbox.sandboxed(inner, workdir, limits)
        if self.require_sandbox:
            raise RuntimeError("this machine cannot make user namespaces (unshare), so student code "
                               "cannot be isolated; grade elsewhere, or pass --no-sandbox for trusted code")
        inner[3] = str(notebook)
        return inner

    def _run(self, workdir, notebook):
        """Run the sandbox; collect the per-cell reports until it ends or the deadline passes."""
        read_end, write_end = os.pipe()
        env = dict(os.environ)
        env.pop("NBGRADER_EXECUTION", None)  # answers cannot tell they are being graded
        if self.gpu:
            env["CUDA_VISIBLE_DEVICES"] = self.gpu
        else:
            env["TRITON_INTERPRET"] = "1"
        if self.threads:  # workers side by side must not each start a thread per core
            env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(self.threads)
        if self.gpu_lock:
            env["COURSE_GPU_LOCK"] = f"{sandbox.WORK}/.gpu.lock"
        limits = sandbox.Limits(memory_mb=self.memory_mb, processes=self.processes, gpu=bool(self.gpu))
        with sandbox.cgroups(limits) as joining:
            process = subprocess.Popen(joining(self._command(workdir, notebook, write_end, limits)),
                                       pass_fds=(write_end,), env=env, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                       start_new_session=True, cwd=workdir)
            os.close(write_end)
            return self._collect(process, read_end)

    def _collect(self, process, read_end):
        reports, end, buffer = [], None, b""
        deadline = time.monotonic() + self.deadline
        held_since = None
        with os.fdopen(read_end, "rb") as pipe:
            while end is None:
                if self.gpu_lock:  # a notebook that keeps the GPU's turn makes every other one wait
                    now = time.monotonic()
                    held = any(_descends_from(pid, process.pid) for pid in _lock_holders(self.gpu_lock))
                    held_since = (held_since or now) if held else None
                    if held_since is not None and now - held_since > self.gpu_lock_hold:
                        end = {"end": "gpu lock", "detail": f"it held the GPU's timing lock for more than "
                               f"{self.gpu_lock_hold} s, which keeps other notebooks from timing their kernels"}
                        break
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([pipe], [], [], min(left, 1.0))[0]:
                    if left <= 0:
                        end = {"end": "deadline", "detail": f"ran past the {self.deadline} s deadline"}
                    continue
                chunk = os.read(pipe.fileno(), 1 << 16)
                if not chunk:
                    break
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    message = json.loads(line)
                    if "end" in message:
                        end = message
                    else:
                        reports.append(message)
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
        if end is None:
            code = process.returncode
            end = {"end": "sandbox", "detail": sandbox.LIMIT_REASONS.get(
                code, f"the notebook's process ended unexpectedly (exit code {code})")}
        if end["end"] == "deadline" or process.returncode not in (0, None):
            stderr = process.stderr.read().decode(errors="replace")[-2000:]
            end.setdefault("stderr", stderr)
        process.stderr.close()
        return reports, end, process.returncode

    def _explain(self, nb, reports, end, code):
        """Mark where the run stopped and which tests never ran; say how the run ended."""
        if end["end"] == "finished":
            return {"ended": "finished"}
        done = {m["index"] for m in reports}
        stop = end.get("index")
        if stop is None:  # stopped between reports: the next code cell is where it was
            stop = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code" and i not in done),
                        None)
        where = _cell_name(nb, stop) if stop is not None else "after the last cell"
        reason = f"stopped in {where}: {end['detail']}"
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or index < (stop if stop is not None else len(nb.cells)):
                continue
            if index == stop:
                cell.outputs.append(_error(f"the grader stopped the notebook here: {end['detail']}"))
            elif cell.metadata.get("nbgrader", {}).get("grade"):
                cell.outputs = [_error(f"not run: the notebook was stopped earlier, in {where}")]
        return {"ended": end["end"], "reason": reason, "cell": where, "exit_code": code,
                "stderr": end.get("stderr", "")}


def _lock_holders(path):
    """The pids that hold a flock on `path`, from /proc/locks (waiters excluded)."""
    stat = os.stat(path)
    key = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
    pids = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/locks").read_text().splitlines():
            fields = line.split()  # "1: FLOCK  ADVISORY  WRITE 12345 08:01:123456 0 EOF"
            if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == key:
                pids.append(int(fields[4]))
    return pids


def _descends_from(pid, ancestor):
    """Whether process `pid` is `ancestor` or below it (a sandbox's processes cannot leave its tree:
    its orphans go to the sandbox's own init)."""
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            pid = int(re.search(r"^PPid:\s*(\d+)", Path(f"/proc/{pid}/status").read_text(), re.M).group(1))
        except (OSError, AttributeError):
            return False
    return False


def _cell_name(nb, index):
    grade_id = nb.cells[index].metadata.get("nbgrader", {}).get("grade_id")
    return f"cell {grade_id!r}" if grade_id else f"cell {index + 1}"


def _error(message, ename=STOPPED):
    return nbformat.v4.new_output("error", ename=ename, evalue=message, traceback=[f"{ename}: {message}"])

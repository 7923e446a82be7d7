"""nbgrader's Execute step, replaced: the student's notebook runs in the sandbox, under a deadline.

nbgrader's own Execute runs student code as the grader (it can read source/ and write the
gradebook), drops the whole submission when the kernel dies, and can only interrupt a cell that
spins. This step runs the notebook in `sandbox.py`'s namespaces through `execute.py`, keeps the
outputs of every cell that finished, and when the run is stopped (kernel death, deadline, memory
or process limit) writes the reason into the cell where it stopped and into each test cell that
never ran, so those tests score 0 with a reason instead of the whole notebook vanishing.
A status file beside the course records how the run ended, for the grade report.
"""
import json
import os
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
from traitlets import Bool, Float, Integer, Unicode

from autograder.grade import sandbox
from autograder.grade.integrity import grade_id

STOPPED = "GradingStopped"
# The errors whose messages the course writes: its checks' (kit.py), the grader's own (here).
COURSE_ERRORS = {"CheckFailed", STOPPED, "ErrorHidden", "GradingIntegrity"}
# nbgrader fails a test cell only when it shows an error output; the kernel's reply says "error"
# even when the notebook has silenced the output, so the error is shown again.
HIDDEN_ERROR = ("this cell raised an error, but code in the notebook hid it (a replaced showtraceback "
                "or sys.excepthook?): the cell counts as failed")


def physical_gpu(index, visible=None):
    """The GPU the grader numbers `index`, as a child process must name it. The grader numbers the
    devices it can see from 0; when it was itself given a list (a SLURM task's CUDA_VISIBLE_DEVICES=1,
    say), index 0 is that list's first entry, not the machine's GPU 0."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "") if visible is None else visible
    devices = [d.strip() for d in visible.split(",") if d.strip()]
    return devices[int(index)] if int(index) < len(devices) else str(index)


def grading_mode(gpu):
    """Where the grader runs a notebook's kernels: on a GPU when it gives the sandbox one (a GPU
    slot, on a machine with GPU devices), else on Triton's interpreter."""
    return "cuda" if gpu not in (None, "") and sandbox.gpu_devices() else "interpreter"


class SandboxedExecute(NbGraderPreprocessor):
    deadline = Integer(900, help="Seconds the whole notebook may run; then it is killed (SIGKILL)").tag(config=True)
    cell_timeout = Integer(300, help="Seconds one cell may run").tag(config=True)
    memory_mb = Integer(8192, help="Host memory the notebook's processes may use together").tag(config=True)
    processes = Integer(256, help="Processes the notebook may run at once").tag(config=True)
    threads = Integer(0, help="CPU threads for torch and NumPy in the notebook (0: their default)").tag(config=True)
    output_limit = Integer(1 << 20, help="Bytes of output kept per cell").tag(config=True)
    gpu = Unicode("", help="CUDA_VISIBLE_DEVICES for the notebook ('' when grading on the CPU)").tag(config=True)
    gpu_memory_gb = Float(0, help="GiB of GPU memory torch may allocate in the notebook (0: no cap)").tag(config=True)
    gpu_turn = Unicode("", help="The GPU's turn socket (turns.py): graded timing gets the GPU to itself").tag(config=True)
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
            if self.gpu_turn:
                os.link(self.gpu_turn, workdir / sandbox.GPU_TURN)
            reports, end, code, start_s, sealed = self._run(workdir, notebook)
        flags = self._seal_flags(sealed)
        for message in reports:
            cell = nb.cells[message["index"]]
            cell.outputs = [nbformat.from_dict(o) for o in message["outputs"]]
            cell.execution_count = message["execution_count"]
            integrity = message.get("integrity")  # the sealed run of this test went wrong (execute.py)
            if integrity:
                flags.append(integrity["flag"])
            if "course_error" in message and not message["course_error"]:
                _unclaim(cell.outputs)
            if (integrity or message.get("status") == "error") and not any(o.output_type == "error"
                                                                           for o in cell.outputs):
                cell.outputs.append(_error(integrity["error"], ename="GradingIntegrity") if integrity
                                    else _error(HIDDEN_ERROR, ename="ErrorHidden"))
        status = self._explain(nb, reports, end, code)
        status["flags"] = list(dict.fromkeys(flags))
        status["seconds"] = round(time.monotonic() - started, 1)
        # Where the time went: starting the sandbox and kernel, then each cell (for report.html).
        status["timings"] = {"start": start_s,
                             "cells": {_cell_label(nb, m["index"]): m["seconds"] for m in reports if "seconds" in m}}
        if self.status_file:
            Path(self.status_file).write_text(json.dumps(status))
        return nb, resources

    def _seal_flags(self, sealed):
        """What the seal found when it was installed (execute.py), and whether the kit's mode is the
        grader's: a notebook graded with a GPU whose kernels ran on the interpreter is flagged."""
        if sealed is None:
            return []
        flags = list(sealed["seal"])
        if sealed["mode"] is not None and sealed["mode"] != self._mode():
            flags.append(f"the kit ran in mode {sealed['mode']!r} although the grader ran the notebook in "
                         f"mode {self._mode()!r}: performance tests fail")
        return flags

    def _mode(self):
        return grading_mode(self.gpu)

    def _command(self, workdir, notebook, report_fd, limits):
        inner = [sys.executable, "-m", "autograder.grade.execute", f"{sandbox.WORK}/{notebook.name}",
                 "--report-fd", str(report_fd), "--cell-timeout", str(self.cell_timeout),
                 "--output-limit", str(self.output_limit), "--mode", self._mode()]
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
            env["CUDA_VISIBLE_DEVICES"] = physical_gpu(self.gpu)
            env.pop("TRITON_INTERPRET", None)  # the grader's own shell decides nothing for the notebook
        else:
            env["TRITON_INTERPRET"] = "1"
        if self.threads:  # workers side by side must not each start a thread per core
            env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(self.threads)
        # torch.compile (04 and 05 plot it) compiles in the notebook's own process, not in a pool of
        # worker processes, one per core, each holding torch, counted against the notebook's limits.
        env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
        if self.gpu_turn:
            env["COURSE_GPU_TURN"] = f"{sandbox.WORK}/{sandbox.GPU_TURN}"
        if self.gpu and self.gpu_memory_gb:  # the kit caps torch's allocations at this
            env["COURSE_GPU_MEMORY_GB"] = str(self.gpu_memory_gb)
        limits = sandbox.Limits(memory_mb=self.memory_mb, processes=self.processes, gpu=bool(self.gpu))
        with sandbox.cgroups(limits) as joining:
            process = subprocess.Popen(joining(self._command(workdir, notebook, write_end, limits)),
                                       pass_fds=(write_end,), env=env, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                       start_new_session=True, cwd=workdir)
            os.close(write_end)
            return self._collect(process, read_end)

    def _collect(self, process, read_end):
        """The cells' reports, how the run ended, the exit code, the seconds until the kernel was ready,
        and the seal's report."""
        reports, end, buffer, start_s, sealed = [], None, b"", None, None
        launched = time.monotonic()
        deadline = launched + self.deadline
        with os.fdopen(read_end, "rb") as pipe:
            while end is None:
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
                    elif "ready" in message:
                        start_s = round(time.monotonic() - launched, 2)
                    elif "seal" in message:
                        sealed = message
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
        return reports, end, process.returncode, start_s, sealed

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


def _cell_label(nb, index):
    """The cell's grade_id, or else its position: a key for its timing."""
    return grade_id(nb.cells[index]) or f"cell {index + 1}"


def _cell_name(nb, index):
    """The cell as a reason names it."""
    name = grade_id(nb.cells[index])
    return f"cell {name!r}" if name else f"cell {index + 1}"


def _unclaim(outputs):
    """An error a test cell ended with that the course's checks did not raise cannot bear the name of
    one that did (feedback shows those errors' messages): the student's own class named CheckFailed."""
    for output in outputs:
        if output.output_type == "error" and output.ename in COURSE_ERRORS:
            output.ename = f"{output.ename}_not_the_courses"


def _error(message, ename=STOPPED):
    return nbformat.v4.new_output("error", ename=ename, evalue=message, traceback=[f"{ename}: {message}"])

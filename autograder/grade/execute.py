"""Run one notebook, cell by cell, inside the sandbox; report each finished cell on a private pipe.

`python -m autograder.grade.execute NOTEBOOK --report-fd FD ...` executes NOTEBOOK with a fresh
kernel and writes JSON lines to FD: {"ready": true} once the kernel has started, then one per cell,
{"index", "outputs", "execution_count", "status" (the kernel's reply: "ok" or "error"), "seconds"},
then a last line {"end": why}. The kernel does not inherit FD, and this process makes itself
non-dumpable, so code in the notebook can neither read nor forge the report. A cell that kills
the kernel, or runs past its time, ends the run with that cell named. A test whose kernels broke the
GPU (the seal's verdict "device fault": CUDA's context is lost to the process) fails saying why, and
the cells after it run in a fresh kernel, once the cells before them that are not tests (the setup,
the answers, the course's helpers) have run again there, unreported.

The setup cell runs first, then the seal (seal.py) is installed, then the other cells in order:
each of the course's cells (tests, and the read-only cells of a lesson's helpers) runs through the
seal, and its report carries "integrity" when the cell did not
run as sent (no valid receipt) or found what it relies on replaced, and "course_error": whether the
error it ended with, if any, was raised by the course's sealed checks. The install's report is
{"seal": problems, "mode": the kit's MODE}.
"""
import argparse
import copy
import ctypes
import hmac
import json
import os
import secrets
import sys
import tempfile
import time

# jsonschema (imported by nbformat) imports rfc3987_syntax where it is installed, which builds a grammar
# at import: about a second of CPU in every sandbox, for IRI formats that no notebook schema uses.
sys.modules.setdefault("rfc3987_syntax", None)
import nbformat  # noqa: E402 (after the line above)
from jupyter_client import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from autograder.grade import seal
from autograder.grade.integrity import grade_id

PR_SET_DUMPABLE = 4
SEAL = "autograder.grade.seal"
# The seal's verdicts on an error that the course's code raised, whose message feedback shows.
COURSE_VERDICTS = ("check failed", "tampered", seal.DEVICE_FAULT)


class BoundedClient(NotebookClient):
    """nbclient, with each cell's outputs capped: a notebook that prints gigabytes is cut short."""

    def __init__(self, nb, output_limit, **kwargs):
        super().__init__(nb, **kwargs)
        self.output_limit = output_limit
        self._sizes = {}

    def process_message(self, msg, cell, cell_index):
        out = super().process_message(msg, cell, cell_index)
        if out is not None and cell.get("outputs") and cell.outputs[-1] is out:
            size = self._sizes.get(cell_index, 0) + len(json.dumps(out))
            self._sizes[cell_index] = size
            if size > self.output_limit:
                cell.outputs.pop()
                if not cell.metadata.get("output_truncated"):
                    cell.metadata["output_truncated"] = True
                    cell.outputs.append(nbformat.v4.new_output(
                        "stream", name="stdout",
                        text=f"\n[output cut: this cell printed more than {self.output_limit >> 10} KiB]\n"))
        return out


def _death_detail(client):
    """How the kernel process ended, when that is known (an exit code, or the signal that killed it)."""
    process = getattr(getattr(client.km, "provisioner", None), "process", None)
    code = process.poll() if process is not None else None
    if code is None:
        return "the kernel died"
    if code < 0:
        import signal
        return f"the kernel was killed by {signal.Signals(-code).name}"
    return f"the kernel exited with code {code} (sys.exit or os._exit?)"


def _is_sealed(cell):
    """A course's cell after the setup: a test, or a read-only cell (a lesson's own helpers and
    references), both restored by nbgrader for grading. These run through the seal."""
    meta = cell.metadata.get("nbgrader", {})
    return cell.cell_type == "code" and grade_id(cell) != "setup" and not meta.get("solution") and (
        meta.get("grade", False) or meta.get("locked", False))


def _order(nb):
    """The code cells' indices, the setup cell's first: nothing of the student's runs before it."""
    code = [index for index, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    return sorted(code, key=lambda index: grade_id(nb.cells[index]) != "setup")


def _receipts(cell, key, nonce, source):
    """Take the seal's receipts out of the cell's outputs; return the verdict of the one receipt
    for `nonce` whose signature and source hash hold, or None."""
    found, kept = [], []
    for output in cell.get("outputs", []):
        receipt = output.get("data", {}).get(seal.RECEIPT) if output.get("output_type") == "display_data" else None
        (kept if receipt is None else found).append(receipt or output)
    cell.outputs = kept
    valid = [r for r in found if isinstance(r, dict) and r.get("nonce") == nonce
             and r.get("source") == (seal.source_hash(source) if source is not None else "")
             and isinstance(r.get("problems"), list) and all(isinstance(p, str) for p in r["problems"])
             and hmac.compare_digest(str(r.get("mac")), seal.signed(key, nonce, str(r.get("verdict")),
                                                                     r["source"], r["problems"]))]
    return valid[0] if len(valid) == 1 else None


def _integrity(receipt):
    """What went wrong with a test cell's sealed run, if anything: {"flag": for a person, "error":
    why the test fails}."""
    if receipt is None:
        return {"flag": "tests did not run as the grader sent them: the sealed kit gave no valid receipt "
                        "(an input transformer, or a replaced test runner?)",
                "error": "this test did not run as the grader sent it (no valid receipt from the sealed kit): "
                         "it counts as failed"}
    if receipt["verdict"] == "tampered":
        problems = "; ".join(receipt["problems"])
        return {"flag": f"changed what graded tests rely on: {problems}",
                "error": f"this test found what it relies on changed ({problems}): it counts as failed"}
    return None


def _install_seal(client, nb, key, mode):
    """Seal the kit the setup cell defined (seal.py): the receipts' key and the grader's mode go in
    a file the seal reads and deletes, never in the code the kernel sees."""
    handle, settings = tempfile.mkstemp(prefix="seal-", dir="/tmp")
    with os.fdopen(handle, "w") as file:
        json.dump({"key": key.hex(), "mode": mode}, file)
    cell = nbformat.v4.new_code_cell(f"__import__({SEAL!r}, fromlist=['install']).install({settings!r})")
    nb.cells.append(cell)  # nbclient stores each cell it ran back at its index: this one goes away again
    try:
        client.execute_cell(cell, len(nb.cells) - 1, store_history=False)
    finally:
        nb.cells.pop()
    receipt = _receipts(cell, key, "install", None)
    if receipt is None:
        errors = [f"{o.get('ename')}: {o.get('evalue')}" for o in cell.outputs if o.get("output_type") == "error"]
        return {"seal": [f"the grader could not seal the kit ({'; '.join(errors) or 'no receipt'})"], "mode": None}
    return {"seal": receipt["problems"], "mode": receipt["verdict"]}


def execute(path, report, cell_timeout, output_limit, mode):
    nb = nbformat.read(path, as_version=4)
    os.unlink(path)  # it holds the hidden tests, put back for grading: gone before any student code runs

    def send(message):
        report.write(json.dumps(message) + "\n")
        report.flush()

    key = secrets.token_bytes(32)  # signs the seal's receipts; the kernel gets it through a file
    workdir, order, done = os.path.dirname(os.path.abspath(path)), _order(nb), 0
    # A test whose kernel broke the GPU (a device fault: an illegal address, a device-side assert)
    # leaves a process that cannot use it again. The tests after it run in a fresh kernel, where the
    # cells before them (the setup, the answers, the course's helpers: not the tests) run again first.
    while True:
        done, end = _run_kernel(nb, order, done, key, send, workdir, cell_timeout, output_limit, mode)
        if end is not None:
            send(end)
            return


def _run_kernel(nb, order, done, key, send, workdir, cell_timeout, output_limit, mode):
    """Run order[done:] in a new kernel, after running again, unreported, the cells of order[:done]
    that are not tests. Return how many cells of `order` are reported, and the end of the run (None
    when a device fault asks for a fresh kernel)."""
    # Unix sockets, not TCP: the sandbox has no network, not even loopback.
    kernel = AsyncKernelManager(kernel_name="python3", transport="ipc", ip="/tmp/kernel")
    client = BoundedClient(nb, output_limit, km=kernel, timeout=cell_timeout, kernel_name="python3",
                           allow_errors=True, record_timing=False, interrupt_on_timeout=False,
                           resources={"metadata": {"path": workdir}})
    # The kernel's own verdict on each cell, which code in the notebook cannot silence the way it
    # can silence the error output (by replacing showtraceback or sys.excepthook).
    replies = {}
    client.on_cell_executed = lambda cell, cell_index, execute_reply: replies.__setitem__(
        cell_index, execute_reply["content"].get("status"))
    with client.setup_kernel():
        if done == 0:
            send({"ready": True})
        for position, index in enumerate(order):
            cell, rerun = nb.cells[index], position < done
            if rerun and cell.metadata.get("nbgrader", {}).get("grade"):
                continue  # graded already
            started = time.monotonic()
            source, nonce, name = cell.source, secrets.token_hex(8), grade_id(cell) or f"cell {index + 1}"
            ran = copy.deepcopy(cell) if rerun else cell  # what runs again keeps the outputs of its first run
            if _is_sealed(cell):  # sent through the seal, which signs what it ran
                ran.source = f"__import__({SEAL!r}, fromlist=['run']).run({nonce!r}, {source!r}, {name!r})"
            stop = None
            try:
                client.execute_cell(ran, index)
            except DeadKernelError:
                stop = {"end": "died", "detail": _death_detail(client)}
            except CellTimeoutError:
                stop = {"end": "cell timeout", "detail": f"ran past {cell_timeout} s"}
            finally:
                nb.cells[index] = cell  # nbclient stores the cell it ran at its index
                cell.source = source
            receipt = _receipts(ran, key, nonce, source) if _is_sealed(cell) and stop is None else None
            broke_the_gpu = receipt is not None and receipt["verdict"] == seal.DEVICE_FAULT
            if rerun and (stop or broke_the_gpu):  # the cells before the next test could not run again
                stop = stop or {"end": seal.DEVICE_FAULT, "detail": "the GPU failed again"}
                return done, {**stop, "index": order[done], "detail": f"{stop['detail']} when the grader ran "
                              f"{name} again in a fresh kernel, after a test broke the GPU"}
            if not rerun:
                if stop is not None:
                    send({"index": index, "outputs": cell.get("outputs", []), "execution_count": None})
                    return position + 1, {**stop, "index": index}
                message = {"index": index, "outputs": cell.outputs, "execution_count": cell.execution_count,
                           "status": replies.get(index), "seconds": round(time.monotonic() - started, 2)}
                if _is_sealed(cell):
                    message["integrity"] = _integrity(receipt)
                    message["course_error"] = receipt is not None and receipt["verdict"] in COURSE_VERDICTS
                    message["outputs"] = cell.outputs
                send(message)
            if grade_id(cell) == "setup":
                send(_install_seal(client, nb, key, mode))
            if broke_the_gpu:
                return position + 1, None
    return len(order), {"end": "finished"}


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("notebook")
    parser.add_argument("--report-fd", type=int, required=True)
    parser.add_argument("--cell-timeout", type=int, default=300)
    parser.add_argument("--output-limit", type=int, default=1 << 20)
    parser.add_argument("--mode", choices=["cuda", "interpreter"], required=True,
                        help="where the grader runs the notebook's kernels, to compare with the kit's own view")
    args = parser.parse_args(argv)
    # Not dumpable: processes of the same user (the notebook's kernel) cannot open our files or
    # attach to us, so the report pipe stays ours.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    with os.fdopen(args.report_fd, "w") as report:
        execute(args.notebook, report, args.cell_timeout, args.output_limit, args.mode)


if __name__ == "__main__":
    sys.exit(main())

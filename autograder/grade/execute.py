"""Run one notebook, cell by cell, inside the sandbox; report each finished cell on a private pipe.

`python -m autograder.grade.execute NOTEBOOK --report-fd FD ...` executes NOTEBOOK with a fresh
kernel and writes JSON lines to FD: {"ready": true} once the kernel has started, then one per cell,
{"index", "outputs", "execution_count", "status" (the kernel's reply: "ok" or "error"), "seconds"},
then a last line {"end": why}. The kernel does not inherit FD, and this process makes itself
non-dumpable, so code in the notebook can neither read nor forge the report. A cell that kills
the kernel, or runs past its time, ends the run with that cell named.
"""
import argparse
import ctypes
import json
import os
import sys
import time

import nbformat
from jupyter_client import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

PR_SET_DUMPABLE = 4


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


def execute(path, report, cell_timeout, output_limit):
    nb = nbformat.read(path, as_version=4)
    os.unlink(path)  # it holds the hidden tests, put back for grading: gone before any student code runs
    # Unix sockets, not TCP: the sandbox has no network, not even loopback.
    kernel = AsyncKernelManager(kernel_name="python3", transport="ipc", ip="/tmp/kernel")
    client = BoundedClient(nb, output_limit, km=kernel, timeout=cell_timeout, kernel_name="python3",
                           allow_errors=True, record_timing=False, interrupt_on_timeout=False,
                           resources={"metadata": {"path": os.path.dirname(os.path.abspath(path))}})

    def send(message):
        report.write(json.dumps(message) + "\n")
        report.flush()

    # The kernel's own verdict on each cell, which code in the notebook cannot silence the way it
    # can silence the error output (by replacing showtraceback or sys.excepthook).
    replies = {}
    client.on_cell_executed = lambda cell, cell_index, execute_reply: replies.__setitem__(
        cell_index, execute_reply["content"].get("status"))

    with client.setup_kernel():
        send({"ready": True})
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            started = time.monotonic()
            try:
                client.execute_cell(cell, index)
            except DeadKernelError:
                send({"index": index, "outputs": cell.get("outputs", []), "execution_count": None})
                send({"end": "died", "index": index, "detail": _death_detail(client)})
                return
            except CellTimeoutError:
                send({"index": index, "outputs": cell.get("outputs", []), "execution_count": None})
                send({"end": "cell timeout", "index": index, "detail": f"ran past {cell_timeout} s"})
                return
            send({"index": index, "outputs": cell.outputs, "execution_count": cell.execution_count,
                  "status": replies.get(index), "seconds": round(time.monotonic() - started, 2)})
    send({"end": "finished"})


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("notebook")
    parser.add_argument("--report-fd", type=int, required=True)
    parser.add_argument("--cell-timeout", type=int, default=300)
    parser.add_argument("--output-limit", type=int, default=1 << 20)
    args = parser.parse_args(argv)
    # Not dumpable: processes of the same user (the notebook's kernel) cannot open our files or
    # attach to us, so the report pipe stays ours.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    with os.fdopen(args.report_fd, "w") as report:
        execute(args.notebook, report, args.cell_timeout, args.output_limit)


if __name__ == "__main__":
    sys.exit(main())

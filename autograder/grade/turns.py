"""Exclusive GPU turns for graded timing: while one notebook takes a graded measurement, every other
notebook on that GPU is paused (SIGSTOP), so the measurement never shares the GPU with other work
and a performance grade does not depend on what else the batch was doing.

Each GPU has a unix socket, bound into every sandbox on that GPU (as COURSE_GPU_TURN). The kit's
`exclusive_gpu()` connects and sends b"t"; the server stops every process of the other sandboxes on
that GPU, checks that each one has stopped, and answers b"g"; the notebook measures and closes the
connection; the others resume. Turns on one GPU are served one at a time, in the order they come.
Measurements that are only plotted take shared turns (b"s"): nobody is paused, but they do not run
side by side, which would make the GPU switch between processes all the time and slow everyone.

A notebook cannot use this to stall the others: a turn longer than `hold` seconds is taken back
(the others resume; the notebook reads b"r" and its check fails saying why), and a sandbox whose
exclusive turns add up to more than `budget` seconds is refused further ones (b"n"). Shared turns
have a budget of their own, so that a notebook's plotted measurements never spend the time its
graded ones need; a refused shared turn is no failure: the kit measures without one (an exclusive
turn elsewhere still pauses it, so it never shares the GPU with a graded measurement).
"""
import contextlib
import os
import select
import signal
import socket
import struct
import threading
import time
from collections import defaultdict
from statistics import median_high
from pathlib import Path

STOPPED_STATES = {"T", "t", "Z", "X"}  # stopped, traced, or gone: runs nothing on the GPU


def _stat(pid):
    """The fields of /proc/<pid>/stat after the command name: state, parent pid, ..."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def process_tree():
    """{pid: parent pid} of every process on the machine, from /proc."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                parents[int(entry)] = int(_stat(entry)[1])
    return parents


def _state(pid):
    try:
        return _stat(pid)[0]
    except (OSError, IndexError):
        return "X"


def descendants(roots, parents):
    children = defaultdict(list)
    for pid, parent in parents.items():
        children[parent].append(pid)
    found, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children[pid])
    return found


class GpuTurns:
    """One turn server per GPU. `members(gpu)` names the worker processes grading on that GPU: every
    sandbox is a child of one of them (worker.py), and a sandbox is that child and its descendants."""

    def __init__(self, folder, gpus, members, hold=30.0, budget=60.0):
        self.folder, self.gpus, self.members = Path(folder), list(gpus), members
        self.hold, self.budget = hold, budget
        self.used = defaultdict(float)  # seconds of turns taken, per (sandbox's root pid, kind)
        self.served = defaultdict(list)  # (gpu, kind): the seconds each turn lasted
        self.listeners, self.threads = [], []

    def path(self, gpu):
        return self.folder / f"gpu{gpu}.turn"

    def __enter__(self):
        for gpu in self.gpus:
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(str(self.path(gpu)))
            listener.listen(64)
            thread = threading.Thread(target=self._serve, args=(gpu, listener), daemon=True)
            thread.start()
            self.listeners.append(listener)
            self.threads.append(thread)
        return self

    def __exit__(self, *exc):
        for listener in self.listeners:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        for thread in self.threads:
            thread.join(timeout=5)

    def _serve(self, gpu, listener):
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:  # closed: the batch is over
                return
            with connection:
                with contextlib.suppress(OSError):
                    self._turn(gpu, connection)

    def _sandbox_of(self, pid, workers):
        """The root of the sandbox that `pid` runs in (a worker's child), or None. Walks up from pid
        alone: reading all of /proc for every turn took about 10 ms, as long as a plotted measurement."""
        for _ in range(64):
            try:
                parent = int(_stat(pid)[1])
            except (OSError, ValueError, IndexError):
                return None
            if parent in workers:
                return pid
            if parent <= 1:
                return None
            pid = parent
        return None

    def _others(self, gpu, own):
        """Every process of the sandboxes on `gpu` other than `own`."""
        parents, workers = process_tree(), set(self.members(gpu))
        roots = {pid for pid, parent in parents.items() if parent in workers and pid != own}
        return descendants(roots, parents)

    def _freeze(self, gpu, own, stopped):
        """Stop the other sandboxes' processes (new ones too) and wait until each has stopped."""
        give_up = time.monotonic() + 2
        while True:
            for pid in self._others(gpu, own) - stopped:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGSTOP)
                stopped.add(pid)
            if all(_state(pid) in STOPPED_STATES for pid in stopped) or time.monotonic() > give_up:
                return

    def _turn(self, gpu, connection):
        connection.settimeout(5)
        pid, _, _ = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                              struct.calcsize("3i")))
        kind = connection.recv(1)
        if kind not in (b"t", b"s"):
            return
        own = self._sandbox_of(pid, set(self.members(gpu)))
        if own is None or self.used[own, kind] >= self.budget:
            connection.sendall(b"n")
            return
        stopped, started = set(), time.monotonic()
        exclusive = kind == b"t"
        try:
            if exclusive:
                self._freeze(gpu, own, stopped)
            connection.sendall(b"g")
            while True:
                if select.select([connection], [], [], 0.05)[0]:
                    if connection.recv(1) in (b"", b"d"):
                        return
                elif time.monotonic() - started > self.hold:
                    connection.sendall(b"r")
                    return
                elif exclusive:  # a notebook that started meanwhile is paused too (it needs far
                    self._freeze(gpu, own, stopped)  # longer than 50 ms to reach the GPU)
        finally:
            for stopped_pid in stopped:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(stopped_pid, signal.SIGCONT)
            took = time.monotonic() - started
            self.used[own, kind] += took
            self.served[gpu, kind].append(took)

    def summary(self):
        """One line per GPU: how many turns it served, how long they took."""
        lines = []
        for gpu in self.gpus:
            parts = []
            for kind, what in ((b"t", "exclusive (others paused)"), (b"s", "shared")):
                seconds = self.served[gpu, kind]
                if seconds:
                    parts.append(f"{len(seconds)} {what}, {sum(seconds):.1f} s in all, "
                                 f"median {median_high(seconds) * 1e3:.0f} ms")
            lines.append(f"GPU {gpu} measurement turns: " + ("; ".join(parts) or "none"))
        return lines

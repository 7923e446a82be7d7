"""The sandbox on its own: what code inside can see, reach and use, as root and as a plain user."""
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autograder.grade import sandbox
from conftest import ROOT, patient, unavailable


@pytest.fixture(autouse=True)
def sandboxes():
    if not sandbox.available():
        unavailable("this machine cannot make user namespaces", "the sandbox tests", "run them as root")


@pytest.fixture
def listening():
    """A port on the host's loopback that accepts connections: reachable from outside a sandbox
    (the probe's positive control), unreachable from inside its own network namespace."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.listen(8)
        yield server.getsockname()[1]


PROBE = r"""
import os, socket, sys
secret, port = sys.argv[1], int(sys.argv[2])
print("secret visible:", os.path.exists(secret))
print("home visible:", any(os.path.exists(p) for p in ("/root/.bashrc", "/root/.cache", "/home")))
try:
    socket.create_connection(("127.0.0.1", port), timeout=2).close()
    print("network: reachable")
except OSError as error:
    print("network: blocked")
for name, path in [("system", "/etc/autograder-probe"), ("root", "/autograder-probe"), ("dev", "/dev/probe")]:
    try:
        open(path, "w")
        print(name, "writable")
    except OSError:
        print(name, "read-only")
print("host folders named:", sorted(k for k in os.environ if k in ("TRITON_CACHE_DIR", "TRITON_HOME")))
open("/submission/written", "w").write("ok")
print("work writable:", open("/submission/written").read() == "ok")
print("processes:", len([p for p in os.listdir("/proc") if p.isdigit()]))
"""


def _run(command, workdir, limits=sandbox.Limits(memory_mb=1024, processes=32)):
    with sandbox.cgroups(limits) as joining:
        return subprocess.run(joining(sandbox.sandboxed(command, workdir, limits)), capture_output=True,
                              text=True, timeout=patient(120))


def test_sandbox_hides_the_course_and_the_network(tmp_path, monkeypatch, listening):
    work = tmp_path / "work"
    work.mkdir()
    # A runner's own Triton cache: inside, that folder does not exist and must not be shared.
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    monkeypatch.setenv("TRITON_HOME", str(tmp_path))
    secret = ROOT / "source"
    outside = subprocess.run([sys.executable, "-c", PROBE, str(secret), str(listening)], cwd=work,
                             capture_output=True, text=True, timeout=patient(120))
    assert "secret visible: True" in outside.stdout and "network: reachable" in outside.stdout, \
        "the probe's positive control: outside the sandbox it sees the course and reaches the port"
    result = _run([sys.executable, "-c", PROBE, str(secret), str(listening)], work)
    assert result.returncode == 0, result.stderr
    assert "secret visible: False" in result.stdout
    assert "home visible: False" in result.stdout
    assert "network: blocked" in result.stdout
    for name in ("system", "root", "dev"):
        assert f"{name} read-only" in result.stdout, "only the work folder, /tmp and /dev/shm are writable"
    assert "host folders named: []" in result.stdout, "Triton's cache must be the sandbox's own"
    assert "work writable: True" in result.stdout, "the notebook's folder must be writable inside"
    assert not (work / "written").exists(), "writes stay in the sandbox's own (size-limited) folder"
    assert int(result.stdout.split("processes:")[1]) <= 3, "only the sandbox's own processes are visible"


def test_a_fork_bomb_is_stopped(tmp_path):
    bomb = ("import os, sys, time\nfor _ in range(300):\n    try:\n        os.fork()\n    except OSError:\n"
            "        print('fork failed', flush=True)\n        time.sleep(0.01)\n")
    result = _run([sys.executable, "-c", bomb], tmp_path)
    # Contained by a cgroup or the process rlimit (forks fail), or killed by the init's watchdog.
    assert "fork failed" in result.stdout or result.returncode == sandbox.PROCESS_LIMIT, \
        (result.returncode, result.stdout[-500:], result.stderr[-500:])


def test_memory_is_limited(tmp_path):
    hog = "x = bytearray(4 << 30)\nprint('allocated')"
    result = _run([sys.executable, "-c", hog], tmp_path)
    assert "allocated" not in result.stdout
    # Refused by the address-space limit (MemoryError), or killed by the cgroup's or the init's.
    assert "MemoryError" in result.stderr or result.returncode in (sandbox.MEMORY_LIMIT, -9, 137), \
        (result.returncode, result.stderr[-500:])


def test_a_plain_user_gets_the_same_sandbox(listening):
    """A GPU runner grades as an ordinary user: the namespaces need no privilege."""
    if os.geteuid() != 0 or not Path("/usr/bin/python3").exists():
        unavailable("it needs root to become a plain user, and a Python a plain user can run",
                    "the plain user's sandbox test", "run it as root on a machine with /usr/bin/python3")
    tmp_path = Path(tempfile.mkdtemp(prefix="sandbox-user-"))  # pytest's own folders are root-only
    copy = tmp_path / "code"
    shutil.copytree(ROOT / "autograder", copy / "autograder")
    work = tmp_path / "work"
    work.mkdir()
    for path in (tmp_path, copy, work):
        path.chmod(0o777)
    script = (f"import sys; sys.path.insert(0, {str(copy)!r}); from autograder.grade import sandbox; "
              f"import subprocess; argv = sandbox.sandboxed(['/usr/bin/python3', '-c', {PROBE!r}, {str(ROOT)!r}, {str(listening)!r}], "
              f"{str(work)!r}, sandbox.Limits(memory_mb=1024, processes=32)); "
              "r = subprocess.run(argv, capture_output=True, text=True); print(r.stdout, r.stderr); sys.exit(r.returncode)")
    result = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                             "/usr/bin/python3", "-c", script], capture_output=True, text=True, timeout=patient(120),
                            cwd=tmp_path, env={"PATH": os.environ["PATH"], "PYTHONPATH": str(copy)})
    shutil.rmtree(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "secret visible: False" in result.stdout and "network: blocked" in result.stdout
    assert "root read-only" in result.stdout and "dev read-only" in result.stdout
    # the rest of what the root sandbox promises, above
    assert "home visible: False" in result.stdout and "system read-only" in result.stdout
    assert "work writable: True" in result.stdout
    assert int(result.stdout.split("processes:")[1].split()[0]) <= 3, "only the sandbox's own processes are visible"


def _needs_cgroups(controller):
    if not sandbox.cgroup_bases([controller]):
        unavailable(f"this machine lets the grader make no {controller} cgroup", "the cgroup tests",
                    "run them as root with cgroups delegated (a container with its own cgroup namespace)")


def test_a_sandbox_gets_its_own_cgroup_inside_the_graders(tmp_path):
    """Limits set on the grader (a container's, a batch job's) still hold for its notebooks."""
    _needs_cgroups("memory")
    result = _run([sys.executable, "-c", "print(open('/proc/self/cgroup').read())"], tmp_path)
    inside = sandbox.parse_cgroups(result.stdout)
    hierarchy = "memory" if sandbox._CGROUP_V1 else ""
    parent, _, name = inside[hierarchy].rpartition("/")
    assert name.startswith("autograder-"), result.stdout
    # v2 keeps its groups at the root (see cgroup_bases).
    assert parent == (sandbox._own_cgroups()[hierarchy] if sandbox._CGROUP_V1 else ""), (parent, result.stdout)


def test_groups_left_by_a_killed_grader_are_removed():
    """SIGKILL skips a grader's clean-up; the next sandbox removes what it left."""
    _needs_cgroups("pids")
    gone = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True).stdout.strip()
    base = sandbox.cgroup_bases(["pids"])["pids"]
    stale, alive = base / f"autograder-{gone}-deadbeef", base / f"autograder-{os.getpid()}-0000live"
    stale.mkdir()
    alive.mkdir()
    try:
        with sandbox.cgroups(sandbox.Limits(memory_mb=256, processes=8)):
            pass
        assert not stale.exists(), "the group of a grader that is gone was left behind"
        assert alive.exists(), "the group of a running grader was removed"
    finally:
        for group in (stale, alive):
            with contextlib.suppress(OSError):
                group.rmdir()

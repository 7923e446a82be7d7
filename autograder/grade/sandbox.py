"""A sandbox for untrusted notebooks, from the kernel's own namespaces (no root, no extra package).

`sandboxed(command, workdir, limits)` gives the argv that runs `command` so that it
- has no network (a new network namespace with only a down loopback),
- sees a new, read-only root: system folders and Python, its work folder read-write, a fresh /tmp,
  a /dev with only harmless devices and the GPUs; no course, no gradebook, no home, no other student
  (and no variable naming one of the grader's folders, such as TRITON_CACHE_DIR),
- sees only its own processes (a new PID namespace) and holds no capabilities,
- is watched by the namespace's init, which kills everything in it when the process count or the
  resident memory passes its limit, and reports which limit by its exit code.
The caller enforces the wall-clock deadline by killing the whole process group with SIGKILL.

Run as `python -m autograder.grade.sandbox --init ...` it is that init (PID 1 of the namespace).
"""
import argparse
import contextlib
import functools
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import autograder

# Exit codes of the init, read by the caller: a limit, not the payload, ended the run.
PROCESS_LIMIT, MEMORY_LIMIT = 201, 202
LIMIT_REASONS = {
    PROCESS_LIMIT: "too many processes (a fork bomb?): the sandbox was killed",
    MEMORY_LIMIT: "the host memory limit was exceeded: the sandbox was killed",
}
WORK = "/submission"  # where the writable work folder appears inside; not /work, which may hold the course
GPU_TURN = ".gpu-turn"  # the GPU's turn socket (turns.py), shared with the grader, not copied
SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/sys"]
DEVICES = ["null", "zero", "full", "random", "urandom"]
GPU_DEVICE_PREFIXES = ("nvidia",)
# Variables naming the grader's own folders (TRITON_CACHE_DIR and every other *_DIR too): inside,
# those folders do not exist, and caches belong in the sandbox's /tmp, never shared between sandboxes.
HOST_FOLDERS = {"TRITON_HOME", "CUDA_CACHE_PATH"}


@dataclass(frozen=True)
class Limits:
    memory_mb: int = 8192
    processes: int = 256
    file_mb: int = 64  # largest file the notebook may write
    gpu: bool = False  # address-space limits break CUDA, so memory is then watched, not capped


def available():
    """Whether this machine can make the namespaces (an unprivileged user namespace at least)."""
    if not shutil.which("unshare") or not shutil.which("setpriv"):
        return False
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--net", "--mount", "--pid",
                            "--fork", "true"], capture_output=True)
    return probe.returncode == 0


def _readable_roots():
    """What the sandboxed Python needs besides system folders: its prefixes, its import path, and
    our package, but never a folder that holds the course (it would show source/ and the gradebook)."""
    package = Path(autograder.__file__).resolve().parent
    roots = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent.parent}
    # `python -m nbgrader` runs in the (scratch) course and puts that folder first on sys.path:
    # an import path that is, or holds, a course is not the sandbox's to read.
    here = Path.cwd().resolve()
    roots |= {path for path in (Path(entry).resolve() for entry in sys.path if entry and Path(entry).is_dir())
              if path != here and not (path / "nbgrader_config.py").exists() and not (path / "gradebook.db").exists()}
    return sorted({str(r) for r in roots if r not in package.parents} | {str(package)})


@contextlib.contextmanager
def cgroups(limits):
    """Kernel-enforced process and memory limits for a sandbox, where this process may make cgroups
    (as root on most machines; v1 or v2). Yields a function that prefixes a command with joining them.

    The namespace init watches processes and memory too, but polling cannot always outrun a fork
    bomb, and as root the process rlimit does not apply; a cgroup does both, instantly."""
    wanted = {"pids": {"pids.max": limits.processes},
              "memory": {"memory.limit_in_bytes" if _CGROUP_V1 else "memory.max": limits.memory_mb << 20}}
    groups = []
    for controller, base in cgroup_bases(wanted).items():
        settings = wanted[controller]
        _remove_stale_groups(base)
        group = base / f"autograder-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            group.mkdir()
            for name, value in settings.items():
                (group / name).write_text(str(value))
            groups.append(group)
        except OSError:
            with contextlib.suppress(OSError):
                group.rmdir()
    procs = [str(group / "cgroup.procs") for group in dict.fromkeys(groups)]

    def joining(argv):
        # The shell writes its own pid into each group, then becomes the command (threads make
        # Popen's preexec_fn unsafe, hence a shell).
        return ["sh", "-c", 'for f in "$@"; do [ "$f" = -- ] && break; echo $$ > "$f"; done; '
                'while [ "$1" != -- ]; do shift; done; shift; exec "$@"', "sh", *procs, "--", *argv]

    try:
        yield joining
    finally:
        for group in dict.fromkeys(groups):
            for _ in range(50):  # the group can be removed once its last process is gone
                with contextlib.suppress(OSError):
                    for pid in (group / "cgroup.procs").read_text().split():
                        os.kill(int(pid), signal.SIGKILL)
                    group.rmdir()
                    break
                time.sleep(0.1)


_CGROUP_V1 = os.path.isdir("/sys/fs/cgroup/pids")


def cgroup_bases(controllers):
    """Where cgroups() makes each controller's group, for those this process may make groups in.

    cgroup v1: inside this process's own group where it can, so that limits set on the grader (a
    container's, a batch job's) still hold for its notebooks; else at the hierarchy's root.
    cgroup v2 allows controllers only below groups holding no process of their own: the root."""
    own = _own_cgroups()
    bases = {}
    for controller in controllers:
        if _CGROUP_V1:
            hierarchy = Path("/sys/fs/cgroup", controller)
            candidates = [hierarchy / own.get(controller, ""), hierarchy]
        else:
            candidates = [Path("/sys/fs/cgroup")] if controller in _v2_controllers() else []
        writable = [base for base in candidates if os.access(base, os.W_OK)]
        if writable:
            bases[controller] = writable[0]
    return bases


def parse_cgroups(text):
    """A /proc/<pid>/cgroup's groups: {controller: path} for v1, {"": path} for v2."""
    paths = {}
    for line in filter(None, text.splitlines()):
        _, controllers, path = line.split(":", 2)
        paths.update(dict.fromkeys(controllers.split(","), path.lstrip("/")))
    return paths


def _own_cgroups():
    with contextlib.suppress(OSError, ValueError):
        return parse_cgroups(Path("/proc/self/cgroup").read_text())
    return {}


def _remove_stale_groups(base):
    """Remove the groups of graders that were killed (SIGKILL skips cgroups()' clean-up). The kernel
    removes only empty groups, so a group still in use stays."""
    for group in base.glob("autograder-*"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if not Path("/proc", str(int(group.name.split("-")[1]))).exists():  # its maker is gone
                group.rmdir()


def _v2_controllers():
    with contextlib.suppress(OSError):
        return Path("/sys/fs/cgroup/cgroup.subtree_control").read_text().split()
    return []


def gpu_devices():
    """The GPU device files of this machine (/dev/nvidia0, /dev/nvidiactl, ...), which a sandbox sees."""
    return [name for name in os.listdir("/dev") if name.startswith(GPU_DEVICE_PREFIXES)]


def die_with_parent(argv):
    """`argv`, killed (SIGKILL) when the process that starts it dies: a grader that is killed
    leaves no notebook running. The sandbox's init dies with `unshare` (--kill-child), and with the
    init the whole PID namespace."""
    if _setpriv_has_pdeathsig():
        return ["setpriv", "--pdeathsig", "KILL", "--", *argv]
    return argv  # an old util-linux: the grader's deadline still stops the notebook


@functools.cache
def _setpriv_has_pdeathsig():
    return "--pdeathsig" in subprocess.run(["setpriv", "--help"], capture_output=True, text=True).stdout


def sandboxed(command, workdir, limits):
    """The argv that runs `command` in the sandbox, with `workdir` as its writable WORK folder."""
    init = [sys.executable, "-m", "autograder.grade.sandbox", "--init", "--workdir", str(workdir),
            "--memory-mb", str(limits.memory_mb), "--processes", str(limits.processes),
            "--file-mb", str(limits.file_mb)]
    init += ["--gpu"] if limits.gpu else []
    for root in _readable_roots():
        init += ["--readable", root]
    return die_with_parent(["unshare", "--user", "--map-root-user", "--net", "--mount", "--pid", "--fork",
                            "--kill-child", *init, "--", *command])


# ------------------------------------------------------------------------------------------------
# Inside the namespaces.

def _mount(*args):
    subprocess.run(["mount", *args], check=True)


def _bind(source, target, writable=False):
    target.mkdir(parents=True, exist_ok=True) if Path(source).is_dir() else target.touch()
    _mount("--rbind" if Path(source).is_dir() else "--bind", str(source), str(target))
    if not writable:
        _mount("-o", "remount,bind,ro", str(target))


def _build_root(root, workdir, readable):
    """A tmpfs root holding read-only system folders, the work folder, and nothing else."""
    _mount("--make-rprivate", "/")
    root.mkdir(exist_ok=True)
    _mount("-t", "tmpfs", "-o", "mode=755", "sandbox-root", str(root))
    for folder in SYSTEM_DIRS:
        if os.path.islink(folder):
            os.symlink(os.readlink(folder), root / folder.lstrip("/"))
        elif os.path.isdir(folder):
            _bind(folder, root / folder.lstrip("/"))
    (root / "tmp").mkdir()
    _mount("-t", "tmpfs", "-o", "mode=1777,size=1g", "sandbox-tmp", str(root / "tmp"))
    for path in readable:  # after /tmp, since a Python may live there
        if not any(path == d or path.startswith(d + "/") for d in SYSTEM_DIRS):
            _bind(path, root / path.lstrip("/"))
    (root / "dev").mkdir()
    _mount("-t", "tmpfs", "-o", "mode=755", "sandbox-dev", str(root / "dev"))
    for name in DEVICES + gpu_devices():
        if not os.path.isdir(f"/dev/{name}"):
            _bind(f"/dev/{name}", root / "dev" / name, writable=True)
    (root / "dev" / "shm").mkdir()
    _mount("-t", "tmpfs", "-o", "mode=1777,size=1g", "sandbox-shm", str(root / "dev" / "shm"))
    _mount("-o", "remount,bind,ro", str(root / "dev"))  # its devices stay writable, it takes no new files
    # The work folder is a size-capped tmpfs holding a copy of the submission (like /tmp): a notebook
    # cannot fill the host's disk. The GPU's turn socket stays the host's, so that it reaches the grader.
    work = root / WORK.lstrip("/")
    work.mkdir()
    _mount("-t", "tmpfs", "-o", "mode=755,size=1g", "sandbox-work", str(work))
    for entry in workdir.iterdir():
        if entry.name == GPU_TURN:
            _bind(entry, work / entry.name, writable=True)
        elif entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, work / entry.name, symlinks=True)
        else:
            shutil.copy2(entry, work / entry.name, follow_symlinks=False)
    (root / "proc").mkdir()
    # Nothing else is writable: files written at the root would escape the size limits of /tmp and
    # the work folder (and, without cgroups, the memory limit: a tmpfs lives in memory). So is /dev.
    _mount("-o", "remount,bind,ro", str(root))
    os.chroot(root)
    os.chdir(WORK)
    _mount("-t", "proc", "proc", "/proc")


def _usage(memory):
    """Processes in this PID namespace and (when `memory`) the memory they use in MB, counted as PSS:
    pages that forked processes share count once, not once per process (RSS would)."""
    count, pss_kb = 0, 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or entry == "1":
            continue
        count += 1
        if not memory:
            continue
        try:
            with open(f"/proc/{entry}/smaps_rollup") as rollup:
                pss_kb += next(int(line.split()[1]) for line in rollup if line.startswith("Pss:"))
        except (OSError, IndexError, ValueError, StopIteration):
            pass
    return count, pss_kb // 1024


def _forks_refused():
    """Whether this sandbox's pids cgroup (see cgroups()) has refused a fork: its limit was reached."""
    own = _own_cgroups()
    for hierarchy in [h for h in ("pids", "") if h in own]:  # v1, then v2
        events = Path("/sys/fs/cgroup", hierarchy, own[hierarchy], "pids.events")
        with contextlib.suppress(OSError, ValueError, IndexError):
            if events.is_file():
                return int(events.read_text().split()[1]) > 0  # "max <refused forks>"
    return False


def _limit_payload(args):
    resource.setrlimit(resource.RLIMIT_NPROC, (args.processes, args.processes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (args.file_mb << 20, args.file_mb << 20))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if not args.gpu:
        memory = args.memory_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))


def init(args, command):
    _build_root(Path(args.workdir).parent / "root", Path(args.workdir), args.readable)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/tmp", "LANG": "C.UTF-8",
           "MPLCONFIGDIR": "/tmp/matplotlib", "PYTHONDONTWRITEBYTECODE": "1"}
    env.update({k: v for k, v in os.environ.items()
                if k in ("PYTHONPATH", "LD_LIBRARY_PATH", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TORCHINDUCTOR_COMPILE_THREADS")
                or (k.startswith(("CUDA_", "TRITON_", "COURSE_", "NVIDIA_"))
                    and k not in HOST_FOLDERS and not k.endswith("_DIR"))})
    payload = os.fork()
    if payload == 0:
        _limit_payload(args)
        # No capabilities, ever: the payload cannot undo the mounts that hide the course.
        os.execvpe("setpriv", ["setpriv", "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all",
                               "--", *command], env)
    status, polls = None, 0
    while status is None:
        pid, code = os.waitpid(-1, os.WNOHANG)
        if pid == payload:
            status = os.waitstatus_to_exitcode(code)
            break
        polls += 1
        count, rss_mb = _usage(memory=polls % 10 == 0)
        too_many = count > args.processes or _forks_refused()
        if too_many or rss_mb > args.memory_mb:
            with contextlib.suppress(ProcessLookupError):
                os.kill(-1, signal.SIGKILL)
            return PROCESS_LIMIT if too_many else MEMORY_LIMIT
        time.sleep(0.01)
    with contextlib.suppress(ProcessLookupError):
        os.kill(-1, signal.SIGKILL)  # leftovers (a background process the notebook started)
    return status if status >= 0 else 128 - status


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--")
    parser = argparse.ArgumentParser()
    parser.add_argument("--init", action="store_true", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--readable", action="append", default=[])
    parser.add_argument("--memory-mb", type=int, required=True)
    parser.add_argument("--processes", type=int, required=True)
    parser.add_argument("--file-mb", type=int, required=True)
    parser.add_argument("--gpu", action="store_true")
    return init(parser.parse_args(argv[:split]), argv[split + 1:])


if __name__ == "__main__":
    sys.exit(main())

"""SLURM for real: the grading array and its merge job, submitted as README.md tells instructors, on
a one-node cluster made for this test (munged, slurmctld and slurmd on localhost, from Debian's
slurmctld, slurmd, slurm-client and munge packages; all in a temporary folder, all stopped at the end).

A small sample class of 02_vector_add (a correct submission, a flagged torch fallback) is graded by
a two-task array, then merged by a job that waits for it (afterok). Checked: every task and the
merge completed; each task's log is where the script's `--output` says; each task graded its own
share, with one worker per core it was given; the grades are the ones the sample class must get
(the expectations tests/test_autograde.py holds a one-machine run to); the merge filled grades.csv
and the gradebook; a re-submitted array resumes without grading anyone again; a failed task says
why in its log and cancels the merge instead of leaving it pending. Where SLURM cannot run here,
the tests say why and are skipped; in CI they fail instead (.ci/run installs the packages).
"""
import csv
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from autograder.course import Course
from autograder.demo import class_course
from autograder.grade import merge as merging
from autograder.samples import load_samples
from conftest import ROOT, patient, unavailable

LESSON = "02_vector_add"
# A correct submission and a flagged torch fallback, one per task: the tasks run side by side on two
# cores, so the class takes about as long as its slowest notebook.
CLASS = ["ada", "dee"]
TASKS = 2
GRADE_SCRIPT, MERGE_SCRIPT = ROOT / "slurm" / "grade.sbatch", ROOT / "slurm" / "merge.sbatch"
PROGRAMS = ["munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scontrol", "scancel"]
JOB_WAIT_S = 600  # the class grades in about a minute on 2 shared cores


def _unavailable():
    """Why this machine cannot run a SLURM cluster for the test, or None."""
    missing = [program for program in PROGRAMS if not shutil.which(program)]
    if missing:
        return (f"{', '.join(missing)} not on PATH: install Debian's slurmctld, slurmd, slurm-client and munge "
                "(as .ci/run does; the daemons are in /usr/sbin)")
    if os.geteuid() != 0:
        return "the test cluster's daemons run as root (SlurmUser=root); run the test as root"
    return None


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _gpu_devices():
    """/dev/nvidia0, /dev/nvidia1, ...: the GPUs the node offers as its `gpu` gres."""
    return [f"/dev/{name}" for name in os.listdir("/dev") if re.fullmatch(r"nvidia\d+", name)]


class ClusterError(Exception):
    """The daemons did not start: the message holds their logs."""


class Cluster:
    """One node on localhost: munged, slurmctld and slurmd run in the foreground as children of this
    process, with their state, sockets, logs and configuration in `folder`, so stop() ends them all.
    Settings that need no cgroups or privileges beyond root's: the test runs in containers too."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self.env = dict(os.environ, SLURM_CONF=str(self.folder / "slurm.conf"))
        self.daemons = {}

    def start(self):
        self._start_munge()
        self._write_config()
        self._start("slurmctld", "-D", "-c")  # -c: a new cluster, no saved state to read
        self._start("slurmd", "-D")
        self._wait_for_idle_node()

    def _start_munge(self):
        key = self.folder / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        self.munge_socket = self.folder / "munge.socket"
        self.folder.chmod(0o755)  # munged wants its socket's folder open to every user
        self._start("munged", "--foreground", f"--key-file={key}", f"--socket={self.munge_socket}",
                    f"--pid-file={self.folder / 'munged.pid'}", f"--seed-file={self.folder / 'munged.seed'}")
        self._wait(lambda: self.munge_socket.exists(), 10, "munged made no socket")

    def _write_config(self):
        (self.folder / "state").mkdir()
        (self.folder / "spool").mkdir()
        # slurmd -C: this node as SLURM sees it (NodeName=<host> CPUs=... RealMemory=...).
        node = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
        gpus, gres = _gpu_devices(), []
        if gpus:
            node += f" Gres=gpu:{len(gpus)}"
            gres = ["GresTypes=gpu"]
            (self.folder / "gres.conf").write_text("".join(f"Name=gpu File={gpu}\n" for gpu in gpus))
        host = node.split()[0].removeprefix("NodeName=")
        f = self.folder
        (f / "slurm.conf").write_text("\n".join([
            "ClusterName=autograder-test",
            f"SlurmctldHost={host}(127.0.0.1)",
            f"SlurmctldPort={_free_port()}",
            f"SlurmdPort={_free_port()}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.munge_socket}",
            "SlurmUser=root",
            f"StateSaveLocation={f / 'state'}",
            f"SlurmdSpoolDir={f / 'spool'}",
            f"SlurmctldPidFile={f / 'slurmctld.pid'}",
            f"SlurmdPidFile={f / 'slurmd.pid'}",
            f"SlurmctldLogFile={f / 'slurmctld.log'}",
            f"SlurmdLogFile={f / 'slurmd.log'}",
            # No cgroups: processes are tracked by their parents, tasks are not bound to cores.
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "MpiDefault=none",
            # Cores are what tasks take, so the array's tasks run side by side.
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "ReturnToService=2",
            "MinJobAge=3600",  # finished jobs stay in `scontrol show job` until the test has read them
            *gres,
            f"{node} NodeAddr=127.0.0.1 State=UNKNOWN",
            "PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
        ]) + "\n")

    def _start(self, program, *args):
        log = (self.folder / f"{program}.out").open("w")
        self.daemons[program] = subprocess.Popen([program, *args], env=self.env, stdout=log,
                                                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()

    def _wait(self, done, seconds, failure):
        deadline = time.monotonic() + patient(seconds)
        while not done():
            dead = [name for name, process in self.daemons.items() if process.poll() is not None]
            if dead or time.monotonic() > deadline:
                raise ClusterError(f"{failure}; {', '.join(dead) or 'no daemon'} exited.\n{self.logs()}")
            time.sleep(0.5)

    def _wait_for_idle_node(self):
        def idle():
            states = self.run("sinfo", "--noheader", "--format=%t", check=False).stdout.split()
            return states == ["idle"]
        self._wait(idle, 60, "the node never became idle in sinfo")

    def run(self, *command, cwd=None, check=True):
        result = subprocess.run(command, env=self.env, cwd=cwd, capture_output=True, text=True)
        if check and result.returncode:
            raise AssertionError(f"{' '.join(command)} failed: {result.stderr}\n{self.logs()}")
        return result

    def sbatch(self, *args, cwd):
        """Submit as an instructor does, from the course directory; the job id."""
        return self.run("sbatch", "--parsable", *args, cwd=cwd).stdout.strip().split(";")[0]

    def wait_for(self, *jobs, seconds=JOB_WAIT_S):
        """Wait until `jobs` have left the queue; {job or job_task: state} as scontrol tells it."""
        deadline = time.monotonic() + patient(seconds)
        while queued := self.run("squeue", "--noheader", f"--jobs={','.join(jobs)}", check=False).stdout.strip():
            assert time.monotonic() < deadline, f"still queued after {seconds} s:\n{queued}\n{self.logs()}"
            time.sleep(1)
        states = {}
        for job in jobs:
            for record in self.run("scontrol", "--oneliner", "show", "job", job).stdout.splitlines():
                fields = dict(field.split("=", 1) for field in record.split() if "=" in field)
                task = fields.get("ArrayTaskId")
                states[f"{job}_{task}" if task else job] = fields["JobState"]
        return states

    def logs(self):
        tails = []
        for name in ["munged.out", "slurmctld.log", "slurmd.log"]:
            path = self.folder / name
            if path.exists():
                tails.append(f"--- {name}:\n" + "\n".join(path.read_text().splitlines()[-15:]))
        return "\n".join(tails)

    def processes(self):
        """Every process this cluster started (daemons, job steps, jobs, their notebooks): all of
        them carry its SLURM_CONF."""
        marker = f"SLURM_CONF={self.env['SLURM_CONF']}".encode()
        found = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and marker in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:  # ended meanwhile
                pass
        return found

    def stop(self):
        """Cancel what is left, then end the daemons; none outlives the test."""
        if "slurmctld" in self.daemons and self.daemons["slurmctld"].poll() is None:
            self.run("scancel", "--user=root", check=False)
            deadline = time.monotonic() + 30
            while (self.run("squeue", "--noheader", check=False).stdout.strip()
                   and time.monotonic() < deadline):
                time.sleep(0.5)
        for process in reversed(list(self.daemons.values())):
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for pid in self.processes():  # a job step that outlived its daemons
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def cluster():
    reason = _unavailable()
    with tempfile.TemporaryDirectory(prefix="slurm-") as folder:  # short: a socket path has 107 bytes
        test_cluster = Cluster(folder)
        try:
            if not reason:
                try:
                    test_cluster.start()
                except ClusterError as error:
                    reason = f"the SLURM daemons did not start: {error}"
            if reason:
                unavailable(reason, "the SLURM tests", ".ci/run installs SLURM and munge")
            yield test_cluster
        finally:
            test_cluster.stop()


def _resources():
    """What the README tells instructors to add where nodes are smaller than the script asks for,
    or have no GPU: here one core per task, so that the two tasks run at once on two cores."""
    return ["--cpus-per-task=1", "--mem=2G"] + ([] if _gpu_devices() else ["--gres=none"])


def _log_path(script, course_dir, job, task=None):
    """Where `script`'s `#SBATCH --output` puts the log of `job` (array task `task`)."""
    text = script.read_text()
    pattern = re.search(r"^#SBATCH --output=(\S+)", text, re.M).group(1)
    name = re.search(r"^#SBATCH --job-name=(\S+)", text, re.M).group(1)
    path = (pattern.replace("%x", name).replace("%A", job).replace("%a", str(task))
            .replace("%j", job))
    return course_dir / path


def _submit_array(cluster, course_dir):
    """The README's first command: the grading array. Its job id."""
    return cluster.sbatch(f"--array=0-{TASKS - 1}", *_resources(), GRADE_SCRIPT, LESSON, cwd=course_dir)


def _submit_class(cluster, course_dir):
    """The README's two commands: the array, then the merge after it. Their job ids."""
    array = _submit_array(cluster, course_dir)
    return array, cluster.sbatch(f"--dependency=afterok:{array}", MERGE_SCRIPT, LESSON, cwd=course_dir)


@pytest.fixture(scope="module")
def graded(cluster, course):
    """The sample class graded and merged on the cluster, then its array submitted again."""
    samples = load_samples(course, LESSON)
    samples = {student: samples[student] for student in CLASS}
    with tempfile.TemporaryDirectory(prefix="slurm-class-") as folder:
        course_dir = class_course(course, LESSON, samples, Path(folder) / "course").root
        # The scripts run the course directory's .venv (as `make` makes it): here, this test's.
        (course_dir / ".venv").symlink_to(sys.prefix)
        array, merge = _submit_class(cluster, course_dir)
        states = cluster.wait_for(array, merge)
        results = {p.name: p.stat().st_mtime_ns for p in merging.results_dir(course_dir / "reports", LESSON).glob("*")}
        again = _submit_array(cluster, course_dir)
        yield dict(course_dir=course_dir, samples=samples, array=array, merge=merge, states=states,
                   results=results, again=again, again_states=cluster.wait_for(again))


def test_every_task_and_the_merge_complete(graded):
    tasks = {f"{graded['array']}_{task}" for task in range(TASKS)}
    assert graded["states"] == {**dict.fromkeys(tasks, "COMPLETED"), graded["merge"]: "COMPLETED"}


def test_each_task_grades_its_share_and_logs_where_the_script_says(graded):
    course_dir, array = graded["course_dir"], graded["array"]
    graded_by = {}
    for task in range(TASKS):
        log = _log_path(GRADE_SCRIPT, course_dir, array, task)
        assert log.is_file(), f"no log at {log}: {sorted(p.name for p in course_dir.iterdir())}"
        text = log.read_text()
        assert f"shard {task}/{TASKS} done" in text, text
        # One worker per core the task was given (--cpus-per-task=1), not one per core of the node;
        # on the GPU its gres gave it, where the node has GPUs.
        assert "with 1 worker(s)" in text, text
        assert ("on GPU(s)" in text) == bool(_gpu_devices()), text
        for student in re.findall(r"^graded \d+/\d+ \((\w+):", text, re.M):
            graded_by.setdefault(student, []).append(task)
    assert graded_by == {student: [i % TASKS] for i, student in enumerate(sorted(CLASS))}
    merge_log = _log_path(MERGE_SCRIPT, course_dir, graded["merge"])
    assert all(student in merge_log.read_text() for student in CLASS), merge_log.read_text()


def test_the_cluster_gives_each_student_the_grade_one_machine_gives(graded):
    """The sample class's expectations are the ones tests/test_autograde.py checks a one-machine
    run against: the tests each submission must fail (all others earn full points) and its flags."""
    course_dir, samples = graded["course_dir"], graded["samples"]
    grades = {g.student: g for g in merging.load(course_dir / "reports", LESSON)}
    assert sorted(grades) == sorted(CLASS)
    rows = {row["student"]: row for row in csv.DictReader((course_dir / "reports" / LESSON / "grades.csv").open())}
    for student, sample in samples.items():
        grade = grades[student]
        failed = sorted(t.test for t in grade.tests if t.score < t.max_score and not t.manual)
        assert failed == sorted(sample["fails"]), grade.reason
        expected_flags = sample.get("flags", [])
        assert all(any(text in flag for flag in grade.flags) for text in expected_flags), grade.flags
        assert expected_flags or not grade.flags, f"unexpected flags: {grade.flags}"
        assert float(rows[student]["score"]) == grade.score, rows[student]


def test_the_merge_fills_the_gradebook(graded):
    from nbgrader.api import Gradebook
    course = Course(graded["course_dir"])
    grades = {g.student: g for g in merging.load(course.root / "reports", LESSON)}
    with Gradebook(course.db_url) as gradebook:
        scores = {s.student.id: s.score for s in gradebook.find_assignment(LESSON).submissions}
    assert scores == {student: grade.score for student, grade in grades.items()}


def test_a_resubmitted_array_resumes(graded):
    course_dir, again = graded["course_dir"], graded["again"]
    assert set(graded["again_states"].values()) == {"COMPLETED"}, graded["again_states"]
    for task in range(TASKS):
        text = _log_path(GRADE_SCRIPT, course_dir, again, task).read_text()
        assert "already graded" in text and "grading " not in text, text
    results = {p.name: p.stat().st_mtime_ns for p in merging.results_dir(course_dir / "reports", LESSON).glob("*")}
    assert results == graded["results"], "a resubmitted array graded students again"


def test_a_failed_task_says_why_and_cancels_the_merge(cluster, tmp_path):
    """A task that fails (here: a folder with no .venv) must say what to do in its log, and must
    not leave the merge waiting for ever: the merge is cancelled (README.md says what next)."""
    array, merge = _submit_class(cluster, tmp_path)
    states = cluster.wait_for(array, merge, seconds=120)
    assert states == {f"{array}_0": "FAILED", f"{array}_1": "FAILED", merge: "CANCELLED"}
    assert "no .venv/bin/python" in _log_path(GRADE_SCRIPT, tmp_path, array, 0).read_text()

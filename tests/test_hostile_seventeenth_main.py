"""Hostile input, seventeenth pass, what the lead session tried beside the three sides' passes: the cases it found
bad, each with the rule it now obeys.

- a writer stopped past its lease (Ctrl-Z, SIGSTOP, a Slurm suspend) on a file system that keeps locks to each
  machine, whose run another machine's writer took over meanwhile: once continued, it went on appending beside the
  new writer, rewrote run.json and emptied the new writer's note in run.lock. Now a writer checks, before each write,
  that run.lock still holds its own note, and once another writer's is there it writes nothing more, stops renewing
  its lease, leaves the lock and the reserve to that writer, and says so in one line (`archive.dirlock.still_held`,
  `archive.writer.RunWriter._held`); a writer whose run.lock was deleted and made anew by another machine's writer
  is told that
- the embedded model in a container with a CPU quota (`docker --cpus=2`, a Kubernetes CPU limit, a systemd slice's
  CPUQuota): llama.cpp ran a thread per CPU of the affinity, which a quota does not narrow, and its threads, which spin
  while they wait for each other, answered 4-5 times slower than one thread under half a CPU's quota here (96 tokens:
  2.5 s with 1 thread, 9-13 s with 2). Now its threads are the fewer of the affinity's CPUs and the quota's, read from
  the process's cgroup and every cgroup above it, v1 and v2 (`core.cpus.usable_cores`)
- the embedded model in a Slurm job on a cluster that does not pin jobs to their CPUs (TaskPlugin=task/none, as the
  cluster here): a job given one CPU of the node ran llama.cpp with a thread per CPU of the node, on CPUs other jobs
  were given. Now it keeps to the job's `--cpus-per-task`, else to the job's CPUs on the node (`core.cpus.slurm_cpus`)
- the README's install on a machine without a C or C++ compiler (a slim container image): pip's build of llama.cpp
  ended in pages of CMake's output. Now the step that prints the CMAKE_ARGS, which runs first, says in one line that
  the install will fail and what to install (`execute.runners.llama_build.compilers_missing`)
- a disk out of inodes, with room left (a file system of many small files; tmpfs's nr_inodes here), at each file a
  run makes in turn: every failure said `disk full` of a disk `df -h` showed nearly empty; Hydra's log file it could
  not make was a traceback (logging's `Unable to configure handler 'file'`, exit 1); the lock it could not make was
  exit 2 as a directory taken; and a record file it could not open left the run `running`, the reserve's inode taken
  by summary.json before run.json. Now the line says `no free inodes (... df -i)` (`core.errors.os_problem`), an
  OSError under another exception is the last resort's too (`__main__._os_error_of`), the lock's failed write is the
  disk's (exit 4), and any failed write leaves only run.json to write (`archive.writer.RunWriter._failing_writes`):
  the run is `failed`, and resumed once inodes are freed
- a run stopped whole (a Slurm job suspended, `scontrol suspend`; SIGSTOP to its processes) while a scorer was at a
  call: once continued, the call was `timed out after 5 s` (scorer_timeout_s=5), a sample's score lost, though the
  scorer had run 0.5 s of its 2. A scorer call's time limit now runs on the run's running time, which leaves out the
  time the process was stopped (`core.runclock.RUN_CLOCK`, a heartbeat's late beats)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from benchrun.archive.dirlock import DirLock, TakenOver
from benchrun.core.cpus import cpu_quota, slurm_cpus
from benchrun.core.errors import EXIT
from benchrun.execute.proctree import descendants
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import Lab, wait_for
from tests.helpers.commands import run_dir_of

TAKER = {"pid": 4242, "host": "gpu9", "since": "2026-12-04T08:00:00+00:00", "command": "benchrun-audit resume"}
"""The note of a writer on another machine that took a run over (its lock unseen here)."""


def _taken_over(lock) -> bytes:
    """Write TAKER's note into the lock file as its writer does on taking the run (over the old note, then cut)."""
    note = json.dumps(TAKER).encode()
    with open(lock, "r+b") as handle:
        handle.write(note)
        handle.truncate(len(note))
    return note


def _lease_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "run.lock lease"]


def test_a_holder_whose_run_was_taken_over_stops_renewing_its_lease_and_leaves_the_note(tmp_path):
    lock = DirLock(tmp_path).acquire()
    note = _taken_over(lock.path)
    wait_for(lambda: _lease_threads() == [], timeout=10)
    os.utime(lock.path, ns=(0, 0))
    lock.release(ended=True)
    assert (lock.path.read_bytes(), lock.path.stat().st_mtime_ns) == (note, 0)


@pytest.mark.slow
def test_a_writer_continued_after_its_run_was_taken_over_writes_nothing_more(tmp_path):
    with Lab(tmp_path, n=4) as lab:
        with lab.held_after(2, *lab.args()) as (proc, run_dir):
            proc.send_signal(signal.SIGSTOP)
            before = {name: (run_dir / name).read_bytes() for name in ("responses.jsonl", "run.json", ".reserve")}
            note = _taken_over(run_dir / "run.lock")
            proc.send_signal(signal.SIGCONT)
        _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (EXIT["archive"], (
        f"benchrun: error: in {str(run_dir)!r}: another writer (pid 4242 on host gpu9 since 2026-12-04T08:00:00+00:00) "
        "took this run over while this process was stopped past its lease on run.lock (Ctrl-Z, SIGSTOP, a Slurm "
        "suspend, on a file system that keeps locks to each machine); this process wrote nothing more to it: the run "
        "is that writer's\n"))
    assert {name: (run_dir / name).read_bytes() for name in before} == before
    assert (run_dir / "run.lock").read_bytes() == note


@pytest.mark.slow
def test_a_writer_continued_after_its_run_was_taken_over_and_ended_elsewhere_writes_nothing_more(tmp_path):
    with Lab(tmp_path, n=4) as lab:
        with lab.held_after(2, *lab.args()) as (proc, run_dir):
            proc.send_signal(signal.SIGSTOP)
            (run_dir / "run.lock").write_bytes(b"")  # the writer that took it over has ended the run since
            ended = (run_dir / "run.json").read_text().replace('"status": "running"', '"status": "interrupted"')
            (run_dir / "run.json").write_text(ended)
            records = (run_dir / "responses.jsonl").read_bytes()
            proc.send_signal(signal.SIGCONT)
        _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (EXIT["archive"], (
        f"benchrun: error: in {str(run_dir)!r}: another writer (since ended) took this run over while this process "
        "was stopped past its lease on run.lock (Ctrl-Z, SIGSTOP, a Slurm suspend, on a file system that keeps locks "
        "to each machine); this process wrote nothing more to it: the run is that writer's\n"))
    assert ((run_dir / "run.json").read_text(), (run_dir / "responses.jsonl").read_bytes()) == (ended, records)
    assert (run_dir / "run.lock").read_bytes() == b""


@pytest.mark.slow
def test_a_run_whose_lock_note_was_emptied_by_hand_goes_on_and_ends_intact(tmp_path):
    with Lab(tmp_path, n=4) as lab:
        with lab.held_after(2, *lab.args()) as (proc, run_dir):
            (run_dir / "run.lock").write_bytes(b"")
        _, err = proc.communicate(timeout=60)
        verified = lab.call("verify", str(run_dir), module="benchrun.audit")
    assert (proc.returncode, verified.returncode, verified.stdout.splitlines()[-1]) == (0, 0, "intact"), err


def test_a_holder_whose_lock_was_deleted_and_made_anew_by_another_writer_says_so(tmp_path):
    lock = DirLock(tmp_path).acquire()
    lock.path.unlink()
    lock.path.write_text(json.dumps(TAKER))
    with pytest.raises(TakenOver) as refused:
        lock.still_held()
    lock.release(ended=True)
    assert (str(refused.value), json.loads(lock.path.read_text())) == (
        f"in {str(tmp_path)!r}: another writer (pid 4242 on host gpu9 since 2026-12-04T08:00:00+00:00) took this run "
        "over after this process's run.lock was deleted (a cleanup of lock files?) and made anew; this process wrote "
        "nothing more to it: the run is that writer's", TAKER)


def _cgroups(tmp_path: Path, memberships: str, mounts: list[tuple[str, str, str, str]],
             quotas: dict[str, dict[str, str]]) -> Path:
    """A /proc/self of `memberships` (its cgroup file) and `mounts` (mount root, mount point under tmp_path, file
    system type, super options), with cgroup folders holding `quotas` (folder under tmp_path: file name: content)."""
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cgroup").write_text(memberships)
    (proc / "mountinfo").write_text("".join(
        f"{n} 1 0:{n} {root} {str(tmp_path / point).replace(' ', chr(92) + '040')} rw,relatime - {kind} {kind} "
        f"{options}\n" for n, (root, point, kind, options) in enumerate(mounts, start=30)))
    for folder, files in quotas.items():
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        for name, content in files.items():
            (tmp_path / folder / name).write_text(content)
    return proc


V2 = ("0::/", [("/", "sys/fs/cgroup", "cgroup2", "rw")])
NESTED_V2 = ("0::/slice/job.scope\n", [("/", "sys/fs/cgroup", "cgroup2", "rw")])
V1 = ("4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/\n",
      [("/docker/abc", "sys/fs/cgroup/cpu,cpuacct", "cgroup", "rw,cpu,cpuacct"),
       ("/", "sys/fs/cgroup/unified", "cgroup2", "rw")])


@pytest.mark.parametrize(("cgroups", "quotas", "cpus"), [
    (V2, {"sys/fs/cgroup": {"cpu.max": "200000 100000\n"}}, 2),  # docker --cpus=2, its own cgroup namespace
    (V2, {"sys/fs/cgroup": {"cpu.max": "50000 100000\n"}}, 1),  # half a CPU is one thread's
    (V2, {"sys/fs/cgroup": {"cpu.max": "150001 50000\n"}}, 4),
    (V2, {"sys/fs/cgroup": {"cpu.max": "max 100000\n"}}, None),
    (V2, {}, None),
    (NESTED_V2, {"sys/fs/cgroup/slice": {"cpu.max": "300000 100000"},
                 "sys/fs/cgroup/slice/job.scope": {"cpu.max": "max 100000"}}, 3),  # the slice above limits
    (NESTED_V2, {"sys/fs/cgroup/slice": {"cpu.max": "300000 100000"},
                 "sys/fs/cgroup/slice/job.scope": {"cpu.max": "100000 100000"}}, 1),
    (V1, {"sys/fs/cgroup/cpu,cpuacct": {"cpu.cfs_quota_us": "400000\n", "cpu.cfs_period_us": "100000\n"}}, 4),
    (V1, {"sys/fs/cgroup/cpu,cpuacct": {"cpu.cfs_quota_us": "-1\n", "cpu.cfs_period_us": "100000\n"}}, None),
    (("1:cpu:/a b\n", [("/", "sys/fs/cgroup/cpu", "cgroup", "rw,cpu")]),
     {"sys/fs/cgroup/cpu/a b": {"cpu.cfs_quota_us": "100000", "cpu.cfs_period_us": "100000"}}, 1),
    (("1:cpu:/x\n", [("/", "sys/fs/cgroup/memory", "cgroup", "rw,memory")]), {}, None),
    (("garbage", []), {}, None),
    (("1:cpu:/docker/abcdef\n", [("/docker/abc", "sys/fs/cgroup/cpu", "cgroup", "rw,cpu")]),  # another's root
     {"sys/fs/cgroup/cpu": {"cpu.cfs_quota_us": "100000", "cpu.cfs_period_us": "100000"},
      "sys/fs/cgroup/cpu/def": {"cpu.cfs_quota_us": "300000", "cpu.cfs_period_us": "100000"}}, 1),
])
def test_the_cpus_a_cgroup_quota_gives_are_read_from_the_process_cgroup_and_those_above(tmp_path, cgroups, quotas,
                                                                                       cpus):
    assert cpu_quota(_cgroups(tmp_path, *cgroups, quotas)) == cpus


def _cpu_hierarchy() -> Path | None:
    """A cgroup folder this process may make a cgroup with a CPU quota in (as root), v1's or v2's; None if none."""
    for folder in (Path("/sys/fs/cgroup/cpu"), Path("/sys/fs/cgroup")):
        if (folder / "cpu.cfs_quota_us").exists() or "cpu" in _text(folder / "cgroup.subtree_control").split():
            return folder if os.access(folder, os.W_OK) else None
    return None


def _text(path: Path) -> str:
    return path.read_text() if path.is_file() else ""


@pytest.mark.skipif(_cpu_hierarchy() is None, reason="no cgroup with a CPU quota can be made here (not root)")
def test_the_embedded_runner_runs_as_many_threads_as_a_real_cgroup_quota_gives(tmp_path):
    group = _cpu_hierarchy() / f"benchrun-test-{os.getpid()}"
    group.mkdir()
    try:
        if (group / "cpu.max").exists():
            (group / "cpu.max").write_text("100000 100000")
        else:
            (group / "cpu.cfs_quota_us").write_text("100000")
        done = subprocess.run([sys.executable, "-m", "benchrun", "runner=local", "runner.options.num_predict=1",
                               "cache=false", f"outputs={tmp_path / 'out'}"], cwd=tmp_path, env=child_env(),
                              capture_output=True, text=True, timeout=300,
                              preexec_fn=lambda: (group / "cgroup.procs").write_text(str(os.getpid())))
    finally:
        group.rmdir()
    assert done.returncode == EXIT["ok"], done.stderr
    assert json.loads((run_dir_of(done.stdout) / "run.json").read_text())["identity"]["n_threads"] == 1


@pytest.mark.parametrize(("environ", "cpus"), [
    ({"SLURM_CPUS_PER_TASK": "2", "SLURM_CPUS_ON_NODE": "8"}, 2),
    ({"SLURM_CPUS_ON_NODE": "3"}, 3),
    ({"SLURM_CPUS_PER_TASK": "0", "SLURM_CPUS_ON_NODE": "4"}, 4),
    ({"SLURM_CPUS_PER_TASK": "\u0663", "SLURM_CPUS_ON_NODE": "x"}, None),  # an Arabic-Indic 3 is no count of Slurm's
    ({"SLURM_CPUS_ON_NODE": "-2"}, None),
    ({}, None),
])
def test_a_slurm_jobs_share_of_its_node_is_read_from_its_environment(environ, cpus):
    assert slurm_cpus(environ) == cpus


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("srun") is None, reason="no Slurm here: `.ci/slurm-up` starts a single-node cluster")
def test_the_embedded_runner_in_a_real_slurm_job_of_one_cpu_runs_one_thread(tmp_path):
    done = subprocess.run(["srun", "--ntasks=1", "--cpus-per-task=1", "--mem=1G", "--time=5", sys.executable, "-m",
                           "benchrun", "runner=local", "runner.options.num_predict=1", "cache=false",
                           f"outputs={tmp_path / 'out'}"], cwd=tmp_path, env=child_env(), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == EXIT["ok"], done.stderr
    assert json.loads((run_dir_of(done.stdout) / "run.json").read_text())["identity"]["n_threads"] == 1


@pytest.mark.parametrize(("extra", "said"), [
    ({}, "no C (cc, gcc, clang) and no C++ (c++, g++, clang++) compiler here"),
    ({"CC": "/bin/sh", "CXX": "/opt/none/g++ -O2"}, "no C++ (/opt/none/g++ -O2) compiler here"),
])
def test_the_install_step_says_in_one_line_when_no_compiler_can_build_llama_cpp(tmp_path, extra, said):
    done = subprocess.run([sys.executable, "-m", "benchrun.execute.runners.llama_build"], capture_output=True,
                          text=True, env={**child_env(), "PATH": str(tmp_path), **extra})
    assert (done.returncode, done.stdout.startswith("-DLLAVA_BUILD=OFF")) == (0, True)
    assert done.stderr == (f"benchrun: {said}, and llama-cpp-python builds llama.cpp from source: its install will "
                           "fail; install them first (Debian, Ubuntu: apt-get install build-essential; Fedora: dnf "
                           "install gcc-c++)\n")


def test_the_install_step_says_nothing_more_where_compilers_are_found():
    done = subprocess.run([sys.executable, "-m", "benchrun.execute.runners.llama_build"], capture_output=True,
                          text=True, env={**child_env(), "PATH": "/usr/bin:/bin"})
    assert (done.returncode, done.stderr) == (0, "")


NO_INODES = "no free inodes (the disk has room, but no more files can be made on it: df -i)"


@pytest.fixture
def few_inodes(tmp_path):
    """A tmpfs of 64 inodes and room to spare, mounted at tmp_path/disk (as root), unmounted after."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m,nr_inodes=64", "tmpfs", str(disk)],
                      capture_output=True).returncode != 0:
        pytest.skip("no tmpfs can be mounted here (not root)")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=True)


def _leave_inodes(disk: Path, free: int) -> Path:
    """Fill `disk` with empty files until `free` inodes are left; the folder that holds them."""
    filler = disk / "filler"
    filler.mkdir()
    for n in range(os.statvfs(disk).f_favail - free):
        (filler / str(n)).touch()
    return filler


@pytest.mark.slow
@pytest.mark.parametrize(("free", "at"), [(3, r": .*/[^/]+_bench_llama3\.2/benchrun\.log"),
                                          (8, r" writing .*/[^/]+_bench_llama3\.2/run\.lock")])
def test_a_disk_out_of_inodes_before_the_run_began_is_said_so_in_one_line(tmp_path, few_inodes, free, at):
    _leave_inodes(few_inodes, free)
    with Lab(tmp_path, n=3) as lab:
        done = lab.call(*lab.args(outputs=few_inodes / "out"))
    assert done.returncode == EXIT["archive"]
    assert re.fullmatch(f"benchrun: error: {re.escape(NO_INODES)}{at}\n", done.stderr), done.stderr
    assert list((few_inodes / "out").glob("*/*/run.json")) == []


@pytest.mark.slow
def test_a_run_whose_record_file_found_no_inode_is_failed_and_resumed_once_inodes_are_freed(tmp_path, few_inodes):
    filler = _leave_inodes(few_inodes, 13)
    with Lab(tmp_path, n=3) as lab:
        done = lab.call(*lab.args(outputs=few_inodes / "out"))
        [run_json] = (few_inodes / "out").glob("*/*/run.json")
        info = json.loads(run_json.read_text())
        summarised = (run_json.parent / "summary.json").exists()
        shutil.rmtree(filler)
        resumed = lab.call("resume", str(run_json.parent), module="benchrun.audit")
        verified = lab.call("verify", str(run_json.parent), module="benchrun.audit")
    assert (done.returncode, done.stderr) == (EXIT["archive"], (
        f"benchrun: error: {NO_INODES} writing {run_json.parent / 'responses.jsonl'}\n"))
    assert (info["status"], info["files"], summarised) == ("failed", {}, False)
    assert (resumed.returncode, verified.returncode, verified.stdout.splitlines()[-1]) == (0, 0, "intact")


SLOW_SCORER = ("import json, time\n\ndef times7(response, values):\n    time.sleep(2)\n"
               "    return int(json.loads(response)['answer'] == values['a'] * 7)\n")


@pytest.mark.slow
def test_a_run_suspended_whole_while_a_scorer_works_spends_none_of_its_time_limit(tmp_path):
    with Lab(tmp_path, n=2, scorer=SLOW_SCORER) as lab:
        proc = lab.start(*lab.args("scorer_timeout_s=5"))
        lab.wait_for(lambda: lab.run_dirs() and lab.lines(lab.first_run_dir()) == 1)
        tree = [proc.pid, *descendants(proc.pid)]  # as Slurm suspends a job: every process of it
        for pid in tree:
            os.kill(pid, signal.SIGSTOP)
        time.sleep(7)
        for pid in tree:
            os.kill(pid, signal.SIGCONT)
        _, err = proc.communicate(timeout=120)
        info = json.loads((lab.first_run_dir() / "run.json").read_text())
    assert (proc.returncode, info["status"], info["counts"]["scorer_errors"]) == (EXIT["ok"], "completed", 0), err


def test_the_last_resort_finds_the_systems_refusal_under_another_error_and_ends_a_chain_that_comes_back():
    from benchrun.__main__ import _refusal_of

    looped, refused, over = ValueError("loop"), OSError(28, "No space left on device"), ValueError("over it")
    looped.__cause__, over.__cause__ = looped, refused
    assert (_refusal_of(looped), _refusal_of(over)) == (None, refused)


def test_the_install_step_takes_a_compiler_path_holding_a_space(tmp_path):
    tools = tmp_path / "my tools"
    tools.mkdir()
    for name in ("gcc", "g++"):
        (tools / name).write_text("#!/bin/sh\n")
        (tools / name).chmod(0o755)
    done = subprocess.run([sys.executable, "-m", "benchrun.execute.runners.llama_build"], capture_output=True,
                          text=True, env={**child_env(), "PATH": str(tmp_path), "CC": str(tools / "gcc"),
                                          "CXX": f"{tools / 'g++'}"})
    assert (done.returncode, done.stderr) == (0, "")

"""The thirty-sixth hostile pass, the lead's side: the process's surroundings.

Fixed:
1. A process anywhere on the machine whose name is not UTF-8 (a program file named in Latin-1, or a name of non-ASCII
   letters the kernel cut at 15 bytes within a character) made every run with a custom scorer fail at its end with a
   UnicodeDecodeError traceback: ending the scorer process lists the machine's processes in /proc. A mount point
   whose name is not UTF-8 (a USB stick's Latin-1 label) made runner=local and a joblib sweep fail the same way
   (the CPU quota reads /proc/self/mountinfo), and hid a network file system beneath it from the cache's check. /proc
   is now read as the kernel writes it: bytes, decoded as the file system's names are (`core.procfs.proc_text`).
2. On a machine whose locale is not UTF-8 (`LANG=de_DE.ISO-8859-1`), a line of benchrun.log holding a character
   that locale has no byte for (`猫` in what a custom_*.py printed) was lost, with `--- Logging error ---` and a
   traceback on stderr; and a scorer that printed one failed that sample (`UnicodeEncodeError`), where a UTF-8
   machine scored it. benchrun.log is written as UTF-8, and the benchmark's code runs in Python's UTF-8 mode
   (`core.codeenv`), so it prints and scores alike on every machine.
3. What a process keeps through exec from its parent, which benchrun took as it found it (`core.interrupts.install`):
   - SIGINT, SIGTERM and SIGHUP blocked in the parent's signal mask: a SIGTERM stayed pending for ever and the run
     went on, until a scheduler's SIGKILL left it `running`. They are unblocked.
   - SIGCHLD ignored: the kernel reaped each child as it ended, so a scorer process that died with exit code 3 was
     recorded as `exit code 255`, and benchrun.log said `Unknown child process pid ...`. SIGCHLD is set to its default.
   - An alarm (`perl -e 'alarm 3600; exec @ARGV' python -m benchrun`, a time limit): its SIGALRM killed the run
     outright, left `running`, or, once the benchmark's code was imported, the alarm was stopped with the timers that
     code might have set, and the run went on past its limit. SIGALRM now ends a run as interrupted, as SIGTERM does,
     and the timers are set back after the import as they were (`core.interrupts.handling_now`).
   - Standard output left non-blocking (O_NONBLOCK, a Node.js or ssh session's): Python dropped what a slow reader's
     pipe could not take yet, without a word: `benchrun-audit export RUN | slow` gave 64 KiB of 416 KB, exit 0.
     Standard output and error are made blocking (`core.stdfds.open_standard_fds`).
4. A rescore that failed after claiming its folder (a disk's error, a name too long, a signal) removed its numbered
   folder but left an empty `rescores/` in the sealed run it had made it in. It is removed too, where the rescore made
   it (`audit.rescore._claimed`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.archive.reader import load_run
from benchrun.audit import rescore, rescore_run
from benchrun.core import cpus, procfs
from benchrun.core.errors import EXIT, ConfigError
from benchrun.execute import cacheplace
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import Lab, wait_for
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import make_run, run_benchrun, run_dir_of
from tests.helpers.p28_archive import ONE

NOT_UTF8 = os.fsdecode(b"n\xe4me\xff")
"""A name in Latin-1 bytes, as os.listdir gives it back (surrogate escapes)."""


def test_a_process_whose_name_is_not_utf8_leaves_every_run_whole(tmp_path):
    program = tmp_path / NOT_UTF8
    shutil.copy("/bin/sleep", program)
    odd = subprocess.Popen([program, "60"])
    try:
        assert procfs.descendants(os.getpid()) >= {odd.pid}
        run_dir = make_run(tmp_path / "runs", models=("llama3.2",))
    finally:
        odd.kill()
        odd.wait()
    assert audit(tmp_path, "verify", str(run_dir)).stdout.splitlines()[-1] == "intact"


def _mountinfo(proc: Path, *lines: str) -> None:
    proc.mkdir()
    (proc / "cgroup").write_text("0::/job\n")
    (proc / "mountinfo").write_bytes("".join(f"{line}\n" for line in lines).encode("utf-8", "surrogateescape"))


def test_a_mount_point_whose_name_is_not_utf8_leaves_the_cpu_quota_read(tmp_path):
    hierarchy = tmp_path / NOT_UTF8
    (hierarchy / "job").mkdir(parents=True)
    (hierarchy / "job" / "cpu.max").write_text("150000 100000\n")
    _mountinfo(tmp_path / "proc", f"30 25 0:26 / {hierarchy} rw,nosuid - cgroup2 cgroup2 rw",
               f"31 25 0:27 / {tmp_path}/usb{NOT_UTF8} rw - vfat /dev/sdb1 rw")
    assert cpus.cpu_quota(tmp_path / "proc") == 2


def test_a_network_file_system_mounted_at_a_name_not_utf8_is_still_seen(tmp_path, monkeypatch):
    point = tmp_path / NOT_UTF8
    point.mkdir()
    _mountinfo(tmp_path / "proc", f"40 25 0:50 / {point} rw - nfs4 server:/export rw")
    monkeypatch.setattr(cacheplace, "MOUNT_TABLES", (str(tmp_path / "proc" / "mountinfo"),))
    with pytest.raises(ConfigError) as refused:
        cacheplace.refuse_network_fs(point / "cache", "cache_dir")
    assert str(refused.value) == (f"cache_dir: {tmp_path}/n\\xe4me\\xff/cache is on a network file system (nfs4), "
                                  "where SQLite's locking is not safe; set cache_dir= to a directory on local disk, "
                                  "or cache=false")


def _latin1_locale(folder: Path) -> dict[str, str]:
    """The environment of a machine whose locale is de_DE.ISO-8859-1, built into `folder` (glibc's LOCPATH)."""
    if not shutil.which("localedef") or not Path("/usr/share/i18n/locales/de_DE").is_file():
        pytest.skip("glibc's localedef and its locale sources build the locale")
    subprocess.run(["localedef", "-i", "de_DE", "-f", "ISO-8859-1", str(folder / "de_DE.ISO-8859-1")], check=True,
                   capture_output=True)
    return {"LOCPATH": str(folder), "LANG": "de_DE.ISO-8859-1", "LC_ALL": "de_DE.ISO-8859-1"}


SCORER = """print("imported 猫")


def s(response, values):
    print("scored 猫", values["w"])
    return {"hit": 1.0}
"""

SCORER_EXITING = """import os


def s(response, reference):
    if reference == "a":
        os._exit(3)
    return {"hit": 1.0}
"""


def test_a_machine_whose_locale_is_not_utf8_logs_and_scores_what_a_utf8_one_does(tmp_path):
    env = _latin1_locale(tmp_path)
    probe = subprocess.run([sys.executable, "-c", "import sys; print(sys.stdout.encoding)"], env={**os.environ, **env},
                           capture_output=True, text=True, check=True)
    assert probe.stdout == "iso8859-1\n"
    bench = write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: 'say {w}'\n  values: {w: [猫]}\n  scorer: s\n",
                                   "custom_scorer.py": SCORER})
    with FakeOllama(models=["m"]) as server:
        result = run_benchrun(f"task.path={bench}", "runner.model=m", f"runner.host={server.url}", "cache=false",
                              f"outputs={tmp_path / 'out'}", cwd=tmp_path, env=env)
    assert (result.returncode, result.stderr) == (0, "")
    run_dir = run_dir_of(result.stdout)
    log = (run_dir / "benchrun.log").read_text(encoding="utf-8").splitlines()
    assert [line.split(" - ", 1)[-1] for line in log] == [
        "custom_scorer.py printed while it was imported:", "imported 猫", "scored 猫 猫"]
    scores = [json.loads(line) for line in (run_dir / "scores.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(row["scorer"], row["metrics"], row["error"]) for row in scores] == [
        ("format_valid", {"format_valid": 1}, None), ("s", {"s.hit": 1.0}, None)]


def _signals_blocked() -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


@pytest.mark.slow
def test_a_run_started_with_its_signals_blocked_still_stops_at_sigterm(tmp_path, monkeypatch):
    with Lab(tmp_path, n=4) as lab:
        monkeypatch.setattr(lab, "start", lambda *args, module: subprocess.Popen(
            [sys.executable, "-m", module, *args], cwd=tmp_path, env=child_env(), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, preexec_fn=_signals_blocked))
        with lab.held_after(2, *lab.args()) as (proc, run_dir):
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=20)
    assert (proc.returncode, err) == (EXIT["interrupted"], (
        f"benchrun: error: interrupted by SIGTERM: run {json.loads((run_dir / 'run.json').read_text())['run_id']} is "
        f"recorded as 'interrupted' with 2 of 4 samples (1 not graded yet) in {run_dir}; finish it with: "
        f"benchrun-audit resume {run_dir}\n"))
    assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"


def _children_ignored() -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)


def test_a_run_started_with_sigchld_ignored_records_its_scorer_process_exit_code(tmp_path):
    tasks = "- name: t\n  template: 'say {w}'\n  values: {w: [a, b]}\n  reference: [a, b]\n  scorer: s\n"
    bench = write_bench(tmp_path, {"tasks.yml": tasks, "custom_scorer.py": SCORER_EXITING})
    with FakeOllama(models=["m"]) as server:
        done = subprocess.run([sys.executable, "-m", "benchrun", f"task.path={bench}", "runner.model=m", "cache=false",
                               f"runner.host={server.url}", f"outputs={tmp_path / 'out'}"], cwd=tmp_path,
                              env=child_env(), capture_output=True, text=True, timeout=120,
                              preexec_fn=_children_ignored)
    assert (done.returncode, done.stderr) == (0, "")
    run_dir = run_dir_of(done.stdout)
    scores = [json.loads(line) for line in (run_dir / "scores.jsonl").read_text().splitlines()]
    assert [(row["id"], row["metrics"], row["error"]) for row in scores if row["scorer"] == "s"] == [
        ("t:w=a", None, {"type": "ScorerProcessDied", "message": "the scorer's process ended (exit code 3) during this "
                                                                 "call"}),
        ("t:w=b", {"s.hit": 1.0}, None)]
    assert (run_dir / "benchrun.log").read_text() == ""


def test_a_parents_alarm_outlives_the_import_of_the_benchmarks_code():
    kept = subprocess.run([sys.executable, "-c", ALARM_KEPT], env=child_env(), capture_output=True, text=True,
                          check=True, timeout=60)
    left, interval = map(float, kept.stdout.split())
    assert (99 < left <= 100, interval) == (True, 0.0)


ALARM_KEPT = """import signal
from benchrun.compiler.runstate import kept
signal.alarm(100)
with kept():
    signal.alarm(5)
print(*signal.getitimer(signal.ITIMER_REAL))
"""


@pytest.mark.slow
def test_a_time_limits_sigalrm_ends_a_run_as_interrupted(tmp_path):
    with Lab(tmp_path, n=4) as lab:
        with lab.held_after(2, *lab.args()) as (proc, run_dir):
            proc.send_signal(signal.SIGALRM)
            _, err = proc.communicate(timeout=20)
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    assert (proc.returncode, err) == (EXIT["interrupted"], (
        f"benchrun: error: interrupted by SIGALRM: run {run_id} is recorded as 'interrupted' with 2 of 4 samples (1 "
        f"not graded yet) in {run_dir}; finish it with: benchrun-audit resume {run_dir}\n"))


def test_an_export_to_a_non_blocking_pipe_read_late_is_whole(tmp_path):
    run_dir = make_run(tmp_path, models=("llama3.2",))
    audit(tmp_path, "export", str(run_dir), "--output", str(tmp_path / "whole.csv"))
    whole = (tmp_path / "whole.csv").read_bytes()
    read, write = os.pipe()
    fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, PAGE)
    os.set_blocking(write, False)
    with subprocess.Popen([sys.executable, "-m", "benchrun.audit", "export", str(run_dir)], cwd=tmp_path,
                          env=child_env(), stdout=write) as exporting:
        os.close(write)
        wait_for(lambda: exporting.poll() is not None or _writing_a_full_pipe(exporting.pid), timeout=60)
        with os.fdopen(read, "rb") as reader:
            exported = reader.read()
    assert (exporting.returncode, len(whole) > 2 * PAGE, len(exported)) == (0, True, len(whole))
    assert exported == whole


PAGE = 4096
"""The smallest size a pipe takes (F_SETPIPE_SZ), a memory page."""


def _writing_a_full_pipe(pid: int) -> bool:
    """Whether process `pid` waits to write to a pipe that is full (the kernel's wait channel)."""
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/wchan").read_text().endswith("pipe_write")
    return False


def _disk_gone(*args, **kwargs):
    raise OSError(errno.EIO, "Input/output error")


def test_a_rescore_that_fails_leaves_no_rescores_folder_in_the_run(tmp_path, monkeypatch):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    (tmp_path / "mine.py").write_text(ONE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(rescore, "write_atomic", _disk_gone)
    with pytest.raises(OSError):
        rescore_run(load_run(run_dir), scorers_file="mine.py", only=True)
    assert not (run_dir / "rescores").exists()
    assert audit(tmp_path, "verify", str(run_dir)).stdout.splitlines()[-1] == "intact"

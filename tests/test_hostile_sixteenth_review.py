r"""Hostile input, sixteenth pass, the review side: the code this session added (run.lock's lease, the writers /proc
finds, merged shards' machines, the quoted advice, the file-size limit), attacked; the cases found bad, each with the
rule it now obeys.

- a sweep settling its jobs at its end, while a job was taken up on another machine after the one watch of every
  job's lease (a resume there, whose lock this machine cannot see): the job was settled as `interrupted` without its
  new writer's lease being watched (`acquire(watched=True)` skipped the watch whatever note it found), run.json
  rewritten under a live writer. Now the watch is skipped only for the note that was watched
  (`archive.dirlock.not_remotely_written`, `DirLock.acquire(watched=)`)
- an unreadable override whose value ends in backslashes (`runner.model=it's\\`, a Windows folder `'C:\models\`):
  the quoted form advised did not read back as the value (Hydra halves the backslashes before a quote: `"it's\\"` is
  `it's\`, one backslash lost), or none was advised (`"it's\"` is not read at all). Now
  the backslashes before a quote are doubled (`cli._in_quotes`)
- `export`/`report --output RUN/Run.json` where the run is on a disk that finds names whatever their case (FAT,
  exFAT, an SMB share): the guard against writing a run's own files compared names as written, so the export replaced
  the run's run.json with its CSV (exit 0; the run unreadable after). Now a name is compared as the folder's file
  system finds it (`archive.claims.found_name`), and refused in one line as the run's own
- `benchrun-audit cache` on a damaged cache (or another program's database, one locked for long, one on NFS): its
  line advised what only a run takes (`set cache_dir= to a directory on local disk, or cache=false`, `run without
  the cache (cache=false) or with one of its own (cache_dir=DIR)`). Now the advice is the opener's: the command's own
  (`audit.cache.ADVICE`, given to `execute.cache.Store` as its `advice`)
- a run written on another machine of the same host name (a swarm's replicas of `hostname: worker`, cloned machines,
  `localhost`), on a file system that keeps locks to each machine: its note's host was this machine's, so its lease
  was never watched, and resume took the run over beside its live writer. Now a note of this host name but another
  boot's id is another machine's (`archive.dirlock.of_another_machine`), and its lease is watched
- a sweep settling its jobs at its end, one job's run.lock a named pipe: the one watch of the jobs' leases read each
  lock's note, opening the pipe and waiting for a writer for ever (the sweep never ended; before the watch, the job's
  lock was refused as a pipe and the job skipped). Now a lock's note is read without waiting, and none is read from
  what is not a file (`archive.dirlock.holder`)
- `export`/`report --output reports/.` (a folder that is not there, named as `reports/` is): pathlib drops the `/.`
  as it drops a trailing `/`, so a file named `reports` was written (exit 0). Now refused in one line, as `reports/`
  is (`audit.arguments.output`)
- `benchrun-audit compare` with a numpy that cannot run on this CPU (numpy 2.4 on one without x86-64-v2, the pin
  overridden by `pip install -U numpy`, or Python 3.15, which the pin leaves free): numpy's import error was a
  traceback (exit 1). Now one line with numpy's words and the numpy that runs here (`audit.significance`,
  `execute.runners.llama_build.numpy_unusable`); a stand-in numpy raising numpy's own error plays it
"""


from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timezone

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser

from benchrun.archive import dirlock
from benchrun.archive.lease import renewing
from benchrun.archive.sweep import settle_dead_jobs
from benchrun.core.errors import EXIT
from benchrun.core.text import host_name
from benchrun.testing.inprocess import child_env
from tests.helpers.archives import DEAD_WRITER, synthetic_run
from tests.helpers.commands import audit, call_benchrun, run_benchrun
from tests.helpers.fatdisk import can_mount_fat, fat_disk

RENEWING = """
import os, sys, time
while True:
    os.utime(sys.argv[1])
    time.sleep(0.5)
"""
"""A writer on another machine, as this one sees it: its lock unseen, its lease on run.lock renewed."""


@pytest.mark.slow
def test_a_sweep_job_taken_up_on_another_machine_after_the_watch_is_not_settled(tmp_path, monkeypatch):
    job = synthetic_run(tmp_path / "sweep" / "0_m", [1, 0], run_id="0" * 12, finish=False)  # killed long ago
    lock = job / "run.lock"
    writers = []

    def taken_up_after(paths):  # a resume on node gpu2 takes the job as the sweep's one watch ends
        moved = renewing(paths)
        if not writers:
            lock.write_text(json.dumps({"pid": 5151, "host": "gpu2", "command": "benchrun-audit resume",
                                        "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}))
            writers.append(subprocess.Popen([sys.executable, "-c", RENEWING, str(lock)]))
        return moved

    monkeypatch.setattr(dirlock, "renewing", taken_up_after)
    try:
        settled = settle_dead_jobs(tmp_path / "sweep", "its Slurm job was killed")
    finally:
        for writer in writers:
            writer.kill()
            writer.wait()
    assert (settled, json.loads((job / "run.json").read_text())["status"]) == ([], "running")
    assert json.loads(lock.read_text())["host"] == "gpu2"


@pytest.mark.parametrize(("value", "advised"), [
    ("it's\\", 'runner.model="it\'s\\\\"'),
    ("it's\\\\", 'runner.model="it\'s\\\\\\\\"'),
    ("'C:\\models\\", 'runner.model="\'C:\\models\\\\"'),
])
def test_the_quoted_form_advised_for_a_value_ending_in_backslashes_reads_back_as_the_value(tmp_path, value, advised):
    refused = call_benchrun(f"runner.model={value}", "dry_run=true", cwd=tmp_path)
    at = len("runner.model=") + value.index("'") + 1
    assert (refused.returncode, refused.stderr) == (EXIT["usage"], (
        f"benchrun: error: the override {'runner.model=' + value!r}: Hydra's override grammar takes \"'\" (character "
        f"{at}) only inside quotes; quote it: {advised}\n"))
    assert OverridesParser.create().parse_override(advised).value() == value


@pytest.mark.slow
@pytest.mark.skipif(not can_mount_fat(), reason="a FAT disk is mounted for it (needs root, dosfstools and fusefat)")
def test_an_output_named_as_a_runs_own_file_in_other_case_on_a_fat_disk_is_refused(tmp_path):
    with fat_disk(tmp_path / "fat") as disk:
        run_dir = disk / "run"
        run_dir.mkdir()
        for file in synthetic_run(tmp_path / "run", [1, 0]).iterdir():  # FAT keeps no modes: copied, no more
            shutil.copyfile(file, run_dir / file.name)
        kept = (run_dir / "run.json").read_bytes()
        exported = audit(tmp_path, "export", str(run_dir), "--output", str(run_dir / "Run.json"))
        assert (exported.returncode, exported.stderr) == (EXIT["usage"], (
            f"benchrun: error: in {str(run_dir / 'Run.json')!r}: --output: the run.json of the run in {run_dir}, "
            "which only benchrun writes; nothing was written; name another file\n"))
        assert (run_dir / "run.json").read_bytes() == kept


@pytest.mark.slow
def test_the_cache_command_on_a_damaged_cache_gives_its_own_advice_not_a_runs(tmp_path):
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "responses.sqlite3").write_bytes(b"not a database, written over by a crash" * 200)
    listed = audit(tmp_path, "cache", "--cache-dir", str(tmp_path / "cache"))
    assert (listed.returncode, listed.stderr) == (EXIT["usage"], (
        f"benchrun: error: --cache-dir: the response cache at {tmp_path / 'cache' / 'responses.sqlite3'} cannot be "
        "used (DatabaseError: file is not a database); this command lists and clears only a cache it can open: name "
        "the cache's own folder with --cache-dir, or move this file aside (a run makes a new cache where there is "
        "none)\n"))


@pytest.mark.slow
def test_a_run_written_on_another_machine_of_the_same_host_name_is_not_taken_over(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1, 0, 1], finish=False)
    note = {**DEAD_WRITER, "host": host_name(), "boot": "5d0ae4a2-0000-4000-8000-another0boot", "started": 4242}
    (run_dir / "run.lock").write_text(json.dumps(note))
    records = (run_dir / "responses.jsonl").read_bytes()
    writer = subprocess.Popen([sys.executable, "-c", RENEWING, str(run_dir / "run.lock")])
    try:
        resumed = audit(tmp_path, "resume", str(run_dir))
    finally:
        writer.kill()
        writer.wait()
    assert (resumed.returncode, resumed.stderr) == (EXIT["archive"], (
        f"benchrun: error: in {str(run_dir)!r}: its writer (pid 4242 on host {host_name()} since {note['since']}) runs "
        "on another machine and still renews its lease on run.lock: this file system keeps each machine's locks to "
        "that machine (Lustre mounted with localflock, BeeGFS); wait for it to finish or stop it first\n"))
    assert (run_dir / "responses.jsonl").read_bytes() == records
    assert json.loads((run_dir / "run.lock").read_text()) == note


SETTLE = """
import sys
from pathlib import Path
from benchrun.archive.sweep import settle_dead_jobs
print([job.name for job in settle_dead_jobs(Path(sys.argv[1]), "its Slurm job was killed")])
"""


@pytest.mark.slow
def test_a_sweep_whose_job_has_a_pipe_for_its_lock_is_settled_without_waiting_on_it(tmp_path):
    piped = synthetic_run(tmp_path / "sweep" / "0_m", [1, 0], run_id="0" * 12, finish=False)
    killed = synthetic_run(tmp_path / "sweep" / "1_m", [1, 0], run_id="1" * 12, finish=False)
    (piped / "run.lock").unlink()
    os.mkfifo(piped / "run.lock")
    settled = subprocess.run([sys.executable, "-c", SETTLE, str(tmp_path / "sweep")], env=child_env(),
                             capture_output=True, text=True, timeout=60)
    assert (settled.returncode, settled.stdout, settled.stderr) == (0, "['1_m']\n", "")
    assert [json.loads((job / "run.json").read_text())["status"] for job in (piped, killed)] == [
        "running", "interrupted"]


@pytest.mark.slow
def test_an_output_ending_in_slash_dot_is_no_file_of_that_name(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1.0])
    done = audit(tmp_path, "export", str(run_dir), "--output", "reports/.")
    assert (done.returncode, done.stdout, done.stderr.splitlines()[-1]) == (EXIT["usage"], "", (
        "benchrun-audit export: error: argument --output: 'reports/.' ends with '/.', so it names a folder, and there "
        "is none: name the file to write"))
    assert not os.path.lexists(tmp_path / "reports")


NUMPY_ON_AN_OLD_CPU = """raise RuntimeError(
    "NumPy was built with baseline optimizations: \\n(X86_V2) but your machine doesn't support:\\n(X86_V2).")
"""
"""numpy 2.4's import on an x86-64 CPU without SSE4.2 and POPCNT (a Core 2), as its own words go."""


@pytest.mark.slow
def test_compare_with_a_numpy_that_cannot_run_on_this_cpu_says_so_in_one_line(tmp_path):
    (tmp_path / "standin" / "numpy").mkdir(parents=True)
    (tmp_path / "standin" / "numpy" / "__init__.py").write_text(NUMPY_ON_AN_OLD_CPU)
    runs = [synthetic_run(tmp_path / f"run{i}", [1, 0], run_id=f"{i}" * 12) for i in (1, 2)]
    path = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(tmp_path / "standin")]))
    compared = run_benchrun("compare", *map(str, runs), cwd=tmp_path, env={"PYTHONPATH": path},
                            module="benchrun.audit")
    assert (compared.returncode, compared.stdout, compared.stderr) == (EXIT["usage"], "", (
        "benchrun: error: numpy cannot be imported here (RuntimeError: NumPy was built with baseline optimizations: "
        "(X86_V2) but your machine doesn't support: (X86_V2).), and benchrun-audit compare needs it; install a numpy "
        "that runs here: pip install 'numpy<2.4'\n"))

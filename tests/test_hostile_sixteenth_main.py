"""Hostile input, sixteenth pass, what the lead session tried beside the three sides' passes: the cases it found
bad, each with the rule it now obeys.

- a run written on one machine of a cluster whose shared file system keeps locks to each machine (Lustre mounted with
  `localflock`, BeeGFS): from another machine the run looked unlocked, as a killed writer's run does, and `resume`
  there took it over while its writer went on, two writers appending to one run; verify called it killed. Now a writer
  renews a lease on run.lock while it holds it (`archive.lease`), and a writer or verify that finds another machine's
  note watches the lease for a few seconds before it takes the writer for dead (`archive.dirlock.writing_remotely`)
- a sweep whose jobs were killed on other machines, settled at its end (each job's lock watched in turn, 3 s each:
  a sweep of 100 jobs killed at their time limit waited 5 minutes before it said so); now all are watched at once
  (`archive.dirlock.not_remotely_written`, `lease.renewing`), and a job whose writer there still renews its lease is left
  to speak for itself
- a merge into a folder another machine is merging into at the same time (two nodes of a cluster whose file system
  keeps locks to each machine): the second merge took the first one's hidden folder for a killed merge's, its lock
  held by no one, and removed it while the first wrote it; now a folder whose writer renews its lease is left alone
  (`audit.merge._clear_killed`, `archive.dirlock.live_writer`)
- a run whose run.lock was deleted while its writer wrote (a cleanup's `rm */run.lock`, `find -name '*.lock'
  -delete`): resume made a new lock, took it, and asked the rest of the samples beside the live writer; verify said
  the directory was copied without its lock. Now a writer that makes the lock of a run finds the process of this
  machine that holds the run's files open for writing (`archive.openwriters`, from /proc) and refuses, as verify and
  retry say (retry had advised a resume)
- shards answered on machines of different versions (another llama-cpp-python, another Ollama) merged into one run:
  the merged run.json named the first shard's servers and the merging machine's versions and host, a machine that
  answered nothing, for every answer; now each shard's identity and environment are kept in `merged.shards`
  (`core.lineage.MergedShard`)
- the embedded model on an x86-64 CPU without SSE4.2 and POPCNT (a Core 2, an AMD before 2011; emulated by qemu-user
  with its /proc/cpuinfo): numpy 2.4, which llama-cpp-python imports, needs x86-64-v2, and the engine died saying
  `exited with code 1 after printing "(X86_V2)." ...; set runner.model_path to a GGUF file it can load` (or of SIGILL,
  blamed on llama.cpp's build). Now pyproject.toml keeps numpy below 2.4, which runs there, and a numpy that cannot
  is refused by the engine before its import with the command that installs one that can
  (`execute.runners.llama_build.numpy_refusal`; tested in tests/test_llama_build.py)
- an override Hydra cannot read whose value holds a quote (`runner.model='a`, `runner.model=it's [x`): the line's
  advice quoted the value in single quotes around its own, a form Hydra cannot read either; now it is quoted as
  Hydra reads it back (`cli._in_quotes`)
- a run under a file-size limit (`ulimit -f`, a batch system's) that its records outgrow: `file too large writing
  .../responses.jsonl`, on a disk with room, and nothing said of the limit; now the line names it
  (`core.errors.os_problem`). The run is recorded as failed, and a resume without the limit finishes it
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser

from benchrun.archive import dirlock
from benchrun.archive.dirlock import DirLock
from benchrun.archive.lease import renewing
from benchrun.archive.sweep import settle_dead_jobs
from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import Lab, wait_for
from tests.helpers.archives import DEAD_WRITER, reseal, synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.commands import call_benchrun, run_in_process, squeezed

REMOTE = (f"its writer (pid {DEAD_WRITER['pid']} on host {DEAD_WRITER['host']} since {DEAD_WRITER['since']}) runs on "
          "another machine and still renews its lease on run.lock: this file system keeps each machine's locks to "
          "that machine (Lustre mounted with localflock, BeeGFS)")
RENEWING = """
import os, sys, time
while True:
    os.utime(sys.argv[1])
    time.sleep(0.5)
"""
"""A writer on another machine, as this one sees it: its lock unseen, its lease on run.lock renewed."""


def lab_audit(lab: Lab, *args: str):
    """`benchrun-audit ARGS` in the lab, called in this process."""
    return lab.call(*args, module="benchrun.audit")


def _mtime(path: Path) -> int:
    return path.stat().st_mtime_ns


def test_a_holder_renews_its_lease_on_run_lock_until_it_lets_go(tmp_path):
    lock = DirLock(tmp_path).acquire()
    os.utime(lock.path, ns=(0, 0))
    wait_for(lambda: _mtime(lock.path) != 0, timeout=10)
    lock.release(ended=True)
    assert [t for t in threading.enumerate() if t.name == "run.lock lease"] == []


@pytest.mark.slow
def test_a_real_writer_renews_its_lease_while_it_waits_on_the_model(tmp_path):
    with Lab(tmp_path, n=4) as lab:
        with lab.held_after(2, *lab.args()) as (proc, run_dir):
            os.utime(run_dir / "run.lock", ns=(0, 0))
            wait_for(lambda: _mtime(run_dir / "run.lock") != 0, timeout=10)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == EXIT["ok"], err


@pytest.mark.slow
def test_a_run_whose_writer_on_another_machine_renews_its_lease_is_not_taken_over(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1, 0, 1], finish=False)
    records = (run_dir / "responses.jsonl").read_bytes()
    os.utime(run_dir / "run.lock", ns=(0, 0))
    writer = subprocess.Popen([sys.executable, "-c", RENEWING, str(run_dir / "run.lock")])
    try:
        wait_for(lambda: _mtime(run_dir / "run.lock") != 0, timeout=30)  # renewing, however slow its start
        resumed = audit(tmp_path, "resume", str(run_dir))
        verified = audit(tmp_path, "verify", str(run_dir))
    finally:
        writer.kill()
        writer.wait()
    assert (resumed.returncode, resumed.stderr) == (EXIT["archive"], (
        f"benchrun: error: in {str(run_dir)!r}: {REMOTE}; wait for it to finish or stop it first\n"))
    assert (verified.returncode, verified.stdout.splitlines()[1]) == (EXIT["not_intact"], (
        f"FAIL  run.json: not sealed yet: the run is being written (pid {DEAD_WRITER['pid']} on host "
        f"{DEAD_WRITER['host']} since {DEAD_WRITER['since']}, on another machine); verify it once it has ended (record "
        "lines checked against records.sha256 only)"))
    assert (run_dir / "responses.jsonl").read_bytes() == records


@pytest.mark.slow
def test_a_lease_that_stopped_moving_is_a_dead_writers_and_resume_finishes_the_run(tmp_path):
    with Lab(tmp_path, n=4) as lab:
        with lab.held_after(2, *lab.args()) as (proc, run_dir):
            proc.kill()
            proc.communicate()
        lock = run_dir / "run.lock"
        note = {**json.loads(lock.read_text()), "host": "gpu1"}  # killed a moment ago on another machine: its lease
        lock.write_text(json.dumps(note))  # not old yet, but no longer renewed
        resumed = lab_audit(lab, "resume", str(run_dir))
    assert resumed.returncode == EXIT["ok"], resumed.stderr
    info = json.loads((run_dir / "run.json").read_text())
    assert (info["status"], info["history"][-1]["stale_lock"]) == ("completed", note)


@pytest.mark.parametrize("value", ["'a", "it's [x", "a'b\"[c"])
def test_the_quoted_form_an_unreadable_override_is_given_is_read_back_as_its_value(tmp_path, value):
    refused = call_benchrun(f"runner.model={value}", "dry_run=true", cwd=tmp_path)
    assert refused.returncode == EXIT["usage"]
    advised = re.split("written in quotes: |quote it: ", refused.stderr.rstrip("\n"))[1]
    assert OverridesParser.create().parse_override(advised).value() == value


@pytest.mark.slow
def test_a_run_past_the_file_size_limit_names_the_limit_and_a_resume_finishes_it(tmp_path):
    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (40_000, 40_000))

    with Lab(tmp_path, n=120, latency_s=0) as lab:
        cut = subprocess.run([sys.executable, "-m", "benchrun", *lab.args()], cwd=tmp_path, env=child_env(),
                             capture_output=True, text=True, preexec_fn=limited)
        [run_dir] = lab.run_dirs()
        assert (cut.returncode, cut.stderr) == (EXIT["archive"], (
            "benchrun: error: file too large for this process's file-size limit (ulimit -f: 40000 bytes) writing "
            f"{run_dir / 'responses.jsonl'}\n"))
        assert json.loads((run_dir / "run.json").read_text())["status"] == "failed"
        resumed = lab_audit(lab, "resume", str(run_dir))
        assert resumed.returncode == EXIT["ok"], resumed.stderr
        assert (lab.lines(run_dir), lab_audit(lab, "verify", str(run_dir)).stdout.splitlines()[-1]) == (120, "intact")


@pytest.mark.slow
def test_a_run_whose_lock_was_deleted_under_its_writer_is_not_taken_over(tmp_path):
    with Lab(tmp_path, n=6) as lab:
        with lab.held_after(2, *lab.args()) as (proc, run_dir):
            (run_dir / "run.lock").unlink()
            resumed = lab_audit(lab, "resume", str(run_dir))
            verified = lab_audit(lab, "verify", str(run_dir))
            retried = lab_audit(lab, "retry", str(run_dir))
            assert not (run_dir / "run.lock").exists()
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == EXIT["ok"], err
        assert (lab.lines(run_dir), lab_audit(lab, "verify", str(run_dir)).stdout.splitlines()[-1]) == (6, "intact")
    assert (resumed.returncode, resumed.stderr) == (EXIT["archive"], (
        f"benchrun: error: in {str(run_dir)!r}: another process (pid {proc.pid}) is writing this run, though its "
        "run.lock was deleted (a cleanup of lock files?); wait for it to finish or stop it first\n"))
    assert verified.stdout.splitlines()[1] == (
        f"FAIL  run.json: not sealed yet: the run is being written (pid {proc.pid}, whose run.lock was deleted); "
        "verify it once it has ended (record lines checked against records.sha256 only)")
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    assert (retried.returncode, retried.stderr) == (EXIT["archive"], (
        f"benchrun: error: in {str(run_dir)!r}: run {run_id} is running: it has not finished; it is being written "
        f"(pid {proc.pid}, whose run.lock was deleted): retry it once it has ended\n"))


def test_a_merged_run_keeps_each_shards_servers_and_machine(tmp_path):
    parts = [run_in_process(tmp_path, f"part{i}", f"shard={i}/2") for i in (1, 2)]
    info = json.loads((parts[1] / "run.json").read_text())
    elsewhere = {**info["environment"], "hostname": "node2", "packages": {**info["environment"]["packages"],
                                                                           "ollama": "0.0.1"}}
    (parts[1] / "run.json").write_text(json.dumps({**info, "environment": elsewhere}, indent=2))
    reseal(parts[1])
    into = tmp_path / "merged"
    merged = audit(tmp_path, "merge", *map(str, parts), "--into", str(into))
    assert merged.returncode == EXIT["ok"], merged.stderr
    shards = json.loads((into / "run.json").read_text())["merged"]["shards"]
    firsts = json.loads((parts[0] / "run.json").read_text())
    assert [(s["environment"], s["identity"]) for s in shards] == [
        (firsts["environment"], firsts["identity"]), (elsewhere, info["identity"])]
    shown = squeezed(audit(tmp_path, "show", str(into)).stdout)
    server = info["identity"]["server_version"]
    assert squeezed(f"shards ran on 1/2 {firsts['environment']['hostname']} server {server} ollama "
                    f"{firsts['environment']['packages']['ollama']} 2/2 node2 server {server} ollama 0.0.1") in shown


@pytest.mark.slow
def test_a_sweeps_jobs_killed_on_other_machines_are_settled_after_one_watch(tmp_path, monkeypatch):
    jobs = [synthetic_run(tmp_path / "sweep" / f"{i}_m", [1, 0], run_id=f"{i}" * 12, finish=False) for i in range(3)]
    for job in jobs:
        os.utime(job / "run.lock")  # killed a moment ago, on another machine
    watches = []
    monkeypatch.setattr(dirlock, "renewing", lambda paths: watches.append(paths) or renewing(paths))
    monkeypatch.setattr(dirlock, "renewed", lambda path: pytest.fail("a job's lease watched on its own"))
    writer = subprocess.Popen([sys.executable, "-c", RENEWING, str(jobs[1] / "run.lock")])
    try:
        settled = settle_dead_jobs(tmp_path / "sweep", "its Slurm job was killed")
    finally:
        writer.kill()
        writer.wait()
    assert (settled, watches) == ([jobs[0], jobs[2]], [[job / "run.lock" for job in jobs]])
    assert [json.loads((job / "run.json").read_text())["status"] for job in jobs] == [
        "interrupted", "running", "interrupted"]


@pytest.mark.slow
def test_a_merge_leaves_the_folder_another_machine_is_merging_into(tmp_path):
    parts = [run_in_process(tmp_path, f"part{i}", f"shard={i}/2") for i in (1, 2)]
    into = tmp_path / "merged"
    busy = tmp_path / ".merged.merging-0123456789ab"
    busy.mkdir()
    (busy / "run.lock").write_text(json.dumps(DEAD_WRITER))  # a merge on node gpu1, alive: it renews its lease
    writer = subprocess.Popen([sys.executable, "-c", RENEWING, str(busy / "run.lock")])
    try:
        merged = audit(tmp_path, "merge", *map(str, parts), "--into", str(into))
    finally:
        writer.kill()
        writer.wait()
    assert merged.returncode == EXIT["ok"], merged.stderr
    assert (busy / "run.lock").is_file()

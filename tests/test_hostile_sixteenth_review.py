"""Hostile input, sixteenth pass, the review side: the code this session added (run.lock's lease, the writers /proc
finds, merged shards' machines, the quoted advice, the file-size limit), attacked; the cases found bad, each with the
rule it now obeys.

- a sweep settling its jobs at its end, while a job was taken up on another machine after the one watch of every
  job's lease (a resume there, whose lock this machine cannot see): the job was settled as `interrupted` without its
  new writer's lease being watched (`acquire(watched=True)` skipped the watch whatever note it found), run.json
  rewritten under a live writer. Now the watch is skipped only for the note that was watched
  (`archive.dirlock.not_remotely_written`, `DirLock.acquire(watched=)`)
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timezone

import pytest

from benchrun.archive import dirlock
from benchrun.archive.lease import renewing
from benchrun.archive.sweep import settle_dead_jobs
from tests.helpers.archives import synthetic_run

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

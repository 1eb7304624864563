"""Hostile input, seventeenth pass, what the lead session tried beside the three sides' passes: the cases it found
bad, each with the rule it now obeys.

- a writer stopped past its lease (Ctrl-Z, SIGSTOP, a Slurm suspend) on a file system that keeps locks to each
  machine, whose run another machine's writer took over meanwhile: once continued, it went on appending beside the
  new writer, rewrote run.json and emptied the new writer's note in run.lock. Now a writer checks, before each write,
  that run.lock still holds its own note, and once another writer's is there it writes nothing more, stops renewing
  its lease, leaves the lock and the reserve to that writer, and says so in one line (`archive.dirlock.still_held`,
  `archive.writer.RunWriter._held`)
"""

from __future__ import annotations

import json
import os
import signal
import threading

import pytest

from benchrun.archive.dirlock import DirLock, TakenOver
from benchrun.core.errors import EXIT
from benchrun.testing.lab import Lab, wait_for

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

"""A response cache locked by another process (which holds SQLite's write lock, in a process of its own): a short
hold, as sweep jobs sharing the cache make, is waited out; a long one fails in one line saying what is going on and
what to do, after BUSY_TIMEOUT_S (benchrun called in this process)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from benchrun.core.errors import EXIT, ConfigError
from benchrun.core.records import Completion
from benchrun.execute import cache
from benchrun.execute.cache import Entry, Store
from benchrun.testing.lab import Lab

HOLDER = """import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("held", flush=True)
time.sleep(float(sys.argv[2]))
db.execute("COMMIT")
"""


def locked(directory: Path) -> str:
    return (f"cache_dir: the response cache at {directory / cache.DB_FILE} is locked by another process, which has "
            f"held its write lock for over {cache.BUSY_TIMEOUT_S:g} s (sweep jobs sharing a cache hold it for "
            "milliseconds); let that process finish and try again, or run without the cache (cache=false) or with "
            "one of its own (cache_dir=DIR)")


@contextmanager
def held(directory: Path, seconds: float) -> Iterator[subprocess.Popen]:
    """Another process holding the write lock of the cache in `directory` for `seconds` (once this yields)."""
    Store(directory).close()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(directory / cache.DB_FILE), str(seconds)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        yield holder
    finally:
        holder.kill()
        holder.communicate()


def cached_run(lab: Lab, directory: Path):
    return lab.call("task.path=bench", f"runner.host={lab.server.url}", f"outputs={lab.root / 'outputs'}",
                    f"cache_dir={directory}")


def test_a_lock_held_briefly_is_waited_out(tmp_path):
    directory = tmp_path / "cache"
    with Lab(tmp_path, n=4) as lab, held(directory, 1.0):
        result = cached_run(lab, directory)
    assert result.returncode == EXIT["ok"], result.stderr
    store = Store(directory)
    assert store.stats().entries == 4
    store.close()


@pytest.mark.slow
def test_a_lock_held_long_fails_in_one_line_saying_so(tmp_path):
    directory = tmp_path / "cache"
    with Lab(tmp_path, n=4) as lab, held(directory, 120):
        started = time.monotonic()
        result = cached_run(lab, directory)
        took = time.monotonic() - started
        asked = list(lab.server.requests)
    assert (result.returncode, result.stderr) == (EXIT["usage"], f"benchrun: error: {locked(directory)}\n")
    assert cache.BUSY_TIMEOUT_S <= took < cache.BUSY_TIMEOUT_S + 10
    assert asked == []


def test_a_write_that_meets_a_long_lock_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(cache, "BUSY_TIMEOUT_S", 0.2)
    directory = tmp_path / "cache"
    store = Store(directory)
    entry = Entry(Completion(text="{}"), "m", None, "run", "2026-12-01T00:00:00Z")
    with held(directory, 120), pytest.raises(ConfigError) as refused:
        store.put("key", entry)
    assert str(refused.value) == locked(directory)
    with held(directory, 120), pytest.raises(ConfigError) as refused:
        store.clear()
    store.close()
    assert str(refused.value) == locked(directory)


@pytest.mark.slow
def test_a_run_that_meets_a_long_lock_mid_way_stops_in_one_line_and_resumes(tmp_path):
    directory = tmp_path / "cache"
    with Lab(tmp_path, n=6) as lab:
        with lab.holding_answers(after=2) as hold:
            proc = lab.start("task.path=bench", f"runner.host={lab.server.url}", f"outputs={tmp_path / 'outputs'}",
                             f"cache_dir={directory}", "runner.concurrency=1")
            lab.wait_for(lambda: hold.holding)
            with held(directory, 120):
                hold.release()
                _, stderr = proc.communicate(timeout=60)
        [run_dir] = lab.run_dirs()
        info = json.loads((run_dir / "run.json").read_text())
        resumed = lab.audit("resume", str(run_dir))
        assert (resumed.returncode, lab.verified(run_dir)) == (EXIT["ok"], True)
    assert (proc.returncode, stderr) == (EXIT["usage"], (
        f"benchrun: error: {locked(directory)}; run {info['run_id']} is recorded as 'failed' with 3 of 6 samples in "
        f"{run_dir}; finish it (a resume asks without the cache) with: benchrun-audit resume {run_dir}\n"))
    # the third answer, the one the cache could not keep, is recorded before the run stops (execute.executor)
    assert (info["status"], info["reason"], info["counts"]["responses"]) == ("failed", locked(directory), 3)
    assert json.loads((run_dir / "run.json").read_text())["counts"]["responses"] == 6

"""Runs and holders for the twenty-seventh hostile pass of the archive side: a run left `running` by a writer of
this machine that was killed, a response cache another process holds locked, and a run graded by a judge."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchrun.core.text import host_name
from tests.helpers.archives import replace_manifest, synthetic_run

HOLD = ("import sqlite3, sys; db = sqlite3.connect(sys.argv[1], isolation_level=None); db.execute('BEGIN EXCLUSIVE'); "
        "print('held', flush=True); sys.stdin.read()")
"""A process that holds a SQLite database's write lock until its standard input ends."""


def killed_here(run_dir: Path) -> Path:
    """A `synthetic_run(finish=False)` whose run.lock is the note of a writer of this machine that is gone (a pid that
    ended), an older benchrun's (no boot or start of its process): what `kill -9` of its run left."""
    synthetic_run(run_dir, [1, 0], finish=False, run_id="7" * 12)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    note = {"pid": int(gone.stdout), "host": host_name(), "since": "2026-12-01T08:00:00+00:00", "command": "benchrun"}
    (run_dir / "run.lock").write_text(json.dumps(note))
    return run_dir


def holding(database: Path) -> subprocess.Popen:
    """A process of its own holding `database`'s write lock (as a sqlite3 shell in a transaction does), once it holds
    it; end it by closing its standard input."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(database)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "held\n"
    return holder


def judged_by_two_calls(run_dir: Path) -> Path:
    """A run whose metric `closeness` is a judge's (a bool grade, asked twice an answer: 0, 0.5 or 1), valued 0, 0, 0
    and 0.5 on its four samples; run.json names the judge model asked, as a judged run's does."""
    synthetic_run(run_dir, [0, 0, 0, 0.5], judge={"identity": {"name": "judge", "digest": "j" * 64},
                                                  "runner": {"type": "ollama", "model": "judge"}})
    grade = {"name": "Grade", "origin": "builtin",
             "json_schema": {"type": "object", "properties": {"right": {"type": "boolean"}}, "required": ["right"]}}
    replace_manifest(run_dir, lambda manifest: manifest.update(
        judges=[{"name": "closeness", "rubric": "Is {response} right?", "format": grade, "score": "right"}]))
    return run_dir


def sweep_resumed_after(root: Path) -> Path:
    """A sweep (outputs/sw) whose one job was interrupted when the sweep ended (its sweep.json says so), then resumed
    to completion (its run.json says completed)."""
    from benchrun.archive.sweep import write_sweep_summary

    sweep = root / "outputs" / "sw"
    synthetic_run(sweep / "0_m", [1, 0], status="interrupted", reason="interrupted by SIGTERM", run_id="9" * 12)
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    write_sweep_summary(sweep)
    ended = sweep / "0_m"
    for name in list(ended.iterdir()):
        name.unlink()
    synthetic_run(ended, [1, 0], run_id="9" * 12)
    return sweep

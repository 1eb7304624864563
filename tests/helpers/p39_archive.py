"""Runs and files for the thirty-ninth hostile pass of the archive side: run folders whose run.json is still being
copied in, and runs whose wall clock was stepped back while they ran."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from itertools import chain, repeat
from pathlib import Path

import pytest

from benchrun.archive import clockstep, writer
from tests.helpers import archives


def arriving(root: Path, stand_in: str) -> Path:
    """A run whose run.json a copy in progress holds under `stand_in` (rsync's `.run.json.Xa9kQ2`, or its
    `.~tmp~/run.json`), none yet in its place."""
    run_dir = archives.synthetic_run(root, [1, 0])
    (run_dir / stand_in).parent.mkdir(exist_ok=True)
    os.rename(run_dir / "run.json", run_dir / stand_in)
    return run_dir


def first_files_copied(root: Path) -> Path:
    """A folder as rsync leaves it copying a run in (its files in name order): config.yaml, manifest.json and
    records.sha256 copied, responses.jsonl coming as `.responses.jsonl.WkfvDV`, the rest not yet there."""
    run_dir = archives.synthetic_run(root, [1, 0])
    os.rename(run_dir / "responses.jsonl", run_dir / ".responses.jsonl.WkfvDV")
    for name in ("run.json", "run.lock", "scores.jsonl", "seal.json", "summary.json"):
        (run_dir / name).unlink()
    return run_dir


def clock_stepped(root: Path, monkeypatch: pytest.MonkeyPatch, measured_s: float) -> Path:
    """A run whose two answers took 5 s (its wall time, 5 s), whose wall clock read 2 s from its start to its end:
    stepped back 3 s while it ran, if its writer's monotonic clock measured `measured_s` from its start to its end
    (its wall clock reads no time between them; from its first answer on), or a wall time said of it by a hand, if 0."""
    start = datetime(2026, 12, 7, 12, 0, tzinfo=timezone.utc)
    monkeypatch.setattr(archives, "now", lambda: start.isoformat(timespec="microseconds"))
    monkeypatch.setattr(writer, "now", lambda: (start + timedelta(seconds=2)).isoformat(timespec="microseconds"))
    monkeypatch.setattr(clockstep, "monotonic", chain([100.0], repeat(100.0 + measured_s)).__next__)
    monkeypatch.setattr(archives, "ANSWER_S", 5.0)
    return archives.synthetic_run(root, [1, 0])


def rescore_span(rescore_dir: Path) -> float:
    """Seconds from the start of the rescore in `rescore_dir` to its end, as its rescore.json gives them."""
    info = json.loads((rescore_dir / "rescore.json").read_text())
    return (datetime.fromisoformat(info["created_at"]) - datetime.fromisoformat(info["started_at"])).total_seconds()

"""Runs and files for the thirty-ninth hostile pass of the archive side: run folders whose run.json is still being
copied in, and runs whose wall clock was stepped back while they ran."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from benchrun.archive import clockstep, writer
from tests.helpers import archives


def arriving(root: Path, stand_in: str) -> Path:
    """A run whose run.json a copy in progress holds under `stand_in` (rsync's `.run.json.Xa9kQ2`), none yet in its
    place."""
    run_dir = archives.synthetic_run(root, [1, 0])
    os.rename(run_dir / "run.json", run_dir / stand_in)
    return run_dir


def clock_stepped(root: Path, monkeypatch: pytest.MonkeyPatch, measured_s: float) -> Path:
    """A run whose two answers took 5 s (its wall time, 5 s), whose wall clock read 2 s from its start to its end:
    stepped back 3 s while it ran, if its writer's monotonic clock measured `measured_s` from its start to its end
    (its wall clock reads no time between them), or a wall time said of it by a hand, if 0."""
    start = datetime(2026, 12, 7, 12, 0, tzinfo=timezone.utc)
    monkeypatch.setattr(archives, "now", lambda: start.isoformat(timespec="microseconds"))
    monkeypatch.setattr(writer, "now", lambda: (start + timedelta(seconds=2)).isoformat(timespec="microseconds"))
    monkeypatch.setattr(clockstep, "monotonic", iter([100.0, 100.0 + measured_s]).__next__)
    monkeypatch.setattr(archives, "ANSWER_S", 5.0)
    return archives.synthetic_run(root, [1, 0])

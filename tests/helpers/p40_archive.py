"""Runs and files for the fortieth hostile pass of the archive side: run folders whose files other tools are bringing
in or keep elsewhere, and a run whose clock went back in a session later killed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchrun.archive import writer
from tests.helpers import archives
from tests.helpers.p39_archive import clock_stepped


def stood_in(root: Path, name: str, stand_in: str) -> Path:
    """A run whose file `name` a tool holds under `stand_in` (a copy in progress, a placeholder), none in its place."""
    run_dir = archives.synthetic_run(root, [1, 0])
    os.rename(run_dir / name, run_dir / stand_in)
    return run_dir


def killed_after_a_step(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run whose wall clock went back 3 s before its first answer (`p39_archive.clock_stepped`), whose session was
    then killed: nothing written after its last answer, run.json as it was then."""
    monkeypatch.setattr(writer.RunWriter, "finish", lambda self, status, reason=None: self.info)
    return clock_stepped(root, monkeypatch, 3.0)


def fsynced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files `os.fsync` is called on from now on, in order (it still syncs them)."""
    names, sync = [], os.fsync

    def noted(fd: int) -> None:
        names.append(Path(os.readlink(f"/proc/self/fd/{fd}")).name)
        sync(fd)

    monkeypatch.setattr(os, "fsync", noted)
    return names


def conflict_copy(run_dir: Path, name: str, copy: str, more: bytes = b"") -> None:
    """A sync tool's conflict copy `copy` of the run's file `name` beside it: its bytes, and `more` after them."""
    (run_dir / copy).write_bytes((run_dir / name).read_bytes() + more)

"""What run.lock tells of a run whose run.json says `running` and that no live process writes: its writer stopped
before it ended (killed, or its disk failed), and what to do. Read by `list`, `show`, the report and `verify`, so it
loads no manifest model (tests/test_audit_imports.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchrun.archive.dirlock import (
    ELSEWHERE,
    LockState,
    describe,
    live_writer,
    of_another_machine,
    probe,
    writing_elsewhere,
)
from benchrun.core.layout import LOCK

if TYPE_CHECKING:
    from benchrun.archive.reader import Run


def stopped(run: Run) -> str | None:
    """Why a run whose run.json says `running` is not being written (`show` and the report give its status with it):
    its writer stopped before it ended, and what to do; None while a writer writes it, once it has ended, or when its
    note is another machine's (whose lease verify watches for seconds: too long for each running job of a report)."""
    if run.info.status != "running" or run.info.files:
        return None
    lock = probe(run.path / LOCK)
    if lock.misplaced is not None:
        return f"{lock.misplaced} in place of {LOCK}, which no writer can hold: none is writing it"
    if of_another_machine(lock.note) or live_writer(run.path / LOCK, lock):
        return None
    return f"no live process holds {LOCK}: {not_held(run, lock)}"


def not_held(run: Run, lock: LockState) -> str:
    """What the lock file tells of a `running` run's last writer: it died holding the lock, or let go cleanly
    (which a writer does once it has ended the run), or there never was one here."""
    if not lock.exists:
        return "there is none, so the directory was copied without it or run.json edited"
    if writing_elsewhere(lock.note):
        return f"{ELSEWHERE.format(describe(lock.note))}; verify the run where it is written"
    if lock.note:
        finish = ("it asked nothing, for it stopped before it compiled: start a new run" if run.info.manifest_id is None
                  else f"finish it with: benchrun-audit resume {run.path}")
        return f"its writer ({describe(lock.note)}) stopped before the run ended (killed, or its disk failed); {finish}"
    return "its last writer let go of it cleanly, which a writer does once the run has ended: run.json was edited"

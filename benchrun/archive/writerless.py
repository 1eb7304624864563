"""What run.lock tells of a run whose run.json says `running`: its live writer, or that none writes it (killed, or
its disk failed) and what to do. Read by `list`, `show`, the report and `verify`, so it loads no manifest model
(tests/test_audit_imports.py), and the lock modules only when a run says `running`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from benchrun.core.advice import audit_command
from benchrun.core.layout import LOCK

if TYPE_CHECKING:
    from benchrun.archive.dirlock import LockState
    from benchrun.archive.reader import Run


@dataclass(frozen=True)
class LockTold:
    """What run.lock tells of a run that says `running`: what is in its place, which no writer can hold
    (`misplaced`), its live writer (`writer`), or why none writes it (`why`); none of them when it is not known here
    (a note of another machine's writer, its lease not watched)."""

    misplaced: str | None = None
    writer: str | None = None
    why: str | None = None


def lock_told(run: Run, watch_remote: bool = True) -> LockTold:
    """What run.lock tells of `run`, which says `running`; `watch_remote` False: a note of another machine's writer,
    whose lease takes seconds to watch (too long for each running job of a report), tells nothing."""
    from benchrun.archive.dirlock import live_writer, of_another_machine, probe

    lock = probe(run.path / LOCK)
    if lock.misplaced is not None:
        return LockTold(misplaced=lock.misplaced)
    if not watch_remote and of_another_machine(lock.note):
        return LockTold()
    if writer := live_writer(run.path / LOCK, lock):
        return LockTold(writer=writer)
    return LockTold(why=not_held(run, lock))


def stopped(run: Run) -> str | None:
    """Why a run whose run.json says `running` is not being written (`show` and the report give its status with it):
    its writer stopped before it ended, and what to do; None while a writer writes it, once it has ended, or when its
    note is another machine's (`lock_told`)."""
    if run.info.status != "running" or run.info.files:
        return None
    told = lock_told(run, watch_remote=False)
    if told.misplaced is not None:
        return f"{told.misplaced} in place of {LOCK}, which no writer can hold: none is writing it"
    return f"no live process holds {LOCK}: {told.why}" if told.why else None


def not_held(run: Run, lock: LockState) -> str:
    """What the lock file tells of a `running` run's last writer: it died holding the lock, or let go cleanly
    (which a writer does once it has ended the run), or there never was one here."""
    from benchrun.archive.dirlock import ELSEWHERE, describe, writing_elsewhere

    if not lock.exists:
        return "there is none, so the directory was copied without it or run.json edited"
    if writing_elsewhere(lock.note):
        return f"{ELSEWHERE.format(describe(lock.note))}; verify the run where it is written"
    if lock.note:
        finish = ("it asked nothing, for it stopped before it compiled: start a new run" if run.info.manifest_id is None
                  else f"finish it with: {audit_command('resume', run.path)}")
        return f"its writer ({describe(lock.note)}) stopped before the run ended (killed, or its disk failed); {finish}"
    return "its last writer let go of it cleanly, which a writer does once the run has ended: run.json was edited"

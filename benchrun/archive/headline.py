"""A run's row in a listing checked before it is shown, cheaply and with light imports (`list` starts in a quarter of
a second, loading neither the writer nor the manifest's models): run.json under its seal, summary.json under
run.json's digest; and the line every reader gives of a run it found changed. `archive.trust` checks whole runs."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from benchrun.archive.arriving import file_arriving
from benchrun.core.advice import audit_command
from benchrun.core.errors import ArchiveError
from benchrun.core.filebytes import missing, missing_because
from benchrun.core.layout import RUN, SEAL, SUMMARY

if TYPE_CHECKING:
    from benchrun.archive.reader import Run


def headline_unverified(run: Run) -> str | None:
    """`file: why` of the first file a run's row is made of (its status from run.json, its numbers from summary.json)
    that changed since the run ended; None when none did, the run did not end (its row holds no numbers), or its live
    writer is between its final run.json and its seal."""
    if (expected := run.info.files.get(SUMMARY)) is None and run.info.status == "running":
        return None
    if (seal := run.seal) is None:
        from benchrun.archive.dirlock import run_writer  # only for a run with no seal: `list` starts without the lock's

        if run_writer(run.path) is not None:  # its writer is sealing it now
            return None
        return f"{SEAL}: {seal_missing(run)}"
    if seal.run_id != run.id:
        return f"{SEAL}: the seal of run {seal.run_id[:64]!r}, not of this run ({run.id}): nothing covers {RUN}"
    if _sha256(run.path / RUN) != seal.run_json.sha256:
        return f"{RUN}: changed since the run was sealed"
    if expected is None:  # it ended before it had a summary (failed at its start), or it was removed with its digest
        return None if (dropped := summary_dropped(run)) is None else f"{SUMMARY}: {dropped}"
    if not os.path.lexists(run.path / SUMMARY):  # removed since the run ended, or a copy is bringing it in
        return f"{SUMMARY}: {missing(run.path / SUMMARY)}"
    if _sha256(run.path / SUMMARY) != expected.sha256:
        return f"{SUMMARY}: changed since the run ended"
    return None


def seal_missing(run: Run) -> str:
    """Why a run that ended has no seal.json, as said after its name: nothing covers its run.json, or a copy is still
    bringing the run in (`archive.arriving.file_arriving`: rsync copies seal.json among its last files)."""
    why = f"the run ended ({run.info.status}) but nothing covers {RUN}"
    if (found := file_arriving(run.path)) is None or found[0] == SEAL:
        return missing_because(run.path / SEAL, why)
    return f"missing: {why} yet: a copy is still bringing the run here ({found[0]}: {found[1]})"


def summary_dropped(run: Run) -> str | None:
    """Why a compiled run that ended has no summary.json, which the final digests in its run.json do not name: its
    writer wrote it before them (a writer whose disk failed writes neither), so it was removed and run.json edited
    since (its counts would be checked against nothing); None when it has one, or never compiled or ended."""
    info = run.info
    if info.manifest_id is None or not info.files or SUMMARY in info.files or os.path.lexists(run.path / SUMMARY):
        return None
    return (f"missing: the run ended ({info.status}), and its writer wrote {SUMMARY} before the final digests in "
            f"{RUN}, which do not name it: it was removed, and {RUN} edited since")


def _sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def distrusted(run: Run, problem: str) -> ArchiveError:
    """The error of a reader that found `problem` (`file: why`) in the run before reading a number of it."""
    return ArchiveError(f"run {run.id}: {problem}, so what it says cannot be trusted; "
                        f"{audit_command('verify', run.path)} says what changed", file=str(run.path))

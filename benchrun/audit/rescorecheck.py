"""verify of a run's rescores: each finished one names the run, its files match the digests its rescore.json holds,
and its numbers are what its records make; those of the run it scored are kept in the run's one pass (`RunPass`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from pydantic import ValidationError

from benchrun.archive.dirlock import run_writer
from benchrun.archive.reader import Run, archived_model, validation_said
from benchrun.audit.digests import check_file, run_manifest
from benchrun.audit.finding import Finding
from benchrun.audit.rescored import RESCORE_NUMBERS, RescoreInfo, covers_fewer
from benchrun.audit.summarycheck import RescoreBooks, RunPass
from benchrun.core.errors import ArchiveError
from benchrun.core.filebytes import kept_elsewhere, not_a_file
from benchrun.core.layout import (
    JUDGEMENTS,
    RESCORE_FILE,
    RESCORE_LOG,
    RESCORES,
    RUN_OWN,
    SCORES,
    SUMMARY,
    number_in,
)
from benchrun.core.text import NotJSON

RESCORE_WRITES = (RESCORE_FILE, RESCORE_LOG, SCORES, JUDGEMENTS, SUMMARY)
"""What a rescore writes in its folder."""
UNDIGESTED_SUMMARY = ("no digest in rescore.json, as a benchrun before b364313 wrote it: checked against what its "
                      "scores make")
"""A rescore's summary.json that its rescore.json does not digest: every figure in it is made by its scores, which
the digest of scores.jsonl covers."""
RUN_ONLY = tuple(name for name in RUN_OWN if name not in RESCORE_WRITES)
"""A run's own names that no rescore writes (run.json, seal.json, rescores/, ...): a folder holding one is a run's, or a
copy of one, never a rescore's."""


@dataclass(frozen=True)
class Checked:
    """A rescore's findings, and the books its numbers are checked with once its files are as written (None: its
    numbers are not checked, its findings say why)."""

    found: list[Finding]
    books: RescoreBooks | None = None


@dataclass(frozen=True)
class Rescored:
    """What verify found of a run's rescores, each with its books, which the run's one pass keeps (`RunPass`)."""

    checked: list[Checked]

    def findings(self, read: bool) -> list[Finding]:
        """Each rescore's findings, with its numbers' once the run's pass has `read` every record (when it has not,
        the run's own findings say why)."""
        return [finding for each in self.checked
                for finding in [*each.found, *(_numbers(each.books) if each.books is not None and read else ())]]


def check_rescores(run: Run, kept: RunPass) -> Rescored:
    """Each finished rescore under rescores/: its rescore.json names this run and its files match their digests; the
    books of those whose files do are `kept` for the run's pass."""
    folder = run.path / RESCORES
    if folder.is_symlink():
        return Rescored([Checked([Finding(False, RESCORES, f"a symbolic link (to {os.readlink(folder)}) in place of "
                                                           "the run's own folder: the run directory no longer holds "
                                                           "its rescores; none is checked")])])
    if os.path.lexists(folder) and not folder.is_dir():
        return Rescored([Checked([Finding(False, RESCORES, f"{not_a_file(folder.stat().st_mode) or 'a file'} in place "
                                                           "of the run's own folder, which only a rescore makes: no "
                                                           "rescore of the run is there")])])
    if not folder.exists():
        return Rescored([])
    entries = sorted(folder.iterdir())
    numbered = [p for p in entries if number_in(p.name) is not None]
    newest = max((p for p in numbered if number_in(p.name) < RESCORE_NUMBERS), key=lambda p: number_in(p.name),
                 default=None)  # the one a live rescore, holding the run's lock, writes
    writer = run_writer(run.path) if newest else None
    checked = Rescored([*(check_rescore(run, path, writer if path == newest else None) for path in numbered),
                        *(Checked([_unnumbered(path)]) for path in entries
                          if number_in(path.name) is None and not path.name.startswith("."))])
    kept.rescores += [each.books for each in checked.checked if each.books is not None]
    return checked


def _unnumbered(path: Path) -> Finding:
    """What is in rescores/ that no rescore made (each makes one folder, named by its number): a copy a file manager
    made of one (`001 (1)`), or a file put there; hidden ones (`.DS_Store`) are passed over."""
    kind = (f"a symbolic link (to {os.readlink(path)})" if path.is_symlink() else "a folder" if path.is_dir()
            else not_a_file(path.stat().st_mode) or "a file")
    return Finding(False, f"{RESCORES}/{path.name}", f"{kind} that no rescore made: a rescore's folder is named by its "
                                                     "number (001, 002, ...); put there since (a copy a file manager "
                                                     "made?), nothing in it is checked as the run's")


def check_rescore(run: Run, path: Path, writer: str | None) -> Checked:
    """One rescore: the one finding why its claims are not checked (`_claims`), or its claims checked, with the books
    its numbers are checked with once its files are as written."""
    name, info = f"{RESCORES}/{path.name}", _claims(run, path, writer)
    if isinstance(info, Finding):
        return Checked([info])
    partial = [Finding(True, name, said) for said in [covers_fewer(info, run.info.counts.responses)] if said]
    partial += [] if SUMMARY in info.files else [Finding(True, f"{name}/{SUMMARY}", UNDIGESTED_SUMMARY)]
    own = Finding(True, f"{name}/{RESCORE_FILE}", f"rescore {info.rescore} of this run")  # a link in its place: `held`
    digested = [replace(f, file=f"{name}/{f.file}") for file, digest in info.files.items()
                for f in check_file(path, file, digest, ("rescore", RESCORE_FILE))]
    manifest = run_manifest(run) if all(f.ok for f in digested) else None  # the run's, hashing to its id
    return Checked([own, *digested, *partial], None if manifest is None else RescoreBooks(run, manifest, path, info))


def _claims(run: Run, path: Path, writer: str | None) -> RescoreInfo | Finding:
    """The rescore.json of this run's rescore at `path`, whose claims are checked; or the one finding why none is:
    unfinished (no rescore.json: `writer` writes it now, or it was stopped, so it claims nothing), or it is no
    rescore's folder (it holds what only a run writes: `RUN_ONLY`), no rescore.json of this folder of this run, or
    digests too few or outside its folder."""
    name = f"{RESCORES}/{path.name}"
    if not path.is_dir():  # a name that numbers a rescore is its folder; a link to one is said by `held`
        kind = (f"a symbolic link (to {os.readlink(path)})" if path.is_symlink()
                else not_a_file(path.stat().st_mode) or "a file")
        return Finding(False, name, f"{kind} in place of a rescore's folder, which only a rescore makes")
    if (found := next((own for own in RUN_ONLY if os.path.lexists(path / own)), None)) is not None:
        return Finding(False, name, f"holds {found}, which a run writes and no rescore does: no rescore's folder (a "
                                    "run, or a copy of one, put there); nothing in it is checked as the run's")
    if not os.path.lexists(path / RESCORE_FILE):
        if where := kept_elsewhere(path / RESCORE_FILE):  # a copy bringing it in: not what a stopped rescore left
            return Finding(False, f"{name}/{RESCORE_FILE}", f"missing: {where}")
        how = f"being written now ({writer}); verify it once it has ended" if writer else "it was stopped"
        return Finding(True, name, f"unfinished (no {RESCORE_FILE}: {how}): claims nothing, not checked")
    try:
        info = archived_model(path / RESCORE_FILE, RescoreInfo)
    except (ArchiveError, ValueError) as err:  # a newer benchrun's is said to be that, as its run.json is
        return Finding(False, f"{name}/{RESCORE_FILE}", _unread(err))
    why = _not_claimed(run, path, info)
    return info if why is None else Finding(False, f"{name}/{RESCORE_FILE}", why)


def _unread(err: ArchiveError | ValueError) -> str:
    """Why a rescore.json is not read, as its run.json's would be said."""
    return (str(err) if isinstance(err, ArchiveError) else f"unreadable: {validation_said(err)}"
            if isinstance(err, ValidationError) else f"unreadable: {err}" if isinstance(err, NotJSON)
            else "unreadable: not a rescore's JSON")


def _not_claimed(run: Run, path: Path, info: RescoreInfo) -> str | None:
    """Why a read rescore.json's claims are not this folder's to check: a copy, another run's, a digest of a file
    outside its folder, or none of a file every such rescore writes; None when they are."""
    if (info.run_id, info.manifest_id) == (run.id, run.info.manifest_id) and info.rescore != path.name:
        return f"is rescore {info.rescore} of this run, in folder {path.name}: a copy of it, which no rescore makes"
    if (info.rescore, info.run_id, info.manifest_id) != (path.name, run.id, run.info.manifest_id):
        return (f"is rescore {info.rescore} of run {info.run_id} (manifest {str(info.manifest_id)[:12]}…), not of "
                "this run")
    strays = [file for file in info.files if Path(file).name != file or file in (".", "..")]
    if strays:
        return f"names a file outside its folder: {strays[0]!r}"
    if SCORES not in info.files:
        return f"holds no digest of {SCORES}, which every rescore writes: nothing covers what it says"
    if info.judge is not None and JUDGEMENTS not in info.files:
        return (f"holds no digest of {JUDGEMENTS}, which a rescore with --rejudge writes: nothing covers the grades it "
                "asked")
    return None


def _numbers(books: RescoreBooks) -> list[Finding]:
    """A rescore's numbers that its records do not make (`RescoreBooks.disagreement`), or the record it cannot read."""
    try:
        return [Finding(False, *found) for found in [books.disagreement()] if found]
    except ArchiveError as err:
        return [Finding(False, books.name, str(err))]

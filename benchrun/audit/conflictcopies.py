"""A sync tool's conflict copy of a run's file (or a rescore's) beside it: the run's folder was written on two machines
at once (a folder Syncthing, Dropbox or Nextcloud keeps in step), and the tool kept one version aside under another
name."""

from __future__ import annotations

import filecmp
import os
from pathlib import Path

from benchrun.audit.finding import Finding
from benchrun.core.conflictnames import ConflictCopy, conflict_copies_of
from benchrun.core.filebytes import names_in
from benchrun.core.layout import JUDGEMENTS, RESCORE_FILE, RESCORES, RUN_FILES, SCORES, number_in

RESCORE_FILES = (RESCORE_FILE, SCORES, JUDGEMENTS)
"""A rescore's files, in its folder `rescores/NNN/`."""


def conflict_copies(run_dir: Path) -> list[Finding]:
    """Each conflict copy of one of the run's files in `run_dir`, or of a rescore's in its folder: said where it holds
    the file's bytes, failed where it holds others (a version no digest covers, which may hold answers it lacks) or
    its bytes cannot be read as they are (compressed, still being copied in)."""
    rescores = [Path(RESCORES, name) for name in names_in(run_dir / RESCORES) if number_in(name) is not None]
    return [finding for folder, files in ((Path(), RUN_FILES), *((each, RESCORE_FILES) for each in rescores))
            for finding in _copies(run_dir, folder, files)]


def _copies(run_dir: Path, folder: Path, files: tuple[str, ...]) -> list[Finding]:
    """Each conflict copy of one of `files` in the run's `folder`."""
    names = names_in(run_dir / folder)
    return [_said(run_dir, folder / name, folder, copy) for name in files for copy in conflict_copies_of(name, names)]


def _said(run_dir: Path, name: Path, folder: Path, copy: ConflictCopy) -> Finding:
    """What a conflict copy `copy` in the run's `folder` of the run's file `name` (relative to `run_dir`) is."""
    kept = f"{copy.tool}'s conflict copy of {name.name} (the run's folder was written on two machines at once)"
    where = folder / copy.name
    if copy.veiled is not None:
        return Finding(False, str(where), f"{kept}, and {copy.veiled}: a version of {name.name} no digest of the run "
                                          "covers, whose bytes were not compared (it may hold answers the run lacks): "
                                          "let it be whole, compare the two, and keep one")
    if os.path.isfile(run_dir / name) and filecmp.cmp(run_dir / name, run_dir / where, shallow=False):
        return Finding(True, str(where), f"{kept}: the same bytes as {name.name}; remove it")
    return Finding(False, str(where), f"{kept}: another version of {name.name}, which no digest of the run covers (it "
                                      "may hold answers the run lacks): compare the two, and keep one")

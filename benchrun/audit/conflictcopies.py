"""A sync tool's conflict copy of a run's file (or a rescore's) beside it: the run's folder was written on two machines
at once (a folder Syncthing, Dropbox or Nextcloud keeps in step), and the tool kept one version aside under another
name."""

from __future__ import annotations

import filecmp
import os
import re
from pathlib import Path

from benchrun.audit.finding import Finding
from benchrun.core.filebytes import names_in
from benchrun.core.layout import JUDGEMENTS, RESCORE_FILE, RESCORES, RUN_FILES, SCORES, number_in

CONFLICTS = {"Syncthing": r"{stem}\.sync-conflict-\d{{8}}-\d{{6}}-[A-Z0-9]{{7}}{ext}",
             "Dropbox (or Nextcloud)": r"{stem} \([^()]*conflicted copy[^()]*\){ext}",
             "ownCloud": r"{stem}_conflict-\d{{8}}-\d{{6}}{ext}"}
"""The name each sync tool gives the version of a file it keeps aside in a conflict: `{stem}` and `{ext}` the
file's (`run`, `.json`)."""
RESCORE_FILES = (RESCORE_FILE, SCORES, JUDGEMENTS)
"""A rescore's files, in its folder `rescores/NNN/`."""


def conflict_copies(run_dir: Path) -> list[Finding]:
    """Each conflict copy of one of the run's files in `run_dir`, or of a rescore's in its folder: said where it holds
    the file's bytes, failed where it holds others (a version no digest covers, which may hold answers it lacks)."""
    rescores = [Path(RESCORES, name) for name in names_in(run_dir / RESCORES) if number_in(name) is not None]
    return [finding for folder, files in ((Path(), RUN_FILES), *((each, RESCORE_FILES) for each in rescores))
            for finding in _copies(run_dir, folder, files)]


def _copies(run_dir: Path, folder: Path, files: tuple[str, ...]) -> list[Finding]:
    """Each conflict copy of one of `files` in the run's `folder`."""
    names = names_in(run_dir / folder)
    return [_said(run_dir, folder / name, folder / copy, tool) for name in files for tool, made in _patterns(name)
            for copy in names if made.fullmatch(copy)]


def _patterns(name: str) -> list[tuple[str, re.Pattern[str]]]:
    """Each sync tool's pattern of a conflict copy's name of the file `name`."""
    stem, ext = (re.escape(part) for part in os.path.splitext(name))
    return [(tool, re.compile(pattern.format(stem=stem, ext=ext))) for tool, pattern in CONFLICTS.items()]


def _said(run_dir: Path, name: Path, copy: Path, tool: str) -> Finding:
    """What a conflict copy `copy` of the run's file `name` (both relative to `run_dir`) is."""
    kept = f"{tool}'s conflict copy of {name.name} (the run's folder was written on two machines at once)"
    if os.path.isfile(run_dir / name) and filecmp.cmp(run_dir / name, run_dir / copy, shallow=False):
        return Finding(True, str(copy), f"{kept}: the same bytes as {name.name}; remove it")
    return Finding(False, str(copy), f"{kept}: another version of {name.name}, which no digest of the run covers (it "
                                     "may hold answers the run lacks): compare the two, and keep one")

"""A run folder that a copy is still bringing in (rsync, a sync tool) or whose run.json iCloud Drive keeps in the
cloud: no run.json there yet, and a file of the run's names kept elsewhere (`core.filebytes.kept_elsewhere`). rsync
copies a run's files in name order, run.json among the last: the folder holds the rest first."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from benchrun.core.conflictnames import conflict_copies_of
from benchrun.core.filebytes import RSYNC_HELD, kept_elsewhere, names_in
from benchrun.core.layout import DIGESTS, RESPONSES, RUN, RUN_FILES, SEAL

RUN_MARKS = (DIGESTS, RESPONSES, SEAL)
"""The files a run's folder alone holds (a rescore's folder holds scores and a summary, a Hydra job's a config.yaml)."""


def run_arriving(folder: Path) -> str | None:
    """What is said of `folder`, holding no run.json, when a file of a run is kept elsewhere: run.json's place first
    (`run.json: iCloud Drive keeps it ...`), else the first other file's; else when it holds files a run's folder
    alone holds (`part_copied`); None when neither."""
    if where := kept_elsewhere(folder / RUN):
        return f"{RUN}: {where}"
    if (found := file_arriving(folder)) is not None:
        return f"no {RUN} yet, and {found[0]}: {found[1]}"
    return part_copied(folder)


def part_copied(folder: Path) -> str | None:
    """What is said of `folder`, holding no run.json, that holds files a run's folder alone holds (RUN_MARKS): a run
    copied in part by a tool that names none of its files in the making, its run.json renamed, or only a sync tool's
    conflict copy of it left (`core.conflictnames`); None when none."""
    if not (held := [name for name in RUN_MARKS if os.path.lexists(folder / name)]):
        return None
    said = f"no {RUN}, though it holds a run's {', '.join(held)}: a copy of the run stopped part way, or still coming"
    names = names_in(folder)
    if kept := conflict_copies_of(RUN, names):
        copy = kept[0]
        veiled = f", and {copy.veiled}" if copy.veiled else ""
        return f"{said} ({copy.name} is here: {copy.tool}'s conflict copy of its {RUN}, the one version left{veiled})"
    renamed = next((name for name in names if name.startswith(RUN) and name != RUN), None)
    return said if renamed is None else f"{said} ({renamed} is here: its {RUN} renamed, or half copied)"


def file_arriving(folder: Path) -> tuple[str, str] | None:
    """The first of a run's files in `folder` kept elsewhere (being copied in, in the cloud), and where; None when
    none is."""
    return next(((name, where) for name in RUN_FILES if (where := kept_elsewhere(folder / name))), None)


def may_be_arriving(names: Iterable[str]) -> bool:
    """Whether a folder's entries `names` may show a run arriving (`run_arriving`): one holds the name of a run's file
    (what iCloud Drive, rsync and the sync tools put in a file's place do), or is rsync's RSYNC_HELD; a cheap look
    before the folder is searched (a `.DS_Store` in every folder is none)."""
    return any(name == RSYNC_HELD or any(file in name for file in RUN_FILES) for name in names)


def arriving_run(folder: Path) -> bool:
    """Whether `folder` (a sweep's job's) holds a run's run.json, or a run a copy is bringing in (`run_arriving`)."""
    return os.path.lexists(folder / RUN) or run_arriving(folder) is not None

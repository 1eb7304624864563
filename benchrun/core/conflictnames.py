"""The names a sync tool gives the version of a file it keeps aside in a conflict (Syncthing, Dropbox, Nextcloud,
ownCloud, Seafile), as such a copy stands on a disk: whole, compressed in place, or still being brought in."""

from __future__ import annotations

import os
import re
from typing import NamedTuple

from benchrun.core.filebytes import COMPRESSED, COPYING, SYNCING

CONFLICTS = {"Syncthing": r"{stem}\.sync-conflict-\d{{8}}-\d{{6}}-[A-Z0-9]{{7}}{ext}",
             "Dropbox (or Nextcloud)": r"{stem} \([^()]*conflicted copy[^()]*\){ext}",
             "ownCloud": r"{stem}_conflict-\d{{8}}-\d{{6}}{ext}",
             "Seafile": r"{stem} \(SFConflict [^()]*\){ext}"}
"""The name each sync tool gives the version of a file it keeps aside in a conflict: `{stem}` and `{ext}` the
file's (`run`, `.json`)."""


class ConflictCopy(NamedTuple):
    """A conflict copy's name, the tool that kept it aside, and what keeps its bytes from being read as they are
    (`gzip compressed it`, `rclone is still copying it here`; None for nothing)."""

    name: str
    tool: str
    veiled: str | None


def conflict_copies_of(name: str, names: list[str]) -> list[ConflictCopy]:
    """Each of `names` (a folder's) that is a conflict copy of the file `name`, in any of the forms it may stand in."""
    forms = [(tool, re.compile(pattern), veiled) for tool, copy in _copy_patterns(name) for pattern, veiled in
             _forms(copy)]
    return [ConflictCopy(each, tool, veiled) for tool, made, veiled in forms for each in names if made.fullmatch(each)]


def _copy_patterns(name: str) -> list[tuple[str, str]]:
    """Each sync tool's pattern of a conflict copy's name of the file `name`."""
    stem, ext = (re.escape(part) for part in os.path.splitext(name))
    return [(tool, pattern.format(stem=stem, ext=ext)) for tool, pattern in CONFLICTS.items()]


def _forms(copy: str) -> list[tuple[str, str | None]]:
    """The patterns of a conflict copy's name `copy` as it stands whole, compressed (COMPRESSED), or being brought in
    by a sync tool (SYNCING) or a copy (COPYING), each with what keeps its bytes from being read."""
    compressed = [(copy + re.escape(suffix), f"{tool} compressed it") for tool, (suffix, _) in COMPRESSED.items()]
    coming = [(pattern.format(copy), f"{tool} is still copying it here") for tool, patterns in
              (*SYNCING.items(), *((tool, (pattern,)) for tool, pattern in COPYING.items())) for pattern in patterns]
    return [(copy, None), *compressed, *coming]

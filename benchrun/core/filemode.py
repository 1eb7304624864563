"""The process's file-mode mask (umask), which every folder and file benchrun makes is created under."""

from __future__ import annotations

import os

from benchrun.core.errors import ArchiveError
from benchrun.core.procfs import status_field

OWNER = 0o700
"""The owner's own permissions: a folder benchrun makes must be entered and written by it, a file read back."""


def umask() -> int:
    """The process's umask, as /proc says it (Linux 4.7 and later); elsewhere by setting one and putting it back,
    which a thread making a file in between would have made under the mask set."""
    if (said := status_field("Umask")) is not None:
        return int(said, 8)
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def refuse_owner_masked(command: str) -> None:
    """Refuse, before `command` makes anything, a umask that takes the owner's own permissions away (`umask 0177`):
    the run directory Hydra made could not be entered (a traceback), and a rescore left a `rescores/` folder that
    stopped every later rescore of the run, under any umask."""
    if (mask := umask()) & OWNER:
        raise ArchiveError(f"umask {mask:04o} takes your own permissions away from the folders and files {command} "
                           "makes (a folder it could not enter, a file it could not read back, left in the archive "
                           "for every later command); set a umask that leaves them: umask 022 (or 077, yours alone)")

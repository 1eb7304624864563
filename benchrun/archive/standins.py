"""What stands in an archive file's place that is not the file as written, told by its bytes: a Git LFS pointer (the
repository holding the run was cloned without its LFS files), a merge's conflict markers (git joined two versions
of it), or NUL bytes to its end (what a file system leaves of writes a crash of the machine lost). Said wherever a
file is found changed, as line ends made CRLF are (`trust.CONVERTED`)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import BinaryIO

from benchrun.core.errors import ArchiveError
from benchrun.core.filebytes import regular_file
from benchrun.core.layout import RUN
from benchrun.core.text import counted

MAX_POINTER = 1024
"""Git LFS's pointer files are smaller than this (its specification, v1)."""
LFS_POINTER = re.compile(rb"version https://git-lfs\.github\.com/spec/v1\n(?:.*\n)*?oid sha256:([0-9a-f]{64})\n"
                         rb"size (\d+)\n")
"""A Git LFS pointer: its version line first, then (keys in order) its object's sha256 and size."""
CONFLICT = (b"<<<<<<< ", b">>>>>>> ")
"""The lines git writes around the two versions of a file it could not merge."""
PIECE = 2**20
"""How much of a file is read at once: a line of gigabytes is never held whole."""
SCAN = 64 * 2**20
"""The most of a file read for markers, or back from its end for NUL bytes: a crash loses seconds of writes, not
gigabytes, and a file planted with gigabytes (a sparse one) is never read whole for what it is."""
NOT_THE_ID = f"its sha256 is not the manifest id in {RUN}"
"""What a changed manifest.json is said to be when its bytes tell nothing more."""


def stood_in(path: Path, sha256: str | None = None) -> str | None:
    """Why the file at `path` is not the file written, when its bytes tell (see the module docstring); `sha256`: the
    file's digest as written, which a pointer to it names. None when they tell nothing, or it is no regular file or
    cannot be read."""
    try:
        with regular_file(path, str(path), ArchiveError) as handle:  # a pipe there is never waited on
            head = handle.read(MAX_POINTER)
            return _pointer(head, sha256) or _conflict(handle) or _zeroed(handle)
    except (OSError, ArchiveError):
        return None


def _pointer(head: bytes, sha256: str | None) -> str | None:
    """Of a Git LFS pointer, what it is and what to do."""
    if len(head) >= MAX_POINTER or not (found := LFS_POINTER.match(head)):
        return None
    oid, size = found.group(1).decode(), int(found.group(2))
    to = "the file as written" if oid == sha256 else "a file"
    return (f"a Git LFS pointer to {to} (sha256 {oid[:12]}…, {counted(size, 'byte')}) in its place, not the file: the "
            "repository was cloned or checked out without Git LFS; run `git lfs pull` in it, then try again")


def _conflict(handle: BinaryIO) -> str | None:
    """Of a file holding a merge's conflict markers (a line opening one, then one closing it), where."""
    handle.seek(0)
    number, opened, start = 0, None, True
    while handle.tell() < SCAN and (piece := handle.readline(PIECE)):
        number += start
        if start and piece.startswith(CONFLICT[0]) and opened is None:
            opened = number
        elif start and piece.startswith(CONFLICT[1]) and opened is not None:
            return (f"it holds a merge's conflict markers (`<<<<<<<` at line {opened}, `>>>>>>>` at line {number}): "
                    "git joined two versions of it; check out the one that verifies (`git checkout --ours` or "
                    "`--theirs` on it), then try again")
        start = piece.endswith(b"\n")
    return None


def _zeroed(handle: BinaryIO) -> str | None:
    """Of a file whose end is NUL bytes (within SCAN of its end), from where."""
    end = handle.seek(0, os.SEEK_END)
    start = end
    while start > 0:
        if end - start >= SCAN:
            return None
        handle.seek(max(0, start - PIECE))
        piece = handle.read(start - max(0, start - PIECE))
        kept = piece.rstrip(b"\0")
        start -= len(piece) - len(kept)
        if kept:
            break
    if start == end:
        return None
    return (f"its last {counted(end - start, 'byte')} (from byte {start:,} on) are NUL bytes, which benchrun never "
            "writes: what a file system leaves of writes that a crash of the machine (power lost) kept from its disk; "
            "what was written there is gone: restore the file from a copy")

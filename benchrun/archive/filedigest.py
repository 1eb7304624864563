"""A file's digest as the archive keeps it: its sha256, size and line count, read in chunks."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

from benchrun.core.records import FileDigest


def file_digest(path: Path, stop: threading.Event | None = None) -> FileDigest:
    """sha256, size and line count of a file, read in 1 MiB chunks; InterruptedError once `stop` is set (a digest
    made beside other work that failed: a model file of 60 GB read to the end after its load was refused)."""
    sha = hashlib.sha256()
    size, lines = hash_into(sha, path, stop)
    return FileDigest(sha256=sha.hexdigest(), size=size, lines=lines)


def hash_into(sha: Any, path: Path, stop: threading.Event | None = None) -> tuple[int, int]:
    """Feed the file at `path` to `sha` in 1 MiB chunks; its size and line count (see file_digest for `stop`)."""
    size, lines = 0, 0
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            if stop is not None and stop.is_set():
                raise InterruptedError(f"the digest of {path} was called off")
            sha.update(chunk)
            size += len(chunk)
            lines += chunk.count(b"\n")
    return size, lines

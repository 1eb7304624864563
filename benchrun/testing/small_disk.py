"""A small disk for the fault lab: a tmpfs mounted for a scenario (needs root), and filling it; a directory made a
read-only file system."""

from __future__ import annotations

import os
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def small_disk(path: Path, size_kb: int) -> Iterator[Path]:
    """A tmpfs of `size_kb` mounted at `path` (needs root)."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(path)], check=True,
                   capture_output=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


@contextmanager
def read_only(path: Path) -> Iterator[Path]:
    """`path` bound over itself and remounted read-only (needs root): a read-only file system there."""
    subprocess.run(["mount", "--bind", str(path), str(path)], check=True, capture_output=True)
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(path)], check=True, capture_output=True)
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def can_mount() -> bool:
    """Whether this process may mount a tmpfs (root, and a kernel that lets it)."""
    probe = Path(os.environ.get("TMPDIR", "/tmp")) / f"benchrun-mount-probe-{os.getpid()}"
    try:
        with small_disk(probe, 64):
            return True
    except (subprocess.CalledProcessError, OSError):
        return False
    finally:
        probe.rmdir() if probe.exists() else None


def fill(path: Path) -> None:
    """Write `path` until the disk is full."""
    with open(path, "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(bytes(4096))
        except OSError:
            pass

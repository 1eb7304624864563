"""Runs and files for the fortyfirst hostile pass of the archive side: conflict copies of a run's files as they stand
on a disk (compressed, still being copied in, the one version of run.json left)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import archives


def with_copy(root: Path, name: str, copy: str, data: bytes = b"") -> Path:
    """A run whose folder holds `copy`, a conflict copy of its file `name` as a tool left it, holding `data`."""
    run_dir = archives.synthetic_run(root, [1, 0])
    (run_dir / copy).write_bytes(data or (run_dir / name).read_bytes())
    return run_dir

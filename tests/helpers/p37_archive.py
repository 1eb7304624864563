"""Runs and places for the thirty-seventh hostile pass of the archive side."""

from __future__ import annotations

import os
from pathlib import Path


def deep_folder(root: Path, size: int, name: str) -> Path:
    """The path of a file `name` in a folder made under `root` (folders of up to 250 bytes, as deep as that takes) so
    that the path takes `size` bytes."""
    folder = root
    while (left := size - len(os.fsencode(folder)) - 1 - len(name)) > 0:
        folder /= "d" * min(250, left - 1 if left > 1 else 1)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    assert len(os.fsencode(path)) == size, (len(os.fsencode(path)), size)
    return path

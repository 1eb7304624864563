"""Runs for the thirty-sixth hostile pass of the archive side."""

from __future__ import annotations

import os
from pathlib import Path

from tests.helpers.archives import synthetic_run


def deep_run(root: Path, size: int) -> Path:
    """A finished run (`synthetic_run`) written in `root` and moved to a path of `size` bytes under it (folders of
    250 bytes, as deep as that takes): as a writer could not have made it there, whose temporary files' paths are
    longer."""
    folder = root
    while (left := size - len(os.fsencode(folder)) - 1) > 250:  # the run's own name: 50 to 250 bytes
        folder /= "d" * min(250, left - 51)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ("r" * (size - len(os.fsencode(folder)) - 1))
    os.rename(synthetic_run(root / "r", [1, 0]), path)
    return path

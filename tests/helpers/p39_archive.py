"""Runs and files for the thirty-ninth hostile pass of the archive side: run folders whose run.json is still being
copied in."""

from __future__ import annotations

import os
from pathlib import Path

from tests.helpers.archives import synthetic_run


def arriving(root: Path, stand_in: str) -> Path:
    """A run whose run.json a copy in progress holds under `stand_in` (rsync's `.run.json.Xa9kQ2`), none yet in its
    place."""
    run_dir = synthetic_run(root, [1, 0])
    os.rename(run_dir / "run.json", run_dir / stand_in)
    return run_dir

"""Runs and files for the fortieth hostile pass of the archive side: run folders whose files other tools are bringing
in or keep elsewhere."""

from __future__ import annotations

import os
from pathlib import Path

from tests.helpers import archives


def stood_in(root: Path, name: str, stand_in: str) -> Path:
    """A run whose file `name` a tool holds under `stand_in` (a copy in progress, a placeholder), none in its place."""
    run_dir = archives.synthetic_run(root, [1, 0])
    os.rename(run_dir / name, run_dir / stand_in)
    return run_dir

"""Runs for the thirty-fourth hostile pass of the archive side."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

from tests.helpers.auditcli import audit


def exported_references(root: Path, name: str) -> list[str]:
    """The reference cells of `export name` (CSV) of the run root/name, as a CSV reader reads them."""
    done = audit(root, "export", name)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return [row["reference"] for row in csv.DictReader(io.StringIO(done.stdout, newline=""))]


def judged_copy(root: Path, run_dir: Path) -> Path:
    """A copy in `root` of the run `run_dir` and of the folder it was made in (its benchmark, its outputs)."""
    made = run_dir.parents[2]
    shutil.copytree(made, root, dirs_exist_ok=True)
    return root / run_dir.relative_to(made)

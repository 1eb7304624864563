"""Runs and files for the fortysecond hostile pass of the archive side: a chain of retries, a compare's `vs` line."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit


def retry_chain(root: Path, ids: list[str]) -> list[Path]:
    """Runs under `root` of ids `ids`, each after the first a retry of the one before (one answer carried)."""
    runs: list[Path] = []
    for run_id in ids:
        parent = {"run_id": ids[len(runs) - 1], "path": str(runs[-1]), "carried": 1, "asked": 1} if runs else None
        name = ".".join(["r", *["retry1"] * len(runs)])
        runs.append(synthetic_run(root / name, [1, 0], run_id=run_id, parent=parent))
    return runs


def vs_lines(cwd: Path, *runs: str) -> list[str]:
    """The `vs` lines of `benchrun-audit compare RUNS`."""
    return [line for line in audit(cwd, "compare", *runs).stdout.splitlines() if line.startswith("vs ")]

"""Runs and files for the fortyfirst hostile pass of the archive side: conflict copies of a run's files as they stand
on a disk (compressed, still being copied in, the one version of run.json left), what verify says of them, a report."""

from __future__ import annotations

from pathlib import Path

from benchrun.audit.report import write_report
from tests.helpers import archives
from tests.helpers.auditcli import audit


def with_copy(root: Path, name: str, copy: str, data: bytes = b"") -> Path:
    """A run whose folder holds `copy`, a conflict copy of its file `name` as a tool left it, holding `data`."""
    run_dir = archives.synthetic_run(root, [1, 0])
    (run_dir / copy).write_bytes(data or (run_dir / name).read_bytes())
    return run_dir


def report_of(run_dir: Path, out: Path) -> str:
    """The HTML `benchrun-audit report` writes of the run in `run_dir`, made in this process."""
    write_report(run_dir, out)
    return out.read_text("utf-8")


def conflicts_said(cwd: Path, run: str) -> tuple[list[str], int]:
    """What `benchrun-audit verify RUN` says of the run's conflict copies, and its exit code."""
    done = audit(cwd, "verify", run)
    return [line for line in done.stdout.splitlines() if "conflict copy of" in line], done.returncode

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


def report_of(run_dir: Path, out: Path) -> str:
    """The HTML `benchrun-audit report` writes of the run in `run_dir`, made in this process."""
    from benchrun.audit.report import write_report

    write_report(run_dir, out)
    return out.read_text("utf-8")

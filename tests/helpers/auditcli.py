"""`benchrun-audit` run in a process of its own, and what it printed as one line."""

from __future__ import annotations

from pathlib import Path

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import cli


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


def squeezed(cwd: Path, *args: str) -> str:
    """What `benchrun-audit ARGS` printed, its white space squeezed to single spaces (tables fold long rows)."""
    done = audit(cwd, *args)
    assert done.returncode == EXIT["ok"], done.stderr
    return " ".join(done.stdout.split())

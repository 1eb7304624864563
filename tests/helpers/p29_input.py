"""A dry run of a small benchmark, for the passes of what goes in."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun

HOST = "runner.host=http://127.0.0.1:9"
"""A server no dry run calls."""


def dry_run(root: Path, files: dict[str, str], *args: str):
    """A dry run (in this process) of the benchmark `root/bench` made of `files`."""
    write_bench(root, files)
    return call_benchrun("task.path=bench", HOST, "dry_run=true", *args, cwd=root)

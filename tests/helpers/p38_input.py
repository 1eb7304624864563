"""For the thirty-eighth pass of what goes in."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.p30_input import TASK


def openai_dry_run(root: Path, *args: str):
    """A dry run (in this process) of a one-task benchmark with runner=openai, of a server no dry run calls."""
    write_bench(root, {"tasks.yml": TASK})
    return call_benchrun("task.path=bench", "runner=openai", "runner.base_url=http://127.0.0.1:9/v1", "dry_run=true",
                         *args, cwd=root)

"""For the thirty-ninth pass of what goes in."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.p30_input import TASK


def info(root: Path, *args: str):
    """`benchrun --info ...` (in this process) of a one-task benchmark."""
    write_bench(root, {"tasks.yml": TASK})
    return call_benchrun("task.path=bench", *args, cwd=root)

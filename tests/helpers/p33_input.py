"""A dry run of a small benchmark of two tasks, for the thirty-third pass of what goes in."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.p30_input import TASK

TWO_TASKS = TASK + "- name: u\n  template: x {a}\n  values: {a: [1]}\n  reference: ['1']\n"
"""A list-style tasks.yml of two tasks, t and u, of one sample each."""


def dry_run_of(root: Path, *args: str):
    """A dry run (in this process) of the benchmark `root/bench` of TWO_TASKS, with no server named."""
    write_bench(root, {"tasks.yml": TWO_TASKS})
    return call_benchrun("task.path=bench", "dry_run=true", *args, cwd=root)

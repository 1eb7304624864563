"""What benchrun prints: the plan of a dry run, errors, and (later) run tables."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.table import Table

from benchrun.manifest import Manifest


WIDE = 160
"""Width when not printing to a terminal (pipes, logs, tests), so tables do not fold."""


def stdout() -> Console:
    console = Console(highlight=False)
    if not console.is_terminal:
        console.width = max(console.width, WIDE)
    return console


def stderr() -> Console:
    return Console(stderr=True, highlight=False)


def error(message: str) -> None:
    """One line on stderr, no markup interpretation."""
    print(f"benchrun: error: {message}", file=sys.stderr, flush=True)


def plan_table(manifest: Manifest) -> Table:
    """Tasks with their sample counts, format, scorers and first rendered prompt."""
    table = Table(title=f"{manifest.benchmark} · {manifest.runner.type} · {manifest.runner.model}",
                  title_justify="left")
    for column in ("task", "samples", "format", "scorers", "first prompt"):
        table.add_column(column, overflow="fold", justify="right" if column == "samples" else "left")
    first = {}
    for sample in manifest.samples:
        first.setdefault(sample.task, sample.prompt)
    for task in manifest.tasks:
        table.add_row(task.name, str(task.n_samples), task.format.name,
                      ", ".join(s.name for s in task.scorers), first[task.name])
    return table


def print_plan(manifest: Manifest, console: Console) -> None:
    """The dry-run report: what would be asked, how often, and the manifest id."""
    console.print(plan_table(manifest))
    n = len(manifest.samples)
    console.print(f"{len(manifest.tasks)} tasks, {n} samples -> {n} model calls "
                  f"(dry run: no model was called)")
    console.print(f"manifest id: {manifest.id}")

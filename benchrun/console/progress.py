"""The progress bar of a run (rich's progress machinery, which the audit commands never load)."""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TextColumn, TimeElapsedColumn
from rich.text import Text

STEP_S = 1 / 16
"""How often the bar's counts are brought up to date (rich draws it 4 times a second): rich's update costs more than
the rest of the answer's bookkeeping put together."""


class RateColumn(ProgressColumn):
    """Samples per second."""

    def render(self, task: Task) -> Text:
        return Text(f"{task.speed:.1f}/s" if task.speed else "-/s")


@contextmanager
def progress_bar(console: Console, total: int) -> Iterator[Callable[[bool], None]]:
    """A progress bar (done/total, errors, rate) on `console` if it is a terminal; yields `advance(failed)`."""
    bar = Progress(TextColumn("asking", style="bold", markup=False), BarColumn(), MofNCompleteColumn(),
                   TextColumn("errors {task.fields[errors]}", markup=False), RateColumn(),
                   TimeElapsedColumn(), console=console, disable=not console.is_terminal, refresh_per_second=4)
    if bar.disable:
        yield _ignore
        return
    done = errors = 0  # given to the bar at most every STEP_S, and once at the end
    due = 0.0
    with bar:
        task = bar.add_task("asking", total=total, errors=0)

        def advance(failed: bool) -> None:
            nonlocal done, errors, due
            done += 1
            errors += failed
            if (now := time.monotonic()) >= due:
                due = now + STEP_S
                bar.update(task, completed=done, errors=errors)

        try:
            yield advance
        finally:
            bar.update(task, completed=done, errors=errors)


def _ignore(failed: bool) -> None:
    """The advance of a bar not drawn (not a terminal)."""

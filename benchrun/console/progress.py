"""The progress bar of a run (rich's progress machinery, which the audit commands never load)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TextColumn, TimeElapsedColumn
from rich.text import Text


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
    errors = 0
    with bar:
        task = bar.add_task("asking", total=total, errors=0)

        def advance(failed: bool) -> None:
            nonlocal errors
            errors += failed
            bar.update(task, advance=1, errors=errors)

        yield advance

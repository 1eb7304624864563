"""What benchrun prints: the plan of a dry run, errors, and (later) run tables."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ContextManager, Iterable, Iterator

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from benchrun.archive.speed import FIGURES, SIDE_BY_SIDE, figures
from benchrun.console.visible import visible
from benchrun.core.errors import EXIT
from benchrun.core.records import MetricSummary, RunInfo, Speed, Summary
from benchrun.core.secrets import SECRETS
from benchrun.core.shards import Shard, answers_of
from benchrun.core.sweeprecords import SweepJob, SweepSummary
from benchrun.core.text import LINE_CHARS, counted, one_line

if TYPE_CHECKING:  # the manifest is not loaded by the audit commands that print
    from benchrun.core.manifest import Manifest


WIDE = 160
"""Width when not printing to a terminal (pipes, logs, tests), so tables do not fold."""


class _Console(Console):
    """rich's Console, but a reader that stops early is not an error (rich's documented hook exits with 1)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def stdout() -> Console:
    """Standard output. Prompts, answers, names and values are printed as they are: no markup, no emoji codes (and,
    through `visible`, no control characters)."""
    console = _Console(highlight=False, markup=False, emoji=False)
    if not console.is_terminal:
        console.width = max(console.width, WIDE)
    return console


@contextmanager
def closing_pipe() -> Iterator[None]:
    """When the reader stops early (`benchrun-audit export RUN | head`), the output ends quietly (the recipe in
    Python's documentation of SIGPIPE)."""
    try:
        yield
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(EXIT["ok"])


def warning(message: str) -> None:
    """One line on stderr, as `error` writes it, for what is worth knowing but stops nothing."""
    print(f"benchrun: warning: {_line(message)}", file=sys.stderr, flush=True)


def error(message: str) -> None:
    """One line on stderr, no markup interpretation, every credential benchrun sends masked."""
    print(f"benchrun: error: {_line(message)}", file=sys.stderr, flush=True)


def _line(message: str) -> str:
    """`message` as stderr shows it: one line (benchrun.core.text.one_line), its credentials masked, and what prints
    nothing yet changes what is seen (a right-to-left override in a task's name) shown as its escape (`visible`)."""
    return visible(one_line(SECRETS.scrub(message), LINE_CHARS))


def plan_table(manifest: Manifest) -> Table:
    """Tasks with their sample counts, format, scorers, what is sent before each prompt (when a task sends anything:
    a system prompt, few-shot turns) and first rendered prompt."""
    table = Table(title=visible(f"{manifest.benchmark} · {manifest.runner.type} · {manifest.runner.model}"),
                  title_justify="left")
    chats = any(task.system or task.fewshot for task in manifest.tasks)
    for column in ("task", "samples", "format", "scorers", *(("before",) if chats else ()), "first prompt"):
        table.add_column(column, overflow="fold", justify="right" if column == "samples" else "left")
    first = {}
    for sample in manifest.samples:
        first.setdefault(sample.task, sample.prompt)
    for task in manifest.tasks:
        before = (_before(task.system, len(task.fewshot)),) if chats else ()
        table.add_row(task.name, str(task.n_samples), task.format.name,
                      ", ".join(s.name for s in task.scorers), *before, visible(first[task.name]))
    return table


def _before(system: str | None, shots: int) -> str:
    """`system + 2 shots`, `1 shot`, `system`, or `-`."""
    parts = ["system"] if system else []
    parts += [f"{shots} shot{'s' * (shots != 1)}"] if shots else []
    return " + ".join(parts) or "-"


def say(console: Console, text: str, style: str | None = None) -> None:
    """One line of text from outside (a path, a reason) printed as it is (`visible`) and never folded at the console's
    width: a run directory's path is read whole from the output by the scripts that read it (`run directory: PATH`),
    and a terminal folds a long line itself, which a copy joins again."""
    console.print(visible(text), markup=False, style=style, soft_wrap=True)


def print_plan(manifest: Manifest, console: Console, shard: Shard | None = None) -> None:
    """The dry-run report: what would be asked, how often (by a shard run, its part), and the manifest id."""
    console.print(plan_table(manifest))
    n, k = len(manifest.samples), manifest.k
    each = f" x {counted(k, 'repeat')}" if k > 1 else ""
    part = f"; shard {shard} asks {answers_of(manifest, shard)} of them" if shard else ""
    judges = {task.name: len(task.judges) for task in manifest.tasks}
    judged = sum(judges[sample.task] for sample in manifest.samples) * k * manifest.judge_calls
    calls = counted(n * k, "model call") + (f" and {counted(judged, 'judge call')}" if judged else "")
    console.print(f"{counted(len(manifest.tasks), 'task')}, {counted(n, 'sample')}{each} -> {calls}{part} (dry run: "
                  "no model was called)")
    console.print(f"manifest id: {manifest.id}")


def progress(total: int) -> ContextManager[Callable[[bool], None]]:
    """A progress bar (done/total, errors, rate) on a terminal; yields `advance(failed)`. rich's progress machinery
    is loaded only here, so the audit commands do not pay for it."""
    from benchrun.console.progress import progress_bar

    return progress_bar(stdout(), total)


def metrics_table(summary: Summary) -> Table:
    """task x metric: mean, standard error, n and errors; with repeats also pass@k, majority@k and consistency."""
    k = summary.repeats
    table = Table(title=visible(summary.model + (f" · {k} answers per sample" if k else "")), title_justify="left")
    repeated = ("pass@k", "majority@k", "consistency") if k else ()
    for column in ("task", "metric", "mean", "stderr", "n", "errors", *repeated):
        table.add_column(column, justify="left" if column in ("task", "metric") else "right")
    for line in summary.metrics:
        cells = [visible(line.task), visible(line.metric), number(line.mean), number(line.stderr), str(line.n),
                 str(line.errors)]
        if k:
            cells += [number(line.pass_at_k), number(line.majority_at_k),
                      number((summary.consistency or {}).get(line.task))]
        table.add_row(*cells)
    return table


def at_k_basis(line: MetricSummary) -> str | None:
    """`over N of M samples` where pass@k and majority@k are over fewer samples than have a value (those with fewer
    valued answers than k are left out); None where they are over all of them."""
    if line.at_k_samples is None or line.samples is None:
        return None
    return f"over {line.at_k_samples} of {line.samples} samples"


def at_k_note(lines: Iterable[MetricSummary]) -> list[str]:
    """What `show` says under its table of the lines whose pass@k and majority@k are over fewer samples."""
    fewer = [f"  {visible(line.task)}/{visible(line.metric)} {basis}" for line in lines if (basis := at_k_basis(line))]
    return ["pass@k and majority@k: over the samples whose every answer has a value only (a failed request or scorer "
            "error leaves a sample out):", *fewer] if fewer else []


def consistency_note(over: dict[str, tuple[int, int]]) -> list[str]:
    """What is said under a table of the tasks whose consistency leaves samples out: `  t over 1 of 2 samples`."""
    fewer = [f"  {visible(task)} over {counted} of {of} samples" for task, (counted, of) in over.items()]
    return ["consistency: over the samples whose every request was answered only (a failed request leaves a sample "
            "out):", *fewer] if fewer else []


LARGE = 1e6
"""From this magnitude on a table's number is printed to four significant digits, not three decimals."""


def number(value: float | None, signed: bool = False) -> str:
    """A mean, rate, bound or difference as printed in every table: three decimals (a sign first when `signed`), four
    significant digits from LARGE on (a scorer's 1e100 as `1e+100`, not a hundred digits cut short to fit), or -
    when there is none."""
    if value is None:
        return "-"
    sign = "+" if signed else ""
    return f"{value:{sign}.3f}" if abs(value) < LARGE else f"{value:{sign}.4g}"


def print_results(run_dir: Path, info: RunInfo, summary: Summary | None, console: Console) -> None:
    """The end of a run: the metrics table, the status and where the run directory is."""
    if summary is not None:
        console.print(metrics_table(summary))
        for said in at_k_note(summary.metrics) + consistency_note(summary.consistency_samples or {}):
            console.print(said, markup=False, soft_wrap=True)
    unit = "answers" if summary is not None and summary.repeats else "samples"
    console.print(f"{info.status}: {info.counts.text(unit)}")
    say(console, f"run directory: {run_dir.absolute()}")


def sweep_table(summary: SweepSummary) -> Table:
    """task x metric rows, one column per job: mean ± stderr (n)."""
    table = Table(title="sweep", title_justify="left")
    table.add_column("task")
    table.add_column("metric")
    for job in summary.jobs:
        table.add_column(visible(job_name(job)), justify="right")
    for line in summary.metrics:
        table.add_row(visible(line.task), visible(line.metric),
                      *(_cell(line.jobs.get(job.dir)) for job in summary.jobs))
    return table


def fitting(console: Console, table: Table, by_rows: Callable[[], Table]) -> Table:
    """`table`, or where its columns cannot all be set at the console's width (a sweep of many jobs, a column each:
    rich narrowed them to nothing and printed every cell empty), the same figures with a row a job (`by_rows()`)."""
    unbounded = console.options.update_width(sys.maxsize)  # measured as if there were room: rich's own is cut to fit
    return table if Measurement.get(console, unbounded, table).minimum <= console.width else by_rows()


def sweep_rows_table(summary: SweepSummary) -> Table:
    """The sweep table with a row per job and task x metric: what `sweep_table` says, for jobs too many to set side
    by side."""
    table = Table(title="sweep", title_justify="left")
    for name in ("job", "task", "metric"):
        table.add_column(name)
    table.add_column("mean ± stderr (n)", justify="right")
    for job in summary.jobs:
        for line in summary.metrics:
            table.add_row(visible(job_name(job)), visible(line.task), visible(line.metric), _cell(line.jobs.get(job.dir)))
    return table


def sweep_speed_rows_table(summary: SweepSummary) -> Table:
    """The speed figures with a row per job, a column per figure: `sweep_speed_table` for jobs too many."""
    table = Table(title="speed", title_justify="left")
    table.add_column("job")
    for key in SIDE_BY_SIDE:
        table.add_column(FIGURES[key], justify="right")
    for job in summary.jobs:
        cells = speed_cells(summary.speed.get(job.dir))
        table.add_row(visible(job_name(job)), *(cells[key] for key in SIDE_BY_SIDE))
    return table


def job_name(job: SweepJob) -> str:
    """A sweep job's column: its label, else its model, else its directory."""
    return job.label or job.model or job.dir


def figure(key: str, value: float | None) -> str:
    """A speed figure as printed: a rate to one decimal, seconds to three, - when there is none."""
    if value is None:
        return "-"
    return f"{value:.1f}" if key.endswith("per_s") else f"{value:.3f}"


def speed_cells(speed: Speed | None) -> dict[str, str]:
    """Every figure of a speed as printed, key -> text; tokens/s says what it was measured by (server or wall)."""
    cells = {key: figure(key, value) for key, value in figures(speed).items()}
    if speed is not None and speed.tokens_per_s_from:
        cells["tokens_per_s"] += f" ({speed.tokens_per_s_from})"
    return cells


def sweep_speed_table(summary: SweepSummary) -> Table:
    """The side-by-side speed figures, one column per job."""
    table = Table(title="speed", title_justify="left")
    table.add_column("figure")
    for job in summary.jobs:
        table.add_column(visible(job_name(job)), justify="right")
    cells = [speed_cells(summary.speed.get(job.dir)) for job in summary.jobs]
    for key in SIDE_BY_SIDE:
        table.add_row(FIGURES[key], *(by_key[key] for by_key in cells))
    return table


def _cell(line: MetricSummary | None) -> str:
    if line is None or line.mean is None:
        return "-"
    stderr = f" ± {number(line.stderr)}" if line.stderr is not None else ""
    return f"{number(line.mean)}{stderr} (n={line.n})"


def print_sweep(summary: SweepSummary, sweep_dir: Path, console: Console) -> None:
    """The sweep table, each failed job with its reason, and where the sweep directory is."""
    console.print(fitting(console, sweep_table(summary), lambda: sweep_rows_table(summary)))
    if summary.speed:
        console.print(fitting(console, sweep_speed_table(summary), lambda: sweep_speed_rows_table(summary)))
    for job in summary.failed:
        name = job.label or job.model or "unknown model"
        say(console, f"job {job.dir} ({name}) {job.status}: {job.reason}")
    say(console, f"sweep directory: {sweep_dir.absolute()}")

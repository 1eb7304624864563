"""`list [ROOT]`: every run under the archive root, newest first, from run.json and summary.json alone."""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar, get_args

from rich.table import Table
from rich.text import Text

from benchrun.archive.answerunit import answer_unit
from benchrun.archive.headline import distrusted, headline_unverified
from benchrun.archive.lookup import refuse_gone_cwd, scan_runs
from benchrun.archive.reader import DEFAULT_ROOT, PathLike, Run
from benchrun.archive.sessions import answering, mixed_models
from benchrun.archive.writerless import stopped
from benchrun.audit import arguments
from benchrun.console import output
from benchrun.console.long_tables import Row, print_table
from benchrun.console.visible import shown_name, visible
from benchrun.core.errors import EXIT, ArchiveError, reading
from benchrun.core.layout import FORMAT_VALID, RUN, UNREADABLE, Status
from benchrun.core.records import MetricSummary
from benchrun.core.recordvalues import moment_at, pin_named, short_digest

STOPPED = "stopped"
"""What `list --status` calls a run whose run.json says `running` while no live process writes it (killed)."""
T = TypeVar("T")
HEADLINE = 3
"""Metrics shown per run: the first of summary.json, scorers' metrics before format_valid."""


@dataclass(frozen=True)
class ListedRun:
    """One line of `list`: a run with the task names and metrics of its summary."""

    run: Run
    tasks: tuple[str, ...]
    metrics: tuple[MetricSummary, ...]
    reason: str | None
    unit: str
    """What its answers are called (`answer_unit`): `answers` where each sample was asked more than once."""

    @property
    def started(self) -> datetime:
        return moment_at(self.run.info.started_at)

    def headline(self) -> list[MetricSummary]:
        """The first HEADLINE metrics, those of scorers before format_valid."""
        ranked = sorted(self.metrics, key=lambda line: line.metric == FORMAT_VALID)
        return ranked[:HEADLINE]

    def to_json(self) -> dict[str, Any]:
        info = self.run.info
        return {"run_id": info.run_id, "path": str(self.run.path), "started_at": info.started_at,
                "ended_at": info.ended_at, "status": info.status, "listed_as": listed_as(info.status, self.reason),
                "reason": self.reason, "benchmark": info.benchmark, "tasks": list(self.tasks), "model": info.model,
                "digest": self.run.model_digest, "answered_by": mixed_models(self.run),
                "samples": info.counts.samples, "responses": self.run.response_lines, "cached": info.counts.cached,
                "manifest_id": info.manifest_id, "sweep": info.sweep,
                "parent": info.parent.run_id if info.parent else None,
                "shard": str(info.shard) if info.shard else None,
                "merged_from": [shard.run_id for shard in info.merged.shards] if info.merged else None,
                "metrics": [line.model_dump() for line in self.metrics]}


def in_utc(moment: datetime) -> str:
    """`2026-12-01 08:00:00`: `moment` in UTC, as `list` sorts by it and its column says (a run.json written
    elsewhere, or edited, may give another offset); one that UTC's calendar cannot hold (year 1 at +01:00) as
    written, its offset shown."""
    try:
        return moment.astimezone(timezone.utc).replace(tzinfo=None).isoformat(sep=" ", timespec="seconds")
    except OverflowError:
        return moment.isoformat(sep=" ", timespec="seconds")


def listed(run: Run) -> ListedRun:
    """A run with its tasks: from summary.json, or (a run that never finished) from its manifest, and of one that says
    `running` that no live process writes, why not; a run whose summary.json or run.json changed since it ended is
    refused (listed as unreadable), never shown with its numbers."""
    summary = run.summary
    if problem := headline_unverified(run):
        raise distrusted(run, problem)
    if summary is not None:
        return ListedRun(run, tuple(dict.fromkeys(line.task for line in summary.metrics)), summary.metrics,
                         run.info.reason, answer_unit(run))
    return ListedRun(run, task_names(run), (), stopped(run) or run.info.reason, _unit(run))


def _unit(run: Run) -> str:
    """`answer_unit` of a run that did not end; `samples` when its manifest cannot be read (`task_names`)."""
    try:
        return answer_unit(run)
    except ArchiveError:
        return "samples"


def task_names(run: Run) -> tuple[str, ...]:
    """The task names in the run's manifest; none when it has no readable manifest."""
    try:
        return tuple(task["name"] for task in run.manifest_data().get("tasks", ()))
    except (ArchiveError, KeyError, TypeError):
        return ()


@dataclass(frozen=True)
class Unreadable:
    """A directory with a run.json that cannot be read: listed, never left out."""

    error: ArchiveError

    def to_json(self) -> dict[str, Any]:
        return {"path": self.error.file, "status": UNREADABLE, "listed_as": UNREADABLE, "reason": str(self.error)}




def list_runs(root: PathLike = DEFAULT_ROOT, model: str | None = None, task: str | None = None,
              status: Iterable[str] = (), since: datetime | None = None) -> list[ListedRun | Unreadable]:
    """Every run under `root` (sweep jobs included) that passes the filters, newest first; then the run.json files
    that cannot be read (unless a filter asks for something they cannot say)."""
    return ordered(listed_runs(root, model, task, status, since), lambda entry: entry)


def ordered(entries: Iterable[ListedRun | Unreadable], shown: Callable[[ListedRun | Unreadable], T]) -> list[T]:
    """`entries` as `shown` shows each, once read (its run is not held: `list` of 10,000 runs held every one), the
    runs newest first, then the unreadable ones in the order found."""
    found: list[tuple[datetime, str, T]] = []
    unreadable: list[T] = []
    for entry in entries:
        if isinstance(entry, Unreadable):
            unreadable.append(shown(entry))
        else:
            found.append((entry.started, entry.run.id, shown(entry)))
    found.sort(key=lambda each: each[:2], reverse=True)
    return [*(each[2] for each in found), *unreadable]


def listed_runs(root: PathLike, model: str | None, task: str | None, status: Iterable[str],
                since: datetime | None) -> Iterator[ListedRun | Unreadable]:
    """`list_runs`'s entries as they are read, in the order found."""
    root = Path(root)
    if not root.is_dir():
        refuse_gone_cwd(root)
        raise ArchiveError(f"no archive directory '{root}'")
    with reading(root):  # a root it may not list: nothing can be listed, which is no archive of 0 runs
        os.scandir(root).close()
    statuses = set(status)
    for run in scan_runs(root):
        if isinstance(run, ArchiveError):
            if (model, task, since) == (None, None, None) and (not statuses or UNREADABLE in statuses):
                yield Unreadable(run)
            continue
        info = run.info
        if model is not None and model not in (info.model, info.identity.get("name")):  # `--model ""`: none
            continue
        if statuses and not statuses & may_be_listed_as(info.status):
            continue
        if since and moment_at(info.started_at) < since:
            continue
        try:
            entry = listed(run)
        except ArchiveError as err:  # its summary.json: the run is listed as unreadable, never left out
            if task is None and os.path.lexists(run.path / RUN):  # one deleted while it was read is no run
                yield Unreadable(err)
            continue
        if (task is None or task in entry.tasks) and (
                not statuses or listed_as(info.status, entry.reason) in statuses):
            yield entry


def runs_table(count: int, rows: Sequence[Row]) -> Table:
    """The table of `count` runs with `rows` (some or all of them): started, run id, status, samples, model and
    short digest, benchmark and tasks, headline metrics."""
    table = Table(title=f"{count} run{'' if count == 1 else 's'}", title_justify="left", expand=True)
    for column in ("started (UTC)", "run", "status", "samples", "model"):
        table.add_column(column, no_wrap=True, justify="right" if column == "samples" else "left")
    table.add_column("benchmark: tasks", overflow="fold", ratio=1)
    table.add_column("headline", overflow="fold", ratio=2)
    for row in rows:
        table.add_row(*row)
    return table


def run_row(entry: ListedRun | Unreadable) -> Row:
    """One run's cells in `runs_table`."""
    if isinstance(entry, Unreadable):
        return "-", "-", UNREADABLE, "-", "-", Text(shown_name(str(entry.error.file))), Text(visible(str(entry.error)))
    info = entry.run.info
    return (in_utc(entry.started), info.run_id, _status(entry), _samples(entry),
            Text("\n".join(shown_name(line) for line in _model(entry.run))),
            Text(shown_name(f"{info.benchmark}: {', '.join(entry.tasks)}" if entry.tasks else info.benchmark)),
            Text(visible("\n".join(f"{m.task}/{m.metric}={output.number(m.mean)}" for m in entry.headline()))))


def _samples(entry: ListedRun) -> str:
    """`18/18` responses of samples (`12/12 answers` of 4 samples asked 3 times), and below it how many came from
    the response cache, if any."""
    run, counts = entry.run, entry.run.info.counts
    unit = " answers" if entry.unit == "answers" else ""
    return f"{run.response_lines}/{counts.samples}{unit}" + (f"\n{counts.cached} cached" if counts.cached else "")


def _model(run: Run) -> list[str]:
    """The model's name and ` @45b1c9806e74` (nothing when the run has no digest); when more than one model answered
    its answers (a resume onto a model pulled again), each, a line each (`show` says how many each answered)."""
    if len(pins := answering(run)) > 1:
        at = [f"@{pin_named(pin)}" if pin else "@(no digest)" for pin in pins]
        return [f"{run.info.model} {at[0]}", *at[1:]]
    return [run.info.model + (f" @{short_digest(digest)}" if (digest := run.model_digest) else "")]


def listed_as(status: str, reason: str | None) -> str:
    """A run's status as `list --status` picks it: run.json's `status`, but STOPPED for a run that says `running` that
    no live process writes (its `reason` says why: `listed`, `read_as`)."""
    return STOPPED if status == "running" and reason else status


def may_be_listed_as(status: str) -> set[str]:
    """What a run whose run.json says `status` may be listed as, known before the rest of it is read: `listed_as`'s,
    or UNREADABLE (its summary.json may be)."""
    return {status, UNREADABLE, *([STOPPED] if status == "running" else [])}


def read_as(run: Run) -> dict[str, str | None]:
    """`listed_as` and `reason` of a run read alone, as `list --json` gives them beside run.json's status (`show
    --json`): a run that says `running` that no live process writes is `stopped`, its reason why."""
    reason = stopped(run) or run.info.reason
    return {"listed_as": listed_as(run.info.status, reason), "reason": reason}


def _status(entry: ListedRun) -> Text:
    """The status (`running` of a run no live process writes: `stopped`, its writer gone), and for a retry the run it
    retried, for a shard run its shard, for a merged run its shards."""
    info = entry.run.info
    said = "running (writer stopped)" if listed_as(info.status, entry.reason) == STOPPED else info.status
    return Text(visible(said + (f"\nretry of {info.parent.run_id}" if info.parent else "")
                        + (f"\nshard {info.shard}" if info.shard else "") + _merged(info.merged)))


def _merged(merge: Any) -> str:
    if merge is None:
        return ""
    shards = merge.shards
    return f"\nmerge of {len(shards)}/{shards[0].shard.split('/')[1]} shards{' (partial)' if merge.partial else ''}"


def _since(value: str) -> datetime:
    try:
        return moment_at(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO date or date-time: '{value}'") from None


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("root", nargs="?", type=arguments.path, default=DEFAULT_ROOT, metavar="ROOT",
                        help=f"archive root (default: {DEFAULT_ROOT})")
    parser.add_argument("--model", help="only runs of this model (as configured, or as the server named it)")
    parser.add_argument("--task", help="only runs with this task")
    parser.add_argument("--status", action="append", choices=[*get_args(Status), STOPPED, UNREADABLE], default=[],
                        help=f"only runs with this status (repeat for several); {STOPPED}: one that says running "
                             "that no live process writes (its writer killed), which `running` does not pick")
    parser.add_argument("--since", type=_since, help="only runs started at or after this ISO date or date-time "
                                                     "(UTC unless it has an offset)")
    parser.add_argument("--json", action="store_true", help="print a JSON list")


def main(args: argparse.Namespace) -> int:
    entries = listed_runs(args.root, args.model, args.task, args.status, args.since)
    if args.json:
        print(json.dumps(ordered(entries, lambda entry: entry.to_json()), indent=2))
    else:
        rows = ordered(entries, run_row)
        print_table(output.stdout(), partial(runs_table, len(rows)), rows)
    return EXIT["ok"]

"""`rescore RUN`: score a run again from its archived responses with the current (or given) scorers.

Nothing but the run directory and the scorer files is read: no model server, no runner code. The run's own
scores.jsonl and summary.json are never touched; each rescore is a new directory `<run>/rescores/<NNN>/`
holding scores.jsonl, summary.json and rescore.json (written last: a directory without it is incomplete).
NNN is claimed with os.mkdir, which fails when another rescore already took the number, so two rescores
running at once never share a directory: the first free number after the largest one present is taken. The
time is kept in rescore.json, not in the name: with a time in the name two rescores could claim one number.

Scorers are the built-ins plus the benchmark's current custom_scorer.py, plus the functions of `--scorers FILE.py`
(a same-named one replaces the benchmark's); with `--only`, FILE.py takes the place of custom_scorer.py. The
benchmark is found through the run's task.path; a relative one is taken from the directory the run was started in
(run.json `cwd`), else from the current one. By default each task gets its own scorers again, and FILE.py's
scorers that no task names are added to every task; `--scorer NAME` (repeatable) selects: a NAME that some task
names is applied to those tasks only, a NAME that no task names is applied to every task. format_valid is always
recomputed. What a scorer raised is counted and listed (`errors`), beside the values that changed.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Literal, TypeVar

from rich.console import Console
from rich.table import Table
from rich.text import Text

from benchrun.archive.books import Books
from benchrun.archive.dirlock import DirLock
from benchrun.archive.reader import DEFAULT_ROOT, PathLike, Run, resolve_run
from benchrun.archive.tally import Tally
from benchrun.archive.writer import RecordFile, environment, now, write_atomic
from benchrun.compiler.scoring import BUILTIN, CUSTOM_FILE, Scorer, scorers_in, source_sha256
from benchrun.console import output
from benchrun.console.visible import visible
from benchrun.core.errors import EXIT, ArchiveError, BenchrunError, ConfigError
from benchrun.core.frozen import Frozen
from benchrun.core.layout import RESCORE_FILE, RESCORE_LOG, RESCORES, SCORES, SUMMARY
from benchrun.core.manifest import Manifest, ScorerSpec, sha256_bytes
from benchrun.core.records import Counts, FileDigest, Number, ScoreRecord, Summary, answer_name
from benchrun.core.settings import RunConfig
from benchrun.execute.grading import Grader

CHUNK = 64
T = TypeVar("T")
SCORER_TIMEOUT_S = RunConfig.model_fields["scorer_timeout_s"].default
SHOWN = 20
"""Changed samples printed on a terminal (--json lists them all)."""


class ScorerUsed(Frozen):
    """One scorer of a rescore: where its code came from and the hashes of that code."""

    name: str
    origin: str
    """`builtin`, or the absolute path of the scorer file."""
    origin_sha256: str | None
    """The sha256 of the scorer file (None for a built-in)."""
    sha256: str
    """The sha256 of the function's source, as in the manifest's scorers."""
    run_sha256: str | None
    """The sha256 the run's manifest gives for this scorer (None when the run did not use it)."""
    tasks: tuple[str, ...]


class RescoreInfo(Frozen):
    """rescore.json: which scorers scored which run, when, and with which benchrun."""

    schema_version: Literal[1] = 1
    rescore: str
    """The rescore's number (its directory name), e.g. 001."""
    run_id: str
    manifest_id: str
    created_at: str
    benchrun: str | None
    selected: tuple[str, ...] | None
    """The --scorer names, or None when every task was scored with its own scorers."""
    scorers: tuple[ScorerUsed, ...]
    counts: Counts
    files: dict[str, FileDigest]


class MeanChange(Frozen):
    """One task x metric of the new summary beside the run's own."""

    task: str
    metric: str
    old: float | None
    new: float | None
    delta: float | None


class SampleChange(Frozen):
    """A sample whose metric value changed; a value is None when there is none (error or not scored)."""

    id: str
    task: str
    repeat: int = 0
    metric: str
    old: Number | None
    new: Number | None
    old_error: str | None = None
    new_error: str | None = None


class ScorerFailure(Frozen):
    """A scorer that raised on an answered sample (no value: its error is in scores.jsonl)."""

    id: str
    task: str
    repeat: int = 0
    scorer: str
    error: str


class Rescore(Frozen):
    """What a rescore wrote, what changed against the run's own scores, and what its scorers raised."""

    dir: str
    info: RescoreInfo
    means: tuple[MeanChange, ...]
    changed: tuple[SampleChange, ...]
    errors: tuple[ScorerFailure, ...]
    """One per score line whose scorer raised on a response (a failed request is not a scorer's error); as many as
    info.counts.scorer_errors."""


Loaded = dict[str, tuple[Scorer, str, str | None]]
"""Scorer name -> (function, origin, origin file sha256)."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help="run directory or run id prefix")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="archive root for run ids")
    parser.add_argument("--scorer", action="append", metavar="NAME",
                        help="score with this scorer only (repeatable); a name no task uses applies to every task")
    parser.add_argument("--scorers", type=Path, metavar="FILE.py",
                        help="add this file's scorer functions to the benchmark's (its new ones on every task)")
    parser.add_argument("--only", action="store_true",
                        help="with --scorers: take scorer functions from FILE.py instead of the benchmark's "
                             "custom_scorer.py")
    parser.add_argument("--scorer-timeout-s", type=float, default=SCORER_TIMEOUT_S, metavar="S",
                        help=f"each scorer call's time limit (default {SCORER_TIMEOUT_S:g})")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def main(args: argparse.Namespace) -> int:
    result = rescore(resolve_run(args.run, args.root), args.scorer, args.scorers, args.scorer_timeout_s, args.only)
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        print_rescore(result, output.stdout())
    return EXIT["ok"]


def rescore(run: Run, names: list[str] | None = None, scorers_file: PathLike | None = None,
            timeout_s: float = SCORER_TIMEOUT_S, only: bool = False) -> Rescore:
    """Score `run` again from responses.jsonl and manifest.json into a new `rescores/<NNN>/` directory, with the
    benchmark's scorers plus those of `scorers_file` (`only`: those of `scorers_file` instead of the benchmark's)."""
    manifest = run.require_records().manifest
    if only and scorers_file is None:
        raise BenchrunError("--only goes with --scorers FILE.py: it takes the scorers from FILE.py alone")
    added = load_scorers(Path(scorers_file)) if scorers_file is not None else {}
    loaded = {**_builtins(), **added} if only else {**bench_scorers(run, scorers_file is not None), **added}
    plan = scorer_plan(manifest, loaded, names, () if only else tuple(added))
    old, old_tally = _old_scores(run, manifest)
    with DirLock(run.path):
        out = claim_dir(run.path / RESCORES)
        try:
            grader = _grader(manifest, plan, loaded, out / RESCORE_LOG, timeout_s)
            found = asyncio.run(_write_scores(run, manifest, grader, old, out))
            info = RescoreInfo(rescore=out.name, run_id=run.id, manifest_id=run.info.manifest_id, created_at=now(),
                               benchrun=environment()["benchrun"], selected=None if names is None else tuple(names),
                               scorers=_used(manifest, plan, loaded), counts=found.books.counts(),
                               files={SCORES: found.digest})
            write_atomic(out / RESCORE_FILE, info.model_dump_json(indent=2).encode() + b"\n")
        except BaseException:
            shutil.rmtree(out, ignore_errors=True)
            raise
    return Rescore(dir=str(out), info=info, means=_means(old_tally, found.summary), changed=tuple(found.changed),
                   errors=tuple(found.errors))


def bench_scorers(run: Run, with_file: bool = False) -> Loaded:
    """The built-ins and the current custom_scorer.py of the run's benchmark (found through task.path)."""
    try:
        bench = run.bench_dir()
    except ConfigError as err:
        hint = "add --only to score with FILE.py's alone" if with_file else "give them with --scorers FILE.py --only"
        raise BenchrunError(f"cannot find the run's benchmark ({err}); {hint}", file=str(run.path)) from None
    file = bench / CUSTOM_FILE
    return {**_builtins(), **(load_scorers(file) if file.is_file() else {})}


def load_scorers(file: Path) -> Loaded:
    """The public functions defined in `file`."""
    if not file.is_file():
        raise BenchrunError("no such scorer file", file=str(file))
    digest, origin = sha256_bytes(file.read_bytes()), str(file.resolve())
    return {name: (fn, origin, digest) for name, fn in scorers_in(file, str(file)).items()}


def _builtins() -> Loaded:
    return {name: (fn, "builtin", None) for name, fn in BUILTIN.items()}


def scorer_plan(manifest: Manifest, loaded: Loaded, names: list[str] | None,
                added: tuple[str, ...] = ()) -> dict[str, tuple[str, ...]]:
    """Task -> the scorer names to run on it: the chosen `names`, else each task's own plus the `added` ones no
    task names (see the module docstring)."""
    own = {t.name: tuple(s.name for s in t.scorers) for t in manifest.tasks}
    used = {n for task in own.values() for n in task}
    if names is None:
        missing = sorted(n for n in used if n not in loaded)
        if missing:
            raise BenchrunError(f"the run's scorers {', '.join(missing)} are not defined now "
                                f"(available: {', '.join(sorted(loaded))}); give them with --scorers FILE.py")
        return {task: (*scorers, *(n for n in added if n not in used)) for task, scorers in own.items()}
    unknown = [n for n in names if n not in loaded]
    if unknown:
        raise BenchrunError(f"unknown scorer {', '.join(map(repr, unknown))} (available: {', '.join(sorted(loaded))})")
    chosen = list(dict.fromkeys(names))
    return {task: tuple(n for n in chosen if n in scorers or n not in used) for task, scorers in own.items()}


def claim_dir(parent: Path) -> Path:
    """A new numbered directory under `parent`, claimed atomically with os.mkdir (taken -> try the next)."""
    parent.mkdir(exist_ok=True)
    taken = [int(p.name) for p in parent.iterdir() if p.name.isdigit()]
    number = max(taken, default=0) + 1
    while True:
        path = parent / f"{number:03d}"
        try:
            os.mkdir(path)
            return path
        except FileExistsError:
            number += 1


OldScores = dict[tuple[str, int, str], ScoreRecord]


def _old_scores(run: Run, manifest: Manifest) -> tuple[OldScores, Tally]:
    """The run's score records by (sample id, repeat, scorer), and their tally."""
    tally, records = Tally((t.name for t in manifest.tasks), manifest.k), {}
    for record in run.scores():
        tally.add(record)
        records[record.id, record.repeat, record.scorer] = record
    return records, tally


def _grader(manifest: Manifest, plan: dict[str, tuple[str, ...]], loaded: Loaded, log: Path,
            timeout_s: float) -> Grader:
    """A Grader over the manifest with each task's scorers replaced by the planned ones."""
    tasks = tuple(t.model_copy(update={"scorers": tuple(_spec(n, loaded) for n in plan[t.name])})
                  for t in manifest.tasks)
    return Grader(manifest.model_copy(update={"tasks": tasks}), {name: fn for name, (fn, _, _) in loaded.items()},
                  log, timeout_s)


def _spec(name: str, loaded: Loaded) -> ScorerSpec:
    fn, origin, _ = loaded[name]
    return ScorerSpec(name=name, origin="builtin" if origin == "builtin" else CUSTOM_FILE, sha256=source_sha256(fn))


def _used(manifest: Manifest, plan: dict[str, tuple[str, ...]], loaded: Loaded) -> tuple[ScorerUsed, ...]:
    """Each planned scorer once, in first-use order, with its hashes now and in the run."""
    before = {s.name: s.sha256 for t in manifest.tasks for s in t.scorers}
    names = list(dict.fromkeys(n for task in plan.values() for n in task))
    return tuple(ScorerUsed(name=n, origin=loaded[n][1], origin_sha256=loaded[n][2], sha256=source_sha256(loaded[n][0]),
                            run_sha256=before.get(n), tasks=tuple(t for t, scorers in plan.items() if n in scorers))
                 for n in names)


@dataclass
class _Graded:
    """What grading every archived response again wrote (scores.jsonl's digest, the summary) and found."""

    books: Books
    digest: FileDigest
    summary: Summary
    changed: list[SampleChange] = field(default_factory=list)
    errors: list[ScorerFailure] = field(default_factory=list)


async def _write_scores(run: Run, manifest: Manifest, grader: Grader, old: OldScores, out: Path) -> _Graded:
    """Grade every archived response into out/scores.jsonl and out/summary.json; collect the changed values and
    the scorers' errors. Responses are graded CHUNK at a time, so the scorer process always has work waiting."""
    samples = {s.id: s for s in manifest.samples}
    books, sink = Books(manifest, _run_wall_s(run)), RecordFile(out / SCORES, fresh=True)
    changed: list[SampleChange] = []
    errors: list[ScorerFailure] = []
    async with grader:
        for chunk in _batched(run.responses(), CHUNK):
            unknown = next((r.id for r in chunk if r.id not in samples), None)
            if unknown is not None:
                raise ArchiveError(f"a response for sample '{unknown}', which the manifest does not have",
                                   file=str(run.path))
            graded = await asyncio.gather(*(grader.grade(samples[r.id], r) for r in chunk))
            for response, records in zip(chunk, graded):
                books.response(response)
                books.scores(records)
                sink.append(b"".join(record.model_dump_json().encode() + b"\n" for record in records))
                for record in records:
                    changed.extend(sample_changes(old.get((record.id, record.repeat, record.scorer)), record))
                    if record.error is not None and response.error is None:
                        errors.append(ScorerFailure(id=record.id, task=record.task, repeat=record.repeat,
                                                    scorer=record.scorer, error=str(record.error)))
    digest = sink.close()
    summary = books.summary(run.info.manifest_id, run.info.model)
    write_atomic(out / SUMMARY, summary.model_dump_json(indent=2).encode() + b"\n")
    return _Graded(books, digest, summary, changed, errors)


def _run_wall_s(run: Run) -> float | None:
    """The run's own wall time (what the responses cannot tell), from its summary; None when it has none."""
    speed = run.summary.speed if run.summary else None
    return speed.wall_s if speed else None


def _batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def sample_changes(old: ScoreRecord | None, new: ScoreRecord) -> list[SampleChange]:
    """The metrics of one sample and scorer whose value differs (no old record: a new scorer, not a change)."""
    if old is None or (old.metrics is None and new.metrics is None):
        return []
    before, after = old.metrics or {}, new.metrics or {}
    return [SampleChange(id=new.id, task=new.task, repeat=new.repeat, metric=m, old=before.get(m),
                         new=after.get(m), old_error=_error(old), new_error=_error(new))
            for m in dict.fromkeys([*before, *after]) if m not in before or m not in after or before[m] != after[m]]


def _error(record: ScoreRecord) -> str | None:
    return str(record.error) if record.error else None


def _means(old_tally: Tally, summary: Summary) -> tuple[MeanChange, ...]:
    old = {(m.task, m.metric): m.mean for m in old_tally.summaries()}
    return tuple(MeanChange(task=m.task, metric=m.metric, old=old.get((m.task, m.metric)), new=m.mean,
                            delta=_delta(old.get((m.task, m.metric)), m.mean)) for m in summary.metrics)


def _delta(old: float | None, new: float | None) -> float | None:
    return None if old is None or new is None else new - old


def print_rescore(result: Rescore, out: Console) -> None:
    """The means old -> new, the samples whose value changed and the scorer errors (at most SHOWN of each), then
    where it was written."""
    out.print(means_table(result))
    changes = [f"{answer_name(c.id, c.repeat)} {c.metric}: {_value(c.old, c.old_error)} -> {_value(c.new, c.new_error)}"
               for c in result.changed]
    _print_list(out, f"{len(changes)} sample values changed", changes)
    failures = [f"{answer_name(e.id, e.repeat)} {e.scorer}: {e.error}" for e in result.errors]
    _print_list(out, f"{len(failures)} scorer errors", failures)
    out.print(visible(f"rescore {result.info.rescore} written to {result.dir}"), markup=False, soft_wrap=True)


def _print_list(out: Console, title: str, lines: list[str]) -> None:
    """A count, then at most SHOWN of its lines indented."""
    for line in [title, *(f"  {line}" for line in lines[:SHOWN])]:
        out.print(visible(line), markup=False, soft_wrap=True)
    if len(lines) > SHOWN:
        out.print(f"  ... and {len(lines) - SHOWN} more (--json lists them all)", markup=False, soft_wrap=True)


def means_table(result: Rescore) -> Table:
    """task x metric: the run's mean, the rescore's mean and the difference."""
    table = Table(title=visible(f"rescore {result.info.rescore} of run {result.info.run_id}"), title_justify="left")
    for column in ("task", "metric", "old mean", "new mean", "delta"):
        table.add_column(column, justify="left" if column in ("task", "metric") else "right")
    for line in result.means:
        delta = "-" if line.delta is None else f"{line.delta:+.3f}"
        table.add_row(*(Text(visible(name)) for name in (line.task, line.metric)), output.number(line.old),
                      output.number(line.new), delta)
    return table


def _value(value: Number | None, error: str | None) -> str:
    if value is not None:
        return json.dumps(value)
    return f"error ({error})" if error else "-"

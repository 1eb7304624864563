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
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, Callable, Iterable, Iterator, TypeVar

from pydantic import Field, TypeAdapter, ValidationError

from benchrun.archive.books import Books
from benchrun.archive.clockstep import WallWatch
from benchrun.archive.dirlock import DirLock, own_file
from benchrun.archive.lookup import resolve_run
from benchrun.archive.reader import PathLike, Run
from benchrun.archive.tally import Tally
from benchrun.archive.trust import uncompiled
from benchrun.archive.writer import RecordFile, environment, file_digest, now, write_atomic
from benchrun.audit import arguments
from benchrun.audit.rejudge import rejudged_config, rejudged_manifest, rejudging
from benchrun.audit.rescored import (
    RESCORE_NUMBERS,
    MeanChange,
    Rescore,
    RescoreInfo,
    SampleChange,
    ScorerFailure,
    print_rescore,
)
from benchrun.audit.rescorers import Loaded, modules_used, planned, scorers_used
from benchrun.compiler.answerable import refuse_unscorable
from benchrun.compiler.judges import refuse_metric_clashes
from benchrun.compiler.scoring import CUSTOM_FILE, check_signature, source_sha256
from benchrun.console import output
from benchrun.core.errors import EXIT, ArchiveError
from benchrun.core.interrupts import INTERRUPTS
from benchrun.core.layout import JUDGEMENTS, MANIFEST, RESCORE_FILE, RESCORE_LOG, RESCORES, SCORES, SUMMARY, number_in
from benchrun.core.manifest import Manifest, ScorerSpec
from benchrun.core.records import FileDigest, ScoreRecord, Summary
from benchrun.core.settings import RunConfig
from benchrun.execute.grading import Grader, Grading
from benchrun.execute.judging import Judge, archived_calls

CHUNK = 64
T = TypeVar("T")
SCORER_TIMEOUT_S = RunConfig.model_fields["scorer_timeout_s"].default


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help="run directory or run id prefix")
    arguments.add_root(parser)
    parser.add_argument("--scorer", action="append", metavar="NAME",
                        help="score with this scorer only (repeatable); a name no task uses applies to every task")
    parser.add_argument("--scorers", type=arguments.path, metavar="FILE.py",
                        help="add this file's scorer functions to the benchmark's (its new ones on every task)")
    parser.add_argument("--only", action="store_true",
                        help="with --scorers: take scorer functions from FILE.py instead of the benchmark's "
                             "custom_scorer.py")
    parser.add_argument("--scorer-timeout-s", type=_time_limit, default=SCORER_TIMEOUT_S, metavar="S",
                        help=f"each scorer call's time limit (default {SCORER_TIMEOUT_S:g})")
    parser.add_argument("--rejudge", nargs="*", metavar="judge.KEY=VALUE",
                        help="ask the run's judges again (of its judge model, or of another: judge.model=... "
                             "judge.host=...); without it the archived judgements are read again")
    parser.add_argument("--force", action="store_true",
                        help="score the run's records even if they do not verify (recorded in rescore.json)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def _time_limit(text: str) -> float:
    """--scorer-timeout-s as a run's scorer_timeout_s takes it: finite seconds over 0 (`-1`, `0`, `nan` refused, and
    `inf`, which a run's config refuses as JSON has no number for it: a hung scorer would hang the rescore)."""
    field = RunConfig.model_fields["scorer_timeout_s"]
    try:
        return TypeAdapter(Annotated[float, *field.metadata, Field(allow_inf_nan=False)]).validate_python(text)
    except ValidationError:
        raise argparse.ArgumentTypeError(f"'{text}' is no time limit: give seconds over 0, as scorer_timeout_s "
                                         "takes") from None


def main(args: argparse.Namespace) -> int:
    result = rescore(resolve_run(args.run, args.root), args.scorer, args.scorers, args.scorer_timeout_s, args.only,
                     args.rejudge, args.force)
    if args.json:
        print(json.dumps(result.model_dump(mode="json"), indent=2))  # as every --json: a path not UTF-8 escaped
    else:
        print_rescore(result, output.stdout())
    return EXIT["ok"]


def rescore(run: Run, names: list[str] | None = None, scorers_file: PathLike | None = None,
            timeout_s: float = SCORER_TIMEOUT_S, only: bool = False, rejudge: list[str] | None = None,
            force: bool = False) -> Rescore:
    """Score `run` again from responses.jsonl and manifest.json into a new `rescores/<NNN>/` directory, with the
    benchmark's scorers plus those of `scorers_file` (`only`: those of `scorers_file` instead of the benchmark's);
    its judges read again from judgements.jsonl, or with `rejudge` (judge.* overrides) asked again. Records that do
    not verify are refused, unless `force` (then rescore.json says what did not verify)."""
    if run.info.manifest_id is None:
        raise ArchiveError(uncompiled(run), file=str(run.path))
    unverified = run.require_records(force=True).unverified
    manifest = run.manifest
    if unverified and not force:
        raise ArchiveError(f"{unverified[0]}; rescore with --force to score its records anyway (recorded in "
                           f"{RESCORE_FILE})", file=str(run.path))
    config = rejudged_config(run, rejudge) if rejudge is not None else None
    asked = rejudged_manifest(manifest, config) if config is not None else None
    loaded, plan = planned(run, manifest, names, scorers_file, only)
    refuse_metric_clashes(manifest.tasks, plan, lambda name: None if loaded[name][1] == "builtin" else loaded[name][1])
    refuse_unscorable(manifest, plan, lambda name: loaded[name][1] == "builtin", str(run.path / MANIFEST))
    for name in sorted({name for chosen in plan.values() for name in chosen}):  # as a run checks those it calls
        fn, origin, _ = loaded[name]
        if origin != "builtin":
            check_signature(name, fn, origin)
    old, old_tally = _old_scores(run, manifest)
    with DirLock(run.path), _claimed(run.path / RESCORES) as out:
        started = now()
        clock = WallWatch(started)
        grading = _Grading(_grader(asked or manifest, plan, loaded, out / RESCORE_LOG, timeout_s), old, out)
        found = INTERRUPTS.run(lambda: _judged_scores(run, asked or manifest, grading, config))
        created = now()
        info = RescoreInfo(rescore=out.name, run_id=run.id, manifest_id=run.info.manifest_id, created_at=created,
                           benchrun=environment()["benchrun"], selected=None if names is None else tuple(names),
                           scorers=scorers_used(manifest, plan, loaded), counts=found.books.counts(),
                           files=found.digests, judge=found.judge, unverified=tuple(unverified),
                           modules=modules_used(run, manifest, loaded), started_at=started,
                           clock_stepped_back_s=clock.behind(created))
        write_atomic(out / RESCORE_FILE, info.model_dump_json(indent=2).encode() + b"\n")
    return Rescore(dir=str(out), info=info, means=_means(old_tally, found.summary), changed=tuple(found.changed),
                   errors=tuple(found.errors))


@contextmanager
def _claimed(folder: Path) -> Iterator[Path]:
    """A new rescore's folder in `folder` (`claim_dir`), removed if the block fails, and `folder` too where this made
    it: a rescore that failed (a name too long, a signal) left an empty rescores/ in a sealed run."""
    made, out = not folder.exists(), None
    try:
        out = claim_dir(folder)
        yield out
    except BaseException:
        if out is not None:
            shutil.rmtree(out, ignore_errors=True)
        if made:
            with suppress(OSError):
                folder.rmdir()
        raise


def claim_dir(parent: Path) -> Path:
    """A new numbered directory under `parent` (the run's own folder, never a link), claimed atomically with os.mkdir
    (taken -> try the next), numbered on from the largest rescore's number there."""
    own_file(parent, "folder")
    parent.mkdir(exist_ok=True)
    numbers = (n for p in parent.iterdir() if (n := number_in(p.name)) is not None and n < RESCORE_NUMBERS)
    number = max(numbers, default=0) + 1
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
            timeout_s: float) -> Callable[[Judge | None], Grader]:
    """A Grader over the manifest with each task's scorers replaced by the planned ones, for a judge to come."""
    tasks = tuple(t.model_copy(update={"scorers": tuple(_spec(n, loaded) for n in plan[t.name])})
                  for t in manifest.tasks)
    scorers = {name: fn for name, (fn, _, _) in loaded.items()}
    return lambda judge: Grader(manifest.model_copy(update={"tasks": tasks}), scorers, log, timeout_s, judge)


def archived_judge(run: Run, manifest: Manifest) -> Judge | None:
    """The run's judges reading its archived judgements again (no judge model asked); None without judges."""
    if not manifest.judges:
        return None
    return Judge(manifest, None, archived=archived_calls(run))


def _spec(name: str, loaded: Loaded) -> ScorerSpec:
    fn, origin, _ = loaded[name]
    return ScorerSpec(name=name, origin="builtin" if origin == "builtin" else CUSTOM_FILE, sha256=source_sha256(fn))


@dataclass
class _Graded:
    """What grading every archived response again wrote (its files' digests, the summary) and found."""

    books: Books
    digests: dict[str, FileDigest]
    summary: Summary
    changed: list[SampleChange] = field(default_factory=list)
    errors: list[ScorerFailure] = field(default_factory=list)
    judge: dict[str, Any] | None = None
    """With --rejudge: the judge model asked (its identity, its runner config as used)."""


@dataclass
class _Grading:
    """How a rescore grades: its grader (for the judge to come), the run's own scores to compare, where it writes."""

    grader: Callable[[Judge | None], Grader]
    old: OldScores
    out: Path


async def _judged_scores(run: Run, manifest: Manifest, grading: _Grading, config: dict[str, Any] | None) -> _Graded:
    """Grade with the run's judgements read again, or (`config`: --rejudge) with its judge model asked again."""
    if config is None:
        return await _write_scores(run, manifest, grading.grader(archived_judge(run, manifest)), grading)
    async with rejudging(manifest, config, run.info.identity) as (judge, judged):
        found = await _write_scores(run, manifest, grading.grader(judge), grading, judgements=True)
    return replace(found, judge=judged)


async def _write_scores(run: Run, manifest: Manifest, grader: Grader, grading: _Grading,
                        judgements: bool = False) -> _Graded:
    """Grade every archived response into scores.jsonl and summary.json (and with `judgements` the judge calls made
    into judgements.jsonl); collect the changed values and the scorers' errors. Responses are graded CHUNK at a
    time, so the scorer process always has work waiting."""
    samples, out = {s.id: s for s in manifest.samples}, grading.out
    books = Books(manifest, _run_wall_s(run), run.info.shard)
    sinks = {name: RecordFile(out / name, fresh=True) for name in (SCORES, *([JUDGEMENTS] if judgements else []))}
    changed: list[SampleChange] = []
    errors: list[ScorerFailure] = []
    try:
        async with grader:
            for chunk in _batched(run.responses(), CHUNK):
                unknown = next((r.id for r in chunk if r.id not in samples), None)
                if unknown is not None:
                    raise ArchiveError(f"a response for sample '{unknown}', which the manifest does not have",
                                       file=str(run.path))
                graded = await asyncio.gather(*(grader.grade(samples[r.id], r) for r in chunk))
                for response, done in zip(chunk, graded):
                    books.response(response)
                    books.judgements(done.judged)
                    books.scores(done.records)
                    _append(sinks, done)
                    for record in done.records:
                        changed.extend(sample_changes(grading.old.get((record.id, record.repeat, record.scorer)),
                                                      record))
                        if record.error is not None and response.error is None:
                            errors.append(ScorerFailure(id=record.id, task=record.task, repeat=record.repeat,
                                                        scorer=record.scorer, error=str(record.error)))
    except BaseException:  # a judge that stops the rescore, a signal: its files closed, then removed with its folder
        for sink in sinks.values():
            sink.abandon()
        raise
    digests = {name: sink.close() for name, sink in sinks.items()}
    summary = books.summary(run.info.manifest_id, run.info.model)
    write_atomic(out / SUMMARY, summary.model_dump_json(indent=2).encode() + b"\n")
    return _Graded(books, {**digests, SUMMARY: file_digest(out / SUMMARY)}, summary, changed, errors)


def _append(sinks: dict[str, RecordFile], done: Grading) -> None:
    sinks[SCORES].append(b"".join(record.model_dump_json().encode() + b"\n" for record in done.records))
    if JUDGEMENTS in sinks and done.new_judgements:
        sinks[JUDGEMENTS].append(b"".join(call.model_dump_json().encode() + b"\n" for call in done.new_judgements))


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
    old = {(m.task, m.metric): (m.mean, m.n) for m in old_tally.summaries()}
    changes = []
    for line in summary.metrics:
        mean, n = old.get((line.task, line.metric), (None, 0))
        changes.append(MeanChange(task=line.task, metric=line.metric, old=mean, new=line.mean, old_n=n, new_n=line.n,
                                  delta=_delta(mean, line.mean)))
    return tuple(changes)


def _delta(old: float | None, new: float | None) -> float | None:
    return None if old is None or new is None else new - old

"""`retry RUN`: ask a finished run's failed samples again, into a new run directory that names its parent.

A finished run's files are never rewritten. The retry is a run of its own (beside the parent by default, named
`<parent>.retry<N>`): the parent's manifest and config, the parent's good answers carried over with their scores
and judge calls (each marked `carried_from`), and a fresh request (judged by the run's judge model, checked to be the
one the parent used) for every sample whose request failed or was never made; a carried answer whose judge request
failed (a 5xx, a timeout after its retries: no reply) is judged again, its other judge calls read again, and one the
parent left ungraded (its judge failed fast) is graded. It holds every sample exactly once and verifies on its own.
The parent must verify intact, and its benchmark sources and model must be what they were, unless `--force`
(recorded in the retry's run.json history).
"""

from __future__ import annotations

import argparse
import os
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, TypeVar

from benchrun.archive.answerunit import answer_unit
from benchrun.archive.lookup import named_folder, resolve_run
from benchrun.archive.reader import PathLike, Run, load_run
from benchrun.archive.rows import joined, ungraded
from benchrun.archive.sessions import CARRIED, JUDGED_AGAIN, carried_by
from benchrun.archive.trust import not_finished, uncompiled
from benchrun.archive.writer import RunWriter, environment, new_run_id, now
from benchrun.audit import arguments
from benchrun.audit.heading import retried
from benchrun.audit.intotasks import among_tasks
from benchrun.audit.judged import Calls, calls_by_answer, unreplied
from benchrun.audit.limits import add_set, limits_given
from benchrun.audit.resume import (
    HOST,
    JUDGE_HOST,
    Servers,
    add_hosts,
    asked_at,
    asked_config,
    changed_sources,
    checked_models,
    current_scorers,
    hosts_noted,
    servers_given,
)
from benchrun.audit.samemodel import check_unchanged
from benchrun.audit.verify import check_run
from benchrun.compiler.plan import Plan
from benchrun.console import output
from benchrun.core.errors import EXIT, ArchiveError, ConfigError, RunDirTaken
from benchrun.core.interrupts import INTERRUPTS
from benchrun.core.layout import CONFIG, FINISHED, MANIFEST, NAME_MAX
from benchrun.core.lineage import Lineage, recorded
from benchrun.core.records import Counts, JudgementRecord, ResponseRecord, RunInfo, answer_name
from benchrun.core.recordvalues import Served
from benchrun.core.shards import answers_of, queries_of
from benchrun.execute.judging import Key
from benchrun.execute.runners.registry import make_runner
from benchrun.execute.session import execute, make_judge, recording

Record = TypeVar("Record", ResponseRecord, JudgementRecord)
"""A record a retry carries over, marked with the run that asked it."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help="run directory or run id prefix")
    arguments.add_root(parser)
    parser.add_argument("--force", action="store_true",
                        help="retry even if the parent does not verify, or its sources or model changed (recorded)")
    add_hosts(parser)
    parser.add_argument("--into", type=arguments.run_dir, metavar="DIR", help="the new run's directory (default: beside RUN)")
    add_set(parser)


def main(args: argparse.Namespace) -> int:
    info, path = retry_run(resolve_run(args.run, args.root), force=args.force, host=servers_given(args.host),
                           into=args.into, limits=limits_given(args.limits),
                           judge_host=servers_given(args.judge_host, JUDGE_HOST))
    run = load_run(path)
    output.print_results(path, info, run.summary, output.stdout())
    output.say(output.stdout(), f"retry of run {info.parent.run_id}: {retried(info, answer_unit(run))}")
    return EXIT["ok"]


def retry_run(parent: Run, force: bool = False, host: Servers = None, into: PathLike | None = None,
              limits: dict[str, Any] | None = None, judge_host: Servers = None) -> tuple[RunInfo, Path]:
    """The new run (its run.json and directory) that asks `parent`'s failed samples again (at `host`, its judge at
    `judge_host`, when given; with `limits`, `--set`'s, changed)."""
    problems = _parent_problems(parent)
    check_unchanged(parent, force, "retry")
    config = asked_config(parent, limits or {}, "retry")  # before --force is advised: it cannot ask without one
    if problems and not force:
        raise ArchiveError(f"{problems[0]}; retry with --force to carry its records over anyway (recorded)",
                           file=str(parent.path))
    manifest = parent.manifest
    changed = changed_sources(parent, manifest)
    if changed and not force:
        raise ArchiveError(f"the benchmark's sources changed since run {parent.id}: {', '.join(changed)}; "
                           "retry with --force to use them anyway (recorded in run.json)")
    served = (Served(), Served())
    todo = _todo(parent, served[0])
    unjudged = (unreplied(parent) | ungraded(parent)) - todo
    if not todo and not unjudged:
        raise ArchiveError(f"every sample of run {parent.id} has an answer; nothing to retry",
                           file=str(parent.path))
    plan = Plan(manifest, current_scorers(parent, manifest), parent.bench_dir(), config["scorer_timeout_s"])
    config = asked_at(parent, config, host, judge_host)
    note = {"retried_at": now(), "forced": force, "parent_problems": problems, "changed_sources": changed,
            "host": host, **hosts_noted(judge_host, limits), CARRIED: carried_by(parent, todo),
            **({JUDGED_AGAIN: [answer_name(*key) for key in sorted(unjudged)]} if unjudged else {})}
    into = None if into is None else Path(into)
    if into is None:
        _beside(parent, 1)  # a name the file system refuses is said before the server is asked
    return INTERRUPTS.run(lambda: _retry(parent, plan, config, (todo, unjudged), note, into, served))


def _parent_problems(parent: Run) -> list[str]:
    """Why the parent cannot be trusted as it is: unfinished, or any verify finding against it."""
    if parent.info.status not in FINISHED:
        raise ArchiveError(f"run {parent.id} is {parent.info.status}: {not_finished(parent, 'retry')}",
                           file=str(parent.path))
    if parent.info.manifest_id is None:
        raise ArchiveError(uncompiled(parent), file=str(parent.path))
    return [f"{f.file}: {f.message}" for f in check_run(parent) if not f.ok]


def _todo(parent: Run, served: Served) -> set[tuple[str, int]]:
    """The parent's answers (sample id, repeat) not given: a failed request, or none at all; the model they name
    kept in `served`."""
    answered = {(r.id, r.repeat) for r in served.each(parent.require_records(force=True).responses())
                if r.error is None}
    return {query.key for query in queries_of(parent.manifest, parent.info.shard)} - answered


async def _retry(parent: Run, plan: Plan, config: dict[str, Any],
                 keys: tuple[set[tuple[str, int]], set[tuple[str, int]]], note: dict[str, Any],
                 into: Path | None, served: tuple[Served, Served]) -> tuple[RunInfo, Path]:
    todo, unjudged = keys
    runner = make_runner(config["runner"], server_flag=HOST, asked_again=True)
    try:
        calls = _calls(parent, served[1])
        async with checked_models(parent, plan, config, runner, note["forced"], "retry", asks=bool(todo),
                                  served=served) as (identity, judged):
            carried = answers_of(plan.manifest, parent.info.shard) - len(todo)
            writer = _claim(parent, into, Lineage(run_id=parent.id, path=recorded(parent.path), carried=carried,
                                                  asked=len(todo)), note)
            with recording(writer):
                writer.start((parent.path / CONFIG).read_text(encoding="utf-8"))
                writer.compiled(plan.manifest)
                if writer.info.manifest_id != parent.info.manifest_id:
                    raise ArchiveError(f"the manifest of run {parent.id} does not survive a round trip: not "
                                       "canonical", file=str(parent.path / MANIFEST))
                writer.identified(identity, runner.public_config())
                judge = make_judge(plan, judged, config, writer, None, carried=_replied(calls, unjudged))
                await execute(plan, runner, writer, [q for q in plan.manifest.queries() if q.key in todo],
                              judge=judge, regrade=_carry(parent, writer, calls, (todo, unjudged)))
        return writer.info, writer.dir
    finally:
        await runner.aclose()


def _carry(parent: Run, writer: RunWriter, calls: Calls,
           keys: tuple[set[tuple[str, int]], set[tuple[str, int]]]) -> list[ResponseRecord]:
    """Record the parent's answers not asked again (not in `keys`' todo), with their judge calls (`calls`) and scores,
    each marked `carried_from` the run that asked it (`_marker`). Those `unjudged` are recorded without their scores
    and judge calls, and returned, to be graded again."""
    todo, unjudged = keys
    mark = _marker(parent)
    again = []
    for response, scores in joined(parent.responses(), parent.scores()):
        key = (response.id, response.repeat)
        if key in todo:
            continue
        carried = mark(response)
        if key in unjudged:
            writer.record_response(carried)
            again.append(carried)
        else:
            writer.record(carried, scores, calls[key])
    return again


def _calls(parent: Run, served: Served) -> Calls:
    """The parent's judge calls by the answer they judge, each marked `carried_from` the run that asked it; the judge
    model they name kept in `served`."""
    mark = _marker(parent)
    return defaultdict(list, {key: [mark(call) for call in group]
                              for key, group in calls_by_answer(parent, served).items()})


def _marker(parent: Run) -> Callable[[Record], Record]:
    """A record of the parent marked `carried_from` the run that asked it: the parent, the run the parent's own retry
    carried it from (a retry of a retry names the first, which its parent, deleted, would no longer tell), or the
    shard run whose line it is in a merged parent."""
    askers = {shard.shard: shard.run_id for shard in parent.info.merged.shards} if parent.info.merged else {}

    def marked(record: Record) -> Record:
        return record.model_copy(update={"carried_from": record.carried_from or askers.get(record.shard, parent.id)})
    return marked


def _replied(calls: Calls, unjudged: set[tuple[str, int]]) -> dict[Key, JudgementRecord]:
    """The judge calls in `calls` on the answers `unjudged` that got a reply: read again by the retry's judge, not
    asked."""
    return {(c.id, c.repeat, c.judge, c.judge_repeat): c for key in unjudged for c in calls.get(key, ())
            if c.reply is not None}


def _claim(parent: Run, into: Path | None, lineage: Lineage, note: dict[str, Any]) -> RunWriter:
    """A new run directory for the retry: `into`, or the first `<parent>.retry<N>` beside the parent that nothing holds
    (a file, a directory or a symbolic link of that name is passed over: a link would have the retry written where it
    points). A sweep job's retry is of its sweep, asked with the settings the job varied (its label, `varied`)."""
    info = parent.info
    fresh = RunInfo(run_id=new_run_id(), status="running", started_at=now(), benchmark=info.benchmark,
                    model=info.model, manifest_id=None, overrides=info.overrides, cwd=info.cwd, runner=info.runner,
                    environment=environment(), counts=Counts(samples=0), parent=lineage, history=(note,),
                    shard=info.shard, sweep=info.sweep, label=info.label, varied=info.varied)
    if into is not None and (why := among_tasks(parent, into, "--into DIR")):
        raise RunDirTaken(why)
    if into is not None:
        return RunWriter.create(into, fresh, "--into DIR")
    number = 1
    while True:
        candidate = _beside(parent, number)
        if os.path.lexists(candidate):
            number += 1
            continue
        try:
            return RunWriter.create(candidate, fresh)
        except RunDirTaken:
            number += 1


def _beside(parent: Run, number: int) -> Path:
    """`<parent>.retry<N>` beside the parent (named as `.` or `dir/..` too, whose names are none); refused, with the way
    to name another, when that name is longer than a file system takes (a parent's own name of 249 bytes or more)."""
    folder = named_folder(parent.path)
    path = folder.with_name(f"{folder.name}.retry{number}")
    if (size := len(os.fsencode(path.name))) > NAME_MAX:
        raise ConfigError(f"the retry's directory beside run {parent.id} would be named {path.name[:24]}….retry{number}"
                          f", {size} bytes, more than a file system takes ({NAME_MAX}); nothing was written; name "
                          "its directory with --into DIR")
    return path

"""`merge SHARD_RUN... --into DIR [--partial]`: the runs of a manifest's shards (`shard=i/n`) joined into one run; a
sweep's directory (`shards=n`) stands for its jobs, as in `compare`.

Refused in one line, with nothing written, unless every shard run verifies intact, they share the manifest id, the
model digest, the judge model's digest and the options, no shard is given twice, each holds only its own shard's
answers, and together they are complete (every shard, every answer), which --partial waives (recorded). The merged run
holds the shards' records in manifest order, each line with its shard; its summary is what one unsplit run of those
answers gives (but for the wall time, unknown: the shards ran apart); its run.json lists the shards (`merged`), as a
retry's names its parent. The shard runs are never rewritten. The merged run is written whole or not at all: in a
hidden folder beside --into, renamed to it once sealed, so a merge stopped part-way leaves no run a server would be
needed to finish; the hidden folder of a merge killed before it ended (SIGKILL, the OOM killer) is removed by the next
merge into the same place.
"""

from __future__ import annotations

import argparse
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import yaml

from benchrun.archive.atomic import merging_stem
from benchrun.archive.claims import refusal
from benchrun.archive.dirlock import live_writer, probe
from benchrun.archive.lookup import named_folder
from benchrun.archive.reader import PathLike, Run, load_run
from benchrun.archive.rows import joined, ungraded
from benchrun.archive.sessions import mixed_judges, mixed_models
from benchrun.archive.trust import not_finished
from benchrun.archive.writer import RunWriter, environment, new_run_id, now
from benchrun.audit import arguments
from benchrun.audit.inputs import input_lines, inputs
from benchrun.audit.intotasks import among_tasks
from benchrun.audit.named import runs_named
from benchrun.audit.verify import check_run
from benchrun.console import output
from benchrun.core.advice import audit_command
from benchrun.core.errors import EXIT, ArchiveError, RunDirTaken, os_problem
from benchrun.core.layout import LOCK, MANIFEST, Status
from benchrun.core.lineage import Merge, MergedShard, recorded
from benchrun.core.manifest import Manifest
from benchrun.core.records import Counts, JudgementRecord, ResponseRecord, RunInfo, ScoreRecord
from benchrun.core.recordvalues import pin_shown, pinned_as
from benchrun.core.shards import Shard, answers_of
from benchrun.core.text import counted

Key = tuple[str, int]
CHOSEN_BY = "--into DIR"
"""What names the merged run's directory, as a refusal says how to pick another."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="SHARD_RUN",
                        help="the shard runs (directories or run id prefixes), or a sweep's directory (shards=n): its "
                             "jobs")
    parser.add_argument("--into", type=arguments.run_dir, required=True, metavar="DIR", help="the merged run's directory (new)")
    parser.add_argument("--partial", action="store_true",
                        help="merge even when shards or answers are missing (recorded; the merged run is then "
                             "interrupted, and resume asks the rest)")
    arguments.add_root(parser)


def main(args: argparse.Namespace) -> int:
    info, path = merge_runs(runs_named(args.runs, args.root), args.into, args.partial)
    output.print_results(path, info, load_run(path).summary, output.stdout())
    merged = info.merged
    missing = f"; missing: {', '.join(merged.missing)}" if merged.missing else ""
    output.say(output.stdout(), f"merge of {len(merged.shards)} shards: "
                                f"{', '.join(f'{s.shard} ({s.run_id})' for s in merged.shards)}{missing}")
    return EXIT["ok"]


@dataclass
class _Answer:
    """One answer of a shard, with its score lines and judge calls, each line marked with its shard."""

    response: ResponseRecord
    scores: list[ScoreRecord] = field(default_factory=list)
    judgements: list[JudgementRecord] = field(default_factory=list)


def merge_runs(runs: Sequence[Run], into: PathLike, partial: bool = False) -> tuple[RunInfo, Path]:
    """The merged run (its run.json and directory) of the shard runs `runs`."""
    shards = _checked(runs)
    manifest = shards[0][1].manifest  # every shard's: their manifest ids are one
    missing = _missing(shards, manifest)
    answers: dict[Key, _Answer] = {}
    for shard, run in shards:
        answers.update(_answers(run, shard, manifest))
    short = answers_of(manifest, None) - len(answers)
    if (missing or short) and not partial:
        raise ArchiveError(f"the shards are incomplete: {_gaps(missing, shards)}; merge with --partial to merge "
                           "what there is (recorded)")
    merge = Merge(shards=tuple(MergedShard(run_id=run.id, path=recorded(run.path), shard=str(shard),
                                           status=run.info.status, responses=run.info.counts.responses,
                                           identity=run.info.identity, environment=run.info.environment,
                                           runner=run.info.runner, judge_runner=(run.info.judge or {}).get("runner"),
                                           history=run.info.history)
                               for shard, run in shards),
                  partial=bool(missing or short), missing=tuple(missing), merged_at=now())
    return _write(shards[0][1], Path(into), merge, [answers[q.key] for q in manifest.queries() if q.key in answers],
                  short)


def _checked(runs: Sequence[Run]) -> list[tuple[Shard, Run]]:
    """The shard runs in shard order, once each is a finished shard run that verifies, and all are shards of one
    split of one manifest, asked of one model with the same options: a shard's number found again is said given
    twice only of runs alike (two models' jobs of one sweep are said to be of two models)."""
    shards: dict[int, tuple[Shard, Run]] = {}
    for run in runs:
        shard = _shard_of(run)
        if shard.index in shards:
            _same_split(*shards[shard.index], shard, run)
            raise ArchiveError(f"shard {shard} is given twice: runs {shards[shard.index][1].id} and {run.id}")
        shards[shard.index] = shard, run
    ordered = [shards[index] for index in sorted(shards)]
    first_shard, first = ordered[0]
    for shard, run in ordered[1:]:
        _same_split(first_shard, first, shard, run)
    return ordered


def _shard_of(run: Run) -> Shard:
    """The run's shard, once it is a shard run that ended, compiled and verifies intact."""
    info = run.info
    if info.shard is None:
        raise ArchiveError(f"run {run.id} is not a shard run (it was not run with shard=i/n)", file=str(run.path))
    if info.manifest_id is None:
        raise ArchiveError(f"run {run.id} (shard {info.shard}) ended before it compiled ({info.reason})",
                           file=str(run.path))
    if not info.files:  # its writer never ended it: running, or killed and said `interrupted` by its sweep's end
        raise ArchiveError(f"run {run.id} (shard {info.shard}) is {info.status}: {not_finished(run, 'merge')}",
                           file=str(run.path))
    findings = [f for f in check_run(run) if not f.ok]
    if findings:
        raise ArchiveError(f"run {run.id} (shard {info.shard}) does not verify: {findings[0].file}: "
                           f"{findings[0].message}", file=str(run.path))
    if left := ungraded(run):
        raise ArchiveError(f"run {run.id} (shard {info.shard}) is {info.status} with {len(left)} of its answers not "
                           f"graded; finish it with {audit_command('resume', run.path)}", file=str(run.path))
    if mixed := mixed_models(run) or mixed_judges(run):
        raise ArchiveError(f"run {run.id} (shard {info.shard}) holds {mixed}: a merged run is of one model",
                           file=str(run.path))
    return info.shard


def _same_split(first_shard: Shard, first: Run, shard: Shard, run: Run) -> None:
    """Refuse two shard runs that are not parts of one split of one manifest, asked alike."""
    pair = f"shard runs {first.id} ({first_shard}) and {run.id} ({shard})"
    if shard.count != first_shard.count:
        raise ArchiveError(f"{pair} are parts of different splits: {first_shard.count} and {shard.count} shards")
    digests = pinned_as(first.info.identity), pinned_as(run.info.identity)
    if digests[0] != digests[1]:
        raise ArchiveError(f"{pair} asked different models: {' and '.join(_digest(d) for d in digests)}")
    judges = _judge_digest(first), _judge_digest(run)
    if judges[0] != judges[1]:
        raise ArchiveError(f"{pair} were graded by different judge models: {' and '.join(_digest(d) for d in judges)}; "
                           "a merged run names one judge model for every grade")
    options = first.info.runner.get("options"), run.info.runner.get("options")
    if options[0] != options[1]:
        raise ArchiveError(f"{pair} asked with different options: {options[0]} and {options[1]}")
    if first.info.manifest_id != run.info.manifest_id:
        raise ArchiveError(f"{pair} are of different manifests: {first.info.manifest_id[:12]}… and "
                           f"{run.info.manifest_id[:12]}…{_first_difference(first, run)}")


def _first_difference(first: Run, run: Run) -> str:
    """The first of what `compare` names differing in two runs' manifests, as a note (` (config task.system: ...)`):
    two manifest ids alone did not say which setting or file to make alike."""
    found = [line.strip() for line in input_lines(inputs(first, run), (f"run {first.id}", f"run {run.id}"))[1:]
             if not line.startswith("  provenance ")]
    return f" ({found[0]})" if found else ""


def _judge_digest(run: Run) -> str | None:
    """Which judge model graded the run's answers (`pinned_as`; None without a judge, or one saying nothing)."""
    return pinned_as(run.info.judge.get("identity", {})) if run.info.judge else None


def _digest(digest: str | None) -> str:
    return pin_shown(digest) if digest else "no digest"


def _missing(shards: list[tuple[Shard, Run]], manifest: Manifest) -> list[str]:
    """The shards no run was given for that ask a sample: one of more shards than the manifest has samples asks none
    (`shard=19/20` of 18), and no run of it is missing."""
    count = shards[0][0].count
    given = {shard.index for shard, _ in shards}
    return [f"{index}/{count}" for index in range(1, count + 1)
            if index not in given and Shard(index=index, count=count).samples(manifest)]


def _gaps(missing: list[str], shards: list[tuple[Shard, Run]]) -> str:
    """What is missing: shards no run was given for, and shard runs without all their answers."""
    short = [f"run {run.id} ({shard}) has {run.info.counts.responses} of {run.info.counts.samples} answers "
             f"({run.info.status})" for shard, run in shards if run.info.counts.responses < run.info.counts.samples]
    return "; ".join([*([f"no run of shard {', '.join(missing)}"] if missing else []), *short])


def _answers(run: Run, shard: Shard, manifest: Manifest) -> dict[Key, _Answer]:
    """The shard run's answers, each line marked with its shard; refused when one is not its shard's to give."""
    mine = {query.key for query in manifest.queries(shard.samples(manifest))}
    mark = {"shard": str(shard)}
    answers: dict[Key, _Answer] = {}
    for response, scores in joined(run.responses(), run.scores()):
        key = response.id, response.repeat
        if key not in mine or key in answers:
            why = "twice" if key in answers else f"that is not shard {shard}'s"
            raise ArchiveError(f"run {run.id} holds an answer for sample '{response.id}' (repeat {response.repeat}) "
                               f"{why}", file=str(run.path))
        answers[key] = _Answer(response.model_copy(update=mark), [s.model_copy(update=mark) for s in scores])
    for call in run.judgements():
        answers[call.id, call.repeat].judgements.append(call.model_copy(update=mark))
    return answers


def _write(first: Run, into: Path, merge: Merge, answers: list[_Answer], short: int) -> tuple[RunInfo, Path]:
    """Write the merged run into the new (or empty) directory `into`, whole or not at all: the first shard's config
    (without its shard), manifest, model and runner, then every answer in manifest order, in a hidden folder beside
    `into` that becomes `into` once the run has ended."""
    info = first.info
    fresh = RunInfo(run_id=new_run_id(), status="running", started_at=now(), benchmark=info.benchmark,
                    model=info.model, manifest_id=None, cwd=info.cwd, runner=info.runner, environment=environment(),
                    overrides=tuple(o for o in info.overrides if not o.startswith("shard=")), counts=Counts(samples=0),
                    merged=merge)
    into = _followed(named_folder(into))  # `.` (an empty working directory) is made beside, not in itself
    if why := refusal(into, CHOSEN_BY) or _holding(into) or among_tasks(first, into, CHOSEN_BY):
        raise RunDirTaken(why)
    _clear_killed(into)
    staging = into.parent / f"{_staged(into)}{fresh.run_id}"
    writer = RunWriter.create(staging, fresh, CHOSEN_BY)
    try:
        writer.start(yaml.safe_dump({**first.config, "shard": None}, sort_keys=False, allow_unicode=True))
        writer.compiled(first.manifest, wall_s=None)
        if writer.info.manifest_id != info.manifest_id:
            raise ArchiveError(f"the manifest of run {first.id} does not survive a round trip: not canonical",
                               file=str(first.path / MANIFEST))
        writer.identified(info.identity, info.runner)
        if info.judge:
            writer.judged_by(info.judge["identity"], info.judge["runner"], info.judge.get("allow_self", False))
        for answer in answers:
            writer.record(answer.response, answer.scores, answer.judgements)
        writer.finish(*_status(writer.counts, merge, short, into))
        _into_place(staging, into)
        writer.release()
    except BaseException:
        writer.release()
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return writer.info, into


def _staged(into: Path) -> str:
    """The start of the name of a hidden folder in which a run merged into `into` is made."""
    return merging_stem(into.name)


def _clear_killed(into: Path) -> None:
    """Remove the hidden folders of merges into `into` killed before they ended: no live writer writes them (a live
    merge holds its folder's lock until the folder is in place, and renews its lease there from another machine), and
    their shards can make the run again."""
    if not into.parent.is_dir():
        return
    for entry in os.scandir(into.parent):
        if entry.name.startswith(_staged(into)) and entry.is_dir(follow_symlinks=False):
            lock = probe(path := Path(entry.path) / LOCK)
            if lock.exists and lock.misplaced is None and live_writer(path, lock) is None:
                shutil.rmtree(entry.path, ignore_errors=True)


def _followed(into: Path) -> Path:
    """`into`, or the folder a symbolic link there leads to: the merged run is renamed onto a folder, never onto the
    link (which the rename would not follow); a link to nothing is refused."""
    if not os.path.islink(into):
        return into
    if not into.exists():
        raise RunDirTaken(f"{into} is a symbolic link to nothing (to {os.readlink(into)}); nothing was changed; pick a "
                          f"new directory ({CHOSEN_BY})")
    return Path(os.path.realpath(into))


def _holding(into: Path) -> str | None:
    """Why `into`, a folder already holding files, cannot take the merged run, which is renamed into place."""
    held = sorted(entry.name for entry in os.scandir(into)) if into.is_dir() else []
    if not held:
        return None
    named = ", ".join(held[:3]) + ", ..." * (len(held) > 3)
    return (f"{into} holds files ({named}): a merged run goes into a new or empty directory; nothing was changed; "
            f"pick a new directory ({CHOSEN_BY})")


def _into_place(staging: Path, into: Path) -> None:
    """The whole merged run renamed to `into` (an empty folder there is replaced); a directory filled meanwhile is
    left as it is."""
    try:
        os.rename(staging, into)
    except OSError as err:
        raise RunDirTaken(refusal(into, CHOSEN_BY) or _holding(into) or
                          f"{into}: {os_problem(err)}; nothing was changed; pick a new directory ({CHOSEN_BY})") from None


def _status(counts: Counts, merge: Merge, short: int, into: Path) -> tuple[Status, str | None]:
    """The merged run's status: as a run of its answers would end, or interrupted when answers are missing."""
    if short:
        gone = f"no run of shard {', '.join(merge.missing)}; " if merge.missing else ""
        return "interrupted", (f"merged with --partial: {gone}{counted(short, 'answer')} not asked; finish it with: "
                               f"{audit_command('resume', into.absolute())}")
    return "completed_with_errors" if counts.request_errors or counts.scorer_errors else "completed", None

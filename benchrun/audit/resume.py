"""`resume RUN`: finish an interrupted run in place, from its own manifest, asking only what has no record yet.

A run whose writer was stopped as it sealed it (run.json final, no seal, run.lock left by a dead writer) is
sealed, once every file is as run.json digests it, and nothing is asked. Otherwise, under the run directory's
lock: the run must be unfinished (interrupted, failed, or `running` with no live writer),
its manifest must hash to its id, its run.json must match its seal (if it has one), and every record line must be
the one the run wrote (see benchrun.archive.repair). A problem is refused with the file and line; `--force` drops what does
not belong and says so in run.json's history. Counts are rebuilt from the records. Nothing is written before the
model server has answered the preflight, so a resume that cannot start leaves the run exactly as it was. `--force`
never erases a fact: the history entry keeps the model identity of the session that ended and the answers it
recorded, so a run resumed with a re-pulled model says which model answered which answers (benchrun.archive.sessions).
A run that failed as its model, or its server's build, changed while it asked is finished only with `--force`: which
answers came from which cannot be told, and nothing a resume asks mends that.
"""

from __future__ import annotations

import argparse
import hashlib
import os
from pathlib import Path
from typing import Any

from benchrun.archive import repair, trust
from benchrun.archive.dirlock import DirLock, describe, own_file
from benchrun.archive.lookup import resolve_run
from benchrun.archive.reader import Run, load_run
from benchrun.archive.sessions import RESUMED, carry_cut, ended
from benchrun.archive.writer import RunWriter, file_digest, now, write_seal
from benchrun.audit import arguments
from benchrun.audit.judged import unreplied
from benchrun.audit.limits import add_set, limits_given, with_limits
from benchrun.audit.provenance import flatten
from benchrun.audit.samemodel import HOST, JUDGE_HOST, check_unchanged, checked_models
from benchrun.compiler import scoring
from benchrun.compiler.plan import Plan, manifest_config, runner_spec, source_files
from benchrun.compose.config import plain_config
from benchrun.console import output
from benchrun.core import secrets
from benchrun.core.advice import audit_command
from benchrun.core.errors import EXIT, ArchiveError, BenchrunError, ConfigError
from benchrun.core.interrupts import INTERRUPTS
from benchrun.core.judgekeys import as_made
from benchrun.core.layout import APPENDED, CONFIG, MANIFEST, RESPONSES, RUN, SEAL, SUMMARY, UNFINISHED
from benchrun.core.manifest import Manifest, Query
from benchrun.core.records import RunInfo, answer_name
from benchrun.core.recordvalues import Served
from benchrun.core.settings import RUNNERS, judge_runner_keys
from benchrun.core.shards import queries_of
from benchrun.execute.judging import archived_calls
from benchrun.execute.runners.registry import make_runner
from benchrun.execute.session import execute, make_judge, recording

Servers = str | list[str] | None
"""`--host` or `--judge-host` as given: none, one server, or a list."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help="run directory or run id prefix")
    arguments.add_root(parser)
    parser.add_argument("--force", action="store_true",
                        help="resume even if the sources, the model or the records changed: records that do not "
                             "belong are dropped (all of it recorded in run.json)")
    add_hosts(parser)
    add_set(parser)


def add_hosts(parser: argparse.ArgumentParser) -> None:
    """`--host` and `--judge-host` of `resume` and `retry`: the servers to ask now, the run's having moved."""
    parser.add_argument(HOST, action="append", metavar="URL",
                        help="ask this server instead of the ones the run used (recorded); repeat for a list of "
                             "servers")
    parser.add_argument(JUDGE_HOST, action="append", metavar="URL",
                        help="ask the judge model at this server instead of the one the run used (recorded); repeat "
                             "for a list of servers")


def main(args: argparse.Namespace) -> int:
    run = resolve_run(args.run, args.root)
    info = resume_run(run, force=args.force, host=servers_given(args.host),
                      judge_host=servers_given(args.judge_host, JUDGE_HOST), limits=limits_given(args.limits))
    output.print_results(run.path, info, load_run(run.path).summary, output.stdout())
    return EXIT["ok"]


def resume_run(run: Run, force: bool = False, host: str | list[str] | None = None,
               limits: dict[str, Any] | None = None, judge_host: str | list[str] | None = None) -> RunInfo:
    """Check the run and its records, then ask the samples without a response (at `host`, its judge at
    `judge_host`, when given) and finish the run (with `limits`, `--set`'s, changed)."""
    with DirLock(run.path) as lock:
        run = load_run(run.path)  # read again under the lock: a writer may have finished just before
        if stopped_sealing(run, lock):
            return seal_left(run, lock)
        manifest = checked_manifest(run, force)
        check_unchanged(run, force)
        for name in APPENDED:  # before the records are read: no --force makes a pipe or a folder a file to append to
            own_file(run.path / name)
        if planted := trust.strays(run):
            name, why = planted[0]
            raise ArchiveError(f"{why}: a resume would seal the run beside it; move it out of the run's directory, "
                               "then resume", file=str(run.path / name))
        if away := trust.records_elsewhere(run.path):  # --force would write it anew: the run's lines lost
            raise ArchiveError(away[1], file=str(run.path / away[0]))
        found = repair.check(run.path, manifest, run.info)
        if found.problems and (crlf := trust.records_converted(run.path)):  # --force would drop every line
            raise ArchiveError(trust.CONVERTED, file=str(run.path / crlf))
        if found.problems and not force:
            first, more = found.problems[0], len(found.problems) - 1
            also = f" ({more} more problem{'s' * (more > 1)})" if more else ""
            raise ArchiveError(f"{first.message}{also}: the records are not what the run wrote; resume with --force "
                               "to drop what does not belong (recorded in run.json)", file=str(run.path / first.file))
        config = asked_config(run, limits or {})
        if (edited := trust.config_changed(run)) is not None:
            raise config_edited(run, edited, "resume")
        if (edited := trust.model_edited(run, config_unchanged=True)) is not None:
            raise ArchiveError(f"{edited}; a run asks one model: put run.json's back, or start a new run",
                               file=str(run.path / RUN))
        changed = changed_sources(run, manifest)
        if changed and not force:
            raise ArchiveError(f"the benchmark's sources changed since run {run.id}: {', '.join(changed)}; "
                               "resume with --force to use them anyway (recorded in run.json)")
        plan = Plan(manifest, current_scorers(run, manifest), run.bench_dir(), config["scorer_timeout_s"])
        config = asked_at(run, config, host, judge_host)
        note = {"forced": force, "changed_sources": changed, "host": host, **hosts_noted(judge_host, limits),
                "stale_lock": lock.stale}
        return INTERRUPTS.run(lambda: _resume(run, plan, config, found, note, lock))


def stopped_sealing(run: Run, lock: DirLock) -> bool:
    """Whether the run's writer was stopped as it sealed the run: run.json says it ended and holds the final digests,
    there is no seal.json, and run.lock held the note of a writer that died holding it (one that ends cleanly
    empties it)."""
    return (run.info.status not in UNFINISHED and bool(run.info.files) and lock.stale is not None
            and not os.path.lexists(run.path / SEAL))


def seal_left(run: Run, lock: DirLock) -> RunInfo:
    """Write the seal a stopped writer did not, once every file is as run.json digests it; nothing is asked."""
    if problems := trust.beneath_seal(run):
        raise ArchiveError(f"{problems[0]}: run {run.id} ended but its writer was stopped before it sealed it, and its "
                           "files are not the ones run.json digests; nothing was written", file=str(run.path))
    write_seal(run.path, run.id, (run.path / RUN).read_bytes(), now(), lock.still_held)
    lock.release(ended=True)
    output.warning(f"run {run.id} ended ({run.info.status}) but its writer ({describe(lock.stale)}) was stopped "
                   "before it sealed it: sealed now, every file as run.json digests it")
    return run.info


def asked_at(run: Run, config: dict[str, Any], host: Servers, judge_host: Servers = None) -> dict[str, Any]:
    """The run's `config` with its runner at the servers it is asked at now (`runner_config`), and its judge
    (`judge_config`): a judge naming no server of its own asks the model's, so it follows them (it asked config.yaml's,
    gone, after `--host`)."""
    return {**config, "runner": runner_config(run, config, host), "judge": judge_config(run, config, judge_host)}


def judge_config(run: Run, config: dict[str, Any], host: Servers) -> dict[str, Any] | None:
    """The judge section of `config` at `host` (--judge-host) when given; else a judge naming a server of its own at
    the one it last asked (run.json's judge, as used), and one naming none as it is (it asks the model's)."""
    judge = config.get("judge")
    if not isinstance(judge, dict) or judge.get("runner") not in RUNNERS:  # none (an older benchrun's), or one
        return judge  # plain_config refuses in one line (a killed run's config.yaml, which no digest covers, edited)
    where = RUNNERS[judge["runner"]].server_key
    if host and (run.manifest.judge is None or where is None):
        why = f"run {run.id} has no judge" if run.manifest.judge is None else f"judge.runner={judge['runner']} asks no server"
        raise BenchrunError(f"{why}: --judge-host does not apply")
    if where is None:
        return judge
    if not host and judge.get(where) is None:
        return judge
    return {**judge, where: host or (run.info.judge or {}).get("runner", {}).get(where) or judge[where]}


def hosts_noted(judge_host: Servers, limits: dict[str, Any] | None) -> dict[str, Any]:
    """What a resume's or retry's history notes of `--judge-host` and `--set`, where given."""
    return {**({"judge_host": judge_host} if judge_host else {}), **({"set": limits} if limits else {})}


def runner_config(run: Run, config: dict[str, Any], host: str | list[str] | None) -> dict[str, Any]:
    """The runner config to ask with: the run's, at the server it last asked (run.json's runner, as used: a retry
    or resume with --host asked another than config.yaml's), or at `host` (--host) when given."""
    runner = config.get("runner")
    if not isinstance(runner, dict) or runner.get("type") not in RUNNERS:  # plain_config refuses it in one line
        return runner
    where = RUNNERS[runner["type"]].server_key
    if where is None:
        if host:
            raise BenchrunError(f"runner={runner['type']} asks no server: --host does not apply")
        return runner
    return {**runner, where: host or run.info.runner.get(where) or runner[where]}


def servers_given(hosts: list[str] | None, flag: str = HOST) -> Servers:
    """`--host` (or `flag`) as given: none, one server, or (repeated) a list of servers; an empty one is refused (it would ask the
    run's own servers unsaid), and so is a URL holding a credential (user info, `?api_key=`), since run.json would
    keep it."""
    for url in hosts or []:
        if not url.strip():
            raise ConfigError(f"{flag} {url!r}: not a server's URL; give http://host:port, or leave {flag} out to ask "
                              "the run's own servers")
        if (why := secrets.secret_value(url)) is not None:
            raise ConfigError(f"{flag} {secrets.said_url(url)}: secrets are never taken from {flag}, where they "
                              f"would be archived ({why}); give URLs without user names or passwords")
    return hosts[0] if hosts and len(hosts) == 1 else hosts


class PinnedEdited(ArchiveError):
    """config.yaml asks otherwise than the run's manifest pins (a key of it edited): said by that key."""


def asked_config(run: Run, limits: dict[str, Any], command: str = "resume") -> dict[str, Any]:
    """`run_config`'s config, read before the benchmark config.yaml locates: of a run that ended, a config.yaml
    removed, emptied or made no config since is said to be changed (it was said to be a benchmark gone, or a parent
    that --force would carry over, and --force then failed on config.yaml); a key the manifest pins edited is said
    by that key. `command` asks with it."""
    try:
        return run_config(run, limits)
    except PinnedEdited:
        raise
    except BenchrunError:
        if (edited := trust.config_changed(run)) is None:
            raise
        raise config_edited(run, edited, command) from None


def config_edited(run: Run, edited: str, command: str) -> ArchiveError:
    """The refusal of `command` (resume, retry) to ask with the config.yaml `edited` says changed since `run` ended."""
    return ArchiveError(f"{edited}: a {command} asks with it and would digest it as the run's own; put it back (to ask "
                        "the rest with other limits: --set runner.KEY=VALUE)", file=str(run.path))


def run_config(run: Run, given: dict[str, Any]) -> dict[str, Any]:
    """The run's config.yaml as a checked config (keys added since the run was made take their defaults), once it
    asks as the manifest pins the run's asking: an edited config.yaml (a killed run's has no digest) would ask the
    rest of the run otherwise than its manifest says. Its runner and judge are asked with the limits they were last
    asked with (run.json's), changed by `given` (`--set`)."""
    config = plain_config(as_made(run.config), Path(run.info.cwd) if run.info.cwd else None)
    config = with_limits(config, run, given)
    manifest = run.manifest
    pinned = {"": (manifest.config, manifest_config(config))}
    if manifest.judge is not None:
        pinned["judge."] = (manifest.judge.runner.model_dump(),
                            runner_spec(judge_runner_keys(config["judge"])).model_dump())
    for prefix, (recorded, now_read) in pinned.items():
        found = flatten(now_read, prefix)
        for key, value in flatten(recorded, prefix).items():
            if found.get(key, value) != value:
                raise PinnedEdited(f"{key}: {found[key]!r}, but run {run.id} asked with {value!r} (its manifest): "
                                   "config.yaml was changed since the run was made; put it back",
                                   file=str(run.path / CONFIG))
    return config


def checked_manifest(run: Run, force: bool) -> Manifest:
    """The run's manifest, once the run is unfinished, hashes to its id and its run.json matches its seal."""
    info = run.info
    if info.status not in UNFINISHED:
        failed = "samples" if info.counts.request_errors else "judge requests" if unreplied(run) else ""
        retry = f"; to ask its failed {failed} again: {audit_command('retry', run.path)}" if failed else ""
        raise ArchiveError(f"run {run.id} is {info.status}; nothing to resume{retry}", file=str(run.path))
    if info.manifest_id is None:
        raise ArchiveError(trust.uncompiled(run), file=str(run.path))
    if hashlib.sha256(run.manifest_bytes).hexdigest() != info.manifest_id:
        raise ArchiveError("does not hash to the run's manifest id: the questions are not the ones the run asked",
                           file=str(run.path / MANIFEST))
    seal = run.seal
    if seal is not None and not force and (broken := trust.seal_broken(run, seal)) is not None:
        file, why = broken
        advice = "" if why.endswith(trust.CONVERTED) else "; resume with --force to continue anyway (recorded)"
        raise ArchiveError(why + advice, file=str(run.path / file))
    return run.manifest


def changed_sources(run: Run, manifest: Manifest) -> list[str]:
    """Benchmark files (and built-in scorers) that differ from the manifest: 'tasks.yml (changed)', ...; a file that
    cannot be read now (a link out of the benchmark, a named pipe) named with what is wrong with it."""
    missing = "the benchmark directory (missing)"
    try:
        bench = run.bench_dir()
    except BenchrunError:
        return [missing]
    try:
        current = {f.path: f.sha256 for f in source_files(bench, [f.path for f in manifest.files])}
    except BenchrunError as err:
        return [str(err) if bench.is_dir() else missing]
    recorded = {f.path: f.sha256 for f in manifest.files}
    changed = [f"{path} ({_change(recorded.get(path), current.get(path))})"
               for path in sorted(recorded.keys() | current.keys()) if recorded.get(path) != current.get(path)]
    return changed + [f"built-in scorer {s.name} (changed)" for t in manifest.tasks for s in t.scorers
                      if s.origin == "builtin" and scoring.source_sha256(scoring.BUILTIN[s.name]) != s.sha256]


def _change(before: str | None, after: str | None) -> str:
    return "missing" if after is None else "new" if before is None else "changed"


def current_scorers(run: Run, manifest: Manifest) -> dict[str, scoring.Scorer]:
    """The manifest's scorers as they are now: built-ins and the benchmark's custom_scorer.py."""
    known = scoring.available(run.bench_dir())
    names = {s.name for t in manifest.tasks for s in t.scorers}
    missing = sorted(names - known.keys())
    if missing:
        raise ArchiveError(f"scorers {', '.join(missing)} of run {run.id} no longer exist")
    return {name: known[name] for name in names}


async def _resume(run: Run, plan: Plan, config: dict[str, Any], found: repair.Repair, note: dict[str, Any],
                  lock: DirLock) -> RunInfo:
    runner = make_runner(config["runner"], server_flag=HOST, asked_again=True)
    try:
        served = (Served(), Served())
        queries, calls = _unanswered(run, plan, served[0]), archived_calls(run, served[1])
        async with checked_models(run, plan, config, runner, note["forced"], asks=bool(found.problems or queries),
                                  served=served) as (identity, judged):
            writer, regrade = _reopen(run, plan.manifest, found, note, lock)
            with recording(writer):
                writer.identified(identity, runner.public_config())
                judge = make_judge(plan, judged, config, writer, None, archived_calls(run) if found.problems else calls)
                await execute(plan, runner, writer, _unanswered(run, plan) if found.problems else queries,
                              judge=judge, regrade=[r for r in run.responses() if (r.id, r.repeat) in regrade])
        return writer.info
    finally:
        await runner.aclose()


def _unanswered(run: Run, plan: Plan, served: Served | None = None) -> list[Query]:
    """The queries of the run's part its records hold no answer to; the model they name kept in `served`, if given."""
    done = {(response.id, response.repeat) for response in (served or Served()).each(run.responses())}
    return [query for query in queries_of(plan.manifest, run.info.shard) if query.key not in done]


def _reopen(run: Run, manifest: Manifest, found: repair.Repair, note: dict[str, Any],
            lock: DirLock) -> tuple[RunWriter, set[repair.Key]]:
    """The first writes: the records repaired, run.json `running` with this session in its history, then the seal
    gone (a resume the disk or a file refuses before run.json says `running` leaves the run sealed as it was); the
    writer and the responses to grade again."""
    dropped = repair.apply(run.path, found, manifest, ready=lock.still_held)
    regrade = repair.check(run.path, manifest, run.info).regrade if dropped else found.regrade
    written = found.checked[RESPONSES].written
    kept = written - len(dropped.get(RESPONSES, []))
    info = carry_cut(run.info, written, dropped.get(RESPONSES, []))  # a carried line not kept is asked, not carried
    entry = {RESUMED: now(), "previous_status": info.status, "previous_reason": info.reason,
             "previous_ended_at": info.ended_at, **note, **found.note(dropped),
             "regraded": [answer_name(*key) for key in sorted(regrade)], **ended(info, written, kept)}
    writer = RunWriter.reopen(run, info.model_copy(update={
        "status": "running", "reason": None, "ended_at": None, "files": {}, "history": (*info.history, entry)}), lock,
        manifest, earlier_wall_s(run))
    (run.path / SEAL).unlink(missing_ok=True)
    return writer, regrade


def earlier_wall_s(run: Run) -> float | None:
    """The time the run's earlier sessions spent asking, from the summary.json the last one wrote as it ended; None
    when it was killed first (its summary.json is not the one run.json names) or the run predates speed figures."""
    if next(run.responses(), None) is None:
        return 0.0
    recorded, path = run.info.files.get(SUMMARY), run.path / SUMMARY
    if recorded is None or not path.is_file() or file_digest(path).sha256 != recorded.sha256:
        return None
    speed = run.summary.speed
    return None if speed is None else speed.wall_s

"""`resume RUN`: finish an interrupted run from its own manifest, asking only what has no record yet."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from benchrun import console, scoring
from benchrun.app import EXIT_CODES, execute
from benchrun.archive import RESPONSES, SCORES, RunWriter, now, write_atomic
from benchrun.compiler import Plan, source_files
from benchrun.errors import ArchiveError, BenchrunError
from benchrun.grading import Grader
from benchrun.manifest import Manifest
from benchrun.records import RunInfo
from benchrun.runners import make_runner
from benchrun.runs import DEFAULT_ROOT, Run, load_run, resolve_run

RESUMABLE = ("running", "interrupted", "failed")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help="run directory or run id prefix")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="archive root for run ids")
    parser.add_argument("--force", action="store_true",
                        help="resume even if the benchmark's sources or the model changed (recorded)")
    parser.add_argument("--host", help="ask this server instead of the one the run used (recorded)")


def main(args: argparse.Namespace) -> int:
    run = resolve_run(args.run, args.root)
    info = resume_run(run, force=args.force, host=args.host)
    console.print_results(run.path, info, load_run(run.path).summary, console.stdout())
    return EXIT_CODES[info.status]


def resume_run(run: Run, force: bool = False, host: str | None = None) -> RunInfo:
    """Repair partial records, check sources and model, ask the samples without a record, finish the run."""
    if run.info.status not in RESUMABLE:
        raise ArchiveError(f"run {run.id} is {run.info.status}; nothing to resume", file=str(run.path))
    if run.info.manifest_id is None:
        raise ArchiveError(f"run {run.id} failed before it compiled ({run.info.reason}); start a new run")
    manifest = run.manifest
    changed = changed_sources(run, manifest)
    if changed and not force:
        raise ArchiveError(f"the benchmark's sources changed since run {run.id}: {', '.join(changed)}; "
                           "resume with --force to use them anyway (recorded in run.json)")
    plan = Plan(manifest, current_scorers(run, manifest), run.bench_dir())
    runner_cfg = {**run.config["runner"], **({"host": host} if host else {})}
    return asyncio.run(_resume(run, plan, runner_cfg, {"forced": force, "changed_sources": changed,
                                                       "host": host}))


def changed_sources(run: Run, manifest: Manifest) -> list[str]:
    """Benchmark files (and built-in scorers) that differ from the manifest: 'tasks.yml (changed)', ..."""
    try:
        current = {f.path: f.sha256 for f in source_files(run.bench_dir())}
    except BenchrunError:
        return ["the benchmark directory (missing)"]
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


async def _resume(run: Run, plan: Plan, runner_cfg: dict[str, Any], note: dict[str, Any]) -> RunInfo:
    runner = make_runner(runner_cfg)
    try:
        identity = await runner.identify()
        _check_model(run, identity, note["forced"])
        repaired = repair_records(run.path, plan.manifest)
        writer = RunWriter(run.path, _history(run.info, {**note, **repaired}))
        writer.reopen(plan.manifest, run.responses(), run.scores())
        writer.identified(identity, runner.public_config())
        grader = Grader(plan.manifest, plan.scorers)
        samples = {s.id: s for s in plan.manifest.samples}
        for response in run.responses():
            if response.id in repaired["regrade"]:
                writer.record_scores(response, grader.grade(samples[response.id], response))
        done = {r.id for r in run.responses()}
        todo = [s for s in plan.manifest.samples if s.id not in done]
        await execute(plan, runner, runner_cfg, writer, todo)
        return writer.info
    finally:
        await runner.aclose()


def _check_model(run: Run, identity: dict[str, Any], force: bool) -> None:
    before, after = run.info.identity.get("digest"), identity.get("digest")
    if before and after != before and not force:
        raise ArchiveError(f"model {run.info.model} is now {str(after)[:12]}, the run used {before[:12]}; "
                           "resume with --force to continue with it anyway (recorded in run.json)")


def _history(info: RunInfo, note: dict[str, Any]) -> RunInfo:
    entry = {"resumed_at": now(), "previous_status": info.status, "previous_reason": info.reason,
             "previous_ended_at": info.ended_at, **{k: v for k, v in note.items() if k != "regrade"},
             "regraded": sorted(note["regrade"])}
    return info.model_copy(update={"status": "running", "reason": None, "ended_at": None,
                                   "history": (*info.history, entry)})


def repair_records(run_dir: Path, manifest: Manifest) -> dict[str, Any]:
    """Drop lines a killed writer left half-written or orphaned; name the responses whose scores are incomplete."""
    responses, dropped_responses = _complete_lines(run_dir / RESPONSES)
    answered = {json.loads(line)["id"] for line in responses}
    scores, dropped_scores = _complete_lines(run_dir / SCORES)
    expected = {t.name: 1 + len(t.scorers) for t in manifest.tasks}
    by_id: dict[str, list[bytes]] = {}
    for line in scores:
        by_id.setdefault(json.loads(line)["id"], []).append(line)
    task_of = {s.id: s.task for s in manifest.samples}
    keep = {i for i, lines in by_id.items() if i in answered and len(lines) == expected[task_of[i]]}
    kept = [line for line in scores if json.loads(line)["id"] in keep]
    if dropped_responses:
        write_atomic(run_dir / RESPONSES, b"".join(responses))
    if dropped_scores or len(kept) != len(scores):
        write_atomic(run_dir / SCORES, b"".join(kept))
    return {"dropped_lines": {RESPONSES: dropped_responses, SCORES: dropped_scores + len(scores) - len(kept)},
            "regrade": answered - keep}


def _complete_lines(path: Path) -> tuple[list[bytes], int]:
    """The whole, parseable JSON lines of a record file, and how many others it had."""
    if not path.is_file():
        return [], 0
    lines, bad = [], 0
    for line in path.read_bytes().splitlines(keepends=True):
        try:
            if line.endswith(b"\n"):
                json.loads(line)
                lines.append(line)
                continue
        except json.JSONDecodeError:
            pass
        bad += 1
    return lines, bad

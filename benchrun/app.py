"""`run(cfg, run_dir)`: what `python -m benchrun` does with a composed config."""

from __future__ import annotations

import asyncio
import gc
import shutil
from pathlib import Path
from typing import Any, Callable, Sequence

import yaml

from benchrun import console
from benchrun.archive import RunWriter, environment, new_run_id, now
from benchrun.compiler import Plan, compile_plan
from benchrun.config import SecretInConfig, plain_config, slug
from benchrun.errors import BenchrunError
from benchrun.executor import Executor, Policy, Sink
from benchrun.grading import Grader
from benchrun.manifest import Sample
from benchrun.records import Counts, ResponseRecord, RunInfo, ScoreRecord, Status
from benchrun.runners import Runner, make_runner
from benchrun.sweep import write_sweep_summary

EXIT_CODES: dict[Status, int] = {"completed": 0, "completed_with_errors": 0, "failed": 3, "interrupted": 130}


def model_configs(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """One config per model when `runner.model` lists several."""
    models = cfg["runner"]["model"]
    if not isinstance(models, list):
        return [cfg]
    return [{**cfg, "runner": {**cfg["runner"], "model": model}} for model in models]


def run(config: Any, run_dir: Path, overrides: Sequence[str] = (), cwd: Path | None = None) -> int:
    """Compile, then (unless dry_run) ask, grade and archive; returns the exit code."""
    cwd = cwd or Path.cwd()
    try:
        cfg = plain_config(config, cwd)
    except SecretInConfig:
        forget_hydra_copies(run_dir)
        raise
    configs = model_configs(cfg)
    if cfg.get("dry_run"):
        out = console.stdout()
        for one in configs:
            console.print_plan(compile_plan(one, cwd).manifest, out)
        return 0
    if len(configs) == 1:
        return run_one(configs[0], run_dir, overrides, cwd)
    for i, one in enumerate(configs):
        _run_job(one, run_dir / f"{i}_{slug(one['runner']['model'])}", overrides, cwd, sweep=run_dir)
    summary = write_sweep_summary(run_dir)
    console.print_sweep(summary, run_dir, console.stdout())
    return 1 if summary.failed else 0


def _run_job(cfg: dict[str, Any], run_dir: Path, overrides: Sequence[str], cwd: Path, sweep: Path) -> None:
    """One model of an in-process sweep: a failure is recorded and reported, and the sweep goes on."""
    try:
        run_one(cfg, run_dir, overrides, cwd, sweep)
    except BenchrunError as err:
        console.error(str(err))


def forget_hydra_copies(run_dir: Path) -> None:
    """Delete the copies of the overrides Hydra already wrote for this run (they hold a secret)."""
    shutil.rmtree(run_dir / ".hydra", ignore_errors=True)
    (run_dir.parent / "multirun.yaml").unlink(missing_ok=True)


def run_one(cfg: dict[str, Any], run_dir: Path, overrides: Sequence[str], cwd: Path,
            sweep: Path | None = None) -> int:
    """One model: compile, preflight, execute; every outcome, failures included, is recorded in run_dir."""
    info = RunInfo(run_id=new_run_id(), status="running", started_at=now(), benchmark=cfg["task"]["name"],
                   model=cfg["runner"]["model"], manifest_id=None, overrides=tuple(overrides), cwd=str(cwd),
                   runner=cfg["runner"], environment=environment(), counts=Counts(samples=0),
                   sweep=str(sweep) if sweep else None)
    config_yaml = yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True)
    try:
        plan = compile_plan(cfg, cwd)
    except BenchrunError as err:
        writer = RunWriter(run_dir, info)
        writer.start(None, config_yaml)
        writer.finish("failed", str(err))
        raise
    info = info.model_copy(update={"manifest_id": plan.manifest.id,
                                   "counts": Counts(samples=len(plan.manifest.samples))})
    writer = RunWriter(run_dir, info)
    writer.start(plan.manifest, config_yaml)
    gc.freeze()  # the manifest lives for the whole run: keep the collector from scanning it again and again
    status = asyncio.run(_ask_all(plan, cfg["runner"], writer))
    console.print_results(run_dir, writer.info, writer.summary, console.stdout())
    return EXIT_CODES[status]


async def _ask_all(plan: Plan, runner_cfg: dict[str, Any], writer: RunWriter) -> Status:
    runner = make_runner(runner_cfg)
    try:
        try:
            identity = await runner.identify()
        except BenchrunError as err:
            writer.finish("failed", str(err))
            raise
        writer.identified(identity, runner.public_config())
        return await execute(plan, runner, runner_cfg, writer, plan.manifest.samples)
    finally:
        await runner.aclose()


async def execute(plan: Plan, runner: Runner, runner_cfg: dict[str, Any], writer: RunWriter,
                  samples: Sequence[Sample]) -> Status:
    """Ask `samples` with an identified runner, record each, and finish the run with its status."""
    policy = Policy(concurrency=runner_cfg.get("concurrency", 1), retries=runner_cfg.get("retries", 2),
                    backoff_s=runner_cfg.get("backoff_s", 0.5))
    try:
        with console.progress(len(samples)) as advance:
            executor = Executor(plan.manifest, runner, Grader(plan.manifest, plan.scorers),
                                _recorder(writer, advance), policy)
            await executor.run(samples)
    except (KeyboardInterrupt, asyncio.CancelledError):
        writer.finish("interrupted", "stopped before every sample was asked")
        raise
    counts = writer.counts
    return writer.finish("completed_with_errors" if counts.request_errors or counts.scorer_errors
                         else "completed").status


def _recorder(writer: RunWriter, advance: Callable[[bool], None]) -> Sink:
    def record(response: ResponseRecord, scores: list[ScoreRecord]) -> None:
        writer.record(response, scores)
        advance(response.error is not None)
    return record

"""One model's run: claim its directory, compile, preflight, ask, grade and archive; every outcome, failures and
interrupts included, is in the run directory. Loaded only when a model is asked (not by `--help` or a dry run)."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml
from omegaconf import OmegaConf

from benchrun.archive.sweep import write_sweep_summary
from benchrun.archive.writer import RunWriter, environment, new_run_id, now
from benchrun.compiler.plan import Plan, compiled
from benchrun.compose.labels import dir_label, label
from benchrun.console import output
from benchrun.core.errors import EXIT, BenchrunError, ConfigError
from benchrun.core.interrupts import INTERRUPTS
from benchrun.core.layout import Status
from benchrun.core.records import Counts, RunInfo
from benchrun.core.shards import configured, queries_of
from benchrun.execute.cache import Store, store_for
from benchrun.execute.runners.registry import make_runner
from benchrun.execute.session import cache_of, execute, judge_model, make_judge, recording


def run_models(configs: list[dict[str, Any]], run_dir: Path, overrides: Sequence[str], cwd: Path,
               sweep: Path | None, varied: Mapping[str, Any]) -> int:
    """One run for one model; for several (the seed's multiple_models), a run each under `run_dir` and the sweep's
    summary."""
    if len(configs) == 1:
        return run_one(configs[0], run_dir, overrides, cwd, sweep, varied)
    for i, one in enumerate(configs):
        settings = {"runner.model": one["runner"]["model"]}
        _run_job(one, run_dir / f"{i}_{dir_label(label(settings, None))}", overrides, cwd, run_dir, settings)
    summary = write_sweep_summary(run_dir)
    output.print_sweep(summary, run_dir, output.stdout())
    return EXIT["sweep_failed"] if summary.failed else EXIT["ok"]


def record_refused(config: Any, run_dir: Path, overrides: Sequence[str], cwd: Path, sweep: Path,
                    varied: Mapping[str, Any], err: ConfigError) -> None:
    """A sweep job whose config was refused is a job that failed: its run.json says so and why (the config itself,
    which may hold what was refused, is not kept), so the sweep counts it and exits 1."""
    model, benchmark = _raw(config, "runner.model"), _raw(config, "task.name")
    info = RunInfo(run_id=new_run_id(), status="running", started_at=now(), benchmark=benchmark,
                   model=model, manifest_id=None, overrides=tuple(overrides), cwd=str(cwd), runner={},
                   environment=environment(), counts=Counts(samples=0), sweep=str(sweep),
                   label=label(varied, model, benchmark), varied=dict(varied))
    writer = RunWriter.create(run_dir, info, sweep=sweep)
    try:
        writer.fail(str(err))
    finally:
        writer.release()


def _raw(config: Any, key: str) -> str:
    """A value of the composed config that did not pass its check, as text: a plain one as it is, a list of plain ones
    as JSON writes it (`["llama3.2","gemma3"]`, a sweep job's model list, as its directory is named by it); `?` for
    anything else."""
    try:
        value = OmegaConf.select(OmegaConf.create(config) if isinstance(config, dict) else config, key)
        value = OmegaConf.to_container(value, resolve=True) if OmegaConf.is_list(value) else value
    except Exception:  # an interpolation that cannot be resolved, a value of the wrong type: all it says is `?`
        value = None
    if isinstance(value, list) and value and all(_plain(item) for item in value):
        return json.dumps(value, separators=(",", ":"))
    return str(value) if _plain(value) else "?"


def _plain(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _run_job(cfg: dict[str, Any], run_dir: Path, overrides: Sequence[str], cwd: Path, sweep: Path,
             varied: dict[str, Any]) -> None:
    """One model of an in-process sweep: a failure is recorded and reported, and the sweep goes on."""
    try:
        run_one(cfg, run_dir, overrides, cwd, sweep, varied)
    except BenchrunError as err:
        output.error(str(err))


def run_one(cfg: dict[str, Any], run_dir: Path, overrides: Sequence[str], cwd: Path,
            sweep: Path | None = None, varied: Mapping[str, Any] | None = None) -> int:
    """One model: compile, preflight, execute; every outcome, failures and interrupts included, is in run_dir."""
    model = cfg["runner"]["model"]
    info = RunInfo(run_id=new_run_id(), status="running", started_at=now(), benchmark=cfg["task"]["name"],
                   model=model, manifest_id=None, overrides=tuple(overrides), cwd=str(cwd),
                   runner=cfg["runner"], environment=environment(), counts=Counts(samples=0),
                   sweep=str(sweep) if sweep else None,
                   label=label(varied or {}, model, cfg["task"]["name"]) if sweep else None,
                   varied=dict(varied or {}), shard=configured(cfg))
    with ExitStack() as recorded:
        with INTERRUPTS.held():  # a signal while the directory is claimed waits until it is recorded as interrupted
            writer = RunWriter.create(run_dir, info, sweep=sweep)
            recorded.enter_context(recording(writer))
        writer.start(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True))
        plan = compiled(cfg, cwd)
        writer.compiled(plan.manifest)
        store = store_for(cfg, cwd)
        INTERRUPTS.run(lambda: _ask_all(plan, cfg, writer, store))
    output.print_results(run_dir, writer.info, writer.summary, output.stdout())
    return EXIT["ok"]


async def _ask_all(plan: Plan, cfg: dict[str, Any], writer: RunWriter, store: Store | None) -> Status:
    runner = make_runner(cfg["runner"])
    try:
        identity = await runner.identify()
        writer.identified(identity, runner.public_config())
        async with judge_model(plan, cfg, identity) as judged:
            judge = make_judge(plan, judged, cfg, writer, store)
            return await execute(plan, runner, writer, list(queries_of(plan.manifest, writer.info.shard)),
                                 cache_of(store, runner, identity, writer, cfg.get("cache")), judge)
    finally:
        await runner.aclose()
        if store is not None:
            store.close()

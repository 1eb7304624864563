"""`run(cfg, run_dir)`: what `python -m benchrun` does with a composed config."""

from __future__ import annotations

import asyncio
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import yaml

from benchrun import console
from benchrun.archive import RunWriter, environment, new_run_id, now
from benchrun.cache import RunCache, Store, model_pin, store_for
from benchrun.compiler import Plan, compile_plan
from benchrun.config import SecretInConfig, plain_config
from benchrun.errors import EXIT, BenchrunError, ConfigError, FailFast, RunInterrupted, ServerLost
from benchrun.executor import Executor
from benchrun.grading import Grader
from benchrun.interrupts import INTERRUPTS
from benchrun.labels import dir_label, label
from benchrun.layout import LOG
from benchrun.manifest import Query
from benchrun.records import Counts, ResponseRecord, RunInfo, ScoreRecord, Status
from benchrun.runners.base import Runner
from benchrun.runners.registry import make_runner
from benchrun.sweep import write_sweep_summary
from benchrun.takeback import forget_hydra_copies


def model_configs(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """One config per model when `runner.model` lists several."""
    models = cfg["runner"]["model"]
    if not isinstance(models, list):
        return [cfg]
    return [{**cfg, "runner": {**cfg["runner"], "model": model}} for model in models]


def run(config: Any, run_dir: Path, overrides: Sequence[str] = (), cwd: Path | None = None,
        sweep: Path | None = None, varied: Mapping[str, Any] | None = None) -> int:
    """Compile, then (unless dry_run) ask, grade and archive; returns the exit code. `sweep` is the sweep directory
    of a Hydra multirun job and `varied` the job's values of the settings the sweep varies."""
    cwd = cwd or Path.cwd()
    try:
        cfg = plain_config(config, cwd)
    except ConfigError as err:  # nothing will run: a single run leaves nothing, a sweep's job its log
        if sweep is None or isinstance(err, SecretInConfig):
            forget_hydra_copies(run_dir, secret=isinstance(err, SecretInConfig))
        raise
    configs = model_configs(cfg)
    if cfg.get("dry_run"):
        out = console.stdout()
        for one in configs:
            console.print_plan(compile_plan(one, cwd).manifest, out)
        return EXIT["ok"]
    if len(configs) == 1:
        return run_one(configs[0], run_dir, overrides, cwd, sweep, varied or {})
    for i, one in enumerate(configs):
        settings = {"runner.model": one["runner"]["model"]}
        _run_job(one, run_dir / f"{i}_{dir_label(label(settings, None))}", overrides, cwd, run_dir, settings)
    summary = write_sweep_summary(run_dir)
    console.print_sweep(summary, run_dir, console.stdout())
    return EXIT["sweep_failed"] if summary.failed else EXIT["ok"]


def _run_job(cfg: dict[str, Any], run_dir: Path, overrides: Sequence[str], cwd: Path, sweep: Path,
             varied: dict[str, Any]) -> None:
    """One model of an in-process sweep: a failure is recorded and reported, and the sweep goes on."""
    try:
        run_one(cfg, run_dir, overrides, cwd, sweep, varied)
    except BenchrunError as err:
        console.error(str(err))


def run_one(cfg: dict[str, Any], run_dir: Path, overrides: Sequence[str], cwd: Path,
            sweep: Path | None = None, varied: Mapping[str, Any] | None = None) -> int:
    """One model: compile, preflight, execute; every outcome, failures and interrupts included, is in run_dir."""
    model = cfg["runner"]["model"]
    info = RunInfo(run_id=new_run_id(), status="running", started_at=now(), benchmark=cfg["task"]["name"],
                   model=model, manifest_id=None, overrides=tuple(overrides), cwd=str(cwd),
                   runner=cfg["runner"], environment=environment(), counts=Counts(samples=0),
                   sweep=str(sweep) if sweep else None, label=label(varied or {}, model) if sweep else None,
                   varied=dict(varied or {}))
    with ExitStack() as recorded:
        with INTERRUPTS.held():  # a signal while the directory is claimed waits until it is recorded as interrupted
            writer = RunWriter.create(run_dir, info)
            recorded.enter_context(recording(writer))
        writer.start(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True))
        plan = compile_plan(cfg, cwd)
        writer.compiled(plan.manifest)
        store = store_for(cfg, cwd)
        INTERRUPTS.run(lambda: _ask_all(plan, cfg["runner"], writer, store))
    console.print_results(run_dir, writer.info, writer.summary, console.stdout())
    return EXIT["ok"]


@contextmanager
def recording(writer: RunWriter) -> Iterator[None]:
    """Whatever ends a run is in its run.json before it is reported: an error as failed, a lost server or a signal
    as interrupted (with the command that finishes it). The directory's lock is let go last."""
    try:
        yield
    except ServerLost as err:
        writer.finish("interrupted", str(err))
        raise type(err)(f"{err}; {resume_hint(writer, err.when)}") from None
    except FailFast as err:
        writer.finish("failed", str(err))
        raise FailFast(f"{err}; {resume_hint(writer, 'once the setup is mended')}") from None
    except BenchrunError as err:
        writer.fail(str(err))
        raise
    except (KeyboardInterrupt, asyncio.CancelledError) as err:  # a signal (inside the event loop, a cancellation)
        signal_name = INTERRUPTS.signal_name() or str(err) or "a signal"
        if not writer.finished:
            writer.finish("interrupted", f"interrupted by {signal_name}")
        raise RunInterrupted(f"interrupted by {signal_name}: {resume_hint(writer)}") from None
    except Exception as err:
        writer.fail(f"benchrun failed: {type(err).__name__}: {err}")
        raise
    finally:
        writer.release()


def resume_hint(writer: RunWriter, when: str = "") -> str:
    """What the run directory now says of the run, and the command that finishes it."""
    info, where = writer.info, writer.dir.absolute()
    if info.manifest_id is None:
        return f"nothing was asked; run {info.run_id} is recorded as '{info.status}' in {where}; start it again"
    counts, ungraded = info.counts, writer.ungraded
    graded = f" ({ungraded} not graded yet)" if ungraded else ""
    return (f"run {info.run_id} is recorded as '{info.status}' with {counts.responses} of {counts.samples} samples"
            f"{graded} in {where}; finish it{' ' + when if when else ''} with: benchrun-audit resume {where}")


async def _ask_all(plan: Plan, runner_cfg: dict[str, Any], writer: RunWriter, store: Store | None) -> Status:
    runner = make_runner(runner_cfg)
    try:
        identity = await runner.identify()
        writer.identified(identity, runner.public_config())
        return await execute(plan, runner, writer, list(plan.manifest.queries()),
                             cache_of(store, runner, identity, writer))
    finally:
        await runner.aclose()
        if store is not None:
            store.close()


def cache_of(store: Store | None, runner: Runner, identity: dict[str, Any], writer: RunWriter) -> RunCache | None:
    """The run's view of the response cache: None when the cache is off or nothing pins the model."""
    pin = model_pin(runner.config.type, identity) if store is not None else None
    if pin is None:
        return None
    return RunCache(store, runner.config.type, pin, runner.request_settings(), writer.info.model, writer.info.run_id)


async def execute(plan: Plan, runner: Runner, writer: RunWriter, queries: Sequence[Query],
                  cache: RunCache | None = None) -> Status:
    """Ask `queries` (samples' repeats) with an identified runner (answers from `cache` where it has them), record
    each, and finish the run with its status."""
    with console.progress(len(queries)) as advance:
        async with grader_for(plan, writer) as grader:
            writer.asking()
            await Executor(plan.manifest, runner, grader, _Recorder(writer, advance), cache).run(queries)
    counts = writer.counts
    return writer.finish("completed_with_errors" if counts.request_errors or counts.scorer_errors
                         else "completed").status


def grader_for(plan: Plan, writer: RunWriter) -> Grader:
    """The run's grader: its scorers in a process of their own, printing into the run's log file."""
    return Grader(plan.manifest, plan.scorers, writer.dir / LOG, plan.scorer_timeout_s)


class _Recorder:
    """The executor's recorder: commits to the run directory and moves the progress bar."""

    def __init__(self, writer: RunWriter, advance: Callable[[bool], None]):
        self.writer, self.advance = writer, advance

    def response(self, record: ResponseRecord) -> None:
        self.writer.record_response(record)
        self.advance(record.error is not None)

    def scores(self, response: ResponseRecord, scores: list[ScoreRecord]) -> None:
        self.writer.record_scores(response, scores)

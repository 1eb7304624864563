"""`run(cfg, run_dir)`: what `python -m benchrun` does with a composed config: compose-check it, compile it, and
for each model claim a run directory and ask (benchrun.execute.job)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from benchrun.compiler.plan import compiled
from benchrun.compose.config import SecretInConfig, plain_config
from benchrun.compose.fresh import in_one_order, refuse_fresh_faults
from benchrun.compose.runnerfile import refuse_replaced
from benchrun.compose.sweepsize import one_model_a_job
from benchrun.compose.takeback import forget_hydra_copies
from benchrun.console import output
from benchrun.core.errors import EXIT, ConfigError
from benchrun.core.shards import configured


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
        refuse_fresh_faults(cfg)
        in_one_order(cfg)
        refuse_replaced(config, overrides, cwd)
        if sweep is not None:
            one_model_a_job(cfg, config.get("runner_file"))
        if not cfg.get("dry_run"):  # a run's cache, before the run claims its directory
            from benchrun.execute.cache import checked_place  # loaded only to write a run (see below)

            checked_place(cfg, cwd)
    except ConfigError as err:  # nothing will run: a single run leaves nothing, a sweep's job the record of it
        forget_hydra_copies(run_dir, secret=isinstance(err, SecretInConfig), keep=sweep is not None)
        if sweep is not None:
            from benchrun.execute.job import record_refused  # loaded only to write a run (see below)

            record_refused(config, run_dir, overrides, cwd, sweep, varied or {}, err)
        raise
    configs = model_configs(cfg)
    if cfg.get("dry_run"):
        out = output.stdout()
        for one in configs:
            output.print_plan(compiled(one, cwd).manifest, out, configured(one))
        return EXIT["ok"]
    from benchrun.execute.job import run_models  # here: --help and dry runs start without the runners and the cache

    return run_models(configs, run_dir, overrides, cwd, sweep, varied or {})

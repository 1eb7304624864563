"""`run(cfg)`: what `python -m benchrun` does with a composed config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchrun import console
from benchrun.compiler import compile_plan
from benchrun.config import plain_config


def model_configs(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """One config per model when `runner.model` lists several."""
    models = cfg["runner"]["model"]
    if not isinstance(models, list):
        return [cfg]
    return [{**cfg, "runner": {**cfg["runner"], "model": model}} for model in models]


def run(config: Any, cwd: Path | None = None) -> int:
    """Compile (and with dry_run, print the plan); returns the exit code."""
    cwd = cwd or Path.cwd()
    cfg = plain_config(config, cwd)
    plans = [compile_plan(one, cwd) for one in model_configs(cfg)]
    out = console.stdout()
    for plan in plans:
        console.print_plan(plan.manifest, out)
    return 0

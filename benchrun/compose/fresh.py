"""What a new run is given that a run archived before the rule came is not held to: checked once, as a run is made
from the command line, so that resume and retry still read an older run's config.yaml as it was made."""

from __future__ import annotations

from typing import Any

from benchrun.core.errors import ConfigError
from benchrun.core.modelnames import reads_as_another, unlike_itself


def refuse_fresh_faults(cfg: dict[str, Any]) -> None:
    """Refuse a task named twice in `task.only`: it ran once, but the manifest records task.only as given, so the same
    questions had two manifest ids (named once, and twice). And a model's name that reads as another
    (core.modelnames.unlike_itself), the model under test's or the judge's, and a benchmark's name that does
    (`tеst`, its `е` Cyrillic: a run's heading, `list` and `compare` print it as `test`)."""
    if isinstance(name := cfg["task"].get("name"), str) and (why := reads_as_another(name)) is not None:
        raise ConfigError(why, file="config", key="task.name")
    for key, runner, model in (("runner.model", cfg["runner"]["type"], cfg["runner"]["model"]),
                               ("judge.model", cfg["judge"]["runner"], cfg["judge"].get("model"))):
        if (why := unlike_itself(runner, model)) is not None:
            raise ConfigError(why, file="config", key=key)
    only = cfg["task"].get("only") or []
    if twice := next((name for at, name in enumerate(only) if name in only[:at]), None):
        raise ConfigError(f"task.only: '{twice}' is listed twice; list each task once", file="config")


def in_one_order(cfg: dict[str, Any]) -> None:
    """task.only as its names sorted (its tasks are asked in the benchmark's order, whatever order it lists them in):
    the same tasks chosen as [a,b] and as [b,a] had two manifest ids, config.yaml and the manifest keeping the list."""
    if cfg["task"].get("only"):
        cfg["task"]["only"] = sorted(cfg["task"]["only"])

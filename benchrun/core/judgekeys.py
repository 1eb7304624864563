"""The keys `judge` takes: its own (`runner`, `repeats`, `allow_self`) and its runner type's, but `type`, which
`judge.runner` says."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from pydantic import BaseModel

from benchrun.core.errors import ConfigError
from benchrun.core.settings import JUDGE_OWN, JudgeSettings, RunnerConfig, judge_runner_keys


def allowed_keys(model: type[BaseModel], prefix: Sequence[str]) -> list[str]:
    """The keys an unknown key of `model` (checked at `prefix`) is told of: a judge's runner's, as `judge` takes
    them; any other model's own fields."""
    if list(prefix) != ["judge"] or not issubclass(model, RunnerConfig):
        return list(model.model_fields)
    own = [key for key in JudgeSettings.model_fields if key in JUDGE_OWN or key in model.model_fields]
    return [*own, *(key for key in model.model_fields if key not in own and key != "type")]


def runner_keys(judge: Mapping[str, Any]) -> dict[str, Any]:
    """The judge's runner config as given (`judge_runner_keys`); ConfigError for a `type`, which is no key of the
    judge's (judge.runner is its type): it replaced judge.runner's unsaid."""
    if "type" in judge:
        raise ConfigError(f"judge.type: unknown key 'type' (the judge's runner type is judge.runner: "
                          f"judge.runner={judge['type']})", file="config")
    return judge_runner_keys(judge)


def as_made(config: Mapping[str, Any]) -> dict[str, Any]:
    """An archived config.yaml as the run that wrote it read it: a judge's `type` (which replaced judge.runner's as
    its runner type before it was refused, `runner_keys`) read as judge.runner, so such a run is resumed, retried and
    judged again as it was judged."""
    judge = config.get("judge")
    if not isinstance(judge, Mapping) or "type" not in judge:
        return dict(config)
    kept = {key: value for key, value in judge.items() if key != "type"}
    return {**config, "judge": {**kept, "runner": judge["type"]}}

"""Each value a sweep lists checked as its job's config checks it, before any job starts: `-m
runner.options.seed=1,x` ran job 0 whole, then ended at job 1's refusal, exit 1."""

from __future__ import annotations

from typing import Any

from hydra.core.override_parser.types import Override
from omegaconf import DictConfig

from benchrun.compose import sweepsize
from benchrun.compose.config import checked, checked_options
from benchrun.compose.sweptonce import plain, with_value
from benchrun.core.errors import ConfigError
from benchrun.core.settings import RunConfig


def refuse_refused_values(swept: list[Override], config: DictConfig) -> None:
    """Refuse a sweep listing a value its job's config would refuse (said as the job says it, exit 2), where the config
    is taken as composed, or with another value of that key: the config is otherwise sound, so the value is at fault.
    A sweep with a runner file is left to its jobs, which read the file's keys in; so is one of a config group's presets
    (`task=glob(*)`, `model=a,b`), which are no values of the config's."""
    if (base := plain(config)) is None or base.get("runner_file"):
        return
    sound = _refusal(base) is None
    for override in (override for override in swept if _holds_one_value(base, override.key_or_group)):
        said = [_refusal(with_value(base, override.key_or_group, value)) for _, value in sweepsize.job_values(override)]
        if (sound or None in said) and (refused := next((err for err in said if err is not None), None)) is not None:
            raise refused


def _holds_one_value(base: dict[str, Any], key: str) -> bool:
    """Whether the dotted `key` is one value of the plain config `base`: held, and not keys (a group's section), or
    added with `+` beneath a section it holds (`+runner.options.num_ctx`)."""
    *parents, last = key.split(".")
    place: Any = base
    for part in parents:
        place = place.get(part) if isinstance(place, dict) else None
    if not isinstance(place, dict):
        return False
    return not isinstance(place[last], dict) if last in place else bool(parents)


def _refusal(trial: dict[str, Any] | None) -> ConfigError | None:
    """What the plain config `trial` is refused with, as a job checks it; None if it is taken (or no config)."""
    if trial is None:
        return None
    try:
        checked_options(checked(RunConfig, trial).runner)
    except ConfigError as err:
        return err
    return None

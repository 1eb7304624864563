"""`--set runner.KEY=VALUE` of `resume` and `retry`: the limits a run is asked with (how long, how hard, how many at
once), which its manifest does not pin, changed for the samples still to ask; recorded in run.json, where the next
resume finds them. A run that failed fast because its server was slower than `runner.timeout_s` can so be finished."""

from __future__ import annotations

import argparse
from typing import Any, Iterable

import yaml
from pydantic import ValidationError

from benchrun.archive.reader import Run
from benchrun.compiler.plan import ASKING_LIMITS
from benchrun.compose.config import describe_validation, unkept_value
from benchrun.core.errors import ConfigError
from benchrun.core.layout import RUN
from benchrun.core.settings import RUNNERS, judge_runner_keys
from benchrun.core.yamlfile import MAX_INT, parse_given

SECTIONS = ("runner", "judge")


def add_set(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--set", action="append", metavar="KEY=VALUE", dest="limits",
                        help=f"ask the rest with another limit (recorded): runner.KEY or judge.KEY, KEY one of "
                             f"{', '.join(ASKING_LIMITS)}; repeat for several")


def limits_given(given: list[str] | None) -> dict[str, Any]:
    """`--set` as given, {'runner.timeout_s': 600, ...}; a key that is not a limit, or one given twice, refused."""
    limits: dict[str, Any] = {}
    for text in given or []:
        key, equals, value = text.partition("=")
        _refuse_other(key.strip() if equals else "", text)
        if key.strip() in limits:
            raise ConfigError(f"--set {key.strip()}: given twice; give it once")
        limits[key.strip()] = _value(key.strip(), value)
    return limits


def _refuse_other(key: str, text: str) -> None:
    """Refuse a `--set` (`text`) whose key is not a limit of the runner or the judge."""
    section, _, name = key.partition(".")
    if section not in SECTIONS or name not in ASKING_LIMITS:
        raise ConfigError(f"--set {text!r}: give runner.KEY=VALUE or judge.KEY=VALUE, KEY one of "
                          f"{', '.join(ASKING_LIMITS)}: the limits a run is asked with; what it asks is its manifest's")


def _value(key: str, value: str) -> Any:
    """A value as YAML reads it (`600`, `1.5`), as a benchmark file's and `--rejudge`'s are: one YAML 1.1 reads as
    another number than written (`010` as 8, `1:30` as 90, `0x10` as 16, which a run's command line reads as 10 or
    refuses) refused in one line naming the key; an integer past 2^53 is said as a run's is (`with_limits`)."""
    if not value.strip():
        return None
    try:
        read = yaml.safe_load(value)
    except yaml.YAMLError:
        return value
    if isinstance(read, int) and abs(read) > MAX_INT:
        return read
    return parse_given(value, f"--set {key}", ConfigError)


def with_limits(config: dict[str, Any], run: Run, given: dict[str, Any]) -> dict[str, Any]:
    """`run`'s `config` with its runner and judge asked as run.json says they were last asked, and then as `given`
    says (`--set`): a judge's limits are refused for a run without one."""
    for key, value in given.items():
        _refuse_other(key, f"{key}={value}")
    if (unkept := unkept_value(given)) is not None:
        raise ConfigError(f"--set {unkept[0]}: {unkept[1]}")
    info, judged = run.info, run.manifest.judge is not None
    if not judged and (key := next((key for key in given if key.startswith("judge.")), None)):
        raise ConfigError(f"--set {key}: run {info.run_id} has no judge")
    judge = limited("judge", config["judge"], info.judge.get("runner", {}), given, run) if judged else config["judge"]
    return {**config, "runner": limited("runner", config["runner"], info.runner, given, run), "judge": judge}


def last_asked(config: dict[str, Any], used: dict[str, Any]) -> dict[str, Any]:
    """A runner's `config` with the limits it was last asked with (`used`: run.json's runner config as used)."""
    return {**config, **{key: used[key] for key in ASKING_LIMITS if key in used}}


def limited(section: str, config: dict[str, Any], used: dict[str, Any], limits: dict[str, Any],
            run: Run) -> dict[str, Any]:
    """`config` (the runner's, or the `judge` section's) with the limits it was last asked with (`used`: `run`'s
    run.json's runner config as used) and then `limits` for its `section`, checked as a run checks them: a limit
    refused is said as given (`--set`), or as run.json holds it (an older benchrun's, which bounded it otherwise),
    with the --set that asks the rest otherwise."""
    given = {key.partition(".")[2]: value for key, value in limits.items() if key.startswith(f"{section}.")}
    asked = {**last_asked(config, used), **given}
    runner = asked if section == "runner" else judge_runner_keys(asked)
    model = RUNNERS[runner["type"]]
    try:
        model.model_validate(runner)
    except ValidationError as err:
        said = describe_validation(err, model, [section])
        key = said.partition(":")[0]
        if key.partition(".")[2] in given:
            raise ConfigError(f"--set {said}") from None
        raise ConfigError(f"{said}, as the run was last asked; ask the rest otherwise with --set {key}=VALUE",
                          file=str(run.path / RUN)) from None
    refuse_unkept(f"--set {section}", runner, given)
    return asked


def refuse_unkept(said: str, runner: dict[str, Any], keys: Iterable[str]) -> None:
    """Refuse a value of `keys` that `runner`'s settings read as a number JSON has none for, as a run refuses it:
    `1e400`, `inf` are text to YAML and inf to a float setting (asked with no limit, recorded as null); `said` names
    the option (`--set runner`, `--rejudge judge`). `runner` validates."""
    checked = RUNNERS[runner["type"]].model_validate(runner).model_dump()
    if (unkept := unkept_value({key: checked.get(key) for key in keys})) is not None:
        raise ConfigError(f"{said}.{unkept[0]}: {unkept[1]}")

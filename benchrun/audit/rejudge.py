"""`rescore --rejudge [judge.KEY=VALUE ...]`: the run's judges asked again, of the run's judge model or, with
overrides, of another (`judge.model=`, `judge.host=`, `judge.options.temperature=`, ...), its identity recorded in
the rescore's rescore.json. Without --rejudge a rescore reads the archived judgements again and asks no model."""

from __future__ import annotations

import copy
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

from benchrun.archive.reader import Run
from benchrun.core.errors import BenchrunError
from benchrun.core.manifest import Manifest
from benchrun.core.recordvalues import pinned_as
from benchrun.core.yamlfile import parse_given
from benchrun.execute.judging import Judge


def rejudged_config(run: Run, overrides: list[str]) -> dict[str, Any]:
    """The run's config, its judge asked where and with the limits it was last asked (run.json's runners as used: a
    resume's `--host` or `--set judge.timeout_s=...` kept, as a later resume keeps them), then `overrides`
    (judge.KEY=VALUE, values read as YAML) set, checked; a judge of another runner type names its model."""
    from benchrun.audit.limits import last_asked, refuse_unkept
    from benchrun.audit.resume import asked_at
    from benchrun.compose.config import plain_config, unkept_value
    from benchrun.core.judgekeys import as_made
    from benchrun.core.settings import JudgeSettings, judge_runner_keys

    given = [_override(override) for override in overrides]
    if (unkept := unkept_value({".".join(["judge", *keys]): value for keys, value in given})) is not None:
        raise BenchrunError(f"--rejudge {unkept[0]}: {unkept[1]}")
    config = asked_at(run, as_made(run.config), None)
    judge = last_asked(copy.deepcopy(config.get("judge") or {}), run.info.judge.get("runner") or {})
    used = judge.get("runner", JudgeSettings.model_fields["runner"].default)
    for keys, value in given:
        _set(judge, keys, value)
    _refuse_model_of_another_runner(judge, used, {keys[0] for keys, _ in given})
    checked = plain_config({**config, "judge": judge}, Path(run.info.cwd) if run.info.cwd else None)
    refuse_unkept("--rejudge judge", judge_runner_keys(checked["judge"]), [keys[0] for keys, _ in given])
    return checked


def _refuse_model_of_another_runner(judge: dict[str, Any], used: str, named: set[str]) -> None:
    """Refuse a judge.runner override to another runner type than the run's config's (`used`) that keeps the run's
    judge.model, a name of a model of the other runner: judge.runner=local labelled the embedded model `qwen2.5`."""
    if "runner" in named and "model" not in named and judge.get("runner") != used:
        raise BenchrunError(f"--rejudge judge.runner={judge.get('runner')}: the run's judge.model "
                            f"({judge.get('model')!r}) names a model of runner {used}; name the one to "
                            "ask with judge.model=NAME")


def _override(override: str) -> tuple[list[str], Any]:
    """The keys below `judge` and the value of a `judge.KEY=VALUE` override, the value read as YAML as a benchmark
    file's values are (a syntax error, a tag or an alias is refused in one line naming the key)."""
    key, sep, value = override.partition("=")
    keys = key.removeprefix("judge.").split(".")
    if not sep or not key.startswith("judge.") or not all(keys):
        raise BenchrunError(f"--rejudge takes judge.KEY=VALUE overrides, not {override!r}")
    return keys, parse_given(value, f"--rejudge {key}", BenchrunError)


def _set(tree: dict[str, Any], keys: list[str], value: Any) -> None:
    """Set `value` at `keys` below the judge's config, making the mappings on the way (where none is, or null); one
    that holds another value is refused."""
    for depth, key in enumerate(keys[:-1], start=1):
        if tree.get(key) is None:
            tree[key] = {}
        tree = tree[key]
        if not isinstance(tree, dict):
            where = ".".join(keys[:depth])
            raise BenchrunError(f"--rejudge judge.{'.'.join(keys)}: judge.{where} is {tree!r}, not a mapping to set "
                                f"{keys[depth]} in")
    tree[keys[-1]] = value


def rejudged_manifest(manifest: Manifest, config: dict[str, Any]) -> Manifest:
    """The run's manifest with the judge model the rescore asks (how it is asked, and how many times)."""
    from benchrun.compiler.plan import judge_model

    if not manifest.judges:
        raise BenchrunError("--rejudge asks the run's judges again, but its tasks have none")
    return manifest.model_copy(update={"judge": judge_model(config, manifest.tasks)})


@asynccontextmanager
async def rejudging(manifest: Manifest, config: dict[str, Any],
                    identity: dict[str, Any]) -> AsyncIterator[tuple[Judge, dict[str, Any]]]:
    """The judge asking `manifest`'s judge model (refused when it is the run's model, as for a run), and what
    rescore.json keeps of it: its identity, its runner config as used, whether it may judge itself and how many times
    it judges each answer (judge.repeats, whose mean is the judge's metric). A judge whose requests fail answer after
    answer stops the rescore (FailFast, as in a run), and so does one pulled again meanwhile, once the grading is done
    (RunnerError: its grades of two models)."""
    from benchrun.execute.runners.registry import make_judge_runner
    from benchrun.execute.session import refuse_self, same_to_the_end

    runner = make_judge_runner(config, own_key=True)
    try:
        judge_identity = await runner.identify()
        await refuse_self(config, identity, judge_identity, runner)
        yield Judge(manifest, runner, fail_fast=True), {
            "identity": judge_identity, "runner": runner.public_config(), "allow_self": config["judge"]["allow_self"],
            "repeats": config["judge"]["repeats"]}
        await same_to_the_end(runner, pinned_as(judge_identity), f"the judge model {runner.config.model}", "grades",
                              None, "the rescore", "rescore it again")
    finally:
        await runner.aclose()

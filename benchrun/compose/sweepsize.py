"""A sweep's lists of values as the command line gives them (`-m runner.model=a,b`), and how many jobs they make:
counted before Hydra lists them, and bounded; and each value as its job is given it."""

from __future__ import annotations

import json
import math
from typing import Any

from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import IntervalSweep, Override, QuotedString, RangeSweep
from omegaconf import DictConfig, OmegaConf

from benchrun.core.errors import ConfigError
from benchrun.core.officialclient import one_model_named_twice

MAX_SWEEP_JOBS = 10_000
"""The most jobs a sweep makes: each is a run directory of its own, a column of the sweep's table and a row of its
sweep.json, and the jobs are run one after another; a typo (`range(0,100000)`) would make a sweep of days."""


def swept(config: DictConfig) -> list[Override]:
    """The sweep's overrides as Hydra's basic sweeper sweeps them: `hydra.sweeper.params` of a config file first, the
    command line's after, the last given for a key taking its place; parsed (once: the checks below each read them)
    with Hydra's config loader, which lists a group's options for a `glob(...)` sweep (`task=glob(*)`: without it,
    `ConfigLoader is not set`). A sweep a config file gave was neither counted nor checked: `range(0,20000)` listed
    for minutes, `range(5,0)` an empty sweep, a value twice two jobs of one label."""
    params = OmegaConf.select(config, "hydra.sweeper.params") or {}
    given = [f"{key}={value}" for key, value in params.items()]
    parser = OverridesParser.create(config_loader=GlobalHydra.instance().config_loader())
    overrides = parser.parse_overrides([*given, *OmegaConf.to_container(config.hydra.overrides.task)])
    _swept_key_given_once(overrides[len(given):])
    _swept_key_kept_apart(overrides[:len(given)], overrides[len(given):])
    last = {override.get_key_element(): override for override in overrides}
    return [override for override in last.values() if override.is_sweep_override()]


def _swept_key_given_once(typed: list[Override]) -> None:
    """Refuse a key the command line sweeps and gives again otherwise (`-m runner.model=llama3.2,gemma3
    runner.model=mistral`): Hydra's sweeper keeps the last alone, so that sweep of two models was one job asking
    mistral, exit 0, the list said nowhere; with `++runner.model=mistral`, a key of its own to the sweeper, both jobs
    asked mistral."""
    given: dict[str, list[Override]] = {}
    for override in typed:
        given.setdefault(override.get_key_element().lstrip("~+"), []).append(override)
    for key, each in given.items():
        if any(override.is_sweep_override() for override in each) and len({o.input_line for o in each}) > 1:
            said = ", then ".join(override.input_line for override in each)
            raise ConfigError(f"in 'config': {key} is given more than once on the command line ({said}), and a "
                              "sweep keeps only the last, so the values of the others would never run; give it once, "
                              "listing every value the sweep is to run")


def _swept_key_kept_apart(written: list[Override], typed: list[Override]) -> None:
    """Refuse a key a config file's `hydra.sweeper.params` and the command line both give, one of them sweeping it, with
    other prefixes (`runner.model: a,b` and `++runner.model=c`): Hydra's sweeper keeps them as two keys, so each job
    was given both, the last winning: two jobs, both asking c, exit 0. (The same key plainly given replaces the file's.)"""
    for override in typed:
        key = override.get_key_element().lstrip("~+")
        apart = [o for o in written if o.get_key_element().lstrip("~+") == key
                 and o.get_key_element() != override.get_key_element()]
        if apart and (override.is_sweep_override() or any(o.is_sweep_override() for o in apart)):
            raise ConfigError(f"in 'config': {key} is given by hydra.sweeper.params ({apart[0].input_line}) and on the "
                              f"command line ({override.input_line}), which Hydra's sweeper keeps as two keys, every "
                              "job taking the last, so the sweep's values would never run; give it once (a plain "
                              f"{key}=... on the command line replaces a config file's sweep)")


WHOLE_SWEEP = {"dry_run": "a sweep is a dry run or not, all its jobs one way; give dry_run=true for a dry run of the "
                          "sweep, or leave it out",
               "outputs": "a sweep's jobs are all written into its one directory, beneath the outputs it is started "
                          "with; give one outputs=DIR, or start a sweep for each"}
"""Keys that say how the whole sweep is launched, which its jobs cannot vary, with what to do instead: a dry run's jobs
are launched here, a run's by the sweep's launcher into the sweep's directory, which is made beneath `outputs`."""


def refuse_varied(swept: list[Override]) -> None:
    """Refuse a sweep that varies a key of the whole sweep's (`WHOLE_SWEEP`): `-m dry_run=true,false` launched its dry
    job among the runs, where it left no run and was listed as missing, the sweep failed; `-m outputs=a,b` wrote every
    job beneath the outputs the sweep started with, each job's config.yaml saying another."""
    if varied := next((override for override in swept if override.key_or_group in WHOLE_SWEEP), None):
        raise ConfigError(f"in 'config': {varied.input_line}: {WHOLE_SWEEP[varied.key_or_group]}")


def checked_size(swept: list[Override]) -> float:
    """Refuse a sweep of more than MAX_SWEEP_JOBS jobs, counted before Hydra lists them (a range of 10**12 values
    would be listed for hours, then a directory made for each), and one of none (`range(5,0)`: an empty sweep.json,
    exit 0); how many jobs it makes."""
    counts = [(override.key_or_group, _values(override)) for override in swept]
    if empty := next((override for override, (_, count) in zip(swept, counts) if not count), None):
        raise ConfigError(f"in 'config': the sweep makes no jobs: {empty.input_line} lists no value; give it one or "
                          "more")
    jobs = math.prod(count for _, count in counts)
    if jobs > MAX_SWEEP_JOBS:
        each = ", ".join(f"{key}: {_many(count)}" for key, count in counts)
        raise ConfigError(f"in 'config': the sweep makes {_many(jobs)} jobs ({each}), more than a sweep runs "
                          f"({MAX_SWEEP_JOBS:,}, one after another, a run directory each); sweep fewer values, or "
                          "split the sweep")
    return jobs


def _values(override: Override) -> float:
    """How many values a sweep override lists, a range's counted without listing them (math.inf for a range without
    end, 0 for one Hydra refuses: a step of 0)."""
    value = override.value()
    if isinstance(value, IntervalSweep):  # Hydra's enumeration refuses it naming its type alone
        key = override.key_or_group
        raise ConfigError(f"in 'config': {override.input_line}: an interval is sampled by an optimising sweeper "
                          f"(Optuna, Nevergrad), and a benchrun sweep lists its values: {key}=a,b,c or "
                          f"{key}=range(start,stop,step)")
    if not isinstance(value, RangeSweep):
        return sum(1 for _ in override.sweep_string_iterator())
    try:
        steps = (value.stop - value.start) / value.step
    except ZeroDivisionError:
        return 0
    if not steps > 0:  # none, or not a number (inf - inf)
        return 0
    return math.ceil(steps) if math.isfinite(steps) else math.inf


def _many(count: float) -> str:
    """A count as a person reads it: digits grouped, a count of over 15 digits as a power of ten, none as 'endless'."""
    if math.isinf(count):
        return "endlessly many"
    return f"{count:,}" if count < 10**15 else f"about {float(count):.0e}".replace("e+", "e")


def job_values(override: Override) -> list[tuple[str, Any]]:
    """Each value a sweep override lists, as shown (a string as its job is given it) and as its job is given it, a
    quoted value as its text: `llama3.2,'llama3.2'` ran two jobs of one label, compared as written."""
    values = [_unquoted(value) for value in override.sweep_iterator()]
    return [(value if isinstance(value, str) else text, value)
            for text, value in zip(override.sweep_string_iterator(), values)]


def _unquoted(value: Any) -> Any:
    """A value of Hydra's override grammar as its job is given it: quoted strings, at any depth, as their text."""
    if isinstance(value, QuotedString):
        return value.text
    if isinstance(value, list):
        return [_unquoted(item) for item in value]
    if isinstance(value, dict):
        return {key: _unquoted(item) for key, item in value.items()}
    return value


def same(value: Any) -> str:
    """One text for values a job is given alike (0.5 and 5e-1; not 1 and true, nor 1 and 1.0, which are labelled
    apart)."""
    return json.dumps(value, sort_keys=True)


def one_model_a_job(cfg: dict[str, Any], runner_file: str | None = None) -> None:
    """Refuse a sweep's job whose config lists several models (`runner.model=[a,b]`, a runner file's list): it ran
    them as a sweep of its own inside the job's directory, which the sweep's summary then listed as missing (exit 1,
    every run completed), each run labelled by its model alone. With a `runner_file`, the sweep advised is one whose
    runner file gives no model: one that does takes the command line's place (`runnerfile.refuse_replaced`)."""
    models = cfg["runner"]["model"]
    if isinstance(models, list) and len(models) > 1:
        without = f", the runner file '{runner_file}' giving no model" if runner_file else ""
        raise ConfigError(f"a job of a sweep asks one model, and this one's config lists {len(models)} "
                          f"({', '.join(map(str, models))}: a list, or its runner file's); sweep over them instead: "
                          f"-m runner.model={','.join(map(str, models))}{without}", file="config", key="runner.model")


MODEL_KEYS = ("runner.model", "judge.model")
"""The keys naming a model a run asks: the model under test's, and the judge model's."""


def one_model_swept_twice(override: Override, runner_type: Any) -> str | None:
    """Why a sweep of Ollama's models (`-m runner.model=llama3.2,llama3.2:latest`, or the judge's) lists one model
    twice as Ollama reads their names: two jobs of one config, asking one model; None for any other sweep.
    `runner_type` is the type of the runner asking the model swept (runner.type, judge.runner)."""
    if runner_type != "ollama" or override.key_or_group not in MODEL_KEYS:
        return None
    names = [value for _, value in job_values(override) if isinstance(value, str)]
    why = one_model_named_twice(names)
    return f"in 'config': {override.key_or_group}: the sweep lists one model twice: {why}" if why else None

"""A sweep that lists one value twice: as written, by two names of one Ollama model, by two paths of one label, or by
two spellings the config reads as one (`repeats=1,01`, `shard=1/2,01/2`): two jobs of one config."""

from __future__ import annotations

import copy
import json
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

from hydra.core.override_parser.types import Override
from omegaconf import DictConfig, OmegaConf

from benchrun.compose import sweepsize
from benchrun.compose.labels import label
from benchrun.core.errors import ConfigError
from benchrun.core.serverurls import one_server
from benchrun.core.settings import RunConfig

UNORDERED = ("task.only",)
"""Lists whose order the run does not read: task.only picks tasks, which run in their files' order."""

SERVER_KEYS = ("host", "base_url")
"""The last part of a key naming a server (runner.host, judge.base_url): read as its requests reach it."""


def refuse_swept_twice(swept: list[Override], config: DictConfig) -> None:
    """Refuse a sweep that lists one value twice (`runner.model=llama3.2,llama3.2`, or two spellings the config reads
    as one): two jobs of one config, which the sweep's table, its report and its exports could not tell apart (a list
    of models is refused alike); and one of the models an Ollama runner asks (the model under test's, the judge's)
    that lists one by two names (`llama3.2,llama3.2:latest`)."""
    runner_types = {"runner.model": OmegaConf.select(config, "runner.type", default=None),
                    "judge.model": OmegaConf.select(config, "judge.runner", default=None)}
    base = plain(config)
    for override in swept:
        listed = sweepsize.job_values(override)
        counted = Counter(sweepsize.same(value) for _, value in listed)
        if twice := next((text for text, value in listed if counted[sweepsize.same(value)] > 1), None):
            raise ConfigError(f"in 'config': {override.key_or_group}: the sweep lists {twice!r} twice, so two of its "
                              "jobs would have one label; list each value once (repeats=k asks every sample k times "
                              "in one run)")
        if why := sweepsize.one_model_swept_twice(override, runner_types.get(override.key_or_group)):
            raise ConfigError(why)
        _refuse_printed_alike(override.key_or_group, listed)
        _refuse_read_alike(override.key_or_group, listed, base)
        _refuse_one_label(override.key_or_group, listed)


def _refuse_printed_alike(key: str, listed: list[tuple[str, Any]]) -> None:
    """Refuse two values whose labels print alike: one text in two Unicode forms (`café` as one character, and as `e`
    and a combining accent, as macOS names a folder), or but for white space at its end."""
    seen: dict[str, tuple[str, str]] = {}
    for text, value in listed:
        shown = label({key: value}, None)
        if (earlier := seen.setdefault(_printed(shown), (text, shown)))[1] == shown:
            continue  # one label as written: `_refuse_one_label`'s, a path by its last part
        other = earlier[0]
        longer = max(other, text, key=len)
        why = "one text in two Unicode forms" if unicodedata.normalize("NFC", other) == unicodedata.normalize(
            "NFC", text) else f"one text but for the white space {ascii(longer[len(longer.rstrip()):])} it ends with"
        raise ConfigError(f"in 'config': {key}: the sweep lists {ascii(other)} and {ascii(text)}, {why}, which print "
                          "alike, so two of its jobs would have labels read as one; list one of them")


def _printed(text: str) -> str:
    """`text` as it prints: in Unicode's composed form (NFC), white space at its end unseen."""
    return unicodedata.normalize("NFC", text).rstrip()


def _refuse_read_alike(key: str, listed: list[tuple[str, Any]], base: dict[str, Any] | None) -> None:
    """Refuse two values of `key` that the config's own validation reads as one (`repeats=1,01`)."""
    read = [_as_read(base, key, value) for _, value in listed] if base is not None else []
    if not read or any(value is None for value in read):
        return  # a value the config refuses is said by its job, which validates it
    seen: dict[str, tuple[int, str]] = {}
    for index, ((text, _), value) in enumerate(zip(listed, read)):
        earlier, first = seen.setdefault(_as_equal(value), (index, value))
        if earlier == index:
            continue
        other, text = _apart(listed[earlier], listed[index])
        if first == value:
            raise ConfigError(f"in 'config': {key}: the sweep lists {other!r} and {text!r}, which the config reads "
                              f"as one value ({value}), so two of its jobs would run one config; list each value once")
        raise ConfigError(f"in 'config': {key}: the sweep lists {other!r} and {text!r}, one number written two ways "
                          "(whole, and with a point or an exponent), which a server takes as one, so two of its jobs "
                          "would ask the same; list each value once")


def _apart(one: tuple[str, Any], other: tuple[str, Any]) -> tuple[str, str]:
    """Two values as shown, as JSON where they are shown alike (`2` and `"2"`, a quoted override)."""
    return (one[0], other[0]) if one[0] != other[0] else (sweepsize.same(one[1]), sweepsize.same(other[1]))


def _as_equal(read: str) -> str:
    """The JSON text `read` with each whole number written as one (0, 0.0 and 0e0 as 0; a bool stays a bool)."""
    return json.dumps(json.loads(read, parse_float=_number), sort_keys=True)


def _number(text: str) -> int | float:
    """A JSON number with a point or an exponent, as an int when it is whole."""
    value = float(text)
    return int(value) if value.is_integer() else value


def _as_read(base: dict[str, Any], key: str, value: Any) -> str | None:
    """`value` given to `key` of the plain config `base`, as RunConfig reads it (a server as its requests reach it,
    an UNORDERED list as a set), as one text; None if the config refuses it, or the key is none of RunConfig's."""
    last = key.rpartition(".")[2]
    if (trial := with_value(base, key, value)) is None:
        return None
    try:
        read = RunConfig.model_validate(trial).model_dump(mode="json")
        for part in key.split("."):
            read = read[part]
        if last in SERVER_KEYS and read is not None:
            read = [_server(url) for url in ([read] if isinstance(read, str) else read)]
    except Exception:  # refused (said by the job that validates it), or no key of RunConfig's
        return None
    if key in UNORDERED and isinstance(read, list):
        read = sorted(set(read))
    return sweepsize.same(read[0] if isinstance(read, list) and len(read) == 1 and last in SERVER_KEYS else read)


def with_value(base: dict[str, Any], key: str, value: Any) -> dict[str, Any] | None:
    """A copy of the plain config `base` giving `key` `value`; None where a key above it holds no keys."""
    trial = copy.deepcopy(base)
    *parents, last = key.split(".")
    place = trial
    for part in parents:
        place = place.setdefault(part, {})
        if not isinstance(place, dict):
            return None
    place[last] = value
    return trial


def _server(url: str) -> str:
    """The server a URL asks, as its requests reach it (`core.serverurls.one_server`), as a URL."""
    scheme, host, port, path = one_server(url)
    return f"{scheme}://{host}:{port}{path}"


def plain(config: DictConfig) -> dict[str, Any] | None:
    """The composed config without Hydra's part, resolved, to read each swept value in; None if it does not resolve
    (said by each job)."""
    try:
        return {key: _resolved(config, key) for key in config if key != "hydra"}  # Hydra's: a job's own (job.num)
    except Exception:  # an interpolation each job resolves, and says if it cannot
        return None


def _resolved(config: DictConfig, key: str) -> Any:
    value = config[key]
    return OmegaConf.to_container(value, resolve=True, throw_on_missing=True) if OmegaConf.is_config(value) else value


def _refuse_one_label(key: str, listed: list[tuple[str, Any]]) -> None:
    """Refuse two paths of one last part (v1/mmlu, v2/mmlu): one label, told apart by nothing."""
    named: dict[str, str] = {}
    for text, value in listed:
        if (other := named.setdefault(label({key: value}, None), text)) != text:
            raise ConfigError(f"in 'config': {key}: the sweep lists {other!r} and {text!r}, whose jobs would both be "
                              f"labelled {Path(str(value)).name!r} (a path by its last part), which the sweep's table, "
                              "its report and its exports could not tell apart; list each once, under a name of its "
                              "own")

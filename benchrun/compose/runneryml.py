"""A runner file in the seed's format (`runner_file=runner.yml`): read, merged into the composed runner, and what is
wrong with a key it gives said of the file and that key."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any, Iterator

from benchrun.core.errors import ConfigError, os_problem
from benchrun.core.home import expanded
from benchrun.core.keys import key_path, leaves
from benchrun.core.resources import bench_dir
from benchrun.core.settings import RUNNERS
from benchrun.core.unicodeforms import other_form
from benchrun.core.yamlfile import load_yaml

RUNNER_ALIASES = {"runner_type": "type"}
"""Keys of the seed's runner.yml, and what benchrun calls them."""


def read_runner_file(path: str, cfg: dict[str, Any], cwd: Path | None) -> dict[str, Any]:
    """A runner file in the seed's format; a relative path is tried in `cwd`, then in the benchmark (a file first:
    one that is there but is no file, a directory or a device, is refused as what it is, never as not found)."""
    candidates = [expanded(path, "runner_file")]
    if not candidates[0].is_absolute():
        candidates = [(cwd or Path.cwd()) / path, bench_dir(cfg["task"]["path"], cwd) / path]
    try:
        found = next((c for c in candidates if c.is_file()), None) or next((c for c in candidates if c.exists()), None)
    except OSError as err:  # a name too long, a folder it may not search: what it is, never `not found` or a traceback
        raise ConfigError(f"runner file '{path}': {os_problem(err)}", key="runner_file") from None
    if found is None:
        other = next(filter(None, map(other_form, candidates)), None)  # `ré.yml` given, `re\u0301.yml` there
        raise ConfigError(f"runner file '{path}' not found (looked in {', '.join(map(str, candidates))})"
                          f"{f'; {other}' if other else ''}", key="runner_file")
    data = load_yaml(found, path, ConfigError)
    if not isinstance(data, dict):
        raise ConfigError("a runner file is a mapping (runner_type, model, ...)", file=path)
    return data


def runner_file_keys(cfg: dict[str, Any], cwd: Path | None) -> dict[str, Any]:
    """The keys the config's runner file gives, by benchrun's names (`by_our_names`)."""
    return by_our_names(read_runner_file(cfg["runner_file"], cfg, cwd), cfg["runner_file"])


def by_our_names(data: dict[str, Any], path: str, key: str | None = None) -> dict[str, Any]:
    """Runner keys (`data`: a runner file's, of the file at `path`, or the config's runner, at `key`) by benchrun's
    names (`runner_type` as `type`); a key given by both its names with other values (`runner_type: openai` and
    `type: ollama`, the later taken unsaid) is refused."""
    for name, alias in RUNNER_ALIASES.items():
        if name in data and alias in data and data[name] != data[alias]:
            raise ConfigError(f"{name} and {alias}: one key given twice, with other values ({alias} is benchrun's "
                              f"name for {name}, and one would be taken unsaid); give one", file=path, key=key)
    return {RUNNER_ALIASES.get(k, k): v for k, v in data.items()}


def with_runner_file(cfg: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """The composed runner (by benchrun's names) with its runner file's keys (`data`); a file of another runner type (the seed's
    `runner_type`) keeps only the keys that type takes (`runner_type: local` over the Ollama preset: its `host` would
    not apply)."""
    runner = dict(cfg.get("runner", {}))
    kind = data.get("type", runner.get("type"))
    if kind != runner.get("type") and kind in RUNNERS:  # another type is said to be unknown when checked
        runner = {key: value for key, value in runner.items() if key in RUNNERS[kind].model_fields}
    return {**runner, **data}


def refuse_interpolations(given: dict[str, Any]) -> None:
    """Refuse a runner file's value holding `${` (`model: ${oc.env:M}`), which OmegaConf reads as an interpolation in
    an override or a preset, and a runner file's values are not resolved for: it was asked as the text written."""
    for where, value in leaves(given):
        if isinstance(value, str) and "${" in value:
            raise ConfigError(f"'{value}' holds '${{', which a runner file's values are not resolved for (it would be "
                              "asked as the text written); write the value itself", file="config",
                              key=key_path("runner", where))


@contextlib.contextmanager
def said_of_runner_file(runner_file: str | None, given: dict[str, Any]) -> Iterator[None]:
    """A problem the block finds with a runner key that the runner file gave (`given`), said of that file and the
    file's key, as what it is (a credential's refusal stays one): `model: [a, a]` in runner.yml was said to be in
    'config', as runner.model, which the user never wrote, and so was a credential in its `model: [a, hf_...]`."""
    try:
        yield
    except ConfigError as err:
        where, _, why = str(err).removeprefix("in 'config': ").partition(": ")
        section, _, key = where.partition(".")
        top = re.split(r"[.\[]", key)[0]
        if not runner_file or err.file != "config" or section != "runner" or top not in given:
            raise
        own = next((name for name, alias in RUNNER_ALIASES.items() if alias == top), top)
        raise type(err)(f"{own}{key.removeprefix(top)}: {why}", file=runner_file) from None

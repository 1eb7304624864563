"""The config's values an environment variable gives (`host: ${oc.env:OLLAMA_HOST,""}`, `runner.model=${oc.env:M}`):
a refusal of one names the variable the value came from, as well as the key, for the user never wrote the key."""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from typing import Any, Iterator

from omegaconf import DictConfig, OmegaConf

from benchrun.core import secrets
from benchrun.core.errors import ConfigError
from benchrun.core.keys import key_path, leaves

ENV_VALUE = re.compile(r"\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)(,[^{}]*)?\}")
"""A value that is an environment variable's alone, as OmegaConf's `oc.env` resolver reads it (with a default or
none)."""


def env_given(config: Any) -> dict[str, str]:
    """The key paths of the composed `config` whose value is an environment variable's, each with the variable's
    name (none of a plain mapping, whose values are resolved already)."""
    if not isinstance(config, DictConfig):
        return {}
    raw = OmegaConf.to_container(config, resolve=False)
    raw.pop("hydra", None)
    return {key_path("", where): _source(found) for where, value in leaves(raw)
            if isinstance(value, str) and (found := ENV_VALUE.fullmatch(value.strip())) is not None}


def _source(found: re.Match[str]) -> str:
    """`$NAME`; of a variable unset whose default stood in, that default, which oc.env gives as text (`"1"`)."""
    if found[2] is None or found[1] in os.environ:
        return f"${found[1]}"
    return f"the default of {found[0]}, ${found[1]} unset: oc.env gives its default as text"


def read_credentials(config: Any) -> list[tuple[str, str]]:
    """(key path, why) for each value of the composed `config`, as written, that reads a credential through
    `${oc.env:NAME}` (`x${oc.env:V}` of a key by its prefix: resolved, the text run on before it hid the key)."""
    if not isinstance(config, DictConfig):
        return []
    raw = OmegaConf.to_container(config, resolve=False)
    raw.pop("hydra", None)
    return [(key_path("", where), why) for where, value in leaves(raw)
            if isinstance(value, str) and (why := secrets.environment_read(value)) is not None]


@contextmanager
def said_of_variables(given: dict[str, str]) -> Iterator[None]:
    """A refusal the block raises of a key whose value an environment variable gave (`given`), or of a part of it
    (`runner.host[1]`), said naming the variable: `runner.host (from $OLLAMA_HOST): ...`."""
    try:
        yield
    except ConfigError as err:
        where, _, why = str(err).removeprefix("in 'config': ").partition(": ")
        key = next((key for key in given if where == key or where.startswith((f"{key}.", f"{key}["))), None)
        if err.file != "config" or key is None:
            raise
        raise type(err)(f"{where} (from {given[key]}): {why}", file="config") from None

"""Which of the config's keys hold one value (a number, a text, a list given whole) rather than keys of their own, so
that an override reaching into one (`repeats.x=1`, `runner.model.0=x`) is said as what it is."""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Any, Sequence

from pydantic import BaseModel

from benchrun.core.errors import ConfigError
from benchrun.core.keys import override_key
from benchrun.core.settings import RUNNERS, RunConfig


def one_value_above(parts: Sequence[str]) -> str | None:
    """The key above the last of the key path `parts` that holds one value, not keys (`repeats` of `repeats.x`), or
    None where each key above it may hold keys (or is not benchrun's)."""
    return next((".".join(parts[:depth]) for depth in range(1, len(parts)) if _one_value(parts[:depth])), None)


def _one_value(parts: Sequence[str]) -> bool:
    """Whether the key path `parts` names a setting of benchrun's whose value holds no keys."""
    if len(parts) == 3 and parts[0] in ("runner", "judge") and parts[1] == "options":  # an option of any runner's
        models, parts = [runner.options_model() for runner in RUNNERS.values()], parts[2:]
    elif parts[:1] == ["runner"]:
        models, parts = list(RUNNERS.values()), parts[1:]
    else:
        models = [RunConfig]
    kinds = [kind for model in models if (kind := _field_kind(model, parts))]
    return bool(kinds) and not any(_takes_keys(kind) for kind in kinds)


def _field_kind(model: type[BaseModel], parts: Sequence[str]) -> Any:
    """The annotation of the field of `model` at `parts` (through nested settings models), or None."""
    for at, key in enumerate(parts):
        field = model.model_fields.get(key)
        if field is None:
            return None
        if at == len(parts) - 1:
            return field.annotation
        if not (isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)):
            return None
        model = field.annotation
    return None


def _takes_keys(kind: Any) -> bool:
    """Whether a value of the annotation `kind` may hold keys (a mapping, a settings model, anything)."""
    if kind is Any or isinstance(kind, type) and issubclass(kind, (BaseModel, Mapping, dict)):
        return True
    origin = typing.get_origin(kind)
    if origin is typing.Annotated:
        return _takes_keys(typing.get_args(kind)[0])
    if origin in (typing.Union, types.UnionType):
        return any(_takes_keys(arg) for arg in typing.get_args(kind))
    return isinstance(origin, type) and issubclass(origin, (Mapping, dict))


def into_one_value(key: str, one: str, added: str = "") -> ConfigError:
    """An override of `key`, beneath `one`, a setting of one value (`repeats.x=1`, `runner.model.0=x`,
    `runner.options.stop.0=x`): Hydra advised adding it with a '+', which is refused in turn (`repeats: a mapping,
    where a whole number is taken`). `added` is the '+' that gives `one` where the config holds none of it."""
    return ConfigError(f"'{one}' takes one value (a number, a text, or a list given whole), not keys or items "
                       f"overridden one at a time: override it whole ({added}{one}=...)", file="config", key=key)


def refuse_added_into_one_value(argv: Sequence[str]) -> None:
    """Refuse an override that adds a key beneath a setting of one value (`+runner.options.temperature.x=1`), which
    Hydra made a mapping of and pydantic then refused as `valid number, not {"x": 1}`, naming no key given; the
    advice's `++` sets it whether or not the config holds one."""
    for arg in argv:
        if arg.startswith("+") and "=" in arg and (one := one_value_above(override_key(arg).split("."))) is not None:
            raise into_one_value(override_key(arg), one, "++")  # set whether or not the config holds it

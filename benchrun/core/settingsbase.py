"""The base of benchrun's config models (core.settings): no unknown keys, frozen, each true/false, number or count
given as one (no boolean taken for a number, float for a count, text or number for true/false); a number written as
text (the environment's `${oc.env:N}`) is read as the number it writes."""

from __future__ import annotations

import json
import re
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError

WRONG_NUMBER = "wrong_number"
"""The error a value of another kind given for a true/false, a number or a count is (`Settings._numbers_as_meant`),
naming the field in its context."""
WRITTEN = {int: re.compile(r"[+-]?\d{1,30}"),
           float: re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|(?i:inf|infinity|nan))")}
"""A number written as text, as a count (int) or a number (float) is: what `${oc.env:N}` gives, the environment holding
only text (`2`, `2.5`, `inf`; not `2.0` for a count, ` 2`, `0x2`, nor a count of more digits than a setting takes)."""


class Settings(BaseModel):
    """Base of the config models: no unknown keys, frozen, docstrings as field descriptions, values of their kind."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    @model_validator(mode="before")
    @classmethod
    def _numbers_as_meant(cls, data: Any) -> Any:
        """Refuse `true` for a number (`repeats=true`), a float for a count (`repeats=2.0`), text that writes no number
        for either (`repeats=two`) and text or a number for true/false (`dry_run=no`): pydantic took them as 1, 2 and
        false, and Hydra's own reading of `dry_run=no` (true) ran a real run in a dry run's scratch folder, removed as
        it ended. Text that writes a number (`runner.concurrency=${oc.env:SLURM_CPUS_PER_TASK}`) is that number,
        except in a strict model (a runner's options, sent to the server exactly as given)."""
        if not isinstance(data, dict):
            return data
        read = dict(data)
        for name, value in data.items():
            if (field := cls.model_fields.get(name)) is None:
                continue
            kinds = _kinds(field.annotation)
            read[name] = value if cls.model_config.get("strict") else _written(value, kinds)  # Options: as sent
            if _not_its_number(read[name], kinds):
                raise PydanticCustomError(WRONG_NUMBER, "Input should be a valid {kind}, not {given}",
                                          {"field": name, "kind": _kind_named(kinds),
                                           "given": json.dumps(value)})  # as an option is said
        return read


def _written(value: Any, kinds: set[Any]) -> Any:
    """`value` as the number it writes, where it is text for a number or count setting that takes no text (`1e400`
    is inf, which the archive then refuses to keep as it refuses `inf`: compose.config.refuse_unkept_values)."""
    if not isinstance(value, str) or str in kinds:
        return value
    kind = next((kind for kind in (int, float) if kind in kinds and WRITTEN[kind].fullmatch(value)), None)
    return value if kind is None else kind(value)


def _not_its_number(value: Any, kinds: set[Any]) -> bool:
    """Whether `value`, a plain value, is of no kind a true/false, number or count setting takes (an int is a float's)."""
    if kinds & {Any} or not kinds & {bool, int, float} or not isinstance(value, (bool, int, float, str)):
        return False
    return type(value) not in kinds and not (type(value) is int and float in kinds)


def _kind_named(kinds: set[Any]) -> str:
    """What a setting takes, as pydantic names it: `boolean`, `integer`, `number`, or `number or text` (keep_alive)."""
    named = "boolean" if not kinds & {int, float} else "number" if float in kinds else "integer"
    return named + (" or text" if str in kinds else "")


def _kinds(annotation: Any) -> set[Any]:
    """The types an annotation takes (`int | None` -> {int, NoneType}), Annotated's and Literal's insides read."""
    origin = get_origin(annotation)
    if origin is Literal:
        return {type(arg) for arg in get_args(annotation)}
    if origin is None:
        return {annotation}
    return set().union(*(_kinds(arg) for arg in get_args(annotation) if not isinstance(arg, (str, int, float))))

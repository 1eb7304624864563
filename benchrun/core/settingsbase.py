"""The base of benchrun's config models (core.settings): no unknown keys, frozen, each true/false, number or count
given as one (no boolean taken for a number, float for a count, text or number for true/false)."""

from __future__ import annotations

import json
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError

WRONG_NUMBER = "wrong_number"
"""The error a value of another kind given for a true/false, a number or a count is (`Settings._numbers_as_meant`),
naming the field in its context."""


class Settings(BaseModel):
    """Base of the config models: no unknown keys, frozen, docstrings as field descriptions, values of their kind."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    @model_validator(mode="before")
    @classmethod
    def _numbers_as_meant(cls, data: Any) -> Any:
        """Refuse `true` for a number (`repeats=true`), a float for a count (`repeats=2.0`), text for either
        (`repeats='2'`) and text or a number for true/false (`dry_run=no`): pydantic took them as 1, 2, 2 and false,
        which config.yaml then recorded as given, and Hydra's own reading of `dry_run=no` (true) ran a real run in a
        dry run's scratch folder, removed as it ended."""
        for name, value in data.items() if isinstance(data, dict) else ():
            field = cls.model_fields.get(name)
            if field is not None and _not_its_number(value, _kinds(field.annotation)):
                raise PydanticCustomError(WRONG_NUMBER, "Input should be a valid {kind}, not {given}",
                                          {"field": name, "kind": _kind_named(_kinds(field.annotation)),
                                           "given": json.dumps(value)})  # as an option is said
        return data


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

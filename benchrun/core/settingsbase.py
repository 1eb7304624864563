"""The base of benchrun's config models (core.settings): no unknown keys, frozen, no boolean taken for a number nor a
float for a count."""

from __future__ import annotations

from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError

WRONG_NUMBER = "wrong_number"
"""The error a boolean given for a number, or a float for a count, is (`Settings._numbers_as_meant`), naming the field
in its context."""


class Settings(BaseModel):
    """Base of the config models: no unknown keys, frozen, docstrings as field descriptions, no boolean for a number."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    @model_validator(mode="before")
    @classmethod
    def _numbers_as_meant(cls, data: Any) -> Any:
        """Refuse `true` for a number (`repeats=true`, `task.max_samples=true`) and a float for a count (`repeats=2.0`):
        pydantic took them as 1 and 2, which config.yaml then recorded as given, and a limit refused naming a 1 never
        given."""
        for name, value in data.items() if isinstance(data, dict) else ():
            field = cls.model_fields.get(name)
            if field is not None and _not_its_number(value, _kinds(field.annotation)):
                raise PydanticCustomError(WRONG_NUMBER, "Input should be a valid {kind}, not {given}",
                                          {"field": name, "kind": _kind_named(_kinds(field.annotation)),
                                           "given": str(value).lower() if isinstance(value, bool) else repr(value)})
        return data


def _not_its_number(value: Any, kinds: set[Any]) -> bool:
    """Whether `value` is a bool where a number is meant, or a float where only a count is."""
    if kinds & {Any} or not kinds & {int, float}:
        return False
    if isinstance(value, bool):
        return bool not in kinds
    return isinstance(value, float) and float not in kinds


def _kind_named(kinds: set[Any]) -> str:
    """What a number setting takes, as pydantic names it: `integer`, `number`, or `number or text` (keep_alive)."""
    return ("number" if float in kinds else "integer") + (" or text" if str in kinds else "")


def _kinds(annotation: Any) -> set[Any]:
    """The types an annotation takes (`int | None` -> {int, NoneType}), Annotated's and Literal's insides read."""
    origin = get_origin(annotation)
    if origin is Literal:
        return {type(arg) for arg in get_args(annotation)}
    if origin is None:
        return {annotation}
    return set().union(*(_kinds(arg) for arg in get_args(annotation) if not isinstance(arg, (str, int, float))))

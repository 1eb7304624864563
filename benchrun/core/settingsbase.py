"""The base of benchrun's config models (core.settings): no unknown keys, frozen, and no boolean taken for a number."""

from __future__ import annotations

from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError

BOOLEAN_NUMBER = "boolean_number"
"""The error a boolean given for a number is (`Settings._no_boolean_number`), naming the field in its context."""


class Settings(BaseModel):
    """Base of the config models: no unknown keys, frozen, docstrings as field descriptions, no boolean for a number."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    @model_validator(mode="before")
    @classmethod
    def _no_boolean_number(cls, data: Any) -> Any:
        """Refuse `true` for a number (`repeats=true`, `task.max_samples=true`): pydantic took it as 1, which config.yaml
        then recorded, and a limit refused naming a 1 never given."""
        for name, value in data.items() if isinstance(data, dict) else ():
            field = cls.model_fields.get(name)
            if isinstance(value, bool) and field is not None and (kinds := _kinds(field.annotation)) & {int, float} \
                    and not kinds & {bool, Any}:
                raise PydanticCustomError(BOOLEAN_NUMBER, "Input should be a valid {kind}, not {given}",
                                          {"field": name, "kind": _kind_named(kinds),
                                           "given": str(value).lower()})
        return data


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

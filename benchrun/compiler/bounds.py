"""References outside the bounds a format sets its answer: a `pattern`, a length, a range (`Field(pattern="^[A-D]$")`,
`Field(ge=1, le=5)`). A reference no answer within them can equal (`E`, `(A)`, 7) scores every answer 0 by
exact_match; compiler.answerable refuses it, as it does a reference of another kind than the answer's."""

from __future__ import annotations

import json
import unicodedata
from typing import Any, Callable

from benchrun.compiler.scoring import number_value, trimmed

LIMITS = ("pattern", "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
"""The keywords of an answer's schema that bound it, as JSON Schema's validator reads them (not `multipleOf`: a float
reference's multiple is not decided exactly)."""
KINDS = {"string": "a string", "integer": "an integer", "number": "a number"}
WIDEST = 2**63
"""Integers at or past this are not weighed (the validator takes no integer beyond 64 bits)."""


def within(prop: dict[str, Any]) -> tuple[Callable[[Any], bool], str] | None:
    """Whether a reference item equals, by exact_match, some answer within the bounds of the answer's schema `prop`,
    and those bounds as an error says them; None when it sets none (or none this module weighs)."""
    kind, limits = prop.get("type"), {key: prop[key] for key in LIMITS if key in prop}
    if not isinstance(kind, str) or kind not in KINDS or not limits:  # a list of types (`[integer, null]`): not weighed
        return None
    import jsonschema_rs  # a run's module (start-up and dry runs load none), here only for a bounded reference

    try:
        check = jsonschema_rs.validator_for({"type": kind, **limits})
    except (ValueError, jsonschema_rs.ValidationError):
        return None
    shown = KINDS[kind] + " with " + ", ".join(f"{key} {json.dumps(value)}" for key, value in limits.items())

    def reached(item: Any) -> bool:
        answers = _answers(item, kind)
        return answers is None or any(check.is_valid(answer) for answer in answers)
    return reached, shown


def _answers(item: Any, kind: str) -> list[Any] | None:
    """The answers of `kind` that would equal `item` by exact_match: a text reference's own text, trimmed, composed or
    not; a number reference's number. None for what is not weighed: a bool or a number against a string answer
    (compared in other ways), an integer past WIDEST, a reference of another kind (refused by its own check)."""
    if kind == "string":
        if not isinstance(item, str) or number_value(item) is not None:
            return None
        text = trimmed(item)
        return [item, text, unicodedata.normalize("NFC", text), unicodedata.normalize("NFD", text)]
    number = number_value(item)
    if number is None:
        return None
    if number != number.to_integral_value():
        return [float(number)]
    return [int(number)] if abs(number) < WIDEST else None

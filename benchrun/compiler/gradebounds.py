"""The grades a judge's grade field lets its model give, by the bounds its format sets (`Field(ge=1, le=5)`, a
pattern, a length): bounds that let no number in (`ge=5, le=1`) had every judge reply refused after the whole run was
asked, and those of one number (`ge=1, le=1`) a metric of that number whatever the judge answers; a scored grade the
bounds refuse (an Enum's `max_length=2`, a pattern) was never given. Refused at compile, as compiler.judges says."""

from __future__ import annotations

import json
import math
from typing import Any, Iterable

NUMBER_BOUNDS = ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum")


def number_bounds_fault(prop: dict[str, Any]) -> str | None:
    """Why a number grade's schema `prop` lets the judge give fewer than two grades (none, or one), as said after
    the field's name; None when it lets in two or more (or sets no two bounds)."""
    bounds = {key: prop[key] for key in NUMBER_BOUNDS if _is_number(prop.get(key))}
    lows = [(value, key == "exclusiveMinimum") for key, value in bounds.items() if key in NUMBER_BOUNDS[:2]]
    highs = [(value, key == "maximum") for key, value in bounds.items() if key in NUMBER_BOUNDS[2:]]
    if not lows or not highs:
        return None
    low, high = max(lows), min(highs)  # (value, shut out) and (value, let in): the stricter of a tie
    shown = f"{'an integer' if prop.get('type') == 'integer' else 'a number'} with " + ", ".join(
        f"{key} {json.dumps(prop[key])}" for key in (*bounds, "multipleOf") if key in prop)
    count, first = _span(prop.get("type") == "integer", low, high, prop.get("multipleOf"))
    if count == 0:
        return f"is {shown}, which no grade is, so every reply of the judge would be refused"
    if count == 1:
        return (f"is {shown}, which only {json.dumps(first)} is, so the judge's metric would be {json.dumps(first)} "
                "whatever its model answers")
    return None


def _span(integer: bool, low: tuple[Any, bool], high: tuple[Any, bool], step: Any) -> tuple[int, Any]:
    """How many grades (0, 1, or 2 for more) lie between `low` (its value, whether it is left out) and `high` (its
    value, whether it is let in), an integer's a multiple of `step` (an integer's multipleOf), and the first."""
    if integer:
        first = math.floor(low[0]) + 1 if low[1] else math.ceil(low[0])
        last = math.floor(high[0]) if high[1] else math.ceil(high[0]) - 1
        step = step if isinstance(step, int) and not isinstance(step, bool) and step > 0 else 1
        first = -(-first // step) * step
        return min(max((last - first) // step + 1, 0), 2), first
    if low[0] > high[0] or (low[0] == high[0] and (low[1] or not high[1])):
        return 0, low[0]
    return 1 + (low[0] < high[0]), low[0]


def refused_grade(prop: dict[str, Any], defs: dict[str, Any], grades: Iterable[Any]) -> Any | None:
    """The first of `grades` an Enum or string grade's schema `prop` (its `$defs`) refuses; None when it takes every
    one (or its schema cannot be weighed)."""
    import jsonschema_rs  # a run's module (start-up and dry runs load none), here only for a judged task

    try:
        check = jsonschema_rs.validator_for({**prop, "$defs": defs})
    except (ValueError, jsonschema_rs.ValidationError):
        return None
    return next((grade for grade in grades if not check.is_valid(grade)), None)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)

"""The archive's JSON files parsed once: as Python reads them, each key given once, then validated as a model from
that data, not parsed again by pydantic to check its keys."""

from __future__ import annotations

import json
import sys
from typing import Any

from pydantic import ValidationError

from benchrun.core.text import NESTED, SURROGATE_ESCAPE, NotJSON, once_each, too_many_digits

DEPTH = 200
"""How deep pydantic's JSON reader follows arrays and objects (what a model read from JSON data follows no deeper)."""


def python_json(data: bytes | str, **options: Any) -> Any:
    """`json.loads(data, **options)`, JSON nested deeper than Python's reader follows (its RecursionError: a planted
    line of 100,000 `[`), or an integer longer than it reads (`_integer`), raised as the ValueError of what is no JSON,
    which every reader of the archive says."""
    try:
        return json.loads(data, parse_int=_integer, **options)
    except RecursionError:
        raise ValueError(NESTED) from None


def _integer(text: str) -> int:
    """A JSON integer as Python reads it; one of more digits than it converts said as every reader of benchrun says it
    (`too_many_digits`: Python's own words advise a call to sys.set_int_max_str_digits)."""
    if (limit := sys.get_int_max_str_digits()) and len(text.lstrip("-")) > limit:
        raise ValueError(too_many_digits())
    return int(text)


def given_once(data: bytes) -> Any:
    """The JSON `data` as Python reads it from UTF-8 (not UTF-16, nor behind a byte order mark, which Python's reader
    of bytes also takes), each key of an object given once: NotJSON naming the key given twice (which JSON readers
    resolve each their own way); another ValueError (or RecursionError) when it is no JSON."""
    return json.loads(data.decode("utf-8"), object_pairs_hook=once_each)


def as_model(data: bytes, model: type[Any]) -> Any:
    """`data`, an archive's JSON file, as `model` (a pydantic model) from its JSON read once (`given_once`); what
    pydantic's JSON reader alone refuses (a lone half of a surrogate pair, nesting deeper than DEPTH, no object) or
    what is no JSON is read by it, to be refused in its words (a ValidationError naming line and column), as is what
    the model refuses."""
    try:
        value = given_once(data)
    except NotJSON:
        raise
    except (ValueError, RecursionError) as err:
        model.model_validate_json(data)
        raise ValueError(f"Invalid JSON: {err}") from None
    if not isinstance(value, dict) or _surrogate(data) or _deeper(value, DEPTH):
        return model.model_validate_json(data)
    try:
        return model.model_validate(value)
    except ValidationError:  # said as read from JSON (`counts: Input should be an object`, not `... a valid dictionary`)
        return model.model_validate_json(data)


def _surrogate(data: bytes) -> bool:
    """Whether the JSON `data` escapes a half of a surrogate pair (`\\ud83d`), which only a pair of them makes JSON."""
    return b"\\u" in data and SURROGATE_ESCAPE.search(data.decode("utf-8")) is not None


def _deeper(value: Any, depth: int) -> bool:
    """Whether `value` nests arrays and objects more than `depth` deep."""
    if depth < 0:
        return True
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return any(isinstance(child, (dict, list)) and _deeper(child, depth - 1) for child in children)

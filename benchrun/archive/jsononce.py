"""The archive's JSON files parsed once: by pydantic, with JSON's own types, and again as Python reads them (each key
given once) only when a file is not as its writer writes it."""

from __future__ import annotations

import json
import sys
from typing import Any

from benchrun.core.text import NESTED, NotJSON, once_each, too_many_digits


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
    """`data`, an archive's JSON file, as `model` (a pydantic model) read by pydantic with JSON's own types (strict:
    `"5"`, `2.0` and `true` are no integer, as no writer writes one; an integer is a float), refused in its words (a
    ValidationError naming line and column); and, unless it is as its writer writes it (the model's JSON, indented),
    as Python reads it (`given_once`: each key given once; what it cannot read is no JSON)."""
    found = model.__pydantic_validator__.validate_json(data, strict=True)
    if found.model_dump_json(indent=2).encode() != data.rstrip(b"\n"):
        try:
            given_once(data)
        except NotJSON:
            raise
        except (ValueError, RecursionError) as err:
            raise ValueError(f"Invalid JSON: {err}") from None
    return found

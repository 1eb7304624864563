"""Whether an answer fits its response format: JSON valid against the format's JSON Schema (draft 2020-12).

That validity is what the archive promises (`format_valid`), as the `jsonschema` package decides it. The answer path
asks jsonschema-rs first, a Rust validator of the same draft that takes 1-2 µs where jsonschema takes 15-30: a
valid answer is settled there; an invalid one goes to jsonschema, which decides again and says what is wrong.
tests/test_format_check.py pins that the two agree.
"""

from __future__ import annotations

from typing import Any

import jsonschema_rs
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from benchrun.core.text import NESTED, NotJSON, json_value


class FormatCheck:
    """One format's check, compiled once from its JSON Schema."""

    def __init__(self, schema: dict[str, Any]):
        self._fast = jsonschema_rs.Draft202012Validator(schema, validate_formats=False)
        self._full = Draft202012Validator(schema)

    def problem(self, text: str) -> str | None:
        """None when `text` is JSON valid in the format, else what is wrong."""
        try:
            data = json_value(text)
        except NotJSON as err:
            return f"invalid JSON: {err}"
        return self.data_problem(data)

    def data_problem(self, data: Any) -> str | None:
        """None when the parsed `data` is valid in the format, else what is wrong (jsonschema's best match)."""
        if self._fast.is_valid(data):
            return None
        try:
            error = best_match(self._full.iter_errors(data))
        except RecursionError:  # a recursive format and an answer nested as deep as JSON lets it
            return f"invalid: {NESTED}"
        if error is None:
            return None
        where = "/".join(map(str, error.absolute_path))
        return f"{where}: {error.message}" if where else error.message

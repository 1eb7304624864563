"""How an OpenAI-compatible server is sent a task's schema: the `response_format` of each structured-output dialect."""

from __future__ import annotations

import re
from typing import Any

from benchrun.execute.runners.base import bounded_strings, free_strings
from benchrun.execute.runners.llamaschema import readable, repeated

JSON_CHAR = r'([^"\\\x00-\x1F]|\\(["\\/bfnrt]|u[0-9a-fA-F]{4}))'
"""One character of a JSON string, escapes included, raw control characters not (as a regex pattern, which
llama-cpp-python turns into grammar)."""


def response_format(schema: dict[str, Any], dialect: str = "json_schema", strict: bool = True,
                    max_length: int | None = None) -> dict[str, Any]:
    """A task's schema as a response_format: OpenAI's `json_schema` (named after the schema's title, in the
    characters allowed), or the `json_object` with a `schema` that llama-cpp-python's server takes, as its grammar
    converter reads it (`llamaschema.readable`: a pattern's `\\d` killed the server). That server's grammar lets raw
    control characters into strings, so there each free-form string carries a pattern of JSON's string characters
    without them (which also bounds its length, the server ignoring maxLength and minLength beside a pattern). A
    string's bound is never below its minLength (`bounded_strings`): a pattern of `{0,64}` beside `minLength: 100` held
    answers to fewer characters than the format takes."""
    if dialect == "json_object":
        return {"type": "json_object", "schema": free_strings(
            readable(schema), lambda string: {"pattern": json_string(string.get("minLength", 0), max_length)})}
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", str(schema.get("title") or "response"))[:64]
    sent = bounded_strings(schema, max_length)
    return {"type": "json_schema", "json_schema": {"name": name, "schema": sent, "strict": strict}}


def json_string(least: int, most: int | None) -> str:
    """A pattern for JSON's string characters without raw control characters, from `least` to `most` of them (at
    least `least`, and never fewer than that at most; no more than the server's converter holds, `repeated`)."""
    most = None if most is None else repeated(least, max(least, most))
    if not least and most is None:
        return f"^{JSON_CHAR}*$"
    return f"^{JSON_CHAR}{{{least},{'' if most is None else most}}}$"

"""A template's braces written twice around a value's name (`{{a}}`, `{{ a }}`: Jinja's and Mustache's fields), which
str.format reads as the text `{a}`: refused, as no value fills it."""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from benchrun.core.errors import TaskError

NAMED = re.compile(r"\{\s*(\w+)\s*\}")
"""A name in braces, as a template's literal text holds it once its doubled braces are read as one."""


def refuse_escaped_fields(parts: Iterable[tuple[str, Any]], values: Mapping[str, Any], where: dict[str, Any]) -> None:
    """Refuse a template whose literal text (between its fields, `parts` as str.format parses it) holds a value's name
    in braces: written `{{a}}`, it asked `{a}` of every sample, the same prompt, the value shown nowhere."""
    run: list[str] = []
    for literal, field in parts:
        run.append(literal)
        if field is None:
            continue
        _refuse_named("".join(run), values, where)
        run = []
    _refuse_named("".join(run), values, where)


def _refuse_named(text: str, values: Mapping[str, Any], where: dict[str, Any]) -> None:
    found = next((match for match in NAMED.finditer(text) if match[1] in values), None)
    if found is not None:
        raise TaskError(f"{{{found[0]}}} is the text {found[0]!r}, asked as it is: in a str.format template a brace "
                        f"written twice is one brace, so no value fills it; a field is written {{{found[1]}}}", **where)

"""A template's field filled with nothing visible: a value that is empty, or only whitespace and invisible characters
(a blank CSV cell, a JSONL `" "`, a grid's `"\u200b"`), is likely a data error, refused naming its column and sample."""

from __future__ import annotations

from typing import Iterable

from benchrun.compiler.schemas import SHOWN
from benchrun.compiler.sources import TaskSpec
from benchrun.core.errors import TaskError
from benchrun.core.text import says_nothing


def refuse_blank_values(spec: TaskSpec, fields: Iterable[str]) -> None:
    """Refuse a value of one of the template's `fields` that says nothing (`says_nothing`): the prompt would ask the
    template with a hole in it. A value no field shows (one only a scorer reads) may be blank."""
    for name in dict.fromkeys(fields):
        for index, value in enumerate(spec.values[name]):
            if isinstance(value, str) and says_nothing(value):
                which = f"sample {index + 1:,}" if spec.values_file else f"item {index + 1:,} of the list"
                seen = f"{ascii(value)[:SHOWN]}, only whitespace and invisible characters" if value else "empty"
                raise TaskError(f"the value of {which} is {seen}, which fills {{{name}}} with nothing visible; give the "
                                "value, or leave the sample out", **spec.where(f"values.{name}"))

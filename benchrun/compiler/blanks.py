"""A template's field filled with nothing visible: a value that is empty, or only whitespace and invisible characters
(a blank CSV cell, a JSONL `" "`, a grid's `"\u200b"`, an example's), is likely a data error, refused naming its column
and sample."""

from __future__ import annotations

from typing import Any, Iterable

from benchrun.compiler.schemas import SHOWN
from benchrun.compiler.sources import TaskSpec
from benchrun.core.errors import TaskError
from benchrun.core.text import says_nothing


def refuse_blank_values(spec: TaskSpec, fields: Iterable[str]) -> None:
    """Refuse a value of one of the template's `fields` that says nothing (`says_nothing`): the prompt would ask the
    template with a hole in it. A value no field shows (one only a scorer reads) may be blank."""
    for name in dict.fromkeys(fields):
        for index, value in enumerate(spec.values[name]):
            if (said := _blank(value)) is not None:
                which = f"sample {index + 1:,}" if spec.values_file else f"item {index + 1:,} of the list"
                raise TaskError(f"the value of {which} is {said}, {_fills(name, 'sample')}",
                                **spec.where(f"values.{name}"))


def refuse_blank_example(values: dict[str, Any], fields: Iterable[str], where: dict[str, str | None]) -> None:
    """Refuse a few-shot example's value (`{values, assistant}`) of one of the template's `fields` that says nothing,
    as a sample's is refused."""
    for name in dict.fromkeys(fields):
        if (said := _blank(values[name])) is not None:
            raise TaskError(f"the value '{name}' is {said}, {_fills(name, 'example')}", **where)


def _blank(value: Any) -> str | None:
    """How a value that says nothing is said (`empty`, `' ', only whitespace ...`); None for any other value."""
    if not isinstance(value, str) or not says_nothing(value):
        return None
    return f"{ascii(value)[:SHOWN]}, only whitespace and invisible characters" if value else "empty"


def _fills(name: str, what: str) -> str:
    return f"which fills {{{name}}} with nothing visible; give the value, or leave the {what} out"

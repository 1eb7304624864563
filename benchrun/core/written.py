"""A number read from a benchmark's file that keeps how the file wrote it: computed with as the number it is, printed
(in a prompt, a sample's id) as written: a CSV's `2.50`, `1e5` or `+5` was asked as `2.5`, `100000.0` and `5`; and a
bool printed as its file wrote it, `true`, not Python's `True`."""

from __future__ import annotations

import math
from typing import Any


class _AsWritten:
    """A number (of the class's other base) printed as its file wrote it (`{a}`, `str`, `repr`); a format spec formats
    the number (`{a:.3f}`); JSON writes the number (json calls the base's __repr__)."""

    written: str

    def __new__(cls, text: str, value: float) -> Any:
        made = super().__new__(cls, value)  # type: ignore[call-arg]
        made.written = text
        return made

    def __str__(self) -> str:
        return self.written

    __repr__ = __str__

    def __format__(self, spec: str) -> str:
        return self.written if not spec else super().__format__(spec)

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.written, +self)  # type: ignore[operator]


class WrittenFloat(_AsWritten, float):
    """A float printed as written: `2.50`, `1e5`."""


class WrittenInt(_AsWritten, int):
    """An int printed as written: `+5`, `-0`."""


def as_written(text: str, value: int | float) -> int | float:
    """`value`, read from `text`, printed as `text` where Python prints it otherwise (an infinity or NaN, which no
    value may be, is said as Python says it)."""
    if str(value) == text or isinstance(value, bool) or not math.isfinite(value):
        return value
    return WrittenInt(text, value) if isinstance(value, int) else WrittenFloat(text, value)


def shown(value: Any) -> Any:
    """`value` as a prompt's `{a}` and a sample's id print it: a bool as JSON and YAML write it (`true`; Python's bool
    cannot be made to print otherwise), any other value as it is (a number as written)."""
    return ("true" if value else "false") if isinstance(value, bool) else value

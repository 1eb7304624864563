"""A number read from a benchmark's file that keeps how the file wrote it: computed with as the number it is, printed
(in a prompt, a sample's id) as written: a CSV's `2.50`, `1e5` or `+5` was asked as `2.5`, `100000.0` and `5`."""

from __future__ import annotations

from typing import Any


class WrittenFloat(float):
    """A float printed as its file wrote it (`{a}`, `str`, `repr`); a format spec formats the number
    (`{a:.3f}`); JSON writes the number (json calls float.__repr__)."""

    written: str

    def __new__(cls, text: str, value: float | None = None) -> WrittenFloat:
        made = super().__new__(cls, float(text) if value is None else value)
        made.written = text
        return made

    def __str__(self) -> str:
        return self.written

    __repr__ = __str__

    def __format__(self, spec: str) -> str:
        return self.written if not spec else float.__format__(self, spec)

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.written, float(self))


class WrittenInt(int):
    """An int printed as its file wrote it (`+5`, `-0`), as WrittenFloat is."""

    written: str

    def __new__(cls, text: str, value: int | None = None) -> WrittenInt:
        made = super().__new__(cls, int(text) if value is None else value)
        made.written = text
        return made

    def __str__(self) -> str:
        return self.written

    __repr__ = __str__

    def __format__(self, spec: str) -> str:
        return self.written if not spec else int.__format__(self, spec)

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.written, int(self))


def as_written(text: str, value: int | float) -> int | float:
    """`value`, read from `text`, printed as `text` where Python prints it otherwise."""
    if str(value) == text or isinstance(value, bool):
        return value
    return WrittenInt(text, value) if isinstance(value, int) else WrittenFloat(text, value)

"""A field's format code `c`, which makes a number the character of that code (`{i:c}` of 65 is `A`): the character
made is held to what a benchmark's text holds (no control character, no byte-order mark, no half of a surrogate
pair), and a number that is no character's code is said in benchrun's words, not in Python's OverflowError."""

from __future__ import annotations

from typing import Any

from benchrun.core.filebytes import UNASKED
from benchrun.core.text import SURROGATE

LAST_CODE = 0x10FFFF
"""The code of Unicode's last character."""


def formatted(value: Any, spec: str, shown: str) -> str:
    """`format(value, spec)` for the field `shown` (`{a:c}`); ValueError for a character made that no prompt holds, or
    for a number that is no character's code."""
    try:
        text = format(value, spec)
    except OverflowError:  # `c` of a number past LAST_CODE, or below 0
        raise ValueError(f"field {shown} makes no character of {value!r}: a character's code is 0 to {LAST_CODE:,} "
                         f"(U+{LAST_CODE:X})") from None
    if spec.endswith("c") and (found := UNASKED.search(text) or SURROGATE.search(text)) is not None:
        raise ValueError(f"field {shown} makes {value!r} the character {found[0]!r}, which no prompt holds (a control "
                         "character, a byte-order mark or half a surrogate pair); give the code of a character that "
                         "prints")
    return text

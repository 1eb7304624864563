"""Text from outside (a server's answer or error, a scorer's metric name, a file's cell) made fit to keep: every
string benchrun writes is valid UTF-8, so a lone UTF-16 surrogate (which JSON's `\\ud800` escapes can carry into a
Python string) is replaced by U+FFFD where the text enters."""

from __future__ import annotations

import math
import re
from typing import Any

SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def writable(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (the same object when it has none)."""
    if text.isascii() or not SURROGATE.search(text):
        return text
    return SURROGATE.sub(REPLACEMENT, text)


def writable_data(value: Any) -> Any:
    """JSON-like data (str, list, dict of them, numbers, None) as JSON can keep it: every string, keys included,
    `writable`, and a float that is not finite (which JSON has no number for) None."""
    if isinstance(value, str):
        return writable(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {writable(str(key)): writable_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [writable_data(item) for item in value]
    return value

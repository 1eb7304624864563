"""Text from outside (a model's answer, a benchmark's prompt, a name, reason or path read from the archive) made safe
to print on a terminal: its control characters shown as escapes, so that none reaches the terminal as a command."""

from __future__ import annotations

import re

CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""The control characters a terminal acts on (C0 but tab and newline, DEL, C1: ESC, CSI, BEL, CR, backspace, ...)."""


def visible(text: str) -> str:
    """`text` with each control character but tab and newline shown as its Python escape (`\\x1b`, `\\r`), so an
    answer holding ESC[2J prints as those characters instead of clearing the screen."""
    if text.isascii() and text.isprintable():
        return text
    return CONTROL.sub(lambda found: repr(found[0])[1:-1], text)

"""Text from outside (a model's answer, a benchmark's prompt, a name, reason or path read from the archive) made safe
to print on a terminal: its control characters shown as escapes, so that none reaches the terminal as a command, and
so are the characters that print nothing yet change what is seen (a right-to-left override, U+202E, that shows
`model-b` as `b-ledom`; a zero-width space that makes two names look one; a line separator)."""

from __future__ import annotations

import re

CONTROL = "\x00-\x08\x0b-\x1f\x7f-\x9f"
"""The control characters a terminal acts on (C0 but tab and newline, DEL, C1: ESC, CSI, BEL, CR, backspace, ...)."""
UNSEEN = ("\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064"
          "\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3"
          "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f")
"""Unicode's format characters (category Cf: bidirectional overrides and isolates, zero-width spaces and joiners,
the byte-order mark, the soft hyphen, tags) and its line and paragraph separators (Zl, Zp), as Python 3.11's
unicodedata has them: what prints nothing of its own (tests/test_hostile_ninth_archive.py checks the list)."""
SHOWN = re.compile(f"[{CONTROL}{UNSEEN}]")


def visible(text: str) -> str:
    """`text` with each control character but tab and newline, and each character in UNSEEN, shown as its Python
    escape (`\\x1b`, `\\r`, `\\u202e`, `\\u200b`), so an answer holding ESC[2J prints as those characters instead of
    clearing the screen, and a name holding U+202E prints as written instead of backwards."""
    if text.isascii() and text.isprintable():
        return text
    return SHOWN.sub(lambda found: repr(found[0])[1:-1], text)

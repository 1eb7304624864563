"""Text from outside (a model's answer, a benchmark's prompt, a name, reason or path read from the archive) made safe
to print on a terminal: its control characters shown as escapes, so that none reaches the terminal as a command, and
so are the characters that print nothing yet change what is seen (a right-to-left override, U+202E, that shows
`model-b` as `b-ledom`; a zero-width space that makes two names look one; a line separator)."""

from __future__ import annotations

import re
import unicodedata

UNSEEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Unicode's categories of what a terminal acts on or prints nothing of its own: control characters (C0 but tab and
newline, DEL, C1: ESC, CSI, BEL, CR, backspace, ...), format characters (bidirectional overrides and isolates,
zero-width spaces and joiners, the byte-order mark, the soft hyphen, tags), line and paragraph separators, and lone
surrogates (a path's bytes that are not UTF-8, which no UTF-8 output can hold); as the
running Python's unicodedata has them, so a newer Unicode's format characters are shown too."""
SHOWN = re.compile("[\x00-\x08\x0b-\x1f\x7f]|[^\x00-\x7f]+")
"""An ASCII control character but tab and newline, or a run of characters beyond ASCII (checked in `_escaped`)."""


def visible(text: str) -> str:
    """`text` with each character of an UNSEEN category but tab and newline shown as its Python escape (`\\x1b`,
    `\\r`, `\\u202e`, `\\u200b`), so an answer holding ESC[2J prints as those characters instead of clearing the
    screen, and a name holding U+202E prints as written instead of backwards."""
    if text.isascii() and text.isprintable():
        return text
    return SHOWN.sub(_escaped, text)


def _escaped(found: re.Match[str]) -> str:
    """A match of SHOWN with its UNSEEN characters escaped; a run that `isprintable` holds none (checked in C)."""
    run = found[0]
    if run.isprintable():
        return run
    return "".join(_escape(char) if unicodedata.category(char) in UNSEEN else char for char in run)


def _escape(char: str) -> str:
    """`char` as its Python escape; a byte of a name that is not UTF-8 (which Python keeps as a lone surrogate,
    U+DC80 to U+DCFF) as that byte, `\\xff`, as `core.text.undecoded` shows it."""
    return f"\\x{ord(char) - 0xDC00:02x}" if "\udc80" <= char <= "\udcff" else repr(char)[1:-1]


def shown_name(text: str) -> str:
    """`text`, a name or a path (a run's directory, its model, label or benchmark), shown as `visible` shows it and
    its newlines and tabs as escapes too (`\\n`): a name is one line, and a newline in one (a run directory made with
    `hydra.run.dir=$'x\\nok    run.json: ...'`) would print a line that the command did not write."""
    return visible(text).replace("\n", "\\n").replace("\t", "\\t")

"""The archive's text as the report shows it: HTML-escaped, and the characters that print nothing yet change what is
seen (a right-to-left override, a zero-width space) shown as their escapes, as the commands print them."""

from __future__ import annotations

from html import escape

from benchrun.console.visible import visible


def html_text(text: str) -> str:
    """`text` (a name, an answer, a reason) for the report's HTML: `console.visible`'s escapes, then HTML's."""
    return escape(visible(text))

"""A runner's stop strings (`options.stop`), checked as a list the server reads as a set: any one of them ends the
answer, wherever it is listed."""

from __future__ import annotations

from typing import Any

from benchrun.core.filebytes import UNASKED, unasked_said


def checked_stops(stop: Any) -> Any:
    """`stop`, refused (ValueError) for an empty string, a control character in one, or one listed twice (`[a, a]`
    asked as `[a]` under another manifest id)."""
    if stop is None:
        return stop
    if "" in stop:
        raise ValueError("an empty stop string, which every text starts with: every answer would end before its "
                         "first token; leave it out")
    for text in stop:
        if (found := UNASKED.search(text)) is not None:
            raise ValueError(f"the stop string {text!r}: {unasked_said(found[0])}")
    if (twice := next((text for at, text in enumerate(stop) if text in stop[:at]), None)) is not None:
        raise ValueError(f"the stop string {twice!r} is listed twice; any one stop string ends the answer, so the list "
                         "asks what it asks with it once, under another manifest id: list it once")
    return stop

"""A wall clock stepped back while a session of a run was written (NTP, a virtual machine restored): how its writer
tells, by the monotonic clock beside it, and how run.json's history says how far (as soon as an answer is recorded
after it, so that a session killed later has said it), so that the run's span (started_at to ended_at, the wall
clock's) is read with it as bounding the times its monotonic clock measured."""

from __future__ import annotations

from time import monotonic
from typing import Any, Sequence

from benchrun.core.recordvalues import is_seconds, moment_at

STEPPED_BACK = "clock_stepped_back_s"
"""The key of the history entry of a session whose wall clock went back: by how many seconds, as the monotonic clock
tells (at least)."""
CLOCKS_APART_S = 1.0
"""How far a time a monotonic clock measured in a run may pass the run's span (the system clock's, which NTP may
step) unsaid."""


class WallWatch:
    """The wall clock's reading `wall` (ISO) as a session begins, with the monotonic clock's at the same moment."""

    def __init__(self, wall: str):
        self._wall, self._since = moment_at(wall), monotonic()
        self._said = 0.0
        """How far the entries `noted` made so far said the wall clock went back."""

    def behind(self, ended: str) -> float | None:
        """How far the wall clock went back (its reading `ended` now behind the monotonic clock), when more than
        CLOCKS_APART_S; None when it did not."""
        behind = monotonic() - self._since - (moment_at(ended) - self._wall).total_seconds()
        return round(behind, 6) if behind > CLOCKS_APART_S else None

    def noted(self, history: tuple[dict[str, Any], ...], at: str) -> tuple[dict[str, Any], ...]:
        """`history`, with an entry saying how much further than its entries made so far said the wall clock went
        back (`behind`), reading `at`; `history` itself when it went no further."""
        if (behind := self.behind(at)) is None or behind - self._said <= CLOCKS_APART_S:
            return history
        further, self._said = round(behind - self._said, 6), behind
        return (*history, {STEPPED_BACK: further})


def stepped_back(history: Sequence[dict[str, Any]]) -> float:
    """How far the run's history says its wall clock went back in all (its sessions' entries that give seconds)."""
    return sum(back for entry in history if is_seconds(back := entry.get(STEPPED_BACK)))


def clock_said(history: Sequence[dict[str, Any]]) -> str:
    """What `show` says beside the run's start and end of a wall clock that went back while it ran; empty if none."""
    back = stepped_back(history)
    return f"  (the clock went back {back:g} s while it ran: it took that much longer)" if back else ""

"""This process's running time: the monotonic clock less the time the process was stopped (Ctrl-Z, SIGSTOP, a Slurm
job suspended, a machine too loaded to run it), so that a time limit on work the process waits for (a scorer's call,
stopped with it) is not spent while nothing ran. A heartbeat thread, started on first use, finds the stops as late
beats."""

from __future__ import annotations

import os
import threading
import time

BEAT_S = 0.1
GAP_S = 1.0
"""A beat later than this one was a stop: all of it past this much is time the process did not run."""


class RunClock:
    """`now()`: seconds of running time (comparable only with other `now()`s of this process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stopped = 0.0
        self._last: float | None = None
        """When the heartbeat last beat (None before it started, or in a child forked since)."""

    def now(self) -> float:
        """The running time; the first call starts the heartbeat, raising (as a thread the system will not start)
        where the clock would not run: a clock without its heartbeat would count all time from its last beat as
        stopped, and no time limit on it would ever run out."""
        with self._lock:
            if self._last is None:
                heartbeat = threading.Thread(target=self._beat, name="run clock", daemon=True)
                self._last = time.monotonic()
                try:
                    heartbeat.start()
                except BaseException:
                    self._last = None
                    raise
            current = time.monotonic()
            return current - self._stopped - _lost(current - self._last)

    def _beat(self) -> None:
        while True:
            time.sleep(BEAT_S)
            with self._lock:
                current = time.monotonic()
                self._stopped += _lost(current - self._last)
                self._last = current

    def _forked(self) -> None:
        """In a child forked from this process: no heartbeat runs there until the clock is read."""
        self._lock, self._stopped, self._last = threading.Lock(), 0.0, None


def _lost(since_beat: float) -> float:
    """The time a beat `since_beat` seconds after the last one says the process did not run."""
    return max(0.0, since_beat - GAP_S)


RUN_CLOCK = RunClock()
os.register_at_fork(after_in_child=RUN_CLOCK._forked)

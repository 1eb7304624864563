"""run.lock's lease: how a run's writer on one machine is told alive from another, where locks stay on each machine.

Some shared file systems keep flock's locks on the machine that takes them (Lustre mounted with `localflock`, BeeGFS
by default): from another machine, a run being written looks unlocked, as a killed writer's run does. So a writer
renews a lease while it holds the lock, touching run.lock every RENEW_S seconds, and a writer that finds another
machine's note in the lock watches the file's time for a few renewals before it takes the run over. Watching needs no
clock shared between machines; the file is opened for each look, which makes NFS ask its server (close-to-open).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path
from typing import Callable

RENEW_S = 1.0
"""How often a holder touches its lock file."""
WATCH_S = 3 * RENEW_S
"""How long a lock file whose time does not move is watched before its holder is taken to be dead."""
LAPSED_S = 600.0
"""A lease whose file time is older than this, by this machine's clock, lapsed without a watch (machines whose clocks
differ by this much are not kept by NTP)."""
LOOK_S = 0.25


class Lease:
    """The renewal of the lock file open as `fd()` (the one its holder holds now), by a thread of its own, until `end`
    or until `held` says the lock is another writer's (`DirLock.taken_over`), whose lease this holder must not
    renew."""

    def __init__(self, fd: Callable[[], int], held: Callable[[], bool]):
        self._fd, self._held = fd, held
        self._ended = threading.Event()
        self._thread = threading.Thread(target=self._renew, name="run.lock lease", daemon=True)
        self._thread.start()

    def _renew(self) -> None:
        while not self._ended.wait(RENEW_S) and self._held():
            with contextlib.suppress(OSError):  # a file system gone read-only: the lease lapses, as a dead writer's
                os.utime(self._fd())

    def end(self) -> None:
        """Stop renewing, before the file is closed (its descriptor's number may be another file's after)."""
        self._ended.set()
        self._thread.join()


def renewed(path: Path) -> bool:
    """Whether the lease on the lock file `path` is still renewed by its holder: its time moves within WATCH_S."""
    return path in renewing([path])


def renewing(paths: list[Path]) -> set[Path]:
    """Those of the lock files `paths` whose lease is still renewed, all watched at once (a sweep's jobs: one watch,
    not one each)."""
    first = {path: found for path in paths if (found := _time_of(path)) is not None
             and time.time() - found / 1e9 <= LAPSED_S}
    moved: set[Path] = set()
    deadline = time.monotonic() + WATCH_S
    while first.keys() - moved and time.monotonic() < deadline:
        time.sleep(LOOK_S)
        moved |= {path for path in first.keys() - moved if _time_of(path) not in (first[path], None)}
    return moved


def _time_of(path: Path) -> int | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        return os.fstat(fd).st_mtime_ns
    finally:
        os.close(fd)

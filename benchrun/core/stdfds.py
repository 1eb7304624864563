"""The process's standard file descriptors 0, 1 and 2, always open: a process started with one closed (`2>&-`, a
launcher that closes its children's streams) would give that number to the first file it opens, and whatever is
written to it (a child process's stderr, a scorer's print) would land in that file."""

from __future__ import annotations

import os

STANDARD_FDS = (0, 1, 2)


def open_standard_fds() -> None:
    """Open /dev/null on each of 0, 1 and 2 that is closed (os.open takes the lowest free number), inheritable as a
    standard descriptor is: child processes get it too."""
    for fd in STANDARD_FDS:
        try:
            os.fstat(fd)
        except OSError:
            os.set_inheritable(os.open(os.devnull, os.O_RDWR), True)

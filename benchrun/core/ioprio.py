"""The process's I/O scheduling class and priority (ioprio_get(2), ioprio_set(2)), which a benchmark's code may set
(`IOPRIO_CLASS_IDLE`: the process's reads and writes served only when no other process asks the disk, in every later
call): read and put back, where Python runs on a machine whose system calls benchrun knows by number."""

from __future__ import annotations

import ctypes
import platform
import sys

CALLS = {"x86_64": (252, 251), "aarch64": (31, 30)}
"""The numbers of Linux's ioprio_get and ioprio_set by machine (Python offers neither)."""
IOPRIO_WHO_PROCESS = 1
_LIBC = ctypes.CDLL(None, use_errno=True)


def io_priority() -> int | None:
    """The process's I/O class and priority as one number (the class in its high bits), None where unknown."""
    if sys.platform != "linux" or (calls := CALLS.get(platform.machine())) is None:  # another system's numbers
        return None
    found = _LIBC.syscall(calls[0], IOPRIO_WHO_PROCESS, 0)
    return found if found >= 0 else None


def put_back_io_priority(found: int | None) -> None:
    """The I/O class and priority `found` (`io_priority`) again where it changed (any process may go back to its
    own class and priority from the idle class)."""
    if found is not None and io_priority() != found:
        _LIBC.syscall(CALLS[platform.machine()][1], IOPRIO_WHO_PROCESS, 0, found)

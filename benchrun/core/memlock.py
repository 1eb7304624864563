"""Whether the process holds its memory locked in RAM (`mlockall(MCL_CURRENT | MCL_FUTURE)`, `mlock`), read and put
back: a benchmark's code that locked it had every later allocation locked too (a scorer's call, each later call's 64 MB
pinned; under a user's RLIMIT_MEMLOCK, a MemoryError)."""

from __future__ import annotations

import ctypes
import mmap
import sys

from benchrun.core.procfs import status_field

_LIBC = ctypes.CDLL(None, use_errno=True)


def memory_locked() -> str | None:
    """How much of the process's memory is locked (`VmLck` of /proc/self/status), a page mapped first so that memory
    locked from now on (`MCL_FUTURE`) shows too; None where the system does not say."""
    if sys.platform != "linux":  # /proc/self/status is Linux's
        return None
    with mmap.mmap(-1, mmap.PAGESIZE):
        return status_field("VmLck")


def put_back_memory_locked(found: str | None) -> None:
    """Nothing locked again where nothing was `found` locked (`munlockall`); memory found locked is left as it is."""
    if found is not None and found.split()[:1] == ["0"]:
        _LIBC.munlockall()

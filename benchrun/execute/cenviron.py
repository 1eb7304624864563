"""The process's environment as C holds it (POSIX `environ`), which the subprocesses it starts inherit: os.environ is
Python's copy of it, read at start, so a variable set past it (`os.putenv`, ctypes' `setenv`) is not in it."""

from __future__ import annotations

import ctypes
import os

_LIBC = ctypes.CDLL(None, use_errno=True)


def c_environ() -> list[bytes]:
    """Every entry of the C environment (`NAME=value`), in its order."""
    entries = ctypes.POINTER(ctypes.c_char_p).in_dll(_LIBC, "environ")
    found: list[bytes] = []
    while (entry := entries[len(found)]) is not None:
        found.append(entry)
    return found


def put_back(found: list[bytes]) -> None:
    """The C environment made `found` again, where it is not: emptied (`clearenv`, as glibc and musl have it) and
    each entry set anew, so a variable set, changed or removed past os.environ is as found, whatever its name."""
    if c_environ() == found:
        return
    _LIBC.clearenv()
    for entry in found:
        name, _, value = entry.partition(b"=")
        os.putenv(name, value)

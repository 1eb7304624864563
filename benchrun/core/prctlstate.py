"""What prctl(2) sets of the process that a benchmark's code may set too: its timer slack (`PR_SET_TIMERSLACK`, by
which the kernel may delay each of its sleeps and timeouts: 200 ms made a scorer's twenty short sleeps take 4 s, in
every later call), read and put back, and whether it may gain privileges (`PR_SET_NO_NEW_PRIVS`: its subprocesses'
setuid programs run without them; no process can take it back), and the seccomp filters it runs under (which no
process can take away either)."""

from __future__ import annotations

import ctypes
import sys

from benchrun.core.procfs import status_field

PR_GET_SECCOMP, PR_SET_TIMERSLACK, PR_GET_TIMERSLACK, PR_GET_NO_NEW_PRIVS = 21, 29, 30, 39
_LIBC = ctypes.CDLL(None, use_errno=True)


def timer_slack() -> int | None:
    """The process's timer slack in nanoseconds (its main thread's, which the threads it starts take), None where the
    system does not say."""
    if sys.platform != "linux":  # prctl is Linux's
        return None
    found = _LIBC.prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0)
    return found if found >= 0 else None


def put_back_timer_slack(found: int | None) -> None:
    """The timer slack `found` (`timer_slack`) again where it changed."""
    if found is not None and timer_slack() != found:
        _LIBC.prctl(PR_SET_TIMERSLACK, ctypes.c_ulong(found), 0, 0, 0)


def gains_no_privileges() -> bool:
    """Whether the process was forbidden to gain privileges (`PR_SET_NO_NEW_PRIVS`), for good."""
    return sys.platform == "linux" and _LIBC.prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1


def seccomp_filters() -> str | None:
    """How many seccomp filters the process runs under (`Seccomp_filters` of /proc/self/status, read only where
    prctl says it runs under any: a system call's cost, not a file's), "strict" in seccomp's strict mode; None where
    it runs under none or the system does not say."""
    if sys.platform != "linux":
        return None
    mode = _LIBC.prctl(PR_GET_SECCOMP, 0, 0, 0, 0)
    if mode <= 0:
        return None
    return status_field("Seccomp_filters") if mode == 2 else "strict"

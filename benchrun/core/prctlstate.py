"""What prctl(2) sets of the process that a benchmark's code may set too: its timer slack (`PR_SET_TIMERSLACK`, by
which the kernel may delay each of its sleeps and timeouts: 200 ms made a scorer's twenty short sleeps take 4 s, in
every later call) and its flags (`process_flags`), read and put back; and what no process can take back: whether it may
gain privileges (`PR_SET_NO_NEW_PRIVS`: its subprocesses' setuid programs run without them), the seccomp filters it
runs under, whether it may map memory both writable and executable (`PR_SET_MDWE`) and its capabilities (dropped from
its bounding set: `PR_CAPBSET_DROP`)."""

from __future__ import annotations

import ctypes
import sys

from benchrun.core.procfs import STATUS, proc_text, status_field

PR_GET_SECCOMP, PR_SET_TIMERSLACK, PR_GET_TIMERSLACK, PR_GET_NO_NEW_PRIVS, PR_GET_MDWE = 21, 29, 30, 39, 66
FLAGS = ((3, (4,)), (42, (41,)), (68, (67,)), (34, (33, 1)), (27, (28,)), (7, (8,)))
"""The flags prctl reads and sets (each its get, and its set's arguments before the value): whether the process is
dumpable (`PR_SET_DUMPABLE`: 0 made its own /proc files root's, which a user's process could no longer read), may have
transparent huge pages (`PR_SET_THP_DISABLE`), has its memory merged with others' (`PR_SET_MEMORY_MERGE`), is killed
early on a memory error (`PR_MCE_KILL`, `PR_MCE_KILL_SET`), its security bits (`PR_SET_SECUREBITS`: SECBIT_NOROOT, its
programs run as root without its capabilities; a bit locked cannot be put back, `scorerleft`) and whether it keeps its
capabilities as it leaves root (`PR_SET_KEEPCAPS`)."""
PERSONALITY_READ = 0xFFFFFFFF
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


def process_flags() -> tuple[int, ...] | None:
    """The process's FLAGS and its execution domain (`personality`: `ADDR_NO_RANDOMIZE` started each later program
    without address randomization); None where the system has none of them."""
    if sys.platform != "linux":
        return None
    return (*(_LIBC.prctl(get, 0, 0, 0, 0) for get, _ in FLAGS), _LIBC.personality(PERSONALITY_READ))


def put_back_process_flags(found: tuple[int, ...] | None) -> None:
    """The FLAGS and the execution domain `found` (`process_flags`) again, each where it changed."""
    now = process_flags()
    if found is None or now is None:
        return
    for (_, put), was, flag in zip(FLAGS, found, now):
        if flag != was and was >= 0:
            _LIBC.prctl(*(*put, was, 0, 0, 0)[:5])
    if now[-1] != found[-1] and found[-1] >= 0:
        _LIBC.personality(found[-1])


def denies_write_exec() -> int | None:
    """Whether the process may not map memory both writable and executable (`PR_SET_MDWE`, for good: a later call's
    code that needs such memory failed), as prctl says; None where the system does not say."""
    found = _LIBC.prctl(PR_GET_MDWE, 0, 0, 0, 0) if sys.platform == "linux" else -1
    return found if found >= 0 else None


def capabilities() -> tuple[str, ...]:
    """The process's capability sets (`Cap...` of /proc/self/status): one dropped from its bounding set
    (`PR_CAPBSET_DROP`) or its permitted set is for good; empty where /proc cannot say."""
    try:
        return tuple(line for line in proc_text(STATUS).splitlines() if line.startswith("Cap"))
    except OSError:
        return ()

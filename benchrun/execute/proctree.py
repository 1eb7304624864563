"""A process and every process it started, ended together: what a scorer starts in a session or process group of its
own (`subprocess.Popen(..., start_new_session=True)`, as a sandbox for an answer's code is often made, so that it can
kill what it starts) is out of reach of a kill of the scorer process's group, and ran for good after the run; what it
starts and leaves (a daemon's double fork, `sh -c 'cmd &'`) is kept below a reaper (`reap_below`)."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from contextlib import suppress

from benchrun.core.interrupts import PR_SET_PDEATHSIG, die_with
from benchrun.core.procfs import PARENT, descendants, stat_fields

PR_SET_CHILD_SUBREAPER = 36
"""prctl(2)'s option: the processes below this one that lose their parent are given to it, not to init."""


def end_tree(pid: int) -> None:
    """Kill `pid`'s process group and every process below `pid`, in whatever group or session: each is stopped
    first (SIGSTOP), until no new one is found, so none starts another while they are found, then all are killed."""
    with suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGSTOP)
    _end_below(pid, {pid})
    with suppress(ProcessLookupError, PermissionError):  # nothing of the group is left
        os.killpg(pid, signal.SIGKILL)


def _end_below(pid: int, stopped: set[int]) -> None:
    """Kill every process below `pid`, and those of `stopped`, each stopped first as `end_tree` says; each one found
    held by a pidfd once it is seen to be below still, so that a pid freed and taken by another process since /proc
    listed it (a fork storm wraps the pids within moments) is never signalled."""
    held: dict[int, int | None] = dict.fromkeys(stopped)
    try:
        while new := descendants(pid) - held.keys():
            tree = held.keys() | new | {pid}
            for each in new:
                held[each] = _held(each, tree)
                _send(each, held[each], signal.SIGSTOP)
        for each, fd in held.items():
            _send(each, fd, signal.SIGKILL)
    finally:
        for fd in held.values():
            if fd is not None and fd >= 0:
                os.close(fd)


NOT_BELOW = -1
"""`_held`'s word for a process no longer below: gone, or its pid another process's since it was listed."""


def _held(each: int, tree: set[int]) -> int | None:
    """A pidfd of process `each` once its parent is seen to be one of `tree`; NOT_BELOW when it is not; None where no
    pidfd can be had (a kernel before 5.3, seccomp, no descriptor to spare): it is then signalled by its pid."""
    try:
        fd: int | None = os.pidfd_open(each)
    except ProcessLookupError:
        return NOT_BELOW
    except (OSError, AttributeError):
        fd = None
    if (fields := stat_fields(each)) is None or int(fields[PARENT]) not in tree:
        if fd is not None:
            os.close(fd)
        return NOT_BELOW
    return fd


def _send(each: int, fd: int | None, sig: int) -> None:
    """Signal process `each` through its pidfd `fd` (by its pid when None; not at all when NOT_BELOW)."""
    with suppress(ProcessLookupError, PermissionError):
        if fd is None:
            os.kill(each, sig)
        elif fd != NOT_BELOW:
            signal.pidfd_send_signal(fd, sig)


def reap_below(parent: int) -> None:
    """In the process `parent` started: return in a child of it, which dies with it, while it stays behind as the
    reaper of everything below (Linux's child subreaper: what the child starts and leaves is given to it, not to
    init, so `end_tree` of this process finds it); it runs no user code, takes no signal but SIGKILL and SIGSTOP,
    reaps what ends, and once the child or `parent` has ended, kills all below it and ends as the child did. Without
    Linux or a process to spare (`ulimit -u`), it returns in itself, which dies with `parent`."""
    if sys.platform != "linux":
        return
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # an ignored SIGCHLD (inherited) reaps unseen, and tells nothing
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    reaper = os.getpid()
    try:
        child = os.fork() if os.getppid() == parent else 0
    except OSError:
        child = 0
    if child:  # a reaper only when it runs no user code (none in the child yet: it cannot have left one)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1)
        _reap(parent, child)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    die_with(reaper if os.getpid() != reaper else parent)


def _reap(parent: int, child: int) -> None:
    """The reaper's life (see `reap_below`): it never returns."""
    os.closerange(0, os.sysconf("SC_OPEN_MAX"))
    status: int | None = None
    while status is None and os.getppid() == parent:
        signal.sigwait({signal.SIGCHLD, signal.SIGTERM})
        with suppress(ChildProcessError):
            while (ended := os.waitpid(-1, os.WNOHANG))[0]:
                status = os.waitstatus_to_exitcode(ended[1]) if ended[0] == child else status
    _end_below(os.getpid(), set())
    if status is not None and status < 0:  # ended by a signal: so is the reaper
        with suppress(OSError):  # SIGKILL's handling is SIG_DFL for good
            signal.signal(-status, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {-status})
        os.kill(os.getpid(), -status)
    os._exit(1 if status is None else status)

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
from pathlib import Path

from benchrun.core.interrupts import PR_SET_PDEATHSIG, die_with
from benchrun.core.procfs import PARENT, stat_fields

PROC = Path("/proc")
PR_SET_CHILD_SUBREAPER = 36
"""prctl(2)'s option: the processes below this one that lose their parent are given to it, not to init."""


def descendants(pid: int) -> set[int]:
    """Every process below `pid` (its children, theirs, ...), as /proc lists them now (none without /proc)."""
    children: dict[int, list[int]] = {}
    for entry in PROC.iterdir() if PROC.is_dir() else ():
        if entry.name.isdigit() and (fields := stat_fields(entry.name)):  # gone meanwhile: no fields
            children.setdefault(int(fields[PARENT]), []).append(int(entry.name))
    found: set[int] = set()
    pending = [pid]
    while pending:
        for child in children.get(pending.pop(), ()):
            if child not in found:
                found.add(child)
                pending.append(child)
    return found


def end_tree(pid: int) -> None:
    """Kill `pid`'s process group and every process below `pid`, in whatever group or session: each is stopped
    first (SIGSTOP), until no new one is found, so none starts another while they are found, then all are killed."""
    with suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGSTOP)
    _end_below(pid, {pid})
    with suppress(ProcessLookupError, PermissionError):  # nothing of the group is left
        os.killpg(pid, signal.SIGKILL)


def _end_below(pid: int, stopped: set[int]) -> None:
    """Kill every process below `pid`, and those of `stopped`, each stopped first as `end_tree` says."""
    while new := descendants(pid) - stopped:
        for each in new:
            with suppress(ProcessLookupError, PermissionError):
                os.kill(each, signal.SIGSTOP)
        stopped |= new
    for each in stopped:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(each, signal.SIGKILL)


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

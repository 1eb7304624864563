"""A process and every process it started, ended together: what a scorer starts in a session or process group of its
own (`subprocess.Popen(..., start_new_session=True)`, as a sandbox for an answer's code is often made, so that it can
kill what it starts) is out of reach of a kill of the scorer process's group, and ran for good after the run."""

from __future__ import annotations

import os
import signal
from contextlib import suppress
from pathlib import Path

from benchrun.core.procfs import PARENT, stat_fields

PROC = Path("/proc")


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
    stopped = {pid}
    with suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGSTOP)
    while new := descendants(pid) - stopped:
        for each in new:
            with suppress(ProcessLookupError, PermissionError):
                os.kill(each, signal.SIGSTOP)
        stopped |= new
    for each in stopped:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(each, signal.SIGKILL)
    with suppress(ProcessLookupError, PermissionError):  # nothing of the group is left
        os.killpg(pid, signal.SIGKILL)

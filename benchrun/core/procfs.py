"""What Linux's /proc says of a process: the fields of its stat line, and the processes below it."""

from __future__ import annotations

from pathlib import Path

PROC = Path("/proc")
STATE, PARENT, STARTED = 0, 1, 19
"""Indexes in `stat_fields`: the process's state, the parent's pid, and the start in clock ticks since the boot."""
ENDED = ("Z", "X")
"""The states of a process that has ended: a zombie, its exit status not yet collected, and one being removed."""
BOOT_ID = PROC / "sys/kernel/random/boot_id"


def boot_id() -> str:
    """The id of the boot this machine runs in (empty where /proc cannot say)."""
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return ""


def status_field(name: str) -> str | None:
    """The field `name` of this process's /proc/self/status (`Umask`: `0022`); None where /proc cannot say."""
    try:
        lines = (PROC / "self" / "status").read_text().splitlines()
    except OSError:
        return None
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith(f"{name}:")), None)


def stat_fields(pid: int | str) -> list[str] | None:
    """The fields of /proc/PID/stat after the command's name (which may hold spaces, parentheses and bytes of no text:
    a process may name itself anything, prctl(PR_SET_NAME)); None when they cannot be read (the process gone, no
    /proc)."""
    try:
        return (PROC / str(pid) / "stat").read_bytes().rsplit(b")", 1)[1].decode("ascii").split()
    except (OSError, IndexError, UnicodeDecodeError):
        return None


def descendants(*pids: int) -> set[int]:
    """Every process below the `pids` (their children, theirs, ...), as one read of /proc lists them now (none
    without /proc)."""
    children: dict[int, list[int]] = {}
    for entry in PROC.iterdir() if PROC.is_dir() else ():
        if entry.name.isdigit() and (fields := stat_fields(entry.name)):  # gone meanwhile: no fields
            children.setdefault(int(fields[PARENT]), []).append(int(entry.name))
    found: set[int] = set()
    pending = list(pids)
    while pending:
        for child in children.get(pending.pop(), ()):
            if child not in found:
                found.add(child)
                pending.append(child)
    return found


def started(pid: int | str) -> int | None:
    """When the process `pid` started, in clock ticks since the boot; None when it is gone (or no /proc says), as it
    is once it has ended though its parent has not yet collected it (a zombie: a writer killed a moment ago)."""
    fields = stat_fields(pid)
    ended = fields is not None and fields[STATE] in ENDED
    return int(fields[STARTED]) if fields and not ended and fields[STARTED].isdigit() else None

"""What Linux's /proc says of a process: the fields of its stat line, and the processes below it."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

PROC = Path("/proc")
STATE, PARENT, STARTED = 0, 1, 19
"""Indexes in `stat_fields`: the process's state, the parent's pid, and the start in clock ticks since the boot."""
ENDED = ("Z", "X")
"""The states of a process that has ended: a zombie, its exit status not yet collected, and one being removed."""
BOOT_ID = PROC / "sys/kernel/random/boot_id"
WRITTEN = {PROC / "self/oom_score_adj": "", PROC / "self/coredump_filter": "0x"}
"""The process's settings that its own /proc files hold, which its code may write: how much more readily the kernel
ends it when memory runs short (-1000 to 1000: 1000 made it the kernel's first pick, a later call's ScorerProcessDied)
and what of its memory a core dump holds (`coredump_filter`: 0 left later calls' dumps empty); each with what is
written before what it says to set it again (the filter is read in hexadecimal, written as a C number: `00000033`
is octal)."""
STATUS = PROC / "self/status"


def proc_text(path: Path | str) -> str:
    """The text of a /proc file, its bytes decoded as the file system's names are (`os.fsdecode`): a process's name
    or a mount point may be any bytes, and the kernel cuts a name at 15 bytes, within a character if it falls there."""
    with open(path, "rb") as file:
        return os.fsdecode(file.read())


def boot_id() -> str:
    """The id of the boot this machine runs in (empty where /proc cannot say)."""
    try:
        return proc_text(BOOT_ID).strip()
    except OSError:
        return ""


def status_field(name: str) -> str | None:
    """The field `name` of this process's /proc/self/status (`Umask`: `0022`); None where /proc cannot say."""
    try:
        lines = proc_text(STATUS).splitlines()
    except OSError:
        return None
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith(f"{name}:")), None)


def stat_fields(pid: int | str) -> list[str] | None:
    """The fields of /proc/PID/stat after the command's name (which may hold spaces and parentheses); None when they
    cannot be read (the process gone, no /proc)."""
    try:
        return proc_text(PROC / str(pid) / "stat").rsplit(")", 1)[1].split()
    except (OSError, IndexError):
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


KERNEL_FS = frozenset({"proc", "sysfs", "devpts", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs",
                       "pstore", "bpf", "configfs", "fusectl", "hugetlbfs", "mqueue", "binfmt_misc", "autofs",
                       "efivarfs", "selinuxfs", "rpc_pipefs", "nsfs"})
"""The kernel's pseudo file systems: what they hold is made by the kernel as it is read, never a file written to.
Not devtmpfs (/dev): small, and real mounts lie in it (/dev/shm's tmpfs)."""


def kernel_devices() -> frozenset[int]:
    """The device numbers (`st_dev`) of the kernel's pseudo file systems mounted here (KERNEL_FS), from
    /proc/self/mountinfo's `major:minor` and type fields; none where it cannot be read."""
    try:
        lines = proc_text(PROC / "self" / "mountinfo").splitlines()
    except OSError:
        return frozenset()
    found = set()
    for fields in (line.split() for line in lines):
        kind = fields[fields.index("-") + 1:] if "-" in fields else []
        major, _, minor = fields[2].partition(":") if len(fields) > 2 else ("", "", "")
        if kind and kind[0] in KERNEL_FS and major.isdigit() and minor.isdigit():
            found.add(os.makedev(int(major), int(minor)))
    return frozenset(found)


def written_settings() -> tuple[str | None, ...]:
    """What the process's WRITTEN files of /proc say now (None for one /proc cannot say)."""
    return tuple(_said(path) for path in WRITTEN)


def _said(path: Path) -> str | None:
    try:
        return proc_text(path).strip()
    except OSError:
        return None


def put_back_written(found: tuple[str | None, ...]) -> None:
    """Each of WRITTEN as `found` (`written_settings`) again where it changed; any process may lower its OOM score
    adjustment back so far."""
    for (path, prefix), was in zip(WRITTEN.items(), found):
        if was is not None and _said(path) != was:
            with contextlib.suppress(OSError):
                path.write_text(f"{prefix}{was}")

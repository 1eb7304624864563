"""What Linux's /proc says of a process: the fields of its stat line."""

from __future__ import annotations

from pathlib import Path

PARENT, STARTED = 1, 19
"""Indexes in `stat_fields`: the parent's pid, and the start in clock ticks since the boot."""


def stat_fields(pid: int | str) -> list[str] | None:
    """The fields of /proc/PID/stat after the command's name (which may hold spaces and parentheses); None when they
    cannot be read (the process gone, no /proc)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None

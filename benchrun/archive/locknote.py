"""run.lock's note: what a writer holding a run directory's lock writes into it (its pid, host, start and command),
and how a reader reads it back."""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime, timezone
from itertools import accumulate
from typing import Any

from benchrun.archive.jsononce import python_json
from benchrun.core.procfs import boot_id, started
from benchrun.core.text import host_name

NOTE_MAX = 4096
"""The most of a lock's note any reader reads: a holder's own note is kept within it (`this_note`)."""


TOOK_OVER = "took_over"
"""The key of a note naming the writer on another machine its holder took the run over from (who, where, since): the
note it replaced, which a holder that lets the run go unfinished (a resume refused) cannot put back (`DirLock`)."""


def this_note(took_over: dict[str, Any] | None = None) -> bytes:
    """This process's note for the lock it takes: pid, host, start and command (and the writer it `took_over`), the
    command cut to keep the note within NOTE_MAX bytes (a command of many overrides), so that every reader reads it."""
    fields = {"pid": os.getpid(), "host": host_name(), "since": _now(), "command": " ".join(sys.argv),
              **process(os.getpid())}
    if took_over:
        fields[TOOK_OVER] = {key: _short(took_over[key]) for key in ("pid", "host", "since") if key in took_over}
    if len(json.dumps(fields)) > NOTE_MAX:
        room = NOTE_MAX - len(json.dumps({**fields, "command": "..."}))
        sizes = accumulate(len(json.dumps(char)) - 2 for char in fields["command"])  # as JSON writes each
        fields["command"] = fields["command"][:sum(1 for size in sizes if size <= room)] + "..."
    return json.dumps(fields).encode()


def process(pid: int) -> dict[str, Any]:
    """What tells the process `pid` from every other that had its pid: the id of the boot it runs in and its start,
    in clock ticks since that boot, as the kernel counts them whatever the wall clock does; empty where /proc cannot
    say (the process gone, another system)."""
    if (start := started(pid)) is None:
        return {}
    return {"boot": boot, "started": start} if (boot := boot_id()) else {}


def describe(note: dict[str, Any] | None) -> str:
    """`pid 4242 on host gpu1 since 2026-12-01T08:00:00+00:00`, or what is known of it."""
    if not note:
        return "holder unknown"
    took = note.get(TOOK_OVER)
    over = f", which took the run over from {describe(took)}" if isinstance(took, dict) and took else ""
    return f"pid {note.get('pid', '?')} on host {note.get('host', '?')} since {note.get('since', '?')}{over}"


def read(fd: int) -> dict[str, Any] | None:
    """The note in the lock file open as `fd`, as far as any reader reads (`parsed`)."""
    return parsed(os.pread(fd, NOTE_MAX, 0))


def parsed(data: bytes) -> dict[str, Any] | None:
    """A lock's note read from its bytes (None when empty; its first characters when not JSON)."""
    try:
        note = python_json(data) if data.strip() else None
    except ValueError:
        return {"unreadable": data[:80].decode("utf-8", "replace")}
    return note if isinstance(note, dict) else None


def _short(value: Any) -> Any:
    """A field of another's note as this note keeps it: a number as it is, anything else as text of at most 80
    characters (a note's fields may be anything its writer wrote)."""
    return value if isinstance(value, int) else str(value)[:80]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")

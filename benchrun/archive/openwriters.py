"""Which process of this machine holds a run's files open for writing, as /proc tells: the writer of a run whose
run.lock was deleted under it (a cleanup's `rm */run.lock`, `find -name '*.lock' -delete`), which the lock no longer
shows. A process that only reads them (`tail -f benchrun.log`) is not one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Iterator

from benchrun.core.layout import DIGESTS, JUDGED_FILES, LOG

WRITTEN = (*JUDGED_FILES, DIGESTS, LOG)
"""The files a run's writer holds open while it writes: its records, their digests and its log."""
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR


def writer_of(run_dir: Path) -> int | None:
    """The pid of another process of this machine holding one of the files of `run_dir` that a writer keeps open,
    open for writing; None when there is none, or where /proc cannot tell."""
    return next(writers(run_dir.resolve() / name for name in WRITTEN), None)


def writers(paths: Iterable[Path]) -> Iterator[int]:
    """The pids of the other processes of this machine holding one of `paths` (resolved) open for writing; none where
    /proc cannot tell."""
    wanted = set(map(str, paths))
    for pid in filter(str.isdigit, _listed("/proc")):
        if int(pid) != os.getpid() and any(_writes(pid, fd, wanted) for fd in _listed(f"/proc/{pid}/fd")):
            yield int(pid)


def command_of(pid: int) -> str:
    """`pid 4242 (sqlite3)`: the process and its program's name as /proc gives it, if it can (not its command line,
    which may hold a secret)."""
    try:
        name = Path(f"/proc/{pid}/comm").read_text(errors="replace").strip()
    except OSError:
        name = ""
    return f"pid {pid}" + (f" ({name})" if name else "")


def _writes(pid: str, fd: str, wanted: set[str]) -> bool:
    try:
        if os.readlink(f"/proc/{pid}/fd/{fd}") not in wanted:
            return False
        flags = next(line for line in Path(f"/proc/{pid}/fdinfo/{fd}").read_text().splitlines()
                     if line.startswith("flags:"))
    except (OSError, StopIteration):  # it ended, or closed the file, as it was read
        return False
    return bool(int(flags.split()[1], 8) & WRITE_FLAGS)


def _listed(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:  # a process that ended, or one of another user's
        return []

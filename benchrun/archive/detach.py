"""A run's record files made anew when a writer takes the run over from another machine's writer: that writer,
stopped past its lease (Ctrl-Z, SIGSTOP, a Slurm suspend) between finding the run still its own and appending to it,
makes that append once it is continued, after the check that would have stopped it. Made anew, the files it holds
open are no longer the run's: its append lands in a file no one reads (on NFS it fails), not among the new writer's
records."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

from benchrun.archive.atomic import atomic_file
from benchrun.core.layout import APPENDED

COPY_CHUNK = 1 << 20


def detach(run_dir: Path) -> None:
    """Replace each of the run's files a writer appends to by a copy of itself, a new file at its name (one that is
    no file of its own, a link or a file of other names, is left to the writer's refusal: `own_file`)."""
    for name in APPENDED:
        path = run_dir / name
        try:
            found = path.lstat()
        except FileNotFoundError:
            continue
        if stat.S_ISREG(found.st_mode) and found.st_nlink == 1:
            with open(path, "rb") as source, atomic_file(path) as copy:
                shutil.copyfileobj(source, copy, COPY_CHUNK)

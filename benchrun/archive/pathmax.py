"""A run directory given by a path so long that its files' paths pass the system's limit on one (PATH_MAX, 4,096
bytes on Linux): no file of it opens by that path, which is not its files gone (a path from a folder nearer opens
them)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from benchrun.archive.arriving import run_arriving
from benchrun.core.layout import RUN, RUN_FILES

PATH_MAX = 4096
"""The most bytes a path given to the system may take, its closing NUL byte included (Linux's PATH_MAX)."""
LONGEST = max(len(name) for name in RUN_FILES) + 2
"""What a run file's name adds to its folder's path: a slash, the name and the NUL byte."""
Folder = str | os.PathLike[str]
NEARER = "give the run's path from a folder nearer it (cd there)"


def unopened(path: Folder) -> str | None:
    """Why the run in `path` cannot be read by that path: its files' paths too long (`past_path_max`), or no run.json
    (a link to nowhere is there: said unreadable by the reader); None when it can."""
    if (too_long := past_path_max(path)) is not None:
        return too_long
    if os.path.lexists(os.path.join(path, RUN)):
        return None
    return run_arriving(Path(path)) or "not a run directory (no run.json)"  # iCloud Drive's, a copy bringing it in


def run_or_too_long(folder: Folder) -> bool:
    """Whether `folder` is a run's to `load_run`: it holds a run.json, or its path is too long to tell
    (`past_path_max`, which `load_run` says)."""
    return os.path.lexists(os.path.join(folder, RUN)) or past_path_max(folder) is not None


def past_path_max(path: Folder) -> str | None:
    """Why a file of the run in `path` cannot be opened by its path: the longest of them past PATH_MAX (or `path`
    itself); None when every one is within it (listed only for a path near the limit)."""
    given = len(os.fsencode(path))
    if given + LONGEST <= PATH_MAX:
        return None
    try:
        names = os.listdir(path)
    except OSError as err:
        if err.errno != errno.ENAMETOOLONG:
            return None  # said where the run is read
        return f"a path of {given:,} bytes, past the system's limit on a path ({PATH_MAX:,} bytes, PATH_MAX): {NEARER}"
    name = max(names, key=lambda name: len(os.fsencode(name)), default="")
    if (size := given + len(os.fsencode(name)) + 2) <= PATH_MAX:
        return None
    return (f"its file {name}'s path takes {size:,} bytes, past the system's limit on a path ({PATH_MAX:,} bytes, "
            f"PATH_MAX): {NEARER}")

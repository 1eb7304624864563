"""Where the response cache lives: its directory (`cache_dir`, else $XDG_CACHE_HOME or ~/.cache), and the file
systems it may not be on (SQLite's locking is unsafe on network ones)."""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from benchrun.archive.claims import archive_file
from benchrun.core.errors import ConfigError, os_problem
from benchrun.core.filebytes import not_a_file
from benchrun.core.home import expanded, home
from benchrun.core.procfs import proc_text

NETWORK_FS = frozenset({"nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "beegfs", "glusterfs",
                        "fuse.glusterfs", "ceph", "fuse.ceph-fuse", "afs", "panfs", "pvfs2", "orangefs", "ocfs2",
                        "gfs2", "fuse.sshfs", "davfs", "fuse.s3fs"})
"""File-system types on which SQLite's locking (and WAL's shared memory) is unsafe."""
OCTAL = re.compile(r"\\([0-7]{3})")
"""How mountinfo escapes a space, tab, newline or backslash in a mount point (\\040)."""
FIX = "set cache_dir= to a directory on local disk, or cache=false"


@dataclass(frozen=True)
class Advice:
    """What the one who opens the cache can do about it, said in its errors: a run (`RUN_ADVICE`: set cache_dir= or
    cache=false) or `benchrun-audit cache`, which takes neither."""

    unusable: str
    """For a cache that cannot be used where it is (damaged, another program's database, on a network file system)."""
    busy: str
    """For one another process holds locked."""
    other_version: str
    """For one of another schema version."""


RUN_ADVICE = Advice(FIX, "let that process finish and try again, or run without the cache (cache=false) or with one of "
                    "its own (cache_dir=DIR)", f"benchrun-audit cache --clear removes it, or {FIX}")


def default_dir(option: str = "cache_dir") -> Path:
    """$XDG_CACHE_HOME/benchrun (an absolute XDG_CACHE_HOME only, as the XDG spec says), else ~/.cache/benchrun
    (benchrun.core.home: refused when $HOME is empty or relative, naming `option` as what to give instead)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg) / "benchrun"
    instead = "XDG_CACHE_HOME, cache_dir= or cache=false" if option == "cache_dir" else f"XDG_CACHE_HOME or {option}"
    return home("the response cache's place, ~/.cache/benchrun", instead, option) / ".cache" / "benchrun"


def cache_dir(configured: str | None, cwd: Path | None = None, option: str = "cache_dir") -> Path:
    """The configured cache_dir (relative to `cwd`, ~ expanded), else the default; `option` is what gave it (a
    run's `cache_dir`, the audit command's `--cache-dir`)."""
    if not configured:
        return default_dir(option)
    path = expanded(configured, option)
    return path if path.is_absolute() else (cwd or Path.cwd()) / path


def chosen_by(configured: str | None, option: str = "cache_dir") -> str:
    """What chose the cache's place, as an error names it: the option when given (`cache_dir`, `--cache-dir`), else
    $XDG_CACHE_HOME when it is absolute, else $HOME (~/.cache): a user who set neither reads what to look at."""
    if configured:
        return option
    return "$XDG_CACHE_HOME" if os.path.isabs(os.environ.get("XDG_CACHE_HOME", "")) else "$HOME"


def mount_type(path: Path, mounts: str) -> str | None:
    """The file-system type of the mount holding `path` (the longest mount point above it), from the text of
    /proc/self/mountinfo or /proc/mounts."""
    best: tuple[int, str] | None = None
    for point, fstype in _mounts(mounts):
        if (path == point or point in path.parents) and (best is None or len(point.parts) >= best[0]):
            best = len(point.parts), fstype
    return best[1] if best else None


def _mounts(text: str) -> Iterator[tuple[Path, str]]:
    """(mount point, type) per line: mountinfo's `... mount-point ... - type source ...`, or mounts' `source
    mount-point type ...`; octal escapes (\\040 for a space) decoded."""
    for line in text.splitlines():
        fields = line.split()
        if " - " in line:
            point, fstype = fields[4], line.split(" - ", 1)[1].split()[0]
        elif len(fields) >= 3:
            point, fstype = fields[1], fields[2]
        else:
            continue
        yield Path(OCTAL.sub(lambda found: chr(int(found[1], 8)), point)), fstype


MOUNT_TABLES = ("/proc/self/mountinfo", "/proc/mounts")
"""Where the kernel lists this process's mounts, the first that can be read taken."""


def refuse_network_fs(directory: Path, key: str, fix: str = FIX) -> None:
    """Raise ConfigError (naming `key`, what chose the place, and `fix`) when `directory` (or, not made yet, its
    nearest parent) is on a network file system."""
    existing = next(p for p in (directory, *directory.parents) if p.exists())
    mounts = next((text for name in MOUNT_TABLES if (text := _read(name))), "")
    fstype = mount_type(existing.resolve(), mounts)
    if fstype in NETWORK_FS:
        raise ConfigError(f"{directory} is on a network file system ({fstype}), where SQLite's locking is not "
                          f"safe; {fix}", key=key)


def _read(name: str) -> str:
    try:
        return proc_text(name)
    except OSError:
        return ""


def misplaced(directory: Path) -> str | None:
    """What keeps the cache's folder from being `directory`, in words (`/x is a file, where the response cache's
    folder belongs`, `/x is a loop of symbolic links`); None when it is a folder or can be made one. A run makes it
    (its parents too), and `benchrun-audit cache` says an empty cache is only where one could be."""
    for path in (directory, *directory.parents):
        try:
            mode = os.stat(path).st_mode
        except OSError as err:
            if os.path.islink(path) and err.errno == errno.ENOENT:
                return f"{path} is a symbolic link to nothing (to {os.readlink(path)})"
            if err.errno in (errno.ENOENT, errno.ENOTDIR):  # not there (yet), or under a file: look further up
                continue
            return f"{path}: {os_problem(err)}"
        if stat.S_ISDIR(mode):
            return None
        kind = not_a_file(mode) or "a file"
        where = "where the response cache's folder belongs" if path == directory else f"so {directory} cannot be made"
        return f"{path} is {kind}, {where}"
    return None


def misplaced_store(directory: Path, database: Path) -> str | None:
    """What keeps `directory` from holding the cache (`misplaced`), or its `database` (or the write-ahead log or
    shared memory SQLite keeps beside it) from being a file, in words (`/x/responses.sqlite3 is a named pipe (FIFO),
    where the response cache's database belongs`), or a run's own file or one in its own folders (`run.lock` through
    a link, `.hydra/`), which SQLite would write; None when the cache can be there. SQLite says only `disk I/O
    error` or `unable to open database file` of a pipe, a folder or a device there."""
    problem = misplaced(directory)
    for path in (database, Path(f"{database}-wal"), Path(f"{database}-shm")):
        if owned := archive_file(path):  # SQLite would write into it, or make it
            return f"{path} is {'a symbolic link to ' * os.path.islink(path)}{owned}"
        try:
            kind = not_a_file(os.stat(path).st_mode)
        except OSError as err:  # not there, or a link to nothing: SQLite makes it, or says why it cannot; but not
            if err.errno != errno.ELOOP:  # through a loop of links (its `unable to open database file`)
                continue
            kind = os_problem(err)
        problem = problem or (kind and f"{path} is {kind}, where the response cache's database belongs")
    return problem

"""Files rewritten whole or not at all: each through a temporary file beside it, synced and renamed over it (the
rename synced too), and the temporary files that a writer killed mid-write left, removed by the next write of the
same file."""

from __future__ import annotations

import errno
import fcntl
import os
import re
import stat
import time
import uuid
from contextlib import contextmanager, nullcontext, suppress
from pathlib import Path
from typing import IO, Any, Callable, Iterator

from benchrun.archive.claims import archive_file
from benchrun.archive.pathmax import PATH_MAX
from benchrun.core.errors import BenchrunError, writing
from benchrun.core.filebytes import not_a_file
from benchrun.core.interrupts import INTERRUPTS
from benchrun.core.layout import NAME_MAX

TMP_STEM_MAX = NAME_MAX - 32
"""The most bytes of a file's name its temporary files' names begin with: room for `.`, `.<pid>.<12 hex>.tmp` (or
a merge's `.merging-<run id>`), so a file whose name the file system takes (up to NAME_MAX bytes) has temporary
files whose names it takes too."""
STALE_S = 60.0
"""How long a temporary file is left unchanged before a later writer may take it for one a killed writer left: a
live writer holds its file locked (flock) from just after it makes it, and this covers that instant."""


def write_atomic(path: Path, data: bytes, follow: bool = False, ready: Callable[[], None] | None = None) -> None:
    """Write `data` to `path` whole or not at all (`atomic_file`), signals held until it is done; into a pipe or a
    device (`follow`'s), which nothing makes whole, with signals as they come: a FIFO with no reader waits for one,
    and Ctrl-C or SIGTERM stops it (held, only SIGKILL did)."""
    target = named_output(path) if follow else path
    into = follow and _written_into(target)
    with nullcontext() if into else INTERRUPTS.held(), _replaced(target, "wb", follow, ready) as handle:
        handle.write(data)


def named_output(path: Path) -> Path:
    """The file a user-named `path` (`--output`) writes (`_followed`); `-` and an archive's own file refused."""
    if os.fspath(path) == "-":
        raise BenchrunError("--output -: '-' names standard output, not a file; nothing was written; name a file "
                            "(export writes to standard output without --output)")
    if why := archive_file(path):
        raise BenchrunError(f"--output: {why}; nothing was written; name another file", file=str(path))
    return _followed(path)


def _followed(path: Path) -> Path:
    """The file a user-named `path` writes: the one a symbolic link names (not /dev/stdout's pipe, which names no
    file: the link itself then); a loop of links, which names none, refused."""
    named = Path(os.path.realpath(path)) if path.is_symlink() else path
    if named.is_symlink():  # where realpath stops: a loop (a link to itself, or two to each other), which was replaced
        raise BenchrunError("--output: a loop of symbolic links, which names no file to write through; nothing was "
                            "written; name another file", file=str(path))
    return named if named.exists() or not path.exists() else path


def _written_into(path: Path) -> bool:
    """Whether `path` is written into rather than renamed over: a pipe, a device, a socket."""
    return path.exists() and not path.is_file() and not path.is_dir()


@contextmanager
def atomic_file(path: Path, mode: str = "wb", follow: bool = False, ready: Callable[[], None] | None = None,
                **options: Any) -> Iterator[IO[Any]]:
    """A file to write `path` through: a temporary file beside it, synced and renamed over it when the block ends,
    so `path` is the old file or the new one, never part of it; an OSError is one line naming `path` (WriteFailed),
    and no temporary file survives (one that a killed writer left is removed, `remove_leftovers`). A run
    directory's own files are replaced, a link among them too (never written through); with `follow`, for a file
    the user named (`--output`), a symbolic link is written through (the file it names is replaced, not the link),
    and what cannot be renamed over (a device, a pipe: /dev/stdout, /dev/full) is written into. `-` is refused: it
    names standard output to the tools that read it, no file. `ready` is called once the temporary file is synced,
    just before it is renamed over `path`: a writer's last check that the file is still its to write (the fence), an
    error there leaving `path` as it was."""
    with _replaced(named_output(path) if follow else path, mode, follow, ready, **options) as handle:
        yield handle


@contextmanager
def _replaced(path: Path, mode: str, into: bool, ready: Callable[[], None] | None, **options: Any) -> Iterator[IO[Any]]:
    """`atomic_file`'s file for `path`, already the file written (`named_output`'s); `into`: a pipe or a device
    there is written into."""
    with writing(path):
        if path.is_dir():  # `/` or `` too, which have no name to put a temporary file beside
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if into and _written_into(path):
            with open(path, mode, opener=_read_pipe_opener, **options) as handle:
                yield handle
            return
        remove_leftovers(path)
        tmp = path.with_name(f".{stem(path.name)}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")
        with _folder(tmp) as folder:
            names = (tmp.name, path.name) if folder is not None else (tmp, path)
            handle = os.fdopen(_new_file(names[0], folder), mode, **options)
            try:
                with handle:
                    yield handle
                    handle.flush()
                    os.fsync(handle.fileno())
                    if ready is not None:
                        ready()
                    os.replace(*names, src_dir_fd=folder, dst_dir_fd=folder)
                    _sync_folder(path, folder)
            finally:
                with suppress(FileNotFoundError):
                    os.unlink(names[0], dir_fd=folder)


def _sync_folder(path: Path, folder: int | None) -> None:
    """The rename of a file into `path` put on the disk (its folder, `folder` where given, synced), so that a power
    cut cannot undo it and keep a later one (a seal without the run.json it covers); left so where the folder cannot
    be synced (a file system that syncs no folder)."""
    with suppress(OSError):
        fd = os.open(path.parent if folder is None else ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=folder)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextmanager
def _folder(tmp: Path) -> Iterator[int | None]:
    """A descriptor of `tmp`'s folder to name it from where its path passes PATH_MAX (the file it is written on the
    way to is legal by its path, its temporary file's name the longer: `export --output P` near the limit); None
    where its path opens it."""
    if len(os.fsencode(tmp)) < PATH_MAX:
        yield None
        return
    fd = os.open(tmp.parent, getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield fd
    finally:
        os.close(fd)


def _read_pipe_opener(path: str, flags: int) -> int:
    """A descriptor of the pipe or device `path` to write into: a named pipe only while a process reads it (one
    that none reads was waited on forever, `report --output FIFO` hung); that, or a socket, refused in one line."""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK)
    except OSError as err:
        mode = os.stat(path).st_mode if err.errno == errno.ENXIO else stat.S_IFREG
        if stat.S_ISREG(mode):
            raise
        why = ("a named pipe (FIFO) that no process reads, which a write would wait on for one forever; nothing was "
               "written; start its reader first, or name a file" if stat.S_ISFIFO(mode)
               else f"{not_a_file(mode)}, which is not opened to write into; nothing was written; name a file")
        raise BenchrunError(f"--output: {why}", file=path) from None
    os.set_blocking(fd, True)
    return fd


def _new_file(path: Path | str, folder: int | None = None) -> int:
    """A descriptor of a file made new at `path` for writing, never one there before: a file or a symbolic link
    that another process put at the name (a temporary file's name is not a secret) is an error, never written
    through. Its mode is what the umask leaves of rw-rw-rw-, as `open` gives. It is locked while open (where the
    file system locks at all), which tells a later writer that its writer lives."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=folder)
    with suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def stem(name: str) -> str:
    """What the names of `name`'s temporary files begin with: `name`, its first TMP_STEM_MAX bytes if longer."""
    return os.fsdecode(os.fsencode(name)[:TMP_STEM_MAX])


MERGING = ".merging-"
"""Between the name of the folder a merge makes its run into and the run's id: the hidden folder it makes the run in."""


def merging_stem(name: str) -> str:
    """What the hidden folders of merges into the folder named `name` are named, but for their run's id."""
    return f".{stem(name)}{MERGING}"


def merging_left(folder: Path, run_id: str) -> str | None:
    """Why `folder` is no run of its own where it is the hidden folder a merge made run `run_id` in (a merge that
    ended renamed it); else None."""
    named = re.fullmatch(rf"\.(.+){re.escape(MERGING)}{re.escape(run_id)}", folder.name)
    if named is None:
        return None
    into = named[1]
    return (f"the hidden folder in which a merge into {into} makes its run, renamed to {into} as the merge ends (one "
            f"left by a merge that was stopped, the next merge into {into} removes): no run of its own to read or "
            "resume; merge the shards again")


def leftover_name(name: str) -> re.Pattern[str]:
    """The names of the temporary files written on the way to the file named `name`."""
    return re.compile(rf"\.{re.escape(stem(name))}\.\d+\.[0-9a-f]{{12}}\.tmp")


def remove_leftovers(path: Path) -> list[str]:
    """Remove the temporary files beside `path` on their way to it that their writers left (killed, or their
    machine lost): regular files of that name, unchanged for STALE_S and locked by no one. A writer that lives holds
    its file locked; where the file system cannot lock, nothing is removed. The names removed."""
    pattern, removed = leftover_name(path.name), []
    try:
        entries = [entry.name for entry in os.scandir(path.parent) if pattern.fullmatch(entry.name)]
    except OSError:  # a folder that can be written but not listed: what a writer left there stays
        return removed
    for name in entries:
        if _remove_if_left(path.parent / name):
            removed.append(name)
    return removed


def _remove_if_left(tmp: Path) -> bool:
    """Remove `tmp` if it is a regular file, unchanged for STALE_S, that no live writer holds locked."""
    try:
        fd = os.open(tmp, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode) or time.time() - found.st_mtime < STALE_S:
            return False
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        named = os.lstat(tmp)
        if (named.st_dev, named.st_ino) != (found.st_dev, found.st_ino):
            return False
        os.unlink(tmp)
        return True
    except OSError:  # locked by its writer, a file system that cannot lock, or a folder not ours to change
        return False
    finally:
        os.close(fd)

"""The temporary files of a benchmark's code: in a folder of their own ($TMPDIR, `tempfile.tempdir`) for each process
that runs it (the import check's, the scorer process, the run's own as it imports), removed once that code is done.
A file that makes a folder at import and removes it as its process exits (`tempfile.TemporaryDirectory()`, or
`mkdtemp` and `atexit.register(shutil.rmtree, ...)`) left it in $TMPDIR with every run, every resume and every
replaced scorer process: the import check ends by os._exit, the scorer process is killed, and the run's process
keeps no exit function of user code (`compiler.runstate`). A folder says the process that made it, so one left
by a process killed outright (SIGKILL runs no exit function) is removed by the next that makes one on that machine
(as a dry run's own folder for Hydra's files is, `compose.config`)."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from pathlib import Path

from benchrun.core.procfs import PROC, boot_id, started

PREFIX = "benchrun-scratch-"
MAKER = ".benchrun-maker"
"""The file in a folder `owned_folder` made that names its maker: the boot and pid namespace, pid and start (in the
folder, not its name: a longer name left user code's sockets under it past Linux's 107 characters)."""
_SWEPT: set[str] = set()
"""The prefixes whose folders of gone makers this process has removed (once a process: a listing of $TMPDIR)."""


def scratch_folder() -> str:
    """A new folder for the temporary files of a process running a benchmark's code (`owned_folder`)."""
    return owned_folder(PREFIX)


def owned_folder(prefix: str) -> str:
    """A new private folder of `prefix` in $TMPDIR, its MAKER file naming this process; this user's folders of
    `prefix` whose makers on this machine are gone removed first."""
    if prefix not in _SWEPT:
        _SWEPT.add(prefix)
        remove_orphans(tempfile.gettempdir(), prefix)
    folder = tempfile.mkdtemp(prefix=prefix)
    if machine := _machine():
        Path(folder, MAKER).write_text(f"{machine} {os.getpid()} {started(os.getpid())}\n")
    return folder


def remove_scratch(folder: str | None) -> None:
    """Remove `folder` and all in it, as far as it can be (a folder user code made unreadable stays)."""
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def remove_orphans(where: str, prefix: str) -> None:
    """Remove the folders of `prefix` in `where` of this user whose makers, of this boot and pid namespace, are gone
    (or their pid is another process's now); those of other machines, containers or users, of an older benchrun (no
    maker said) and of live makers are left."""
    machine = _machine()
    if not machine:
        return
    try:
        with os.scandir(where) as entries:
            owned = [entry for entry in entries if entry.name.startswith(prefix) and entry.is_dir(follow_symlinks=False)
                     and entry.stat(follow_symlinks=False).st_uid == os.getuid()]
        for entry in owned:
            said = _maker(entry.path)
            if said is not None and said[0] == machine and started(said[1]) != said[2]:
                shutil.rmtree(entry.path, ignore_errors=True)
    except OSError:  # $TMPDIR unreadable: nothing to remove, mkdtemp says the rest
        return


def _maker(folder: str) -> tuple[str, int, int] | None:
    """(machine, pid, start) of the maker of `folder` as its MAKER file says; None if it says none (a link, a FIFO,
    no file)."""
    try:
        descriptor = os.open(os.path.join(folder, MAKER), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(descriptor) as file:
            machine, pid, start = file.read(200).split()
        return machine, int(pid), int(start)
    except (OSError, ValueError):
        return None


@functools.cache
def _machine() -> str:
    """The boot and pid namespace this process runs in (`3f9a0b12c4d5.4026531836`); empty where /proc cannot say."""
    try:
        namespace = os.stat(PROC / "self/ns/pid").st_ino
    except OSError:
        return ""
    boot = boot_id().replace("-", "")[:12]
    return f"{boot}.{namespace}" if len(boot) == 12 else ""

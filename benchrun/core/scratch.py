"""The temporary files of a benchmark's code: in a folder of their own ($TMPDIR, `tempfile.tempdir`) for each process
that runs it (the import check's, the scorer process, the run's own as it imports), removed once that code is done.
A file that makes a folder at import and removes it as its process exits (`tempfile.TemporaryDirectory()`, or
`mkdtemp` and `atexit.register(shutil.rmtree, ...)`) left it in $TMPDIR with every run, every resume and every
replaced scorer process: the import check ends by os._exit, the scorer process is killed, and the run's process
keeps no exit function of user code (`compiler.runstate`). A folder is named by the process that made it, so one left
by a process killed outright (SIGKILL runs no exit function) is removed by the next that makes one on that machine
(as a dry run's own folder for Hydra's files is, `compose.config`)."""

from __future__ import annotations

import os
import re
import shutil
import tempfile

from benchrun.core.procfs import PROC, STARTED, boot_id, stat_fields

PREFIX = "benchrun-scratch-"
MAKER = r"(?P<machine>[0-9a-f]{12}\.\d+)\.(?P<pid>\d+)\.(?P<started>\d+)-[^/]*"
"""What follows a folder's prefix in its name (`owned_folder`): the boot and pid namespace it was made in, its
maker's pid and start, and mkdtemp's random part."""
_SWEPT: set[str] = set()
"""The prefixes whose folders of gone makers this process has removed (once a process: a listing of $TMPDIR)."""


def scratch_folder() -> str:
    """A new folder for the temporary files of a process running a benchmark's code (`owned_folder`)."""
    return owned_folder(PREFIX)


def owned_folder(prefix: str) -> str:
    """A new private folder in $TMPDIR named `prefix` and this process, its maker; this user's folders of `prefix`
    whose makers on this machine are gone removed first."""
    if prefix not in _SWEPT:
        _SWEPT.add(prefix)
        remove_orphans(tempfile.gettempdir(), prefix)
    made = _machine()
    return tempfile.mkdtemp(prefix=f"{prefix}{made}.{os.getpid()}.{_started(os.getpid())}-" if made else prefix)


def remove_scratch(folder: str | None) -> None:
    """Remove `folder` and all in it, as far as it can be (a folder user code made unreadable stays)."""
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def remove_orphans(where: str, prefix: str = PREFIX) -> None:
    """Remove the folders of `prefix` in `where` of this user whose makers, of this boot and pid namespace, are gone
    (or their pid is another process's now); those of other machines, containers or users, of an older benchrun (no
    maker in the name) and of live makers are left."""
    machine = _machine()
    if not machine:
        return
    try:
        with os.scandir(where) as entries:
            owned = [(entry, found) for entry in entries
                     if entry.name.startswith(prefix) and (found := re.fullmatch(MAKER, entry.name[len(prefix):]))]
        for entry, found in owned:
            if (found["machine"] == machine and entry.is_dir(follow_symlinks=False)
                    and entry.stat(follow_symlinks=False).st_uid == os.getuid()
                    and _started(int(found["pid"])) != int(found["started"])):
                shutil.rmtree(entry.path, ignore_errors=True)
    except OSError:  # $TMPDIR unreadable: nothing to remove, mkdtemp says the rest
        return


def _machine() -> str:
    """The boot and pid namespace this process runs in (`3f9a0b12c4d5.4026531836`); empty where /proc cannot say."""
    try:
        namespace = os.stat(PROC / "self/ns/pid").st_ino
    except OSError:
        return ""
    boot = boot_id().replace("-", "")[:12]
    return f"{boot}.{namespace}" if len(boot) == 12 else ""


def _started(pid: int) -> int | None:
    """When the process `pid` started, in clock ticks since the boot; None when it is gone."""
    fields = stat_fields(pid)
    return int(fields[STARTED]) if fields and fields[STARTED].isdigit() else None

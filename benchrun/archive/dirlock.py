"""The run directory's lock: one writer at a time (run, resume, retry, rescore), held for the writer's whole life.

An exclusive `flock` on `<run>/run.lock`, which the kernel drops when its holder dies however it dies, so a lock
left by a SIGKILLed process is simply free again. The holder writes its pid, host and command into the file and
empties it when it lets go (or puts back a dead holder's note, unless it ended the run): finding the file non-empty when taking the lock means the last holder died holding
it (a stale lock, taken over and reported). benchrun never deletes the file (but one it made and then refused, as a
run whose lock someone deleted is still written: `openwriters`), so two processes always lock one inode. A
holder renews a lease on the file while it holds it (`lease`), which tells it alive to other machines where the file
system keeps locks to each machine.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from benchrun.archive.detach import detach
from benchrun.archive.lease import Lease, renewed, renewing
from benchrun.archive.locknote import NOTE_MAX, boot_id, describe, parsed, process, read, this_note
from benchrun.archive.openwriters import writer_of
from benchrun.core.errors import ArchiveBusy, ArchiveError, WriteFailed, os_problem, reading, writing
from benchrun.core.filebytes import not_a_file
from benchrun.core.layout import LOCK, RUN
from benchrun.core.procfs import proc_text, started
from benchrun.core.text import host_name

PROBE_WAITS_S = (0.0, 0.005, 0.05)
"""When taking the lock: the waits before each try, so that a probe (`probe`, which holds it for microseconds) never
makes a writer give up."""


def own_file(path: Path, what: str = "file") -> None:
    """Refuse to write into a run directory's file (or `what`: folder) that is a symbolic link, whose writes would
    land where it points (a shared archive's `run.lock` -> `~/.bashrc`, `rescores/` -> another run's), that is not
    one (a pipe or a device where the run's file belongs), or a file with other names (hard links, a copy made with
    `cp -al`), whose every name a write in place (an append, a cut, the lock's note) would change."""
    if path.is_symlink():
        raise ArchiveError(f"a symbolic link (to {os.readlink(path)}), where the run's own {what} belongs; benchrun "
                           f"never writes through one: put the {what} itself there", file=str(path))
    try:
        mode = path.lstat().st_mode
    except (FileNotFoundError, NotADirectoryError):  # none there (a folder above it a file: its maker says so)
        return
    kind = (None if stat.S_ISDIR(mode) else not_a_file(mode) or "a file") if what == "folder" else not_a_file(mode)
    if kind is not None:
        raise ArchiveError(f"{kind}, where the run's own {what} belongs; benchrun writes only into its own {what}s",
                           file=str(path))
    if what == "file" and (names := path.lstat().st_nlink) > 1:
        raise ArchiveError(f"a file of {names} names (hard links, as `cp -al` makes), which a write here would change "
                           "under every name, in another copy too; benchrun writes only into a run's own files: copy "
                           "the run with `cp -r` and use the copy", file=str(path))


def no_link(path: str, flags: int) -> int:
    """`open`'s opener that will not follow a symbolic link (one put there after `own_file` looked); a file it makes
    has the mode `open` gives, what the umask leaves of rw-rw-rw- (a group that shares the archive can resume it)."""
    return os.open(path, flags | os.O_NOFOLLOW, 0o666)


class DirLock:
    """An exclusive lock on one run directory; `stale` describes the dead holder it took over, if any."""

    def __init__(self, run_dir: Path):
        self.path = run_dir / LOCK
        self._fd: int | None = None
        self._lease: Lease | None = None
        self._found = b""
        self._note: bytes | None = None
        """The note this holder wrote into the lock file, which stays there while the run is its."""
        self.stale: dict[str, Any] | None = None
        self._run_seen: tuple[int, ...] | None = None
        """run.json's file as this holder last wrote it (`run_written`), or found it on taking the lock (`_file_of`)."""
        self._detached = False
        """Whether this holder took the run over from another machine's writer, its record files made anew."""

    def acquire(self, hint: str = "wait for it to finish or stop it first",
                watched: dict[str, Any] | None = None) -> DirLock:
        """Take the lock or raise ArchiveBusy naming the live holder's pid and host, and `hint`; a lease already
        watched under the note `watched` (`not_remotely_written`) is not watched again, unless another note is found
        now (a writer that took the run since)."""
        own_file(self.path)
        made = not os.path.lexists(self.path)
        with writing(self.path):
            fd = no_link(str(self.path), os.O_RDWR | os.O_CREAT)
        try:
            taken = _locked(fd, fcntl.LOCK_EX, PROBE_WAITS_S, self.path)
        except NoLocks:
            os.close(fd)
            raise
        if not taken:
            os.close(fd)
            raise ArchiveBusy(f"another process is writing this run ({describe(holder(self.path))}); {hint}",
                              file=str(self.path.parent))
        if made and (self.path.parent / RUN).exists() and (pid := writer_of(self.path.parent)) is not None:
            os.close(fd)
            self.path.unlink(missing_ok=True)  # so the next writer asks again
            raise ArchiveBusy(f"another process (pid {pid}) is writing this run, though its {LOCK} was deleted (a "
                              f"cleanup of lock files?); {hint}", file=str(self.path.parent))
        self._found = os.pread(fd, NOTE_MAX, 0)
        self.stale = read(fd)
        if writing_elsewhere(self.stale):
            os.close(fd)
            raise ArchiveBusy(f"{ELSEWHERE.format(describe(self.stale))}; finish the run where it is written, and this "
                              "copy only if that one is lost", file=str(self.path.parent))
        if self.stale != watched and writing_remotely(self.stale, self.path):
            os.close(fd)
            raise ArchiveBusy(f"{REMOTE.format(describe(self.stale))}; {hint}", file=str(self.path.parent))
        self._detached = of_another_machine(self.stale)
        note = this_note(self.stale if self._detached else None)
        try:  # the note first: a copy failing part way (a full disk) leaves the writer taken over fenced all the same
            with writing(self.path):  # a full disk: one line naming the lock, the lock let go, the note kept
                _write(fd, note)
            if self._detached:  # taken over: what its writer, continued, appends lands nowhere
                detach(self.path.parent)
        except WriteFailed:
            os.close(fd)
            raise
        self._fd, self._note, self._run_seen = fd, note, _file_of(self.path.parent / RUN)
        self._lease = Lease(lambda: self._fd, self._still_renewed)
        return self

    def taken_over(self) -> dict[str, Any] | None:
        """What the lock file holds once it no longer holds this holder's note: another writer's note (one that took
        the run over, which a writer on another machine does where locks stay on each machine once this holder
        stopped renewing its lease: Ctrl-Z, SIGSTOP, a Slurm suspend), or {} for no writer's note (emptied, as a
        writer that took the run and ended it leaves it, or as `: > run.lock` does). None while it holds this
        holder's note, or is gone (no writer taking the run leaves that). Read anew each time: NFS asks its server at
        each open."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        except OSError:
            return None
        try:
            found = os.pread(fd, NOTE_MAX, 0)
        except OSError:
            return None
        finally:
            os.close(fd)
        if self._note is None or found == self._note or parsed(found) == parsed(self._note):  # an editor's newline
            return None
        note = parsed(found)
        return note if note and "pid" in note else {}

    def still_held(self) -> None:
        """Raise TakenOver once another writer took the run over: its note is in the lock file, or the note was
        emptied and run.json is another file than this holder last wrote (`run_written`), or before it wrote one, than
        it found on taking the lock (a writer that took the run and ended it). A note emptied by hand, run.json this
        holder's, leaves the run this holder's (a resume reading its records too)."""
        if (note := self.taken_over()) is None or not note and _file_of(self.path.parent / RUN) == self._run_seen:
            return
        how = ("while this process was stopped past its lease on run.lock (Ctrl-Z, SIGSTOP, a Slurm suspend, on a file "
               "system that keeps locks to each machine)" if self._same_file() else
               "after this process's run.lock was deleted (a cleanup of lock files?) and made anew")
        raise TakenOver(f"another writer ({describe(note) if note else 'since ended'}) took this run over {how}; this "
                        "process wrote nothing more to it: the run is that writer's", file=str(self.path.parent))

    def _still_renewed(self) -> bool:
        """The lease's check, each renewal: whether the lock is still this holder's. Where the file at the lock's
        path is a new one holding this holder's note (an editor saved run.lock as a new file, `sed -i`), that file is
        locked in its place, so that the lock, the lease and the emptying at the end stay where others look."""
        if (note := self.taken_over()) is not None:
            return not note
        if not self._same_file():
            self._lock_anew()
        return True

    def _lock_anew(self) -> None:
        """Take the lock on the file now at the lock's path, which holds this holder's note, in place of the one it
        locked; nothing when another process holds that file's lock, it holds another note by then, or it is no file
        (a FIFO put there, which holds no note and is never waited on)."""
        try:
            fd = no_link(str(self.path), os.O_RDWR | os.O_NONBLOCK)
        except OSError:
            return
        try:
            if not_a_file(os.fstat(fd).st_mode) is None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if parsed(os.pread(fd, NOTE_MAX, 0)) == parsed(self._note):
                    fd, self._fd = self._fd, fd
        except OSError:
            pass
        os.close(fd)  # the one no longer held

    def run_written(self) -> None:
        """This holder has just written run.json (as a new file: an atomic write): the one `still_held` expects."""
        self._run_seen = _file_of(self.path.parent / RUN)

    def _same_file(self) -> bool:
        """Whether the lock file now at the lock's path is the one this holder locked."""
        try:
            found, held = os.stat(self.path), os.fstat(self._fd)
        except (OSError, TypeError):
            return False
        return (found.st_dev, found.st_ino) == (held.st_dev, held.st_ino)

    def release(self, ended: bool = False, stopped: bool = False) -> None:
        """Let go: the file emptied (a clean exit), or, unless this holder `ended` the run, the note of the dead
        holder it took over put back, so that a writer that refused (a resume of tampered records) or added beside
        the run (a rescore) leaves the lock saying who stopped before the run ended. A holder that wrote the run and
        `stopped` before it could end it (its last run.json unwritten: the directory moved, the disk failed) leaves
        its own note, as a killed writer does: the file is emptied only by a writer that let the run end. So does one
        that took the run over from another machine's writer (`detach`): that writer, if it was only stopped, must find
        the run another's once continued, not its note put back (it would append to the files no longer the run's)."""
        if self._fd is None:
            return
        self._lease.end()  # first: it may lock the file at the path anew (`_lock_anew`) until it ends
        fd, self._fd = self._fd, None
        try:
            if (ended or not (stopped or self._detached)) and not self.taken_over():
                _write(fd, b"" if ended or self.stale is None else self._found)
        except OSError:
            pass  # an unwritable disk leaves the holder's note; the next holder calls it stale, which is the truth
        finally:
            os.close(fd)

    def __enter__(self) -> DirLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


@dataclass(frozen=True)
class LockState:
    """What a run directory's lock says of its writer: whether the file is there, whether a live process holds it,
    and the note its holder (live, or dead holding it) left."""

    exists: bool
    held: bool
    note: dict[str, Any] | None
    misplaced: str | None = None
    """What is in the lock file's place when it is not a file (`a named pipe (FIFO)`)."""


def probe(path: Path) -> LockState:
    """Whether a live process holds the lock at `path`, found by taking a shared lock and letting go at once (which
    never blocks, and which a writer taking the lock waits out); read-only, it changes nothing. A pipe, a device or
    a folder in the lock's place is never waited on (a FIFO opened for reading waits for a writer) or read: its
    kind is `misplaced`, and no writer holds it; so is a symbolic link, which every writer refuses (`no_link`)."""
    with reading(path):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        except FileNotFoundError:
            return LockState(exists=False, held=False, note=None)
        except OSError as err:
            if err.errno != errno.ELOOP:
                raise
            return LockState(exists=True, held=False, note=None, misplaced=f"a symbolic link (to {os.readlink(path)})")
    if (kind := not_a_file(os.fstat(fd).st_mode)) is not None:
        os.close(fd)
        return LockState(exists=True, held=False, note=None, misplaced=kind)
    try:
        held = not _locked(fd, fcntl.LOCK_SH, (0.0,), path)
        if not held:
            fcntl.flock(fd, fcntl.LOCK_UN)
        return LockState(exists=True, held=held, note=read(fd))
    except NoLocks:  # no writer can hold a lock where there are none: a run there was written elsewhere
        return LockState(exists=True, held=False, note=read(fd))
    finally:
        os.close(fd)


def _locked(fd: int, kind: int, waits: tuple[float, ...], path: Path) -> bool:
    """Take a lock of `kind` on `fd` (the lock file `path`) without blocking, trying again after each of `waits`;
    whether it was taken. NoLocks where the file system gives none."""
    for wait in waits:
        time.sleep(wait)
        try:
            fcntl.flock(fd, kind | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            continue
        except OSError as err:
            raise NoLocks(f"{os_problem(err)} locking {path}: its file system gives no locks, and a run directory is "
                          "locked so that no two processes write one; put outputs on a file system that does (a local "
                          "disk, NFS with its lock service, Lustre mounted with -o flock)") from None
    return False


class TakenOver(WriteFailed):
    """Another writer took the run over from this lock's holder (`DirLock.still_held`)."""


class NoLocks(ArchiveError):
    """The run directory's file system refuses flock (Lustre mounted without -o flock, NFS without its lock
    service): no writer can run there."""


def holder(path: Path) -> dict[str, Any] | None:
    """What the lock file says of its holder (None when empty or unreadable, or no file: a pipe in its place is not
    waited on for a writer)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        return None if not_a_file(os.fstat(fd).st_mode) else read(fd)
    finally:
        os.close(fd)


ELSEWHERE = ("its writer ({}) is still running but holds no lock here: this directory is a copy of its run, made "
             "while it wrote (cp, rsync, a backup, a move to another file system)")
"""What a run directory whose writer lives but holds no lock on it is."""


def writing_elsewhere(note: dict[str, Any] | None) -> bool:
    """Whether the writer a lock's note names still runs on this host, though it holds no lock here: the directory
    is a copy of a run made while it was written. A process that took its pid later is not that writer, nor is this
    process: the note's boot and start (`locknote.process`) must be the live process's, which no clock stepped since changes
    (an older benchrun's note without them: one started after its `since` is not the writer). Where /proc cannot
    tell, no writer is taken to live."""
    pid = note.get("pid") if note else None
    if not note or note.get("host") != host_name() or not isinstance(pid, int) or pid == os.getpid():
        return False
    if "started" in note:
        live = process(pid)
        return bool(live) and (live["boot"], live["started"]) == (note.get("boot"), note["started"])
    try:
        since = datetime.fromisoformat(note["since"]).timestamp()
        start = started(pid)
        boot = next(int(line.split()[1]) for line in proc_text("/proc/stat").splitlines()
                    if line.startswith("btime "))
    except (OSError, ValueError, TypeError, KeyError, IndexError, StopIteration):
        return False
    return start is not None and boot + start / os.sysconf("SC_CLK_TCK") <= since + 1  # None: that pid is gone


REMOTE = ("its writer ({}) runs on another machine and still renews its lease on run.lock: this file system keeps "
          "each machine's locks to that machine (Lustre mounted with localflock, BeeGFS)")
"""What a run directory whose writer on another machine holds a lock this machine cannot see is."""


def writing_remotely(note: dict[str, Any] | None, path: Path) -> bool:
    """Whether the writer a lock's note names runs on another machine and still renews its lease on the lock file
    `path` (watched for a few seconds, `lease.renewed`): a writer alive there, whose lock does not reach here."""
    return of_another_machine(note) and renewed(path)


def not_remotely_written(run_dirs: list[Path]) -> dict[Path, dict[str, Any] | None]:
    """Those of `run_dirs` that no writer on another machine still writes (`writing_remotely`), all watched at once,
    each with the note its lock held when watched (`DirLock.acquire(watched=)`)."""
    notes = {run_dir: holder(run_dir / LOCK) for run_dir in run_dirs}
    live = renewing([run_dir / LOCK for run_dir, note in notes.items() if of_another_machine(note)])
    return {run_dir: note for run_dir, note in notes.items() if run_dir / LOCK not in live}


def run_writer(run_dir: Path) -> str | None:
    """The live writer of the run in `run_dir`, described (`live_writer` of its lock as probed now); None when none."""
    return live_writer(run_dir / LOCK, probe(run_dir / LOCK))


def live_writer(path: Path, lock: LockState) -> str | None:
    """The live writer of the run whose lock file is `path` (`lock` as `probe` found it), described: the lock's holder,
    one that renews its lease from another machine, or one holding the run's files open though the lock was deleted;
    None when none writes it."""
    if lock.held:
        return describe(lock.note)
    if writing_remotely(lock.note, path):
        return f"{describe(lock.note)}, on another machine"
    if not lock.exists and (pid := writer_of(path.parent)) is not None:
        return f"pid {pid}, whose {LOCK} was deleted"
    return None


def of_another_machine(note: dict[str, Any] | None) -> bool:
    """Whether a lock's note is of a writer on another machine: another host name, or this one's name and another
    boot's id (machines given one name: a swarm's replicas of `hostname: worker`, cloned machines, `localhost`)."""
    host, boot = (note.get("host"), note.get("boot")) if note else (None, None)
    return isinstance(host, str) and (host != host_name() or (
        isinstance(boot, str) and bool(here := boot_id()) and boot != here))


def _file_of(path: Path) -> tuple[int, ...] | None:
    """Which file is at `path` and how it was last written (device, inode, size, time): another when rewritten (an
    atomic write makes a new inode); None when there is none."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns


def _write(fd: int, data: bytes) -> None:
    """The lock's note replaced by `data`: written over the old one, then cut to its length, so a write the disk
    refuses leaves the old note (a killed writer's), which a truncation first would have erased. Cut only where
    the file is longer: fusefat refuses a truncation that keeps or grows a file's size."""
    if os.pwrite(fd, data, 0) < len(data):  # a short write: the disk had room for part of it
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    if os.fstat(fd).st_size > len(data):
        os.ftruncate(fd, len(data))
    os.fsync(fd)

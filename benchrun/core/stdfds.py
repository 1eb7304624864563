"""The process's standard file descriptors 0, 1 and 2, always open: a process started with one closed (`2>&-`, a
launcher that closes its children's streams) would give that number to the first file it opens, and whatever is
written to it (a child process's stderr, a scorer's print) would land in that file. And standard output as a display
that may go away, standard error too: a reader that stops (`| head -1`) or a full disk (`> /dev/full`) never stops a run
or a sweep."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import logging
import os
import sys
from typing import Any, BinaryIO, Iterator, TextIO

from benchrun.core.errors import os_problem

STANDARD_FDS = (0, 1, 2)
OUTPUT_FDS = (1, 2)


def open_standard_fds() -> None:
    """Open /dev/null on each of 0, 1 and 2 that is closed (os.open takes the lowest free number), inheritable as a
    standard descriptor is: child processes get it too. And make 1 and 2 block: one a parent left non-blocking
    (O_NONBLOCK, which exec keeps: a Node.js or ssh session's) had Python drop what a slow reader's pipe could not
    take yet, without a word (`benchrun-audit export RUN | slow` cut at 64 KiB, exit 0)."""
    for fd in STANDARD_FDS:
        try:
            os.fstat(fd)
        except OSError:
            os.set_inheritable(os.open(os.devnull, os.O_RDWR), True)
    for fd in OUTPUT_FDS:
        os.set_blocking(fd, True)


def statuses() -> dict[int, tuple[int, bool]]:
    """The status flags of the open file each standard descriptor is (`os.set_blocking(1, False)` by a benchmark's
    file or a scorer, which stays with the file, every copy of the descriptor and the terminal's shell included), and
    whether the descriptor is inherited (`os.set_inheritable(2, False)`: a later call's subprocess started with no
    stderr, its first file opened taking number 2)."""
    found = {}
    for fd in STANDARD_FDS:
        with contextlib.suppress(OSError):
            found[fd] = fcntl.fcntl(fd, fcntl.F_GETFL), os.get_inheritable(fd)
    return found


def put_back_statuses(found: dict[int, tuple[int, bool]]) -> None:
    """Each standard descriptor, and its file, as `found` (`statuses`) again."""
    for fd, (status, inherited) in found.items():
        with contextlib.suppress(OSError):
            if fcntl.fcntl(fd, fcntl.F_GETFL) != status:
                fcntl.fcntl(fd, fcntl.F_SETFL, status)
            if os.get_inheritable(fd) != inherited:
                os.set_inheritable(fd, inherited)


def encodable_streams() -> None:
    """sys.stdout and sys.stderr write what their encoding cannot hold as an escape (`\\xe9` under
    PYTHONIOENCODING=ascii) instead of raising UnicodeEncodeError in the middle of a run's output."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")


class Display:
    """Standard output whose first failed write (or flush) is kept in `failure` instead of raised; from then on file
    descriptor 1 is /dev/null, so what is printed (by this process or its children) goes nowhere and costs nothing."""

    def __init__(self, stream: TextIO) -> None:
        self.stream, self.each = whole_writes(stream)
        self.failure: OSError | None = None

    def write(self, text: str) -> int:
        if self.failure is None:
            try:
                written = self.stream.write(text)
                if self.each:
                    self.stream.flush()
                return written
            except OSError as err:
                self._lost(err)
        return len(text)

    def flush(self) -> None:
        if self.failure is None:
            try:
                self.stream.flush()
            except OSError as err:
                self._lost(err)

    def _lost(self, err: OSError) -> None:
        self.failure = err
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, self.stream.fileno())
        os.close(null)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def whole_writes(stream: TextIO) -> tuple[TextIO, bool]:
    """`stream`, or where it writes straight to its file (PYTHONUNBUFFERED=1, `python -u`) the same file through a
    buffer, to be flushed after each write (True): unbuffered, a write the system takes in part (a file-size limit,
    `ulimit -f`, met within it) had the rest dropped without a word; a buffer writes the rest, or fails."""
    raw = getattr(stream, "buffer", None)
    if not isinstance(raw, io.RawIOBase):
        return stream, False
    buffered = io.TextIOWrapper(io.BufferedWriter(raw), encoding=stream.encoding, errors=stream.errors,
                                write_through=True)
    return buffered, True


CLOSED_OUTPUT = OSError(errno.EBADF, "closed")
"""The failure of a standard output that was closed when the process started (`>&-`): Python's sys.stdout is None."""


class _Closed(Display):
    """Standard output closed when the process started: its first write fails (CLOSED_OUTPUT), as writing to a
    closed descriptor would; a command that prints nothing there (`export --output FILE`) fails nothing."""

    def write(self, text: str) -> int:
        self.failure = self.failure or CLOSED_OUTPUT
        return len(text)


def display_streams() -> None:
    """sys.stdout and sys.stderr as `Display`s (once per process), with every logging handler that wrote to one moved
    onto it: what benchrun prints is never what stops it. A standard output closed when the process started (`>&-`,
    where open_standard_fds put /dev/null) is a display that failed from the start, so what is printed is known lost
    (`benchrun-audit export RUN >&-` was a TypeError's traceback)."""
    if sys.stdout is None:
        sys.stdout = _Closed(open(1, "w", encoding="utf-8", closefd=False))
    for name in ("stdout", "stderr"):
        raw = getattr(sys, name)
        if raw is None or isinstance(raw, Display):  # None: started with the descriptor closed (`2>&-`)
            continue
        setattr(sys, name, Display(raw))
        for handler in logging.getLogger().handlers:
            if isinstance(handler, logging.StreamHandler) and handler.stream is raw:
                handler.setStream(getattr(sys, name))


def output_lost() -> str | None:
    """The line saying standard output failed, when more than a reader that stopped early (EPIPE) made it fail: a
    full disk, say; None when it did not. What is still buffered (written to `sys.stdout.buffer`) is written first."""
    if isinstance(sys.stdout, Display):
        sys.stdout.flush()
    failure = sys.stdout.failure if isinstance(sys.stdout, Display) else None
    if failure is None or failure.errno == errno.EPIPE:
        return None
    if failure is CLOSED_OUTPUT:
        return "standard output was closed (>&-): what was printed went nowhere, not what was recorded"
    return f"{os_problem(failure)} writing standard output: what was printed was cut short, not what was recorded"


@contextlib.contextmanager
def output_fds_into(file: BinaryIO) -> Iterator[None]:
    """File descriptors 1 and 2 pointed at `file` within the block, put back after it: what is written to them there
    without passing through sys.stdout (`os.write(1, ...)`, `sys.__stdout__`, a C library's printf) lands in `file`,
    not on the console."""
    _flush_streams()
    saved = [os.dup(fd) for fd in OUTPUT_FDS]
    try:
        for fd in OUTPUT_FDS:
            os.dup2(file.fileno(), fd)
        yield
    finally:
        _flush_streams()
        for fd, kept in zip(OUTPUT_FDS, saved):
            os.dup2(kept, fd)
            os.close(kept)


@contextlib.contextmanager
def input_from_nothing() -> Iterator[None]:
    """File descriptor 0 (and sys.stdin) reading nothing within the block, put back after it: code there that reads
    standard input (`input()`, `sys.stdin.read()`) gets EOF at once, instead of waiting on a terminal for ever or
    taking as its input what was piped to benchrun."""
    saved, stdin, nothing = os.dup(0), sys.stdin, os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(nothing, 0)
        sys.stdin = open(0, encoding="utf-8", closefd=False)
        yield
    finally:
        sys.stdin = stdin
        os.dup2(saved, 0)
        os.close(saved)
        os.close(nothing)


class Printed:
    """sys.stdout and sys.stderr for a block of user code (`redirected`): text files of the usual kind, as where the
    code runs as a program (`sys.stdout.reconfigure(encoding="utf-8")`, `sys.stdout.buffer.write(...)`,
    `faulthandler.enable()`'s `sys.stderr.fileno()`: a StringIO has none of them, and refused the file), keeping the
    first `most` bytes of what is printed (`text`), in bounded memory: a file printing without end at import was kept
    whole in memory and in the log; what a stream it kept is given after the block is not kept."""

    def __init__(self, most: int) -> None:
        self._sink = _Kept(most)
        self._streams = [io.TextIOWrapper(io.BufferedWriter(_Numbered(self._sink, fd)), encoding="utf-8",
                                          errors="backslashreplace", line_buffering=True) for fd in OUTPUT_FDS]

    @contextlib.contextmanager
    def redirected(self) -> Iterator[None]:
        try:
            with contextlib.redirect_stdout(self._streams[0]), contextlib.redirect_stderr(self._streams[1]):
                yield
        finally:
            for stream in self._streams:
                with contextlib.suppress(ValueError):  # closed by the code that printed: flushed as it was closed
                    stream.flush()
            self._sink.open = False

    def text(self) -> str:
        """What was printed in the block, at most `most` bytes of it, with a word of what more was not kept."""
        text, more = bytes(self._sink.kept).decode("utf-8", "replace"), self._sink.more
        return text if not more else f"{text}\n[{more:,} bytes more not kept]"


class _Kept:
    """The first `most` bytes written to it while `open`, and a count of the rest; what comes after, nothing."""

    def __init__(self, most: int) -> None:
        self.kept, self.more, self._most, self.open = bytearray(), 0, most, True

    def write(self, data: Any) -> int:
        if self.open:
            room = max(self._most - len(self.kept), 0)
            self.kept += bytes(data[:room])
            self.more += max(len(data) - room, 0)
        return len(data)


class _Numbered(io.RawIOBase):
    """A stream writing into `sink` that says it is descriptor `fd` (where what is written to it straight goes)."""

    def __init__(self, sink: _Kept, fd: int) -> None:
        super().__init__()
        self._sink, self._fd = sink, fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def write(self, data: Any) -> int:
        return self._sink.write(data)


def _flush_streams() -> None:
    """Flush every Python stream on 1 and 2 (sys.stdout, sys.__stdout__, ...), so that what each holds is written
    where its descriptor points now."""
    streams = (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__)
    for stream in {id(s): s for s in streams if s is not None}.values():
        with contextlib.suppress(Exception):
            stream.flush()

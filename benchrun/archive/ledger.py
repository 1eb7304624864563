"""`records.sha256`: one digest per record line, and checking record files against it.

Each line is `<r|s|j> <the first 32 hex digits of the line's sha256>`: the record file (r responses.jsonl,
s scores.jsonl, j judgements.jsonl) and, by its place among that file's digests, the line number. 128 bits of sha256 leave an
accidental match at 2^-128; a deliberate edit of a line and its digest is as easy at any length, which only the seal,
with its sha256 kept elsewhere, guards against. Runs written by benchrun 0.2 have `<file> <line number> <sha256>`
lines, read alike (and a resume of such a run goes on in the lean form).

A record line is committed once its digest is on disk. The writer flushes each response line (or the score lines of
the gradings done by then, in one write) before the digests of those lines, so after a crash the digests never run
ahead of the lines: what follows the last committed line is at most what was being recorded when the process died,
possibly half-written.
`verify` of a finished run allows no such tail; `resume` drops it (and asks or grades those samples again).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import itertools
import re
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import BinaryIO, Iterator

from benchrun.archive.standins import stood_in
from benchrun.core.filebytes import not_a_file
from benchrun.core.layout import DIGESTS, JUDGEMENTS, RESPONSES, SCORES

TAGS = {RESPONSES: b"r", SCORES: b"s", JUDGEMENTS: b"j"}
_FILES = {tag: name for name, tag in TAGS.items()}
_LEAN = re.compile(rb"([rsj]) ([0-9a-f]{32})\n")
_OLD = re.compile(rb"(\S+) ([0-9]+) ([0-9a-f]{64})\n")
_CUT = re.compile(rb"[rsj]( [0-9a-f]{0,32})?|[a-z_.]+( ([0-9]+( [0-9a-f]{0,64})?)?)?")
"""What a digest line cut short (its writer stopped mid-write) can be: the start of a lean or an older one."""
HEX = 32
"""Hex digits of a line's sha256 kept: 128 bits."""


def digest(line: bytes) -> str:
    """A record line's digest as records.sha256 keeps it."""
    return hashlib.sha256(line).digest()[:HEX // 2].hex()


def digest_lines(name: str, lines: list[bytes]) -> bytes:
    """The records.sha256 lines for `lines`, appended to record file `name`."""
    tag = TAGS[name] + b" "
    return b"".join(tag + digest(line).encode() + b"\n" for line in lines)


@dataclass(frozen=True)
class Mismatch:
    """A line that is not what the run wrote (or a written line that is gone)."""

    file: str
    line: int
    message: str
    """The whole finding, its line number included: `line 7 is not the line written`."""

    def __str__(self) -> str:
        return f"{self.file}: {self.message}"


@dataclass
class Digests:
    """records.sha256 read: each record file's line digests in order, and what is wrong with the file itself."""

    lines: dict[str, list[str]] = field(default_factory=dict)
    """Each record file's line digests (HEX digits, whichever form the file has)."""
    problems: list[Mismatch] = field(default_factory=list)
    committed_size: int = 0
    """Bytes up to the last whole digest line (a half-written last line is not counted)."""
    unlisted: int = 0
    """How many lines at fault follow the first MAX_LISTED (counted, not listed)."""
    first_unlisted: int = 0

    def fault(self, number: int, message: str) -> None:
        """Line `number` of records.sha256 is at fault: listed among the first MAX_LISTED, else counted."""
        if len(self.problems) < MAX_LISTED:
            self.problems.append(Mismatch(DIGESTS, number, message))
            return
        self.unlisted += 1
        self.first_unlisted = self.first_unlisted or number

    def counted(self) -> Digests:
        """The lines at fault past the first MAX_LISTED, as one problem."""
        if self.unlisted:
            self.problems.append(Mismatch(DIGESTS, self.first_unlisted, f"{self.unlisted:,} more lines from line "
                                                                        f"{self.first_unlisted} on are at fault too"))
        return self



def read_digests(run_dir: Path, as_lf: bool = False) -> Digests:
    """Parse records.sha256 (`as_lf`: its CRLF line ends read as LF); a half-written last line is ignored (one that
    no digest line starts with, or longer than any, a gigabyte of bytes no writer leaves, is a problem), any other
    malformed or out-of-order line is a problem. Read once while the file is as it was (its inode, size and times):
    a verify's every check asked for it, and read 100,000 samples' digests five times. Shared: not to be changed."""
    path = run_dir / DIGESTS
    try:
        found = path.stat()
    except OSError:
        return Digests()
    if not stat.S_ISREG(found.st_mode):
        return Digests()
    return _read_digests(path, as_lf, (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns))


@functools.lru_cache(maxsize=2)
def _read_digests(path: Path, as_lf: bool, state: tuple[int, ...]) -> Digests:
    """records.sha256 at `path` read (`read_digests`), in the `state` its stat gave."""
    found = Digests()
    with _opened(path, as_lf) as handle:
        for number, piece in enumerate(pieces(handle, DIGEST_LINE_BYTES), start=1):
            if not piece.ended:
                if piece.line is None or not _CUT.fullmatch(piece.line):
                    found.fault(number, f"line {number} is not a digest line, nor the start of one that its "
                                        "writer was stopped writing")
                break
            line = piece.line or b""  # one longer than a digest line is none
            parsed = _parse(line, found.lines)
            if parsed is None:
                found.fault(number, f"line {number} is not a digest line")
                continue
            name, index, hexdigest = parsed
            digests = found.lines.setdefault(name, [])
            if index != len(digests) + 1:
                found.fault(number, f"line {number} is the digest of {name} line {index} where line "
                                    f"{len(digests) + 1} was due")
                continue
            digests.append(hexdigest[:HEX])
            found.committed_size += piece.size
    if found.problems and (why := stood_in(path)):  # a pointer, a conflict, a crash's NULs in its place
        found.problems[0] = replace(found.problems[0], message=f"{found.problems[0].message}: {why}")
    return found.counted()


def _parse(line: bytes, lines: dict[str, list[str]]) -> tuple[str, int, str] | None:
    """(file, line number, hex digest) of a digest line, lean (`r <hex>`) or as benchrun 0.2 wrote it; None when it
    is neither."""
    if lean := _LEAN.fullmatch(line):
        name = _FILES[lean[1]]
        return name, len(lines.get(name, ())) + 1, lean[2].decode()
    if old := _OLD.fullmatch(line):
        return old[1].decode("utf-8", "replace"), int(old[2]), old[3].decode()
    return None


@dataclass
class Checked:
    """One record file against its digests, line by line in order."""

    path: Path
    committed: int
    """How many first lines match their digests (all lines with a digest, when none differs)."""
    committed_size: int
    """Their size in bytes."""
    written: int
    """How many lines have a digest."""
    tail: list[bytes]
    """The lines after the last digest: not committed (a half-written last line included); held only as far as
    MAX_HELD_TAIL, the rest counted (`tail_lines`)."""
    problems: list[Mismatch]
    tail_lines: int = 0
    """How many lines follow the last digest, a last one cut short included."""
    tail_cut: bool = False
    """Whether the last of them is cut short (no newline)."""

    @property
    def tail_held(self) -> bool:
        """Whether `tail` holds every line after the last digest."""
        return len(self.tail) == self.tail_lines

    @property
    def tail_whole(self) -> int:
        """How many lines after the last digest were written whole (with their newline)."""
        return self.tail_lines - self.tail_cut


def check_file(run_dir: Path, name: str, digests: list[str], as_lf: bool = False) -> Checked:
    """Each line of `name` (`as_lf`: its CRLF line ends read as LF) against its digest: the first changed line,
    written lines now missing, and the tail. A missing file has no lines; a pipe, a device or a folder in its place
    is never opened, said to be there."""
    committed, size, changed, present, piece = 0, 0, [], 0, None
    path = run_dir / name
    if path.exists() and (kind := not_a_file(path.stat().st_mode)) is not None:
        return Checked(path, 0, 0, len(digests), [], [Mismatch(name, 1, f"{kind} in its place")])
    with _opened(path, as_lf) if path.exists() else contextlib.nullcontext(io.BytesIO()) as handle:
        for present, piece in enumerate(itertools.islice(pieces(handle, MAX_HELD_LINE), len(digests)), start=1):
            if piece.digest != digests[present - 1]:
                changed.append(present)
            elif not changed:
                committed, size = committed + 1, size + piece.size
        tail, overlong = _tail(handle, present)
    problems = []
    if overlong:
        problems.append(Mismatch(name, overlong, f"line {overlong} is longer than any line benchrun reads whole "
                                                 f"({MAX_HELD_LINE:,} bytes) and no digest covers it"))
    why = f": {said}" if changed and (said := stood_in(path)) else ""  # a pointer, a conflict, a crash's NULs
    if cut := changed == [present] and not piece.ended and not why:  # its last line cut short: a copy stopped in it
        gone = f", {_lines(len(digests) - present)} of {len(digests)} written missing after it" if present < len(
            digests) else ""
        problems.append(Mismatch(name, present, f"truncated: it ends part way through line {present}{gone}"))
    elif changed:
        also = f" ({len(changed)} lines differ)" if len(changed) > 1 else ""
        problems.append(Mismatch(name, changed[0], f"line {changed[0]} is not the line written{also}{why}"))
    if present < len(digests) and not cut:
        where = f"from line {changed[0]} on (where the lines begin to differ)" if changed else f"after line {present}"
        problems.append(Mismatch(name, present + 1, f"{'' if changed else 'truncated: '}"
                                                    f"{_lines(len(digests) - present)} of {len(digests)} written "
                                                    f"missing {where}"))
    return Checked(run_dir / name, committed, size, len(digests), tail.held, problems, tail.lines, tail.cut)


@dataclass
class _Tail:
    """The lines after the last digest as read: the first ones held, how many there are, and whether the last is cut
    short (no newline)."""

    held: list[bytes] = field(default_factory=list)
    lines: int = 0
    cut: bool = False


def _tail(handle: BinaryIO, written: int) -> tuple[_Tail, int]:
    """The lines of `handle` after its `written` digested ones, held while they fit MAX_HELD_TAIL, then only counted
    (no digest covers them: more is what no writer left, a planted file of millions of lines never held); and the
    number of the first line longer than MAX_HELD_LINE (0: none)."""
    tail, held_bytes = _Tail(), 0
    while line := handle.readline(MAX_HELD_LINE + 1):
        held_bytes += len(line) + LINE_COST
        if len(line) > MAX_HELD_LINE and not line.endswith(b"\n"):
            return _counted(handle, tail, line), written + len(tail.held) + 1
        if held_bytes > MAX_HELD_TAIL:
            return _counted(handle, tail, line), 0
        tail.held.append(line)
    tail.lines, tail.cut = len(tail.held), bool(tail.held) and not tail.held[-1].endswith(b"\n")
    return tail, 0


def _counted(handle: BinaryIO, tail: _Tail, line: bytes) -> _Tail:
    """`tail` with the lines from `line` (the first not held, perhaps only its start) to the end of `handle`
    counted."""
    newlines, last = line.count(b"\n"), line[-1:]
    while chunk := handle.read(PIECE_BYTES):
        newlines += chunk.count(b"\n")
        last = chunk[-1:]
    tail.cut = last != b"\n"
    tail.lines = len(tail.held) + newlines + tail.cut
    return tail


@contextlib.contextmanager
def _opened(path: Path, as_lf: bool) -> Iterator[BinaryIO]:
    """`path` open for reading in binary; `as_lf`: each line's CRLF end read as LF (`LineEnds`)."""
    with open(path, "rb") as handle:
        yield LineEnds(handle) if as_lf else handle


class LineEnds:
    """A binary file read line by line with each CRLF line end as the LF it was before a checkout made it CRLF."""

    def __init__(self, handle: BinaryIO):
        self._handle = handle

    def readline(self, limit: int = -1) -> bytes:
        line = self._handle.readline(limit)
        return line[:-2] + b"\n" if line.endswith(b"\r\n") else line

    def read(self, size: int = -1) -> bytes:
        """Bytes as they are (enough to count lines by)."""
        return self._handle.read(size)


def aligned(path: Path, digests: list[str]) -> list[tuple[int, bytes]]:
    """(number, line) of the lines that follow the written sequence in order: edited, inserted and duplicated lines
    fall out, lost ones are skipped over, and nothing after the last digest is kept."""
    positions: dict[str, list[int]] = {}
    for index, hexdigest in enumerate(digests):
        positions.setdefault(hexdigest, []).append(index)
    kept, due = [], 0
    for number, line in enumerate(lines_of(path), start=1):
        later = next((i for i in positions.get(digest(line), ()) if i >= due), None)
        if later is not None:
            kept.append((number, line))
            due = later + 1
    return kept


def _lines(n: int) -> str:
    return f"{n} line{'s' * (n != 1)}"


MAX_HELD_LINE = 256 * 2**20
"""The longest record line held whole before its digest is checked: far longer than benchrun writes one (an answer
is at most runner.max_response_bytes, 8 MiB by default), so a planted line of gigabytes (a sparse file costs no
disk) is digested in pieces, never read into memory (a MemoryError, or minutes of swapping, in `verify`)."""
MAX_HELD_TAIL = 256 * 2**20
"""The most held of the lines after a record file's last digest (each line counted LINE_COST bytes more): far more
than one commit writes (one response, or the score lines or judge calls of the gradings a run keeps going), so a
tail a killed writer left is held whole and one of millions of lines planted there is counted, never held."""
LINE_COST = 64
"""What holding a line costs beyond its bytes (a bytes object and its place in a list)."""
MAX_LISTED = 10
"""The lines of records.sha256 at fault listed one by one; more are counted in one problem (a file of millions of
lines that are no digests was a problem each: a gigabyte held, and verify printed millions of lines)."""
DIGEST_LINE_BYTES = 1024
"""More than any records.sha256 line holds (`r <32 hex digits>`, or benchrun 0.2's `<file> <n> <64 hex digits>`)."""
PIECE_BYTES = 2**20


@dataclass(frozen=True)
class Piece:
    """A line of a file as read in bounded pieces: its digest (as records.sha256 keeps it), its size, whether it
    ends with a newline, and the line itself when it is at most the reader's bound (else None)."""

    digest: str
    size: int
    ended: bool
    line: bytes | None


def pieces(handle: BinaryIO, keep: int) -> Iterator[Piece]:
    """The lines of an open binary file, each held whole only up to `keep` bytes, a longer one digested piece by
    piece."""
    while first := handle.readline(keep + 1):
        if len(first) <= keep or first.endswith(b"\n"):
            yield Piece(digest(first), len(first), first.endswith(b"\n"), first)
            continue
        sha, size, last = hashlib.sha256(first), len(first), first
        while not last.endswith(b"\n") and (last := handle.readline(PIECE_BYTES)):
            sha.update(last)
            size += len(last)
        yield Piece(sha.digest()[:HEX // 2].hex(), size, last.endswith(b"\n"), None)


def lines_of(path: Path) -> Iterator[bytes]:
    """The lines of a file (the last one perhaps without its newline); none when it is missing."""
    if not path.is_file():
        return
    with open(path, "rb") as handle:
        yield from handle

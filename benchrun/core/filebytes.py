"""Reading a file whole that a user brings (a benchmark's tasks.yml, data files, custom_*.py: at most MAX_FILE_BYTES,
UTF-8 text) or that an archive holds: a regular file only (a directory, a pipe or a device where a file belongs is
refused, never waited on or read for ever)."""

from __future__ import annotations

import hashlib
import os
import re
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from benchrun.core.advice import shell_command
from benchrun.core.errors import BenchrunError, TaskError, reading

MAX_FILE_BYTES = 256 * 2**20
"""The largest benchmark file read (tasks.yml, custom_*.py, a template; and by default a data file, whose bound is
task.max_file_bytes): 256 MiB, a JSONL of a million records of 268 bytes; read whole, a file costs several times its
size in memory, so a 3 GB file is one line, not a MemoryError or a machine out of memory."""
MAX_JSON_BYTES = 64 * 2**20
"""The most a run.json, seal.json, summary.json or rescore.json is read of: far more than benchrun writes in one (a
few KB, a summary of thousands of metrics a few MB), so a planted file of gigabytes (a sparse one costs no disk) is
one line, not a MemoryError in `list` or in a run refused a directory holding one."""
CHUNK_BYTES = 2**20
"""How much of a file is read at a time."""
KINDS = {stat.S_IFDIR: "a directory", stat.S_IFIFO: "a named pipe (FIFO)", stat.S_IFCHR: "a character device",
         stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}


def not_a_file(mode: int) -> str | None:
    """What a file's `st_mode` names when it is not a regular file (`a named pipe (FIFO)`), else None."""
    return None if stat.S_ISREG(mode) else KINDS.get(stat.S_IFMT(mode), "not a regular file")


def missing(path: Path, held: str = "") -> str:
    """Why `path`, which is not a regular file, is not there: `missing`, or what stands in its place (`a named pipe
    (FIFO) in its place`), with what it `held` (in parentheses), and where it is kept instead (`kept_elsewhere`)."""
    there = path.exists()
    what = (f"{not_a_file(path.stat().st_mode)} in its place" if there else "missing") + (f" ({held})" if held else "")
    return f"{what}: {cloud}" if not there and (cloud := kept_elsewhere(path)) else what


def missing_because(path: Path, why: str) -> str:
    """`missing: why` of a file that is not there, and where it is kept instead (`kept_elsewhere`), if it is."""
    return f"missing: {why}" + (f": {where}" if (where := kept_elsewhere(path)) else "")


OFFLINE = ("on its server", "open it, or make its folder 'Always available locally'")
PLACEHOLDERS = {"iCloud Drive": (".{}.icloud", "in the cloud", "`brctl download {}`, or open its folder in Finder"),
                "Nextcloud": ("{}.nextcloud", *OFFLINE), "ownCloud": ("{}.owncloud", *OFFLINE)}
"""What a tool keeping files off this disk leaves in a file's place (`{}` its name), where it keeps it and how to bring
it back (`{}` its path): iCloud Drive's "Optimise Mac Storage", the virtual files of Nextcloud's and ownCloud's
clients."""
COMPRESSED = {"gzip": (".gz", "gunzip"), "bzip2": (".bz2", "bunzip2"), "xz": (".xz", "unxz"),
              "zstd": (".zst", "unzstd")}
"""The suffix a compressor gives the file it compressed in place of another (`gzip -r` over an archive), by tool, and
the command that gives the file back."""
SYNCING = {"Syncthing": (r"\.syncthing\.{}\.tmp", r"~syncthing~{}\.tmp"), "Resilio Sync": (r"{}\.!sync",),
           "Nextcloud (or ownCloud)": (r"\.{}\.~[0-9a-f]{{1,8}}",), "Unison": (r"\.unison\.{}(\..+)?\.unison\.tmp",)}
"""The names a sync tool gives a file while it brings it in, by tool, as patterns: `{}` the file's name."""
COPYING = {"rsync": r"\.{}\.[A-Za-z0-9]{{6}}", "rclone": r"{}\.[A-Za-z0-9]{{8}}\.partial",
           "a download": r"{}\.(?:part|crdownload)"}
"""The name a copying tool gives a file while it copies it in, before it renames it (rsync's mkstemp's, rclone's
`--partial-suffix`, a browser's: Firefox's `.part`, Chrome's `.crdownload`), as a pattern: `{}` the file's name."""


def kept_elsewhere(path: Path) -> str | None:
    """Where a missing file is and what to do about it: off this disk, a placeholder in its place (PLACEHOLDERS),
    compressed (COMPRESSED), or being brought in by a sync tool (SYNCING) or a copy (COPYING, rsync's RSYNC_HELD);
    None for neither."""
    for tool, (stub, where, how) in PLACEHOLDERS.items():
        if os.path.lexists(path.with_name(stub := stub.format(path.name))):
            return (f"{tool} keeps it {where} ({stub} in its place), not on this disk: download it "
                    f"({how.format(path)}), then try again")
    for tool, (suffix, undo) in COMPRESSED.items():
        if os.path.lexists(packed := path.with_name(path.name + suffix)):
            return (f"{tool} compressed it ({packed.name} in its place), which benchrun does not read: decompress it "
                    f"(`{shell_command(undo, packed)}`), then try again")
    names = names_in(path.parent)
    for tool, patterns in SYNCING.items():
        if found := _named(names, patterns, path.name):
            return f"{tool} is copying it here now ({found} in its place): let it finish, then try again"
    if found := _copy(path, names):
        return (f"{found[0]} is copying it here ({found[1]}): let it finish (or copy it again, if it was stopped), "
                "then try again")
    return None


RSYNC_HELD = ".~tmp~"
"""The folder `rsync --delay-updates` holds the files it copied in, until its copy ends and renames them into place."""


def _copy(path: Path, names: list[str]) -> tuple[str, str] | None:
    """The tool copying `path` in and where it keeps it meanwhile, as said: the file it copies it into before it
    renames it (COPYING), or the one `rsync --delay-updates` holds (RSYNC_HELD); None when neither is there."""
    if os.path.lexists(path.parent / RSYNC_HELD / path.name):
        return "rsync", f"{RSYNC_HELD}/{path.name} in its place, held there until the whole copy has come"
    return next(((tool, f"{found} in its place, what it copied so far") for tool, pattern in COPYING.items()
                 if (found := _named(names, (pattern,), path.name))), None)


def names_in(folder: Path) -> list[str]:
    """The names in `folder`, in order; none when it cannot be listed."""
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def _named(names: list[str], patterns: tuple[str, ...], name: str) -> str | None:
    """The first of `names` that one of `patterns` makes of the file `name`; None when none does."""
    made = re.compile("|".join(pattern.format(re.escape(name)) for pattern in patterns))
    return next((each for each in names if made.fullmatch(each)), None)


def read_bounded(path: Path, rel: str, error: type[BenchrunError] = TaskError, limit: int | None = MAX_FILE_BYTES,
                 limit_key: str | None = None, **where: str) -> bytes:
    """The bytes of the regular file `path` (named `rel` in errors), refused when it is none or holds more than
    `limit` bytes (None: an archive's own file, as large as its run made it), naming the setting `limit_key` that
    sets it, if one does."""
    with reading(rel, error, **where), regular_file(path, rel, error, **where) as file:
        size = os.fstat(file.fileno()).st_size
        if limit is not None and size > limit:
            raise error(_too_large(size, limit, limit_key), file=rel, **where)
        data = file.read() if limit is None else _read_at_most(file, limit + 1)  # + 1: a file that grew since
    if limit is not None and len(data) > limit:
        raise error(_too_large(len(data), limit, limit_key), file=rel, **where)
    if _DIGESTS is not None:
        _DIGESTS.setdefault(path.resolve(), (hashlib.sha256(data).hexdigest(), len(data)))
    return data


def regular_file(path: Path, rel: str, error: type[BenchrunError] = TaskError, **where: str) -> BinaryIO:
    """`path` opened to read its bytes, refused (named `rel`) when it is not a regular file; an OSError raised as
    it is (`reading` says it in one line)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opened so does not wait for a writer
    if (kind := not_a_file(os.fstat(fd).st_mode)) is not None:
        os.close(fd)
        raise error(f"{kind}, where a file belongs: benchrun reads only regular files", file=rel, **where)
    return os.fdopen(fd, "rb")


_DIGESTS: dict[Path, tuple[str, int]] | None = None


@contextmanager
def digests_read() -> Iterator[dict[Path, tuple[str, int]]]:
    """Within the block, the sha256 and size of the bytes of each file read (its first reading), by resolved path:
    what a compile made its samples of, for its manifest to name (a file read again to be hashed was another, once
    written meanwhile: a data file still being written or replaced as the run started)."""
    global _DIGESTS
    _DIGESTS = {}
    try:
        yield _DIGESTS
    finally:
        _DIGESTS = None


def _read_at_most(file: BinaryIO, most: int) -> bytes:
    """The first `most` bytes of `file` (all, if fewer), read a chunk at a time: `read(most)` takes a buffer of `most`
    bytes before reading, 256 MiB for a tasks.yml of 1 KB, a MemoryError under a memory limit (`ulimit -v`)."""
    chunks, left = [], most
    while left > 0 and (chunk := file.read(min(left, CHUNK_BYTES))):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _too_large(size: int, limit: int, key: str | None) -> str:
    bound = key or "a benchmark's file may hold"
    return f"{size:,} bytes, more than {bound} ({limit:,} bytes)"


def read_utf8(path: Path, rel: str, error: type[BenchrunError] = TaskError, bom: bool = False,
              limit: int = MAX_FILE_BYTES, limit_key: str | None = None, saved: bool = False, **where: str) -> str:
    """The text of `path` (read_bounded, at most `limit` bytes, set by `limit_key`), UTF-8 (with `bom`, a benchmark's
    text: a byte-order mark first is dropped and any character UNASKED refused, naming its line), its line ends read
    as Python's text files read them (CRLF and CR are LF: a template saved on Windows asks what it asked on Linux); a
    NUL byte refused in any file. Bytes that are not UTF-8 are said with SAVE_UTF8 in a file the user `saved` (any
    with `bom`)."""
    return utf8_text(read_bounded(path, rel, error, limit, limit_key, **where), rel, error, bom, saved, **where)


def utf8_text(data: bytes, rel: str, error: type[BenchrunError] = TaskError, bom: bool = False, saved: bool = False,
              **where: str) -> str:
    """`data`, the bytes of the file `rel`, as read_utf8 reads them."""
    if (wide := wide_text(data)) is not None:
        raise error(wide, file=rel, **where)
    try:
        text = data.decode("utf-8-sig" if bom else "utf-8")
    except UnicodeDecodeError as err:
        raise error(not_utf8_said(err) + (SAVE_UTF8 if bom or saved else ""), file=rel, **where) from None
    if (found := (UNASKED if bom else NUL).search(text)) is not None:
        raise error(f"{_position(text, found.start())}: {unasked_said(found[0], raw=True)}", file=rel, **where)
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


WIDE_MARKS = {b"\xff\xfe\0\0": ("UTF-32", "UTF-32LE"), b"\0\0\xfe\xff": ("UTF-32", "UTF-32BE"),
              b"\xff\xfe": ("UTF-16", "UTF-16LE"), b"\xfe\xff": ("UTF-16", "UTF-16BE")}
"""The byte-order marks of text saved in a wide encoding (Windows' `Unicode`, PowerShell 5's `>`), longest first, with
the encoding each names and its name for iconv."""
WIDE_SAMPLE = 4096
"""How many of a file's first bytes show the pattern of NULs of UTF-16 text saved without a mark."""


def wide_text(data: bytes) -> str | None:
    """Why `data` is refused when it is UTF-16 (or UTF-32) text, by its byte-order mark or, without one, its NULs
    each beside an ASCII character: what it is and how to save it as UTF-8; None for any other bytes."""
    if (mark := next((mark for mark in WIDE_MARKS if data.startswith(mark)), None)) is not None:
        kind, code = WIDE_MARKS[mark]
        how = f"its byte-order mark {mark.hex(' ').upper()}"
    elif (code := _wide_by_nuls(data[:WIDE_SAMPLE])) is not None:
        kind = "UTF-16"
        how = f"a NUL byte {'after' if code == 'UTF-16LE' else 'before'} each ASCII character, and no byte-order mark"
    else:
        return None
    return (f"{kind} text ({how}), where benchrun reads UTF-8; save it as UTF-8 (an editor's Save As, encoding UTF-8; "
            f"or iconv -f {code} -t UTF-8)")


def _wide_by_nuls(head: bytes) -> str | None:
    """`UTF-16LE` (`UTF-16BE`) when at least half the odd (even) bytes of `head` are NULs and none of the others is:
    ASCII text saved as UTF-16 without a mark; else None."""
    for code, nuls, chars in (("UTF-16LE", head[1::2], head[0::2]), ("UTF-16BE", head[0::2], head[1::2])):
        if nuls and nuls.count(0) * 2 >= len(nuls) and 0 not in chars:
            return code
    return None


SAVE_UTF8 = "; save it as UTF-8"
"""What to do with a file of the user's that is not UTF-8 (a benchmark's text, a preset)."""


def not_utf8_said(err: UnicodeDecodeError) -> str:
    """Bytes that are not UTF-8 (Latin-1's `é`, 0xe9) said where they are, as a character refused is, with what to do:
    `line 2, column 4: not UTF-8 text (invalid continuation byte, 0xe9)`; of a file the user saved, SAVE_UTF8 after."""
    data = bytes(err.object)
    line_start = data.rfind(b"\n", 0, err.start) + 1
    line, column = data.count(b"\n", 0, err.start) + 1, len(data[line_start:err.start].decode("utf-8", "replace")) + 1
    return f"line {line}, column {column}: not UTF-8 text ({err.reason}, 0x{data[err.start]:02x})"


def _position(text: str, index: int) -> str:
    """Where character `index` of `text` is, as `line 3, column 2`."""
    return f"line {text.count(chr(10), 0, index) + 1}, column {index - text.rfind(chr(10), 0, index)}"


MARK = "\ufeff"
NUL = re.compile("\0")
NUL_BYTE = "a NUL byte, which no text holds (a file saved as UTF-16, or not text?); save it as UTF-8"
"""Why a NUL byte in a file is refused: valid UTF-8, never text (a file saved as UTF-16 without its mark is ASCII and
NULs)."""
NUL_ESCAPED = ("an escape writes a NUL character (\\0, \\x00, \\u0000), which no text holds, as a file's NUL byte is "
               "refused (a server reading text as C does ends the prompt there); leave it out")
"""Why a NUL written as an escape (YAML's, JSON's) is refused: the one rule of a file's NUL byte."""
MARK_INSIDE = ("a byte-order mark (U+FEFF), which marks only a file's start: inside its text it is invisible and would "
               "be asked as it is (two files joined?); remove it")
"""Why a byte-order mark past a benchmark file's first character, or written as an escape (YAML's or JSON's
`\\ufeff`), is refused: no text holds one (U+2060 has joined words since Unicode 3.2); other invisible characters
(a zero-width joiner in an emoji, a right-to-left mark) are parts of real text, kept, and printed as escapes."""

UNASKED = re.compile("[\0-\x08\x0b\x0e-\x1f\x7f-\x84\x86-\x9f\ufeff]")
"""The characters no benchmark's text asks, raw or written as an escape (YAML's `\\e`, JSON's `\\u001b`), each said
by unasked_said: a NUL; a byte-order mark (MARK_INSIDE); the control characters of C0 (ESC, BEL, a backspace, a vertical
tab), DEL, and those of C1 (CSI, which a terminal takes as ESC [). A tab, a line break (NEL, U+0085, among them) and a
form feed (which text extracted from PDFs holds between pages) are text."""
OWN_WORDS = {"\0": NUL_ESCAPED, MARK: MARK_INSIDE}
"""The characters UNASKED said in words of their own; any other is a control character (control_inside)."""


def unasked_said(char: str, raw: bool = False) -> str:
    """Why the character `char` UNASKED, `raw` in a file's text or written as an escape, is refused."""
    if raw and char == "\0":
        return NUL_BYTE
    return OWN_WORDS.get(char) or _mistaken(char) or control_inside(char)


def _mistaken(char: str) -> str | None:
    """Why a C1 control character is refused that Windows-1252 text read as Latin-1 holds for one of its own (`\\x93`
    for `“`): what it meant; None for any other."""
    if not "\x80" <= char <= "\x9f":
        return None
    try:
        meant = char.encode("latin-1").decode("cp1252")
    except UnicodeDecodeError:  # five of C1 are no character of Windows-1252
        return None
    return (f"{char!r}, a control character, which no text asks: Windows-1252 text read as Latin-1 holds it for "
            f"{meant!r}; write {meant!r} (or save the file again from its original, as UTF-8)")


def control_inside(char: str) -> str:
    """Why a control character UNASKED, raw in a benchmark's text or written as an escape (YAML's `\\e`, JSON's
    `\\u001b`), is refused."""
    return (f"{char!r}, a control character, which no text asks (it would be sent as written, and a terminal showing "
            "it takes it as a command); remove it (a tab, a line break or a form feed is kept)")

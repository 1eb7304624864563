"""A top-level field of a manifest.json read without its samples: a manifest's keys are written sorted, so
`benchmark`, `config` and `files` come before `samples`, and a reader of those stops there (a sweep's end reads each
job's `files`: a job of 100,000 samples was parsed whole, ten MB and a quarter second a job)."""

from __future__ import annotations

import codecs
import json
from pathlib import Path
from typing import Any, BinaryIO

from benchrun.core.errors import ArchiveError, reading
from benchrun.core.filebytes import regular_file

FIRST_BYTES = 2**16
"""How much is read first; each later read doubles what is held, so a field far in is parsed a few times at most."""
_DECODER = json.JSONDecoder()


def leading_field(path: Path, key: str) -> Any:
    """The value of the manifest `path`'s top-level `key`, read only as far as it; ArchiveError when the file is not
    a JSON object, or has no such key."""
    with reading(path), regular_file(path, str(path), ArchiveError) as file:
        text, decoder, ended = "", codecs.getincrementaldecoder("utf-8")(), False
        while not ended:
            text, ended = _more(file, decoder, text, path)
            try:
                return _field(text, key)
            except KeyError:
                raise ArchiveError(f"not a manifest: no {key}", file=str(path)) from None
            except (ValueError, IndexError, RecursionError) as err:  # the text held may end first: read on
                if ended:
                    raise ArchiveError(f"not valid JSON: {_why(err)}", file=str(path)) from None
    raise AssertionError("unreachable: the last read ends the loop")


def _more(file: BinaryIO, decoder: codecs.IncrementalDecoder, text: str, path: Path) -> tuple[str, bool]:
    """`text` and as much again of `file` (FIRST_BYTES at first), and whether the file has ended."""
    chunk = file.read(max(FIRST_BYTES, len(text)))
    try:
        return text + decoder.decode(chunk, final=not chunk), not chunk
    except UnicodeDecodeError as err:
        raise ArchiveError(f"not UTF-8 text ({err.reason})", file=str(path)) from None


def _why(err: Exception) -> str:
    if isinstance(err, IndexError):
        return "it ends too soon"
    return "nested too deep" if isinstance(err, RecursionError) else str(err)


def _field(text: str, key: str) -> Any:
    """`key`'s value in the JSON object that `text` begins: KeyError when the object has none, ValueError when it is
    not a JSON object, IndexError when `text` ends first."""
    at = _past(text, 0, "{")
    while _skip(text, at) < len(text) and text[_skip(text, at)] != "}":
        name, at = _DECODER.raw_decode(text, _skip(text, at))
        if not isinstance(name, str):
            raise ValueError(f"a key that is not a string at character {at}")
        value, at = _DECODER.raw_decode(text, _skip(text, _past(text, at, ":")))
        at = _skip(text, at)
        if text[at] != "}":  # first: a number the text held ends on may go on, and is read whole once it is held
            at = _past(text, at, ",")
        if name == key:
            return value
    if _skip(text, at) >= len(text):
        raise IndexError(at)
    raise KeyError(key)


def _past(text: str, at: int, mark: str) -> int:
    """Where `text` goes on after `mark`, its next character past white space from `at`."""
    at = _skip(text, at)
    if text[at] != mark:
        raise ValueError(f"expecting '{mark}' at character {at}")
    return at + 1


def _skip(text: str, at: int) -> int:
    """The first character from `at` that is not white space (the length of `text`, if none is)."""
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at

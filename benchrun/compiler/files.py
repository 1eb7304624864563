"""Reading one file of a benchmark: inside the benchmark only, UTF-8 (a byte-order mark tolerated), a CSV's cells
stripped and typed, a JSONL file's lines parsed with numbers held to what every JSON reader keeps."""

from __future__ import annotations

import csv
import errno
import io
import json
import math
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from benchrun.core.errors import TaskError, os_problem
from benchrun.core.filebytes import UNASKED, read_utf8, unasked_said
from benchrun.core.text import CODE, SURROGATE, SURROGATE_ESCAPE, counted, once_each
from benchrun.core.written import as_written
from benchrun.core.yamlfile import INT_RANGE, MAX_INT, float_as_written


@dataclass(frozen=True)
class Bounds:
    """What one data file of a benchmark may hold: cells of `cell` characters (task.max_prompt_chars), `records`
    records (task.max_samples), `size` bytes (task.max_file_bytes)."""

    cell: int
    records: int
    size: int


_INT = re.compile(r"[+-]?\d+", re.ASCII)
_FLOAT = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?", re.ASCII)
"""A number as a CSV cell is typed: in the digits 0-9, as JSON and YAML write one (`৩`, `٣` or `３` is text)."""


def present(bench: Path, path: Path) -> bool:
    """Whether the benchmark's file or folder `path` is there. A symbolic link that leads nowhere (to a path that is
    not there, or round a loop of links) is refused, naming it: taken as absent, a tasks.yml's tasks were not run and
    a custom_scorer.py's scorers unknown, without a word."""
    if not os.path.lexists(path):
        return False
    try:
        os.stat(path)
        return True
    except OSError as err:
        if err.errno in (errno.ENOENT, errno.ELOOP):
            why = f"to '{os.readlink(path)}', which is not there" if err.errno == errno.ENOENT else os_problem(err)
            said = f"a symbolic link that leads nowhere ({why})"
        else:  # into a folder this user may not enter, or to a name too long
            said = f"a symbolic link that cannot be followed (to '{os.readlink(path)}': {os_problem(err)})"
    raise TaskError(f"{said}; mend the link, or remove it", file=path.relative_to(bench).as_posix())


def inside(bench: Path, path: Path) -> None:
    """Refuse `path` unless it resolves inside the benchmark directory (a link out of it included)."""
    if not path.resolve().is_relative_to(bench):
        raise TaskError(f"links outside the benchmark directory (to {path.resolve()}); benchrun reads only files "
                        "inside it", file=path.relative_to(bench).as_posix())


def read_text(path: Path, rel: str, task: str, key: str | None = None, size: int | None = None) -> str:
    """A file's text as UTF-8 without a byte-order mark (Excel's CSV default is not text); a data file's at most
    `size` bytes (task.max_file_bytes)."""
    if not path.exists():
        raise TaskError("file is missing", file=rel, task=task, key=key)
    if size is None:
        return read_utf8(path, rel, TaskError, bom=True, task=task)
    return read_utf8(path, rel, TaskError, bom=True, limit=size, limit_key="task.max_file_bytes", task=task)


def read_csv(path: Path, rel: str, task: str, bounds: Bounds) -> tuple[list[str], list[list[Any]]]:
    """Header and typed rows of a CSV file; cells stripped, numbers typed, blank lines skipped; a cell over
    `bounds.cell` characters (task.max_prompt_chars), and a row that is the header again, refused."""
    lines = _rows(csv.reader(io.StringIO(read_text(path, rel, task, size=bounds.size), newline=""), strict=True),
                  rel, task, bounds.cell)
    if not lines:
        raise TaskError("empty values: no header and no rows", file=rel, task=task)
    header = [cell.strip() for cell in lines[0][1]]
    _one_separated(header, rel, task, lines[0][0])
    check_names(header, rel, task)
    if len(lines) < 2:
        raise TaskError("empty values: a header but no rows", file=rel, task=task)
    for number, row in lines[1:]:
        if len(row) != len(header):
            raise TaskError(f"malformed row: {counted(len(row), 'cell')} where the header has {len(header):,}",
                            file=rel, task=task, key=f"line {number}")
        if [cell.strip() for cell in row] == header:
            raise TaskError("the header again, as a row of values (two CSV files joined?): it would be asked as a "
                            "sample; remove it", file=rel, task=task, key=f"line {number}")
    return header, [[typed(cell.strip()) for cell in row] for _, row in lines[1:]]


OTHER_SEPARATORS = {";": "';'", "\t": "tabs", "|": "'|'"}
"""Separators of other CSV dialects (a European Excel's `;`, a TSV's tab), which a header read by commas keeps whole."""


def _one_separated(header: list[str], rel: str, task: str, number: int) -> None:
    """Refuse a header of one column holding another dialect's separator (`a;reference`), and Excel's line naming the
    separator (`sep=;`, `sep=,`) before the header, on line `number`: said as one invalid value name, it did not say
    what the file is."""
    if re.fullmatch(r"sep=.?", ",".join(header), re.IGNORECASE):
        raise TaskError(f"{','.join(header)!r} is the line Excel writes before a CSV's header to name its separator, "
                        "which benchrun does not read: remove the line (benchrun reads CSV separated by ',')",
                        file=rel, task=task, key=f"line {number}")
    found = [said for separator, said in OTHER_SEPARATORS.items() if len(header) == 1 and separator in header[0]]
    if found:
        raise TaskError(f"one column named {header[0]!r}: separated by {found[0]}? benchrun reads CSV separated by "
                        "','", file=rel, task=task, key="header")


CSV_ERRORS = {"unexpected end of data": "a quote opened in the row on this line is never closed, so every line after it "
                                        "would be one cell; close it (a quote inside a quoted cell is written twice: \"\")",
              "',' expected after '\"'": "text after a quoted cell's closing quote; quote the whole cell (a quote "
                                         "inside it written twice: \"\")"}
"""What the csv module's strict reader says of a quote left open or text after one, said of the row it begins on: read
leniently, a quote never closed in the last column made one reference of every line after it, the rows lost."""


def _rows(reader: Any, rel: str, task: str, max_cell: int) -> list[tuple[int, list[str]]]:
    """(the line each row begins on, its cells) of every row not blank; a row the strict reader refuses, or a cell over
    `max_cell` characters, refused naming the line the row begins on."""
    rows, begins = [], 1
    try:
        with _field_limit(max_cell):
            for row in reader:
                if any(cell.strip() for cell in row):
                    rows.append((begins, row))
                begins = reader.line_num + 1
    except csv.Error as err:
        why = f"a cell longer than task.max_prompt_chars ({max_cell:,} characters)" \
            if str(err).startswith("field larger than field limit") else CSV_ERRORS.get(str(err), f"not CSV: {err}")
        raise TaskError(why, file=rel, task=task, key=f"line {begins}") from None
    return rows


def read_jsonl(path: Path, rel: str, task: str, bounds: Bounds) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON) of each non-blank line; a line that does not parse, or a file of more than
    `bounds.records` records, is refused naming the line."""
    count, max_lines = 0, bounds.records
    lines = read_text(path, rel, task, size=bounds.size).split("\n")  # not splitlines: U+2028 is JSON string text
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        count += 1
        if count > max_lines:
            raise TaskError(f"more than {counted(max_lines, 'record')} (task.max_samples)", file=rel, task=task,
                            key=f"line {number}")
        yield number, _parsed(line, rel, task, number)


def _parsed(line: str, rel: str, task: str, number: int) -> Any:
    where = {"file": rel, "task": task, "key": f"line {number}"}
    try:
        value = json.loads(line, object_pairs_hook=once_each, parse_constant=_no_constant, parse_int=_bounded_int,
                           parse_float=_finite_float)
    except json.JSONDecodeError as err:
        raise TaskError(f"not JSON: {err.msg} (column {err.colno})", **where) from None
    except RecursionError:
        raise TaskError("not JSON a benchmark can hold: nested too deep", **where) from None
    except ValueError as err:
        raise TaskError(str(err), **where) from None
    if ESCAPE.search(line) and (found := next(filter(None, map(UNASKED.search, _texts(value))), None)):
        raise TaskError(unasked_said(found[0]), **where)  # raw, it is utf8_text's
    if SURROGATE_ESCAPE.search(line) and (half := SURROGATE.search(json.dumps(value, ensure_ascii=False))):
        raise TaskError(f"\\u{ord(half[0]):04x} is half of a UTF-16 surrogate pair, not a character; write the "
                        "character itself (or both halves of its pair, \\ud83d\\ude00)", **where)
    return value


ESCAPE = re.compile(r"\\(?:u00[01]|u007[fF]|u00[89]|u[fF][eE][fF][fF]|b)")
"""JSON's escapes that may write a character UNASKED (`\\u0000`, `\\u001b`, `\\u007f`, `\\u0093`, `\\ufeff`, `\\b`): a
line without one holds none, its raw text read as a file's (utf8_text); `\\u00e9` is no reason to look."""


def _texts(value: Any) -> Iterator[str]:
    """Every string of the parsed JSON `value` (its keys too), walked without recursion."""
    stack = [value]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            yield from value
            stack += value.values()
        elif isinstance(value, list):
            stack += value


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a value: a value must be a finite number, a string or a bool")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        _no_constant(text)
    if not float_as_written(text, value):
        shown = text if len(text) <= 40 else f"{text[:20]}…({len(text):,} characters)"
        raise ValueError(f"the number {shown} is read as {value!r}, not as written (a double cannot hold it); quote it "
                         "to keep it as text")
    return as_written(text, value)


def _bounded_int(text: str) -> int:
    value = int(text) if len(text) <= len(str(MAX_INT)) + 1 else None
    if value is None or abs(value) > MAX_INT:
        shown = text if len(text) <= 40 else f"{text[:20]}…({len(text):,} characters)"
        raise ValueError(f"the integer {shown} is outside {INT_RANGE}; quote it to keep it as text")
    return as_written(text, value)


REFERENCE = "reference"
"""The column of a values file that holds the references (the others are values)."""


def check_names(names: list[str], rel: str, task: str, line: int | None = None) -> None:
    """Value names (a CSV header, or the keys of a JSONL file's first record, on `line`) are identifiers, each once,
    one at least besides the reference (a file of references alone made samples of no values, and a traceback)."""
    if set(names) == {REFERENCE}:
        raise TaskError("no values: the file gives a reference alone; give each sample its values (the template's "
                        "fields) or an id", file=rel, task=task)
    named, key = ("key", f"line {line}") if line is not None else ("column", "header")
    for i, name in enumerate(names):
        if not name.isidentifier():
            raise TaskError(f"{named} {i + 1} has an invalid name {name!r}", file=rel, task=task, key=key)
        if names.index(name) != i:
            raise TaskError(f"{named} '{name}' appears twice", file=rel, task=task, key=key)


@contextmanager
def _field_limit(chars: int) -> Iterator[None]:
    """The csv module's bound on a cell (131,072 characters unless set) as `chars` while a file is read."""
    before = csv.field_size_limit(chars)
    try:
        yield
    finally:
        csv.field_size_limit(before)


def typed(cell: str) -> int | float | str:
    """'2' -> 2, '2.5' -> 2.5, anything else stays a string; so does an integer with a leading zero ('007', '02139':
    a code or an id, which would be asked and scored as 7) or outside ±MAX_INT (what every JSON reader keeps
    exactly), a number in other digits than 0-9 ('৩ + ৪' was asked as '3 + 4'), and one a double cannot hold as
    written ('2.00000000000000001' was asked as '2.0', '1e-999' as '0.0'), as the text it is."""
    if _INT.fullmatch(cell):
        unsigned = cell.lstrip("+-")
        digits = unsigned.lstrip("0") or "0"
        if len(digits) > len(str(MAX_INT)) or int(digits) > MAX_INT or CODE.fullmatch(cell):
            return cell
        return as_written(cell, -int(digits) if cell.startswith("-") else int(digits))
    if _FLOAT.fullmatch(cell) and (not math.isfinite(value := float(cell)) or float_as_written(cell, value)):
        return as_written(cell, value)
    return cell

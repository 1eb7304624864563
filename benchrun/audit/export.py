"""`export RUN ... --format csv|jsonl`: one row per sample x metric, with the run's varied settings and the sample's
values as columns (`--text`: also the chat asked, system prompt, few-shot turns and prompt, and the response)."""

from __future__ import annotations

import argparse
import csv
import json
import sys
import unicodedata
from contextlib import nullcontext
from typing import IO, Any, Sequence

from benchrun.archive.atomic import atomic_file
from benchrun.archive.reader import Run
from benchrun.archive.rows import columns, export_rows
from benchrun.audit import arguments
from benchrun.audit.named import one_each, runs_named
from benchrun.audit.outputname import suffix_fits
from benchrun.console.output import warning
from benchrun.core.errors import EXIT
from benchrun.core.text import counted

FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\0")
"""What a spreadsheet takes a cell's formula to start with (OWASP's list, under CSV injection; and NUL, ASVS 1.2.10's:
a spreadsheet that drops it runs what follows, a model's answer `\\0=HYPERLINK(...)`)."""
FORMULA_SIGNS = ("=", "+", "-", "@")
"""The signs a formula starts with, which a spreadsheet finds past leading white space (Excel, Sheets and Numbers skip
it, a no-break space too) and in their full-width forms (`＝`: an East Asian spreadsheet takes it for `=`)."""
LINE_END = "\r\n"
"""RFC 4180's, with which the writer quotes a cell holding either line break (with "\n" alone a bare CR in a cell is
left as it is, and a spreadsheet starts a row there: a formula after it would run)."""


def write_csv(runs: Sequence[Run], out: IO[str], text: bool = False) -> int:
    """CSV (RFC 4180: CRLF line ends) with a header; empty cells for missing values, a list or mapping (a reference,
    a setting) as JSON, text that a spreadsheet would run as a formula (`=1+1`, `@SUM(A1)`, `-2+3`) after a '
    (OWASP's recommendation), in the header too (a varied setting's name is a column's), and numbers as they are.
    Returns the row count."""
    names = columns(runs, text)
    writer = csv.DictWriter(out, fieldnames=names, lineterminator=LINE_END)
    writer.writerow({name: _cell(name) for name in names})
    count, long_cells = 0, []
    for run in runs:
        for row in export_rows(run, text):
            cells = {key: _cell(value) for key, value in row.items()}
            writer.writerow(cells)
            count += 1
            long_cells += [(count + 1, key, len(cell)) for key, cell in cells.items()
                           if isinstance(cell, str) and len(cell) > SHEET_CELL]
    _beyond_a_sheet(count + 1, long_cells)
    return count


SHEET_CELL, SHEET_ROWS = 32_767, 1_048_576
"""The most characters a spreadsheet's cell holds and the most rows its sheet does (Excel's; LibreOffice's rows too):
a CSV opened in one loses what is past them, unsaid."""


def _beyond_a_sheet(rows: int, long_cells: list[tuple[int, str, int]]) -> None:
    """A warning of what a spreadsheet opening the CSV of `rows` rows (its header's among them) would lose: the rows
    past SHEET_ROWS, and the end of each of `long_cells` (row, column, characters) past SHEET_CELL."""
    whole = "`--format jsonl` keeps every one whole"
    if long_cells:
        row, column, size = long_cells[0]
        warning(f"export: {counted(len(long_cells), 'cell')} of more characters than a spreadsheet's cell holds "
                f"(Excel's {SHEET_CELL:,}), the first row {row}'s {column} ({size:,}): one opening the CSV cuts them "
                f"short; {whole}")
    if rows > SHEET_ROWS:
        warning(f"export: {rows:,} rows with its header, more than a spreadsheet's sheet holds (Excel's "
                f"{SHEET_ROWS:,}): one opening the CSV leaves the last {rows - SHEET_ROWS:,} out; {whole}")


def _cell(value: Any) -> Any:
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, (list, dict)) else value
    return "'" + text if isinstance(text, str) and formula_like(text) else text


def formula_like(text: str) -> bool:
    """Whether a spreadsheet may read the cell `text` as a formula: it starts with FORMULA_START, or its first
    character past white space is a formula's sign in its compatibility form (NFKC: `＝`, `﹦` are `=`)."""
    first = text.lstrip()[:1]
    return text.startswith(FORMULA_START) or unicodedata.normalize("NFKC", first).startswith(FORMULA_SIGNS)


def write_jsonl(runs: Sequence[Run], out: IO[str], text: bool = False) -> int:
    """One JSON object per row, every row with the same keys (null where there is no value)."""
    empty = dict.fromkeys(columns(runs, text))
    count = 0
    for run in runs:
        for row in export_rows(run, text):
            out.write(json.dumps({**empty, **row}, ensure_ascii=False) + "\n")
            count += 1
    return count


WRITERS = {"csv": write_csv, "jsonl": write_jsonl}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run directory, run id prefix or sweep directory")
    arguments.add_root(parser)
    parser.add_argument("--format", choices=sorted(WRITERS), default="csv", help="csv (default) or jsonl")
    parser.add_argument("--text", action="store_true", help="add the chat (system prompt, few-shot turns, prompt) and the raw response as columns")
    parser.add_argument("--output", type=arguments.output, help="write to this file (default, or -: standard output)")


def utf8(stream: IO[str]) -> IO[str]:
    """`stream` writing UTF-8 whatever the locale's encoding (PYTHONIOENCODING=ascii): an export is data, written as
    --output's file is, never with a character escaped or refused."""
    if hasattr(stream, "reconfigure"):
        stream.reconfigure(encoding="utf-8", errors="strict")
    return stream


def main(args: argparse.Namespace) -> int:
    """Write the rows to standard output, or to --output whole or not at all (a failed export leaves the file that
    was there as it was)."""
    runs = runs_named(args.runs, args.root)
    runs = one_each(runs, "an export tells its rows' runs apart by run id")
    named = args.output is not None and str(args.output) != "-"  # `-`: standard output, as without --output
    target = (atomic_file(args.output, "w", follow=True, encoding="utf-8", newline="") if named
              else nullcontext(utf8(sys.stdout)))
    with target as out:
        if named:  # once the file is known to be no file of the archive's
            suffix_fits(args.output, args.format, "export", tuple(WRITERS), "--format")
        WRITERS[args.format](runs, out, args.text)
    return EXIT["ok"]

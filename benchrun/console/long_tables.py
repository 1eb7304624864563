"""Long tables printed fast, exactly as rich prints them: rich lays out a table of the few rows that decide each
column's width, and every row is then set in those widths here (rich takes about a millisecond a row).

Written here, not left to rich, because `list` over 1,000 runs took 1.3-1.7 s with rich laying out every row and
takes 0.7 s so; rich has no public way to give the column widths its layout chose, so they are read off its own
rendering of the deciding rows, the result is checked against it, and any doubt leaves the whole table to rich."""

from __future__ import annotations

from typing import Callable, Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.table import Column, Table
from rich.text import Text

Cell = str | Text
Row = Sequence[Cell]
FEW = 50
"""Tables of fewer rows are left to rich."""


def print_table(console: Console, table: Callable[[Sequence[Row]], Table], rows: Sequence[Row]) -> None:
    """`console.print(table(rows))`. Off a terminal (plain text, no styles) a long table's rows are set here, once
    rich's layout of the deciding rows matches theirs; otherwise, and on any doubt, rich prints the whole table."""
    if console.is_terminal or len(rows) < FEW:
        console.print(table(rows))
        return
    plain = [[_plain(cell) for cell in row] for row in rows]
    if any(text is None for texts in plain for text in texts):
        console.print(table(rows))
        return
    deciding = _deciding_rows(plain)
    small = table([rows[i] for i in deciding])
    with console.capture() as capture:
        console.print(small)
    lines = capture.get().split("\n")[:-1]
    body = _set(console, small.columns, [rows[i] for i in deciding], [plain[i] for i in deciding], lines)
    if not body or len(body) >= len(lines) or lines[-1 - len(body):-1] != body:  # rich set them otherwise
        console.print(table(rows))
        return
    head, bottom = lines[:-1 - len(body)], lines[-1]
    console.file.write("\n".join([*head, *_set(console, small.columns, rows, plain, lines), bottom]) + "\n")
    console.file.flush()


def _plain(cell: Cell) -> str | None:
    """A cell's text (a str is plain: the console prints no markup); None for a Text that sets its own layout."""
    if not isinstance(cell, Text):
        return cell
    return cell.plain if (cell.justify, cell.overflow, cell.no_wrap) == (None, None, None) else None


def _deciding_rows(plain: Sequence[Sequence[str]]) -> list[int]:
    """Per column, the row with the longest line and the row with the longest word: rich measures a column by
    those two maxima alone, so a table of these rows gets the widths of the whole table."""
    chosen = set()
    for column in range(len(plain[0])):
        widest = [_measure(row[column]) for row in plain]
        chosen.add(max(range(len(plain)), key=lambda i: widest[i][0]))
        chosen.add(max(range(len(plain)), key=lambda i: widest[i][1]))
    return sorted(chosen)


def _measure(text: str) -> tuple[int, int]:
    """(longest word, longest line) in cells, as rich measures a text."""
    lines = text.splitlines()
    longest = max((cell_len(line) for line in lines), default=0)
    return max((cell_len(word) for word in text.split()), default=longest), longest


def _set(console: Console, columns: list[Column], rows: Sequence[Row], plain: Sequence[Sequence[str]],
         lines: list[str]) -> list[str] | None:
    """The body lines of `rows` in the column widths and vertical rules of rich's rendering `lines`; None when a
    column has no room."""
    bottom = lines[-1]
    edges = [0, *(i for i in range(1, len(bottom) - 1) if bottom[i] != bottom[1]), len(bottom) - 1]
    widths = [right - left - 3 for left, right in zip(edges, edges[1:])]
    if len(widths) != len(columns) or min(widths) < 1:
        return None
    rules = next((line for line in reversed(lines[:-1]) if len(line) == len(bottom)), bottom)  # a char a cell
    body = []
    for row, texts in zip(rows, plain):
        cells = [_cell(console, *each) for each in zip(columns, row, texts, widths)]
        body += [_join(rules, edges, [cell[i] if i < len(cell) else " " * width for cell, width in zip(cells, widths)])
                 for i in range(max(len(cell) for cell in cells))]
    return body


def _join(rules: str, edges: list[int], cells: list[str]) -> str:
    """One body line: the vertical rules of a line rich set around each padded cell."""
    return rules[0] + "".join(f" {cell} {rules[edge]}" for cell, edge in zip(cells, edges[1:]))


def _cell(console: Console, column: Column, cell: Cell, text: str, width: int) -> list[str]:
    """A cell's lines, each `width` wide: set here when every line is printable ASCII that fits, else by rich."""
    parts = text.split("\n")
    if all(part.isascii() and part.isprintable() and len(part) <= width for part in parts):
        if column.justify == "right":
            return [part.rstrip().rjust(width) for part in parts]
        if column.justify in ("left", "default"):
            return [part.ljust(width) for part in parts]
    rich_text = cell if isinstance(cell, Text) else Text(cell)
    wrapped = rich_text.wrap(console, width, justify=column.justify, overflow=column.overflow,
                             no_wrap=column.no_wrap)
    return [line.plain + " " * (width - cell_len(line.plain)) for line in wrapped]

"""Long tables set by benchrun.console.long_tables print exactly what rich prints for the whole table, and rich lays out only the
rows that decide the widths (unless the table is one it must set itself)."""

from __future__ import annotations

import io
import random
from typing import Sequence

import pytest
from rich.table import Table
from rich.text import Text

from benchrun.console.long_tables import FEW, Row, print_table
from benchrun.console.output import _Console

WORDS = ("a", "llama3.2", "模型", "ünïcode", "tab\there", "two words", "bell\x07", " lead", "trail ", "line\nbreak",
         "exact_match=0.600", "a-rather-long-word-that-must-be-folded", "é", "🙂", "")


def table_of(rows: Sequence[Row]) -> Table:
    """A table like `list`'s: fixed columns (one right-justified), two folding ones sharing the rest."""
    table = Table(title="the rows", title_justify="left", expand=True)
    table.add_column("id", no_wrap=True)
    table.add_column("n", no_wrap=True, justify="right")
    table.add_column("name", no_wrap=True)
    table.add_column("what", overflow="fold", ratio=1)
    table.add_column("values", overflow="fold", ratio=2)
    for row in rows:
        table.add_row(*row)
    return table


def rows_of(n: int, seed: int, longest: int = 4) -> list[Row]:
    rng = random.Random(seed)
    words = lambda k: " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, k)))  # noqa: E731
    return [(f"{i:06x}", f"{rng.randint(0, 999)}/{rng.randint(1, 999)}" + ("\n3 cached" if i % 7 == 0 else ""),
             Text(words(2)), Text(words(longest)), Text("\n".join(words(3) for _ in range(rng.randint(0, 3)))))
            for i in range(n)]


def printed(width: int, rows: list[Row], fast: bool) -> tuple[str, list[int]]:
    """What is printed (by print_table, or by rich alone), and the row counts of the tables rich was given."""
    out, given = io.StringIO(), []

    def table(some: Sequence[Row]) -> Table:
        given.append(len(some))
        return table_of(some)

    console = _Console(highlight=False, markup=False, emoji=False, file=out, width=width)
    print_table(console, table, rows) if fast else console.print(table(rows))
    return out.getvalue(), given


@pytest.mark.parametrize("width", [200, 160, 100, 60])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_long_table_is_printed_as_rich_prints_it(width, seed):
    rows = rows_of(300, seed)
    assert printed(width, rows, fast=True)[0] == printed(width, rows, fast=False)[0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rich_lays_out_only_the_deciding_rows(seed):
    rows = rows_of(300, seed)
    assert printed(160, rows, fast=True)[1] == [7]


def test_a_table_whose_columns_rich_collapses_is_left_to_rich():
    rows = rows_of(300, 0)
    assert printed(60, rows, fast=True) == (printed(60, rows, fast=False)[0], [7, len(rows)])


def test_a_short_table_is_left_to_rich():
    rows = rows_of(FEW - 1, 4)
    assert printed(160, rows, fast=True) == printed(160, rows, fast=False)

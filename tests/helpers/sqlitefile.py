"""An SQLite file opened by a test, committed and closed on leaving: sqlite3's own `with` only commits, and Python
3.13 warns of every connection left to the collector (the suite turns warnings into errors)."""

from __future__ import annotations

import sqlite3
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, Iterator


@contextmanager
def sqlite_db(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection to `path`, committed (unless the block raised) and closed on leaving."""
    with closing(sqlite3.connect(path)) as db, db:
        yield db


def rows(path: Path, query: str) -> list[tuple[Any, ...]]:
    """The rows `query` gives in the SQLite file `path`."""
    with sqlite_db(path) as db:
        return db.execute(query).fetchall()

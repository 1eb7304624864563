"""`cache [--cache-dir DIR] [--digest PREFIX] [--clear] [--json]`: where the response cache is, its size on disk and
its entries per model; `--clear` deletes them (with `--digest`, one model's). Listing only reads: the database is
opened read-only (`Listing`), so a cache on a read-only medium, or another user's, is listed as it is, and no entry,
table or database is made (SQLite's read-only readers of a database in WAL mode may leave its -shm file beside it)."""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
from dataclasses import asdict
from pathlib import Path

from rich.table import Table
from rich.text import Text

from benchrun.archive.openwriters import command_of, writers
from benchrun.console import output
from benchrun.console.visible import shown_name, visible
from benchrun.core.errors import EXIT, ConfigError, writing
from benchrun.core.recordvalues import short_digest
from benchrun.execute.cache import (
    BUSY_TIMEOUT_S,
    DB_FILE,
    LOCKED,
    SCHEMA_VERSION,
    OtherVersion,
    Stats,
    Store,
    size_on_disk,
)
from benchrun.execute.cacheplace import Advice, cache_dir, chosen_by, misplaced_store
from benchrun.execute.cacheseal import UNSEALED_VERSION

ADVICE = Advice("this command lists and clears only a cache it can open: name the cache's own folder with "
                "--cache-dir, or move this file aside (a run makes a new cache where there is none)",
                "let that process finish and try again", "benchrun-audit cache --clear removes it")
"""What to do about a cache this command cannot open: not a run's cache_dir= or cache=false, which it takes no more
than --cache-dir."""
HEX_PREFIX = re.compile(r"(?i)(sha256:)?[0-9a-f]+")
"""What --digest takes, in either case: a digest is kept and compared in lower case (`model_digest`)."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cache-dir", metavar="DIR", help="the cache's directory (default: $XDG_CACHE_HOME/benchrun, "
                                                           "else ~/.cache/benchrun)")
    parser.add_argument("--digest", metavar="PREFIX", help="only the models whose digest starts with PREFIX (shown, "
                                                           "or with --clear cleared)")
    parser.add_argument("--clear", action="store_true", help="delete the entries (every one, or --digest's)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def main(args: argparse.Namespace) -> int:
    if args.digest is not None and not HEX_PREFIX.fullmatch(args.digest):
        raise ConfigError(f"'{args.digest}' is not the start of a digest (hex digits, sha256: allowed)", key="--digest")
    args.digest = None if args.digest is None else args.digest.lower()
    directory, key = cache_dir(args.cache_dir, option="--cache-dir"), chosen_by(args.cache_dir, "--cache-dir")
    check_kind(directory, key)
    if not (directory / DB_FILE).exists():  # nothing to show or clear: the cache is not made just to say so
        report(Stats(directory / DB_FILE, 0, ()), None if not args.clear else 0, args)
        return EXIT["ok"]
    if not args.clear:
        with Listing(directory, key) as listing:
            report(listing.stats(args.digest), None, args)
        return EXIT["ok"]
    with writing(directory / DB_FILE), open(directory / DB_FILE, "ab"):  # a medium or file it may not write: one
        pass  # line naming the file, before SQLite's "unable to open database file"
    try:
        store = Clearing(directory, key, ADVICE)
    except OtherVersion as other:
        if args.digest is not None:
            raise
        removed(remove_database(directory), other.version, args.json)
        return EXIT["ok"]
    try:
        store.stats()  # read first: another program's database is refused before anything in it is deleted
        cleared = store.clear(args.digest)
        report(store.stats(), cleared, args)  # after a clear: what is left
    except sqlite3.Error as err:  # a database, but not the cache's (its tables are another program's)
        raise store.unusable(err) from None
    finally:
        store.close()
    return EXIT["ok"]


class CacheBusy(ConfigError):
    """Another process holds the cache's write lock: nothing is wrong with the command, which is refused as a run
    directory another process writes is (ArchiveBusy's exit)."""

    exit_code = EXIT["archive"]


class Clearing(Store):
    """The cache opened to clear it: a write lock another process holds is said with who holds the database open."""

    def unusable(self, err: Exception) -> ConfigError:
        if not (isinstance(err, sqlite3.OperationalError) and err.sqlite_errorcode & 0xFF in LOCKED):
            return super().unusable(err)
        database = self.path.resolve()
        held = ", ".join(map(command_of, writers([database, Path(f"{database}-wal")]))) or "a process not seen here"
        return CacheBusy(f"nothing was cleared: the response cache at {self.path} is held by another process, which "
                         f"has kept its write lock for over {BUSY_TIMEOUT_S:g} s ({held} has it open): let it finish "
                         "(or end it) and clear again")


class Listing(Store):
    """The cache's database opened read-only (SQLite's `mode=ro`; `immutable=1` in a folder it may not write, where
    a database in WAL mode cannot otherwise be opened), its schema version checked as `Store` checks it: a database
    without one (empty, or a 0-byte file) has no entries."""

    def __init__(self, directory: Path, key: str):
        self.dir, self.path, self.key, self.advice = directory, directory / DB_FILE, key, ADVICE
        mode = "mode=ro" if os.access(directory, os.W_OK) or _logged(self.path, key) else "immutable=1"
        try:
            self._db = sqlite3.connect(f"{self.path.absolute().as_uri()}?{mode}", uri=True, timeout=BUSY_TIMEOUT_S,
                                       isolation_level=None)
        except sqlite3.Error as err:
            raise self.unusable(err) from None
        try:
            self.version = self._version()
            if self.version is None:
                self._refuse_foreign()
            elif self.version not in (str(SCHEMA_VERSION), UNSEALED_VERSION):  # listed alike, sealed or not
                raise OtherVersion(self.path, self.version, key, ADVICE)
        except BaseException as err:
            self._db.close()
            if isinstance(err, sqlite3.Error):
                raise self.unusable(err) from None
            raise

    def stats(self, digest_prefix: str | None = None) -> Stats:
        if self.version is None:
            return Stats(self.path, size_on_disk(self.path), ())
        try:
            return super().stats(digest_prefix)
        except sqlite3.Error as err:  # a database, but not the cache's (its tables are another program's)
            raise self.unusable(err) from None


def _logged(database: Path, key: str) -> bool:
    """Whether the database, in a folder this command may not write, has a write-ahead log holding what its writer
    committed and no checkpoint copied in yet (a writer killed, a cache copied as it was written): read then as it is
    (SQLite's `mode=ro` reads it beside its -shm file), never passed over as `immutable=1` would, which listed those
    entries as none; without its -shm file SQLite cannot read it there, said in one line."""
    try:
        if os.stat(f"{database}-wal").st_size == 0:
            return False
    except OSError:
        return False
    if not os.path.lexists(f"{database}-shm"):
        raise ConfigError(f"the response cache at {database} has entries in its write-ahead log ({database}-wal), "
                          f"which SQLite reads only beside its -shm file or in a folder it may write, and it may not "
                          f"write this one: list a copy of the folder (cp -r)", key=key)
    return True


def remove_database(directory: Path) -> Path:
    """Remove the cache's database and SQLite's files beside it (a cache of another schema version, which cannot be
    cleared entry by entry); its path."""
    database = directory / DB_FILE
    for path in (database.with_name(database.name + suffix) for suffix in ("", "-wal", "-shm", "-journal")):
        with writing(path):
            path.unlink(missing_ok=True)
    return database


def removed(database: Path, version: str, as_json: bool) -> None:
    """Say that the database of another schema version was removed."""
    if as_json:
        print(json.dumps({"removed": str(database), "schema_version": version}, indent=2))
        return
    output.say(output.stdout(), f"removed the response cache at {shown_name(str(database))}, of schema version {version[:40]!r} "
                                "(another version of benchrun made it)")


def check_kind(directory: Path, key: str) -> None:
    """Refuse a cache folder that is no folder, or a database that is no file (a pipe, a folder): there is no cache
    there to say it is empty."""
    problem = misplaced_store(directory, directory / DB_FILE)
    if problem is not None:
        raise ConfigError(problem, key=key)


def report(stats: Stats, cleared: int | None, args: argparse.Namespace) -> None:
    if args.json:
        data = {"path": str(stats.path), "size": stats.size, "entries": stats.entries,
                "models": [asdict(m) for m in stats.models]}
        print(json.dumps(data if cleared is None else {"cleared": cleared, **data}, indent=2))
        return
    out = output.stdout()
    if cleared is not None:
        out.print(Text(f"cleared {_entries(cleared)}" + (f" of digest {args.digest}" if args.digest else "")))
    output.say(out, f"response cache: {shown_name(str(stats.path))}, {_entries(stats.entries)}, {human_size(stats.size)}")
    if stats.models:
        out.print(table(stats))


def table(stats: Stats) -> Table:
    """model, short digest, entries and the newest entry's time (UTC)."""
    grid = Table()
    for column in ("model", "digest", "entries", "newest (UTC)"):
        grid.add_column(column, no_wrap=True, justify="right" if column == "entries" else "left")
    for line in stats.models:
        grid.add_row(Text(visible(line.model)), Text(visible(short_digest(line.digest))) if line.digest else "-",
                     str(line.entries), Text(visible(line.newest[:19].replace("T", " "))))
    return grid


def _entries(n: int) -> str:
    return f"{n} entr{'y' if n == 1 else 'ies'}"


SIZE_UNITS = (("GB", 1e9), ("MB", 1e6), ("kB", 1e3))


def human_size(size: int) -> str:
    """Bytes as `512 B`, `40.0 kB`, `3.2 MB` (powers of 1000); a size that rounds to 1000 of a unit in the next
    (999,999 bytes: `1.0 MB`, not `1000.0 kB`)."""
    for (unit, scale), larger in zip(SIZE_UNITS, (None, *SIZE_UNITS)):
        if size >= scale:
            shown = f"{size / scale:.1f}"
            return f"{size / larger[1]:.1f} {larger[0]}" if larger and shown == "1000.0" else f"{shown} {unit}"
    return f"{size} B"

"""The response cache: successful answers of a pinned model, in SQLite under the user cache directory.

An answer is found again by `cache_key`: the runner type, what pins the model (Ollama's digest, the GGUF's sha256,
or for runner=openai the served model id, system_fingerprint and what the server says of the weights), every setting
the runner sends besides the prompt and format, the rendered prompt (the whole chat when there is more than the
prompt), the format's JSON schema as the engine is given it (`Runner.format_sent`), and the repeat index with its
seed. The store is one SQLite file in WAL mode with a busy timeout and one short transaction per write, so parallel
sweep jobs on one machine share it; on a network file system (where SQLite's locks cannot be trusted) it is refused.
"""

from __future__ import annotations

import hashlib
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, NamedTuple

from benchrun.archive.claims import archive_around
from benchrun.archive.writer import now
from benchrun.compiler.tasksdir import tasks_around
from benchrun.core.errors import ConfigError
from benchrun.core.manifest import Message, canonical_json
from benchrun.core.records import Completion
from benchrun.execute.boundary import TooLarge, received
from benchrun.execute.cachepin import pinned_by
from benchrun.execute.cacheplace import RUN_ADVICE, Advice, cache_dir, chosen_by, misplaced_store, refuse_network_fs
from benchrun.execute.cacherows import AS_BYTES, Entry, entry_of, row_bytes, shown
from benchrun.execute.cacheseal import SEALED, add_seals, row_seal, sealed

SCHEMA_VERSION = 2
KEY_VERSION = 1
"""Part of every key: a change to what a key covers gives every question a new one."""
Schema = Mapping[str, Any]
DB_FILE = "responses.sqlite3"
BUSY_TIMEOUT_S = 5.0
"""How long a write waits for another process's write lock before the cache is called locked. Every writer holds it
for one short transaction (an answer's INSERT, or WAL's checkpoint), so sweep jobs sharing a cache wait far less:
measured on 2 cores, 8 processes each writing 2,000 answers as fast as they could waited 0.33 s at the longest for
the lock (0.13 ms on average), 32 such processes 1.1 s. A lock held for seconds is a process keeping a transaction
open (a sqlite3 shell, `benchrun-audit cache --clear` vacuuming a large cache), which a longer wait would only
freeze the run for."""
ANY_SIZE = 2**63 - 1
"""No bound on the answers read (SQLite's own, 1 GB, holds)."""
LOCKED = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
"""SQLite's primary result codes for a database another connection holds locked."""
PINNED = ("ollama", "local")
"""Runner types whose identity pins the model (a digest): the cache is on for them unless cache=false."""
SCHEMA = ("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
          "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, model TEXT NOT NULL, digest TEXT, "
          "run_id TEXT NOT NULL, created_at TEXT NOT NULL, answer TEXT NOT NULL, sealed TEXT)")


class Repeat(NamedTuple):
    """Which answer to a sample: the repeat index (0..k-1) and the seed sent with it."""

    index: int
    seed: Any


@dataclass(frozen=True)
class ModelEntries:
    """`stats` for one model: its name, digest, how many answers and the newest one's time."""

    model: str
    digest: str | None
    entries: int
    newest: str


@dataclass(frozen=True)
class Stats:
    path: Path
    size: int
    """Bytes on disk: the database and its write-ahead log (not the shared-memory index beside them)."""
    models: tuple[ModelEntries, ...]

    @property
    def entries(self) -> int:
        return sum(m.entries for m in self.models)


def asked(messages: list[Message]) -> str | list[Message]:
    """What a key holds of a chat: a lone user message's text (as keys held the prompt before chats, so those keys
    are unchanged), else the whole chat."""
    if len(messages) == 1 and messages[0]["role"] == "user":
        return messages[0]["content"]
    return messages


def cache_key(runner: str, model: Mapping[str, Any], settings: Mapping[str, Any], prompt: str | list[Message],
              schema: Mapping[str, Any], repeat: Repeat) -> str:
    """sha256 of the canonical JSON of everything that determines an answer (see the module docstring)."""
    return hashlib.sha256(canonical_json(_keyed(runner, model, settings, prompt, schema, repeat))).hexdigest()


def _keyed(runner: str, model: Mapping[str, Any], settings: Mapping[str, Any], prompt: str | list[Message],
           schema: Mapping[str, Any], repeat: Repeat) -> dict[str, Any]:
    return {"version": KEY_VERSION, "runner": runner, "model": model, "settings": settings, "prompt": prompt,
            "schema": schema, "repeat": repeat.index, "seed": repeat.seed}


LOOKUP_BATCH = 256
"""Keys looked up in one query: a run looks its next answers up ahead, 256 at a time."""
_PROMPT = "\x00benchrun-cache-key-prompt-0b6f2c\x00"
"""Stands for the prompt in a key's canonical JSON rendered once per format and repeat (see RunCache.key)."""


def enabled(cache: bool | None, runner_type: str, options: Mapping[str, Any]) -> bool:
    """cache=true/false as given; unset, on for the runners that pin the model by digest, asked with `options` that
    give the same request the same answer (`drawn_at_random`)."""
    return cache if cache is not None else runner_type in PINNED and not drawn_at_random(options)


def drawn_at_random(options: Mapping[str, Any]) -> bool:
    """Whether answers asked with `options` are draws at random: a temperature above 0 (or the server's own, unset)
    and no seed, so that the same request gets another answer each time (a run asked so twice is two draws, not one
    answer kept and taken again)."""
    return options.get("temperature") != 0 and not isinstance(options.get("seed"), int)


class RunCache:
    """The store as one run uses it: the parts of the key that one run never changes, bound once; answers read back
    at most `max_bytes` long (the setting `bound`, runner.max_response_bytes), as the runner reads them."""

    def __init__(self, store: Store, runner: str, pin: dict[str, Any], settings: dict[str, Any], model: str,
                 run_id: str, max_bytes: int, bound: str, sent: Callable[[Schema], Schema] = lambda schema: schema):
        self.store, self.runner, self.pin, self.settings, self.sent = store, runner, pin, settings, sent
        self.model, self.digest, self.run_id = model, pin.get("digest"), run_id
        self.max_bytes, self.bound = max_bytes, bound
        self._around: dict[tuple[int, Repeat], tuple[Any, ...]] = {}

    def key(self, messages: list[Message], schema: Schema, repeat: Repeat) -> str:
        """`cache_key`'s value for the chat `messages` (`asked`) and the format `schema` as the engine is given it
        (`sent`), with the JSON around the chat rendered once per format schema and repeat."""
        prompt = asked(messages)
        around = self._around.get((id(schema), repeat))
        if around is None:
            whole = canonical_json(_keyed(self.runner, self.pin, self.settings, _PROMPT, self.sent(schema), repeat))
            around = (schema, *whole.split(canonical_json(_PROMPT)))  # the schema kept, so its id stays its own
            self._around[(id(schema), repeat)] = around
        if len(around) != 3:  # the stand-in is in the schema or the settings too: render it all
            return cache_key(self.runner, self.pin, self.settings, prompt, self.sent(schema), repeat)
        return hashlib.sha256(around[1] + canonical_json(prompt) + around[2]).hexdigest()

    def get_many(self, keys: list[str]) -> dict[str, Entry]:
        """The store's entries under `keys`, each answer taken through the boundary a server's answer is (`received`),
        so a planted or damaged entry cannot bring into a run what no server can have measured (a negative count,
        10**30 tokens) or a text longer than `max_bytes`; such a text is a miss, its entry kept for the runs that
        read longer answers (a run of a smaller runner.max_response_bytes deleted theirs); an answer of another
        configuration than the key pins (`pinned_by`) is a miss, and its entry deleted."""
        found = {}
        with _mid_run():
            for key, entry in self.store.get_many(keys, row_bytes(self.max_bytes)).items():
                try:
                    answer = received(entry.answer, self.max_bytes, self.bound)
                except TooLarge:
                    continue
                if not pinned_by(answer, self.pin):
                    self.store.delete(key)
                    continue
                found[key] = entry if answer is entry.answer else replace(entry, answer=answer)
        return found

    def put(self, key: str, answer: Completion) -> None:
        """Keep an answer, as asked by this run, when it says it comes from the model its key pins (`pinned_by`)."""
        if pinned_by(answer, self.pin):
            with _mid_run():
                self.store.put(key, Entry(answer, self.model, self.digest, self.run_id, now()))

    def drop(self, key: str) -> None:
        """Delete the answer under `key`: one this run will not take (`cachehit.whole_hit`)."""
        with _mid_run():
            self.store.delete(key)

    def forget(self) -> None:
        """Delete the answers this run kept: its model changed while it asked (pulled again), so which of them came
        from the model their keys pin cannot be told, and a later run of that model would take them as its own."""
        with _mid_run():
            self.store.forget(self.run_id, self.digest)


def store_for(cfg: Mapping[str, Any], cwd: Path | None = None) -> Store | None:
    """The store a run's config asks for (`cache`, `cache_dir`), or None when off (`checked_place`)."""
    directory = checked_place(cfg, cwd)
    return None if directory is None else Store(directory, chosen_by(cfg.get("cache_dir")))


def checked_place(cfg: Mapping[str, Any], cwd: Path | None = None) -> Path | None:
    """The directory of the store a run's config asks for, or None when off; never in the benchmark's tasks/, nor in
    a run's or a sweep's directory (it held the answers of every run in one run's archive, SQLite's files written
    there as later runs asked). Checked with the config, before the run claims its directory (`app.run`)."""
    if not enabled(cfg.get("cache"), cfg["runner"]["type"], cfg["runner"].get("options") or {}):
        return None
    directory = cache_dir(cfg.get("cache_dir"), cwd)
    key = "cache_dir" if cfg.get("cache_dir") else f"cache_dir (from {chosen_by(None)})"  # the variable, if it chose
    if archived := archive_around(directory):
        raise ConfigError(f"{directory} is {archived}; put the cache elsewhere (cache_dir=DIR), or cache=false",
                          file="config", key=key)
    if why := tasks_around(str((cwd or Path.cwd()) / cfg["task"]["path"]), directory):
        raise ConfigError(f"{directory}: {why}; put the cache elsewhere (cache_dir=DIR), or cache=false",
                          file="config", key=key)
    return directory


class CacheFailed(ConfigError):
    """The store failed while a run asked (its disk full, its lock held past BUSY_TIMEOUT_S by another process): the
    run stops, and `resume`, which asks without the cache, finishes it."""


@contextmanager
def _mid_run() -> Iterator[None]:
    """The store's failure while a run uses it, as CacheFailed (its message as it was)."""
    try:
        yield
    except ConfigError as err:
        raise CacheFailed(str(err)) from None


class OtherVersion(ConfigError):
    """A response cache of another schema version than this benchrun's: never written, but removed by `--clear`."""

    def __init__(self, path: Path, version: str, key: str, advice: Advice = RUN_ADVICE):
        self.version = version
        super().__init__(f"the response cache at {path} has schema version {version[:40]!r}, not {SCHEMA_VERSION} "
                         f"(another version of benchrun made it); {advice.other_version}", key=key)


class Store:
    """The cache's SQLite database in `directory`; one connection, autocommit, a transaction per write. Its errors
    name `key`, what chose the directory (cacheplace.chosen_by), and `advice`, what its opener can do."""

    def __init__(self, directory: Path, key: str = "cache_dir", advice: Advice = RUN_ADVICE):
        self.dir, self.path, self.key, self.advice = directory, directory / DB_FILE, key, advice
        problem = misplaced_store(directory, self.path)  # first: a place it may not look into is named so
        if problem is not None:
            raise ConfigError(f"{problem}; {advice.unusable}", key=self.key)
        refuse_network_fs(directory, key, self.advice.unusable)
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                       check_same_thread=False)
        except (OSError, sqlite3.Error) as err:
            raise self.unusable(err) from None
        try:
            self._db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._create()
        except BaseException as err:  # a database refused is closed, not left to the collector (Python 3.13 warns)
            self._db.close()
            if isinstance(err, (OSError, sqlite3.Error)):
                raise self.unusable(err) from None
            raise

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def unusable(self, err: Exception) -> ConfigError:
        """What a failed operation on the database means: another process holding its lock, or a cache that cannot
        be used."""
        if isinstance(err, sqlite3.OperationalError) and err.sqlite_errorcode & 0xFF in LOCKED:
            return ConfigError(f"the response cache at {self.path} is locked by another process, which has held its "
                               f"write lock for over {BUSY_TIMEOUT_S:g} s (sweep jobs sharing a cache hold it for "
                               f"milliseconds); {self.advice.busy}", key=self.key)
        return ConfigError(f"the response cache at {self.path} cannot be used ({type(err).__name__}: {err}); "
                           f"{self.advice.unusable}", key=self.key)

    def _create(self) -> None:
        """The tables made in a new database, under the write lock (so a cache another process holds locked is found
        now, before anything is asked); one of another schema version (another benchrun's, OtherVersion) or holding
        another program's tables refused with nothing written into it."""
        with _transaction(self._db):
            found = self._version()
            if found is None:
                self._refuse_foreign()
                for statement in SCHEMA:
                    self._db.execute(statement)
                self._db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                found = str(SCHEMA_VERSION)
            found = add_seals(self._db, found, SCHEMA_VERSION)  # a cache whose rows have no seal given the column
        if found != str(SCHEMA_VERSION):
            raise OtherVersion(self.path, found, self.key, self.advice)

    def _refuse_foreign(self) -> None:
        """Refuse a database without the cache's meta table that holds tables: another program's."""
        tables = [name for (name,) in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        if tables:
            named = ", ".join(repr(name[:40]) for name in tables[:3]) + ", ..." * (len(tables) > 3)
            raise ConfigError(f"the response cache at {self.path} cannot be used (it holds another program's tables, "
                              f"{named}, and no schema version); {self.advice.unusable}", key=self.key)

    def _version(self) -> str | None:
        """The schema version the database says it has; None for a new one (no meta table)."""
        if self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone() is None:
            return None
        row = self._db.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
        return "none" if row is None else str(row[0])

    @property
    def journal_mode(self) -> str:
        return self._db.execute("PRAGMA journal_mode").fetchone()[0]

    def get(self, key: str) -> Entry | None:
        return self.get_many([key]).get(key)

    def get_many(self, keys: list[str], most: int = ANY_SIZE) -> dict[str, Entry]:
        """The entries stored under `keys` (at most LOOKUP_BATCH), by key, in one query; an answer longer than `most`
        bytes is never read, and missing from the answer (another run may read longer ones); a damaged entry is
        deleted, and missing too."""
        try:
            rows = self._db.execute(f"SELECT key, {AS_BYTES}, {SEALED} FROM answers WHERE key IN "
                                    f"({','.join('?' * len(keys))}) "
                                    "AND length(CAST(answer AS BLOB)) <= ?", [*keys, most]).fetchall()
        except sqlite3.Error as err:
            raise self.unusable(err) from None
        found = {}
        for key, *columns, seal in rows:
            entry = entry_of(*columns) if sealed(key, columns, seal) else None
            if entry is None:  # damaged or edited: a miss, never a text-less response nor a run id that names no run
                self.delete(key)
                continue
            found[key] = entry
        return found

    def delete(self, key: str) -> None:
        self._execute("DELETE FROM answers WHERE key = ?", (key,))

    def forget(self, run_id: str, digest: str | None) -> None:
        """Delete the answers run `run_id` kept of the model of `digest`."""
        self._execute("DELETE FROM answers WHERE run_id = ? AND digest IS ?", (run_id, digest))

    def put(self, key: str, entry: Entry) -> None:
        """Store an answer (a key already stored keeps its first answer)."""
        row = (entry.model, entry.digest, entry.run_id, entry.created_at, entry.answer.model_dump_json())
        self._execute("INSERT OR IGNORE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?)",
                      (key, *row, row_seal(key, row[-1], *row[:-1])))

    def _execute(self, statement: str, args: tuple[Any, ...]) -> None:
        """One statement in its own transaction; a database that fails is unusable, in one line."""
        try:
            self._db.execute(statement, args)
        except sqlite3.Error as err:
            raise self.unusable(err) from None

    def stats(self, digest_prefix: str | None = None) -> Stats:
        """Entries per model and digest (those whose digest starts with `digest_prefix`), newest first."""
        where, args = _digest_filter(digest_prefix)
        rows = self._db.execute("SELECT CAST(model AS BLOB), CAST(digest AS BLOB), count(*), "
                                f"CAST(max(created_at) AS BLOB) FROM answers {where} GROUP BY model, digest "
                                "ORDER BY max(created_at) DESC, model", args).fetchall()
        return Stats(self.path, size_on_disk(self.path), tuple(
            ModelEntries(shown(model), None if digest is None else shown(digest), count, shown(newest))
            for model, digest, count, newest in rows))

    def clear(self, digest_prefix: str | None = None) -> int:
        """Delete every entry (or those of the models whose digest starts with `digest_prefix`); how many."""
        where, args = _digest_filter(digest_prefix)
        try:
            with _transaction(self._db):
                removed = self._db.execute(f"DELETE FROM answers {where}", args).rowcount
            self._db.execute("VACUUM")
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as err:
            raise self.unusable(err) from None
        return removed

    def close(self) -> None:
        self._db.close()


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on an error): the write lock taken at once, held briefly."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _digest_filter(prefix: str | None) -> tuple[str, tuple[str, ...]]:
    """A WHERE clause matching digests that start with `prefix`, with or without `sha256:` on either side."""
    if prefix is None:
        return "", ()
    bare = prefix.removeprefix("sha256:")
    return ("WHERE substr(replace(digest, 'sha256:', ''), 1, ?) = ?", (len(bare), bare))


def size_on_disk(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())

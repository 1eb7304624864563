"""A response cache row's seal: the sha256 of its key and columns as benchrun wrote them, kept in the row and checked
as it is read, so a row edited since (a sqlite3 shell's UPDATE of an answer, an answer moved under another key,
bytes damaged on disk) is a miss, never served as the model's answer. It tells an edit from what benchrun wrote,
not a forger who seals again (the digest has no secret); a cache of schema version 1, whose rows have no seal, is
given the column as it opens, each of its rows a miss."""

from __future__ import annotations

import hashlib
import sqlite3

SEALED = "CAST(sealed AS BLOB)"
"""The seal's column as its stored bytes (a hand may have written a BLOB there)."""
UNSEALED_VERSION = "1"
"""The schema version of the caches whose rows have no seal."""


def row_seal(key: str | bytes, *columns: str | bytes | None) -> str:
    """The seal of the row under `key` whose columns (answer, model, digest, run_id, created_at: `AS_BYTES`'s order)
    are `columns`, as text or as their stored bytes: each length-prefixed, so no two rows' columns read alike."""
    digest = hashlib.sha256()
    for value in (key, *columns):
        data = b"" if value is None else value.encode() if isinstance(value, str) else value
        digest.update(b"-" if value is None else b"+%d:" % len(data) + data)
    return digest.hexdigest()


def sealed(key: str, columns: list[bytes | None], seal: bytes | None) -> bool:
    """Whether a row read (`AS_BYTES` and its seal, `SEALED`) is as benchrun wrote it."""
    return seal is not None and seal == row_seal(key, *columns).encode()


def add_seals(db: sqlite3.Connection, version: str, sealing: int) -> str:
    """The schema version of a cache opened for writing: one of `UNSEALED_VERSION` given the seal's column (its rows,
    unsealed, each a miss), within the caller's transaction, as version `sealing`; any other as it was."""
    if version != UNSEALED_VERSION:
        return version
    db.execute("ALTER TABLE answers ADD COLUMN sealed TEXT")
    db.execute("UPDATE meta SET value = ? WHERE name = 'schema_version'", (str(sealing),))
    return str(sealing)

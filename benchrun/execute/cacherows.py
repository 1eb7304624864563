"""A cached answer as the response cache's database keeps it: the entry, and an entry read back from the bytes of a
row, which SQLite keeps whatever wrote them (a hand, another program)."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError

from benchrun.core.records import ENDED_IN_ERROR, Completion, ResponseRecord, answered
from benchrun.core.recordvalues import is_run_id


@dataclass(frozen=True)
class Entry:
    """One cached answer: the answer, the model, and the run that asked it."""

    answer: Completion
    model: str
    digest: str | None
    run_id: str
    created_at: str

    def record(self, sample_id: str, task: str, repeat: int) -> ResponseRecord:
        """The answer as this run's response: no request sent, `cached_from` the run that asked it."""
        return answered(self.answer, id=sample_id, task=task, repeat=repeat, seconds=0.0, attempts=0,
                        failed_attempts=(), cached_from=self.run_id)


AS_BYTES = ", ".join(f"CAST({name} AS BLOB)" for name in ("answer", "model", "digest", "run_id", "created_at"))
"""An entry's columns as the bytes stored: SQLite keeps whatever a hand wrote (a BLOB, text that is not UTF-8), which
the sqlite3 module would hand over as bytes or refuse to read at all."""
ESCAPED = 6
"""The most bytes one byte of an answer's body is kept as in the cache's JSON (a control character escaped, six)."""


def row_bytes(max_bytes: int) -> int:
    """The longest answer a row may keep of a runner that reads at most `max_bytes` of a body: a longer one is not
    read by such a run (a planted row: a 300 MB `extra` was taken into the run, responses.jsonl and memory alike)."""
    return ESCAPED * max_bytes + 2**20


def entry_of(answer: bytes | None, model: bytes | None, digest: bytes | None, run_id: bytes | None,
             created_at: bytes | None) -> Entry | None:
    """The entry of a row's columns (`AS_BYTES`), or None when it is not one benchrun writes: an answer that is not
    a completion or one that ended in an error, a model, run id or time that is not UTF-8 text, a digest neither text
    nor none, or a run id that is not one (`cached_from` would carry it into the run's records)."""
    texts = [text_of(column) for column in (model, run_id, created_at)]
    if None in texts or (digest is not None and text_of(digest) is None) or not is_run_id(texts[1]):
        return None
    try:
        checked = Completion.model_validate_json(answer or b"")
    except ValidationError:
        return None
    if checked.done_reason == ENDED_IN_ERROR:  # an earlier benchrun's, which took a server's failure for an answer
        return None
    return Entry(checked, texts[0], None if digest is None else text_of(digest), texts[1], texts[2])


def text_of(column: bytes | None) -> str | None:
    """A column's bytes as UTF-8 text; None when there are none or they are not UTF-8."""
    try:
        return None if column is None else column.decode()
    except UnicodeDecodeError:
        return None


def shown(column: bytes | None) -> str:
    """A column's bytes as text to show (what is not UTF-8 replaced, none as empty text): a damaged entry is listed
    with the others, and `--clear` deletes it."""
    return (column or b"").decode(errors="replace")

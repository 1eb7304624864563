"""A response-cache entry with plausible defaults, and what a cache holds, for the tests of the cache and its listing."""

from __future__ import annotations

from pathlib import Path

from benchrun.core.records import Completion
from benchrun.execute.cache import Entry, Stats, Store


def entry(model: str = "llama3.2", digest: str | None = "sha256:" + "ab" * 32, run_id: str = "run1",
          created_at: str = "2026-12-01T10:00:00+00:00", text: str = '{"answer": 4}') -> Entry:
    answer = Completion(text=text, done_reason="stop", prompt_tokens=7, completion_tokens=2,
                        durations_ns={"total": 5}, extra={"k": "v"})
    return Entry(answer, model=model, digest=digest, run_id=run_id, created_at=created_at)


def stats(directory: Path) -> Stats:
    """What the response cache in `directory` holds, its database closed again."""
    with Store(directory) as store:
        return store.stats()

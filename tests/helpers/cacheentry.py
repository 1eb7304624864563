"""A response-cache entry with plausible defaults, for the tests of the cache and of its listing."""

from __future__ import annotations

from benchrun.core.records import Completion
from benchrun.execute.cache import Entry


def entry(model: str = "llama3.2", digest: str | None = "sha256:" + "ab" * 32, run_id: str = "run1",
          created_at: str = "2026-12-01T10:00:00+00:00", text: str = '{"answer": 4}') -> Entry:
    answer = Completion(text=text, done_reason="stop", prompt_tokens=7, completion_tokens=2,
                        durations_ns={"total": 5}, extra={"k": "v"})
    return Entry(answer, model=model, digest=digest, run_id=run_id, created_at=created_at)

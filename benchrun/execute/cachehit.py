"""A response cache's answer checked by the rule a fresh answer of the runner meets (`Runner.seen_whole`): one cached
by a benchrun that did not check it (an Ollama chat cut to fit the context, before `ContextFull`) is no answer to the
whole chat, so it is a miss, its entry deleted and the chat asked again."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchrun.execute.cache import Entry, RunCache

if TYPE_CHECKING:
    from benchrun.execute.runners.base import Runner


async def whole_hit(runner: Runner, cache: RunCache, key: str, hit: Entry | None) -> Entry | None:
    """`hit`, or None where it is none or the runner refuses its answer as it would a fresh one (its entry deleted)."""
    if hit is None:
        return None
    from benchrun.execute.runners.base import Refused  # here: a rescore's archived judge calls load no runner code

    try:
        await runner.seen_whole(hit.answer)
    except Refused:
        cache.drop(key)
        return None
    return hit

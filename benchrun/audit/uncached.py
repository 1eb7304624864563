"""Whether a run made without the response cache holds a line it says it took from the cache (`cached_from`): it took
none. Off by config.yaml's `cache: false`, which `execute.cache.enabled` takes as given for every runner; and, for its
answers, by a cache left unset for a runner no benchrun pinned (`PINNED`, unchanged since the cache came)."""

from __future__ import annotations

from typing import Any

from benchrun.archive.reader import Run
from benchrun.core.errors import ArchiveError
from benchrun.core.layout import CONFIG, RESPONSES
from benchrun.core.records import JudgementRecord, ResponseRecord


class Uncached:
    """Verify's check of the `cached_from` of the responses and judge calls a run made without the cache asked itself
    (not carried over by a retry, nor made by a shard). A cache left unset is on or off by its runner and options, as
    benchruns have told it differently (a draw at random is kept since 8c35d80), and for a runner that pins the model
    is not checked; a judge's by its own runner (not told apart by every benchrun) is not checked either."""

    def __init__(self, run: Run):
        self.off, self.unset = _cache_off(run)
        self.lines: dict[str, int] = {}

    def misread(self, file: str, record: ResponseRecord | JudgementRecord) -> tuple[str, str] | None:
        """Why the next line of `file`, `record`, says it came from the cache of a run that used none, as (file,
        why)."""
        line = self.lines[file] = self.lines.get(file, 0) + 1
        off = self.off or (self.unset is not None and file == RESPONSES)
        if not off or record.cached_from is None or record.carried_from is not None or record.shard is not None:
            return None
        where = (f"{CONFIG}'s cache is false" if self.off else
                 f"{CONFIG} leaves cache unset for runner.type {self.unset!r}, whose answers no benchrun kept there")
        return file, (f"line {line} gives cached_from {record.cached_from!r}, where {where}: a run made without the "
                      "response cache took nothing from it")


def _cache_off(run: Run) -> tuple[bool, str | None]:
    """Whether config.yaml sets `cache: false`, and the runner type it gives, of those no cache pins, when it leaves
    the cache unset (False, None when it cannot be read: verify says so)."""
    from benchrun.execute.cache import PINNED  # verify's alone

    try:
        config = run.config
    except ArchiveError:
        return False, None
    runner: Any = config.get("runner")
    kind = runner.get("type") if isinstance(runner, dict) else None
    unpinned = kind if config.get("cache") is None and isinstance(kind, str) and kind not in PINNED else None
    return config.get("cache") is False, unpinned

"""Whether a run made without the response cache (config.yaml's `cache: false`, which `execute.cache.enabled` takes as
given, for every runner) holds a line it says it took from the cache (`cached_from`): it took none."""

from __future__ import annotations

from benchrun.archive.reader import Run
from benchrun.core.errors import ArchiveError
from benchrun.core.layout import CONFIG
from benchrun.core.records import JudgementRecord, ResponseRecord


class Uncached:
    """Verify's check of the `cached_from` of the responses and judge calls a run made with cache=false asked itself
    (not carried over by a retry, nor made by a shard); an unset cache is on or off by its runner and options, as
    benchruns have told it differently, and is not checked."""

    def __init__(self, run: Run):
        self.off = _cache_off(run)
        self.lines: dict[str, int] = {}

    def misread(self, file: str, record: ResponseRecord | JudgementRecord) -> tuple[str, str] | None:
        """Why the next line of `file`, `record`, says it came from the cache of a run that used none, as (file,
        why)."""
        line = self.lines[file] = self.lines.get(file, 0) + 1
        if not self.off or record.cached_from is None or record.carried_from is not None or record.shard is not None:
            return None
        return file, (f"line {line} gives cached_from {record.cached_from!r}, where {CONFIG}'s cache is false: a run "
                      "made without the response cache took nothing from it")


def _cache_off(run: Run) -> bool:
    """Whether config.yaml sets `cache: false` (False when it cannot be read: verify says so)."""
    try:
        return run.config.get("cache") is False
    except ArchiveError:
        return False

"""The lineage fields of a record line (`carried_from`, `shard`, `attempts`), as the kind of run that holds it allows
them: what run.json says the run was made from decides which may appear, and the line's own fields their bounds.

A retry's carried lines name the run that asked them (`carried_from`), and a merged run's lines the shard run that
made them (`shard`), which a retry of a merged run carries on; a response's `attempts` is what its writer counted:
its failed attempts, and one more for an answer from the model (none for one from the response cache); a judge call's
is a count of requests, none for a reply from the cache. A response's failed attempts are numbered 1 to n and took
part of its time, as its time at the server that answered did (`host_seconds`: only of a list of servers, `host`); a
judge call asked in the run took at most the run's span (started_at to ended_at)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from benchrun.archive.clockstep import CLOCKS_APART_S, stepped_back
from benchrun.core.layout import JUDGEMENTS, RESPONSES
from benchrun.core.manifest import Manifest
from benchrun.core.records import RunInfo
from benchrun.core.recordvalues import moment_at
from benchrun.core.shards import Shard


@dataclass
class Made:
    """What a run was made from, as its run.json says: the lines it may hold carried over or merged; and the shard each
    answer's response gives, which the answer's other lines give too."""

    run_id: str
    retry: bool
    shards: tuple[str, ...] | None
    """A merged run's shards (i/n); None for a run that is no merge."""
    positions: dict[str, int]
    """Sample id -> its position in the manifest (which decides its shard)."""
    carried: int | None = None
    """A retry that ended: how many answers its run.json's parent says it carried over, its first response lines."""
    answered: dict[tuple[Any, Any], Any] = field(default_factory=dict)
    """(sample id, repeat) -> the shard its response gives (None: none)."""
    carried_over: set[tuple[Any, Any]] = field(default_factory=set)
    """The answers whose response was carried over (`carried_from`): only their judge calls may be too."""
    span: float | None = None
    """A run that ended, made by no merge: seconds from its start to its end (`run_span`)."""

    @classmethod
    def of(cls, info: RunInfo, manifest: Manifest) -> Made:
        shards = tuple(shard.shard for shard in info.merged.shards) if info.merged else None
        carried = info.parent.carried if info.parent is not None and info.files else None
        return cls(info.run_id, info.parent is not None, shards, {s.id: p for p, s in enumerate(manifest.samples)},
                   carried, span=run_span(info) if info.files and shards is None else None)

    def fault(self, name: str, number: int, record: dict[str, Any]) -> str | None:
        """Why line `number`, `record`, of file `name` (responses first) gives a lineage field no writer of this run
        gives; None if not."""
        return (self._carried(record) or self._shard(name, record) or _attempts(name, record)
                or (self._first(number, record) or _tries(record) if name == RESPONSES else None)
                or (self._call_carried(record) or self._call_time(record) if name == JUDGEMENTS else None))

    def _call_time(self, record: dict[str, Any]) -> str | None:
        """Why a judge call asked in this run (not carried over, nor from the cache) took longer than the run."""
        return call_overran(record, self.span, "run.json's started_at to its ended_at, in which the run asked it")

    def _call_carried(self, record: dict[str, Any]) -> str | None:
        """Why a judge call is carried over where the answer it judges was asked in this run."""
        if (carried := record.get("carried_from")) is None or (record.get("id"), record.get("repeat", 0)) in (
                self.carried_over):
            return None
        return (f"gives carried_from {carried!r}, where the response it judges was asked in this run: only a carried "
                "answer's judge calls are carried over")

    def _first(self, number: int, record: dict[str, Any]) -> str | None:
        """Why a response of a retry that ended is carried over where its run.json says it asked it, or the reverse:
        the answers it carried are its first lines (`carried`)."""
        if self.carried is None or (record.get("carried_from") is not None) == (number <= self.carried):
            return None
        given = "a carried_from" if number > self.carried else "no carried_from"
        return f"gives {given}, where run.json's parent says the retry carried over its first {self.carried} answers"

    def _carried(self, record: dict[str, Any]) -> str | None:
        if (carried := record.get("carried_from")) is None:
            return None
        if not self.retry and self.shards is None:
            return (f"gives carried_from {carried!r}, but run.json names no parent: only a retry carries answers "
                    "over from another run (or a merged run, from its shards')")
        if carried == self.run_id:
            return f"gives carried_from {carried!r}, the run's own id: a line carried over names the run that asked it"
        return None

    def _shard(self, name: str, record: dict[str, Any]) -> str | None:
        shard, key = record.get("shard"), (record.get("id"), record.get("repeat", 0))
        if name != RESPONSES:
            if shard is None or shard == (given := self.answered.get(key)):
                return None
            return f"gives shard {shard!r}, where the response it is of gives {repr(given) if given else 'none'}"
        self.answered.setdefault(key, shard)
        if record.get("carried_from") is not None:
            self.carried_over.add(key)
        if shard is None:
            return None
        if self.shards is None and not (self.retry and record.get("carried_from") is not None):
            return (f"gives shard {shard!r}, but run.json names no shards: only a merged run's lines name the shard "
                    "run that made them (and a retry's carried over from one)")
        if self.shards is not None and shard not in self.shards:
            return f"gives shard {shard!r}, which is none of the merged run's shards ({', '.join(self.shards)})"
        return self._dealt(key[0], shard)

    def _dealt(self, sample: Any, shard: Any) -> str | None:
        """Why `shard` is not the part that holds `sample` (manifest position p is part p mod n + 1)."""
        try:
            part = Shard.parse(shard) if isinstance(shard, str) else None
        except ValueError:
            part = None
        if part is None:
            return f"gives shard {shard!r}, which is no shard (i/n)"
        position = self.positions.get(sample)
        if position is None or position % part.count == part.index - 1:
            return None
        return (f"gives shard {shard!r}, but its sample {sample!r} (manifest position {position}) is of shard "
                f"{position % part.count + 1}/{part.count}")


def _attempts(name: str, record: dict[str, Any]) -> str | None:
    """Why a line's `attempts` is not what its writer counted (a line without one is read as the model says)."""
    if name not in (RESPONSES, JUDGEMENTS) or "attempts" not in record:
        return None
    attempts, cached = record["attempts"], record.get("cached_from") is not None
    if type(attempts) is not int or attempts < 0:
        return f"gives attempts {json.dumps(attempts)}, which is no count of requests"
    if name == JUDGEMENTS:
        return (f"gives attempts {attempts}, but its reply is from the response cache, which asked nothing"
                if cached and attempts else None)
    failed = record.get("failed_attempts", [])
    if not isinstance(failed, list):
        return None  # the record's own check says what it is
    answer = record.get("text") is not None and not cached
    made = len(failed) + answer
    if attempts == made:
        return None
    what = "and its answer" if answer else "and an answer from the response cache" if cached else "and no answer"
    return f"gives attempts {attempts}, where its failed attempts ({len(failed)}) {what} make {made}"


def parent_unmade(info: RunInfo, answers: int) -> str | None:
    """Why a retry's run.json says other than it planned: it carries what it does not ask again, so what it carried
    and asked are its `answers` (its manifest's, of its shard); None when they are (or it is no retry)."""
    if info.parent is None or info.parent.carried + info.parent.asked == answers:
        return None
    return (f"parent.asked is {info.parent.asked} and parent.carried {info.parent.carried}, where a retry asks again "
            f"what it does not carry of its {answers} answers")


def self_derived(info: RunInfo) -> str | None:
    """Why run.json names the run itself as a run it was made from (its parent, a shard): a retry and a merge are each
    a new run, with an id of their own; None when it does not."""
    if info.parent is not None and info.parent.run_id == info.run_id:
        return f"parent.run_id is {info.run_id!r}, the run's own id: a retry is a new run, with an id of its own"
    for number, shard in enumerate(info.merged.shards if info.merged is not None else ()):
        if shard.run_id == info.run_id:
            return (f"merged.shards.{number}.run_id is {info.run_id!r}, the run's own id: a merged run is a new run, "
                    "with an id of its own")
    return None


def run_span(info: RunInfo) -> float | None:
    """Seconds from the run's start to its end, as run.json says them, and as far as its history says the wall clock
    went back while a session ran (`span`, `archive.clockstep`)."""
    return span(info.started_at, info.ended_at, stepped_back(info.history))


def span(start: Any, end: Any, back: float = 0.0) -> float | None:
    """Seconds from `start` to `end`, as a record gives them, and `back` more (how far the wall clock was said to go
    back meanwhile); None when they cannot be set apart, or the end is before the start (the system clock was stepped
    back meanwhile, unsaid: the span bounds no time)."""
    try:
        ended, started = moment_at(end or ""), moment_at(start)
    except (TypeError, ValueError):
        return None
    return seconds if (seconds := (ended - started).total_seconds() + back) >= 0 else None


def call_overran(record: dict[str, Any], asked_in: float | None, between: str) -> str | None:
    """Why a judge call asked within `asked_in` seconds (not carried over, nor from the cache) took longer; `between`
    names the times the span is from."""
    seconds = record.get("seconds")
    if asked_in is None or not _time(seconds) or seconds <= asked_in + CLOCKS_APART_S or any(
            record.get(key) is not None for key in ("carried_from", "cached_from", "shard")):
        return None
    return f"gives seconds {seconds}, more than the {round(asked_in, 6)} s from {between}"


ROUNDING_S = 1e-6
"""A record's times are rounded to the microsecond: a sum of n of them may pass the whole by n of these."""


def _tries(record: dict[str, Any]) -> str | None:
    """Why a response's failed attempts or its time at the server do not fit in its time as a writer measures them."""
    failed, seconds, at_host = record.get("failed_attempts", []), record.get("seconds"), record.get("host_seconds")
    if not isinstance(failed, list) or not all(isinstance(each, dict) for each in failed) or not _time(seconds):
        return None  # the record's own check says what they are
    if (numbers := [each.get("number") for each in failed]) != list(range(1, len(failed) + 1)):
        return f"numbers its failed attempts {json.dumps(numbers)}, where a writer numbers them from 1 in order"
    if at_host is not None and record.get("host") is None:
        return f"gives host_seconds {json.dumps(at_host)} but no host: only an answer of a list of servers gives it"
    tried = sum(each["seconds"] for each in failed if _time(each.get("seconds")))
    if tried > seconds + ROUNDING_S * len(failed):
        return f"gives failed attempts of {round(tried, 6)} s in all, more than its {seconds} s"
    if _time(at_host) and at_host > seconds + ROUNDING_S:
        return f"gives host_seconds {at_host}, more than its {seconds} s"
    return None


def _time(value: Any) -> bool:
    """Whether `value` is a time a record may hold (any other is said by the record's own check)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0

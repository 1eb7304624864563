"""Whether a finished run's summary.json speed is what its answers make: every figure they make (counts, latency, token
rates, load), the whole run's and each server's of a list; and of its clocks' figures, what they bound. The wall times
are the sessions' clocks, which no record holds: they are at most the run's span (started_at to ended_at; a server's,
the run's wall time) and at least the longest answer asked in the run (each timed within a session, whose clock runs
from before its first request to its last answer), and samples/s is the requests over them; a merged run's is unknown
(its shards ran apart). Answers overlap as many as the concurrency (which a resume may change): no tighter bound."""

from __future__ import annotations

import json
import math
from typing import Any

from benchrun.archive.books import Books
from benchrun.archive.clockstep import CLOCKS_APART_S
from benchrun.archive.lineagefields import run_span
from benchrun.archive.reader import Run
from benchrun.core.layout import SUMMARY
from benchrun.core.records import Speed

SPEED_MADE = ("n", "failed", "latency_s", "tokens_per_s", "tokens_per_s_from", "prompt_tokens_per_s", "load_s")
"""What summary.json's speed says that the run's answers make (its wall time, and the rate over it, are its sessions'
clocks')."""
SPEED_TOLERANCE = 1e-6
"""How near a speed figure is to the one its answers make (a benchrun before 0dcfddb summed a rate's seconds as floats,
not whole microseconds: the last digits differ); far below the three decimals shown. An answer's time and a wall time
are both kept to the microsecond."""
TIMES_APART_S = 1e-6
"""How far the wall time may fall short of the longest answer it timed: both are rounded to the microsecond."""
READ = "show, list and compare read it, export and report read the records"


def speed_unmade(run: Run, books: Books) -> tuple[str, str] | None:
    """The first figure of summary.json's speed that the run's answers, kept in `books`, do not make or bound."""
    if run.summary is None or run.summary.speed is None:
        return None
    said, made = run.summary.speed, books.speed.speed()
    span = run_span(run.info) if run.info.merged is None else None
    found = _unmade("speed", said, made) or _clocked("speed", said, span, run.info.merged is not None)
    if found is None and (said.hosts or made.hosts):
        found = _hosts(said, made)
    return None if found is None else (SUMMARY, f"{found}: {READ}")


def _hosts(said: Speed, made: Speed) -> str | None:
    """Each server's figures: the servers the answers name, each's figures made, its wall time within the run's."""
    said_hosts, made_hosts = said.hosts or {}, made.hosts or {}
    if said_hosts.keys() != made_hosts.keys():
        return (f"speed.hosts: summary.json's servers are {_json(sorted(said_hosts))}, its answers' "
                f"{_json(sorted(made_hosts))}")
    for host, figures in said_hosts.items():
        where = f"speed.hosts.{host}"
        if found := _unmade(where, figures, made_hosts[host]) or _clocked(where, figures, said.wall_s, False):
            return found
    return None


def _unmade(where: str, said: Speed, made: Speed) -> str | None:
    said_json, made_json = said.model_dump(mode="json"), made.model_dump(mode="json")
    for field in SPEED_MADE:
        if not close(said_json[field], made_json[field], SPEED_TOLERANCE):
            return (f"{where}.{field}: summary.json's is {_json(said_json[field])}, its answers make "
                    f"{_json(made_json[field])}")
    return None


def _clocked(where: str, said: Speed, most: float | None, merged: bool) -> str | None:
    """What `said`'s wall time and samples/s are bound by: `most` (the run's span, or the run's wall time for a
    server's) and its longest answer (which its sessions' clock timed), the requests over it; unknown for a merged
    run."""
    wall = said.wall_s
    if merged and wall is not None:
        return f"{where}.wall_s: summary.json's is {wall}, where a merged run's is unknown (its shards ran apart)"
    if wall is not None and said.latency_s is not None and wall < said.latency_s.max - TIMES_APART_S:
        return (f"{where}.wall_s: summary.json's is {wall} s, less than its longest answer ({said.latency_s.max} s), "
                f"which its clock timed")
    if not wall:  # None, or a session that asked nothing
        return (None if said.samples_per_s is None else
                f"{where}.samples_per_s: summary.json's is {said.samples_per_s}, over no wall time")
    if most is not None and wall > most + CLOCKS_APART_S:
        return f"{where}.wall_s: summary.json's is {wall} s, where the run took {round(most, 6)} s"
    rate = (said.n + said.failed) / wall
    if not close(said.samples_per_s, rate, SPEED_TOLERANCE):
        return (f"{where}.samples_per_s: summary.json's is {said.samples_per_s}, its {said.n + said.failed} requests "
                f"over its wall time ({wall} s) make {rate}")
    return None


def close(said: Any, made: Any, rel_tol: float = 1e-9) -> bool:
    """Whether a figure summary.json says is the one its records make (numbers within rounding, `rel_tol`, mappings of
    them)."""
    if said is None or made is None:
        return said is made
    if isinstance(said, dict):
        return isinstance(made, dict) and said.keys() == made.keys() and all(
            close(said[k], made[k], rel_tol) for k in said)
    if isinstance(said, float) or isinstance(made, float):
        return math.isclose(said, made, rel_tol=rel_tol, abs_tol=1e-12)
    return bool(said == made)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)

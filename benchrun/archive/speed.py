"""A run's speed figures, accumulated one response record at a time (only the answered wall times are kept).

Left out: answers not asked in this run (taken from the response cache, `cached_from`, or carried over by a retry,
`carried_from`); failed requests count only in `failed` and samples/s. Token sums are exact integers and the wall
times an exact sum, so the figures do not depend on the order the records came in (a resumed run ends with the
figures an uninterrupted one would have, but for the wall time it measured)."""

from __future__ import annotations

import time
from array import array
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Sequence

from benchrun.core.records import Latency, ResponseRecord, Speed

if TYPE_CHECKING:
    from benchrun.archive.reader import Run

NS_PER_S = 10 ** 9
US_PER_S = 10 ** 6
"""A response's `seconds` are recorded to the microsecond, so their sum is exact in whole microseconds."""
FIGURES = {"latency_p50_s": "latency p50 (s)", "latency_p95_s": "latency p95 (s)", "latency_max_s": "latency max (s)",
           "tokens_per_s": "tokens/s", "prompt_tokens_per_s": "prompt tokens/s", "load_s": "load (s)",
           "wall_s": "wall (s)", "samples_per_s": "samples/s"}
"""Every figure of a speed, key -> label, in the order shown."""
WALL_CLOCK = ("latency_s", "wall_s", "samples_per_s")
"""The figures the wall clock measures: they differ between two runs of the same answers."""
SIDE_BY_SIDE = ("latency_p50_s", "latency_p95_s", "tokens_per_s", "prompt_tokens_per_s", "load_s", "samples_per_s")
"""The figures set side by side in the sweep table, compare and the report."""


def nearest_rank(ordered: Sequence[float], percent: int) -> float:
    """The `percent`-th percentile of ascending values by the nearest-rank rule: the value at rank ceil(p/100 * n)."""
    rank = max(1, -(-percent * len(ordered) // 100))
    return ordered[rank - 1]


def latency(seconds: Sequence[float]) -> Latency | None:
    """p50, p95 and max of wall times; None when there are none."""
    if not seconds:
        return None
    ordered = sorted(seconds)
    return Latency(p50=nearest_rank(ordered, 50), p95=nearest_rank(ordered, 95), max=ordered[-1])


def per_second(count: int, seconds: float | Fraction) -> float | None:
    """`count` per second; None over no time."""
    return float(count / Fraction(seconds)) if seconds else None


@dataclass
class _Rate:
    """Tokens counted over the time they took, in `unit`s of a second (10**9: nanoseconds)."""

    unit: int = 1
    count: int = 0
    time: int = 0

    def add(self, count: int, time: int) -> None:
        self.count += count
        self.time += time

    def per_second(self) -> float | None:
        return per_second(self.count, Fraction(self.time, self.unit))


def asked(response: ResponseRecord) -> bool:
    """Whether the response was asked of the model in this run (not cached, not carried over)."""
    return response.cached_from is None and response.carried_from is None


class SpeedTally:
    """Speed figures of response records as they stream past. `wall_s` is the time of earlier sessions (None:
    unknown); `start` begins this session's clock, which then stops at each answer recorded."""

    def __init__(self, wall_s: float | None = 0.0):
        self._earlier_s = wall_s
        self._seconds = array("d")
        self._failed = 0
        self._eval = _Rate(NS_PER_S)
        """Completion tokens over eval time, of the responses whose server reports an eval duration."""
        self._wall = _Rate(US_PER_S)
        """Completion tokens over wall time (in µs), of the answered responses with a completion token count."""
        self._prompt = _Rate(NS_PER_S)
        """Prompt tokens over prompt_eval time, of the responses whose server reports both."""
        self._load_ns: int | None = None
        self._started: float | None = None
        self._last: float | None = None
        self._hosts: dict[str, SpeedTally] = {}
        """Each server's own tally, for a run over a list of servers (responses naming their `host`)."""

    def start(self) -> None:
        """Requests begin now."""
        self._started = self._last = time.perf_counter()

    def add(self, response: ResponseRecord) -> None:
        if not asked(response):
            return
        if response.host is not None:
            self._host(response.host).add(response.model_copy(update={"host": None, **_at_host(response)}))
        if self._started is not None:
            self._last = time.perf_counter()
        if response.error is not None:
            self._failed += 1
            return
        self._seconds.append(response.seconds)
        self._tokens(response)
        load = response.durations_ns.get("load")
        if load is not None:
            self._load_ns = max(load, self._load_ns or 0)

    def _tokens(self, response: ResponseRecord) -> None:
        durations, completion = response.durations_ns, response.completion_tokens
        if completion is not None:
            if durations.get("eval"):
                self._eval.add(completion, durations["eval"])
            self._wall.add(completion, round(response.seconds * US_PER_S))
        if response.prompt_tokens is not None and durations.get("prompt_eval"):
            self._prompt.add(response.prompt_tokens, durations["prompt_eval"])

    def _host(self, host: str) -> SpeedTally:
        """The tally of one server: its clock starts with this session's (its earlier sessions' time is unknown)."""
        if host not in self._hosts:
            tally = self._hosts[host] = SpeedTally(0.0 if self._earlier_s == 0 else None)
            tally._started = tally._last = self._started
        return self._hosts[host]

    def wall_s(self) -> float | None:
        """Earlier sessions' time plus this one's, from `start` to the last answer."""
        if self._earlier_s is None:
            return None
        session = self._last - self._started if self._started is not None else 0.0
        return round(self._earlier_s + session, 6)

    def speed(self) -> Speed:
        wall, server = self.wall_s(), self._eval.per_second()
        tokens = server if server is not None else self._wall.per_second()
        source = None if tokens is None else "server" if server is not None else "wall"
        return Speed(n=len(self._seconds), failed=self._failed, latency_s=latency(self._seconds),
                     tokens_per_s=tokens, tokens_per_s_from=source, prompt_tokens_per_s=self._prompt.per_second(),
                     load_s=None if self._load_ns is None else self._load_ns / NS_PER_S, wall_s=wall,
                     samples_per_s=None if wall is None else per_second(len(self._seconds) + self._failed, wall),
                     hosts={host: tally.speed() for host, tally in self._hosts.items()} or None)


def _at_host(response: ResponseRecord) -> dict[str, float | None]:
    """A response's own time at the server that answered it, for that server's figures (without the failover)."""
    if response.host_seconds is None:
        return {}
    return {"seconds": response.host_seconds, "host_seconds": None}


def speed_of(run: Run) -> Speed | None:
    """The run's speed: its summary's, else computed from its responses (wall time unknown); None before it
    compiled."""
    summary = run.summary
    if summary is not None and summary.speed is not None:
        return summary.speed
    if run.info.manifest_id is None:
        return None
    tally = SpeedTally(wall_s=None)
    for response in run.responses():
        tally.add(response)
    return tally.speed()


def figures(speed: Speed | None) -> dict[str, float | None]:
    """The FIGURES of a speed (all None without one)."""
    if speed is None:
        return dict.fromkeys(FIGURES)
    lat = speed.latency_s
    return {"latency_p50_s": lat.p50 if lat else None, "latency_p95_s": lat.p95 if lat else None,
            "latency_max_s": lat.max if lat else None, "tokens_per_s": speed.tokens_per_s,
            "prompt_tokens_per_s": speed.prompt_tokens_per_s, "load_s": speed.load_s, "wall_s": speed.wall_s,
            "samples_per_s": speed.samples_per_s}

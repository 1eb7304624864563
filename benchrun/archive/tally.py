"""Per task x metric statistics, accumulated one score record at a time (memory flat in samples, or with repeats
one small cluster per sample)."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Iterable, Sequence

from benchrun.core.records import MetricSummary, ResponseRecord, ScoreRecord, Speed, Summary

Exact = int | Fraction


def exact(value: int | float) -> Exact:
    """Ints stay ints, floats become Fractions: sums are then independent of order."""
    return value if isinstance(value, int) else Fraction(value)


TINIEST = 1074
"""2**-1074 is the smallest float step: every float is a whole number of them."""


def exact_mean(values: Sequence[int | float]) -> Fraction:
    """The mean of `values` (at least one), exactly, as a run's summary has it whatever their magnitudes (a float sum
    of 1e100, 1 and -1e100 is 0): summed as whole numbers of 2**-1074, ten times faster than as Fractions."""
    total = 0
    for value in values:
        numerator, denominator = value.as_integer_ratio()  # the denominator a power of 2, at most 2**1074
        total += numerator << (TINIEST + 1 - denominator.bit_length())
    return Fraction(total, len(values) << TINIEST)


def zero_or_one(value: int | float) -> bool:
    """Whether a metric's value is a 0/1 one (booleans included)."""
    return value == 0 or value == 1


@dataclass
class _Stats:
    """Exact running sums over every answer, and whether every value was 0 or 1."""

    n: int = 0
    total: Exact = 0
    total_sq: Exact = 0
    errors: int = 0
    binary: bool = True

    def add(self, value: int | float) -> None:
        self.binary = self.binary and zero_or_one(value)
        value = exact(value)
        self.n += 1
        self.total += value
        self.total_sq += value * value

    def summary(self, task: str, metric: str) -> MetricSummary:
        mean = Fraction(self.total, self.n) if self.n else None
        stderr = None
        if self.n > 1:
            variance = (self.total_sq - self.n * mean * mean) / (self.n - 1)
            stderr = math.sqrt(variance / self.n)
        return MetricSummary(task=task, metric=metric, n=self.n, mean=None if mean is None else float(mean),
                             stderr=stderr, errors=self.errors, binary=self.binary)


@dataclass
class _Cluster:
    """One sample's answers to one metric: their count, sum and how many were 1."""

    n: int = 0
    total: Exact = 0
    ones: int = 0


@dataclass
class _Clustered(_Stats):
    """With repeats: the sums, and one cluster per sample for the clustered standard error and pass/majority@k."""

    k: int = 1
    clusters: dict[str, _Cluster] = field(default_factory=dict)

    def add_answer(self, sample: str, value: int | float) -> None:
        self.add(value)
        cluster = self.clusters.setdefault(sample, _Cluster())
        cluster.n += 1
        cluster.total += exact(value)
        cluster.ones += value == 1

    def summary(self, task: str, metric: str) -> MetricSummary:
        full = [c for c in self.clusters.values() if c.n >= self.k]
        at_k = self.binary and self.n and full
        return MetricSummary(
            task=task, metric=metric, n=self.n, mean=float(Fraction(self.total, self.n)) if self.n else None,
            stderr=clustered_stderr([(c.n, c.total) for c in self.clusters.values()]), errors=self.errors,
            binary=self.binary, samples=len(self.clusters),
            pass_at_k=sum(pass_at_k(c.n, c.ones, self.k) for c in full) / len(full) if at_k else None,
            majority_at_k=sum(2 * c.ones > c.n for c in full) / len(full) if at_k else None,
            at_k_samples=len(full) if at_k and len(full) < len(self.clusters) else None)


def clustered_stderr(clusters: list[tuple[int, Exact]]) -> float | None:
    """The cluster-robust standard error of the mean over all answers, each cluster (n_i answers summing to S_i)
    one unit: sqrt(G/(G-1) * sum((S_i - n_i * mean)^2)) / N. With one answer per cluster it is the sample standard
    deviation / sqrt(N). None with fewer than two clusters."""
    answered = [(n, total) for n, total in clusters if n]
    if len(answered) < 2:
        return None
    count = sum(n for n, _ in answered)
    mean = Fraction(sum(total for _, total in answered), count)
    spread = sum((total - n * mean) ** 2 for n, total in answered)
    return math.sqrt(len(answered) / (len(answered) - 1) * spread) / count


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chen et al. (2021): the chance that at least one of k answers drawn without replacement from n answers, c of
    them correct, is correct: 1 - C(n-c, k) / C(n, k)."""
    return 1.0 if n - c < k else 1 - math.comb(n - c, k) / math.comb(n, k)


class _Consistency:
    """Per task: whether each sample's answers are all the same text."""

    def __init__(self, k: int):
        self.k = k
        self._first: dict[tuple[str, str], str] = {}
        self._count: dict[tuple[str, str], int] = {}
        self._failed: set[tuple[str, str]] = set()
        self._differs: set[tuple[str, str]] = set()

    def add(self, response: ResponseRecord) -> None:
        key = response.task, response.id
        self._count[key] = self._count.get(key, 0) + 1
        if response.text is None:
            self._failed.add(key)
        elif self._first.setdefault(key, response.text) != response.text:
            self._differs.add(key)

    def by_task(self, tasks: Iterable[str]) -> dict[str, tuple[int, int, int]]:
        """Task -> its samples with k answers none failed, of them those whose answers are identical, and its
        samples answered at all (tasks with none counted left out)."""
        counted: Counter[str] = Counter()
        same: Counter[str] = Counter()
        answered: Counter[str] = Counter()
        for key, n in self._count.items():  # once over the samples: per task, 2,000 tasks of 500 took 282 s
            answered[key[0]] += 1
            if n >= self.k and key not in self._failed:
                counted[key[0]] += 1
                same[key[0]] += key not in self._differs
        return {task: (counted[task], same[task], answered[task]) for task in tasks if counted[task]}


class Tally:
    """Running statistics of score records (and, with repeats, of responses); a failed scorer counts as an error of
    its metrics."""

    def __init__(self, tasks: Iterable[str], k: int = 1):
        self._order = {task: i for i, task in enumerate(tasks)}
        self.k = k
        self._stats: dict[tuple[str, str], _Stats] = {}
        self._metrics_of: dict[tuple[str, str], set[str]] = {}
        self._consistency = _Consistency(k) if k > 1 else None

    def add(self, record: ScoreRecord) -> None:
        if record.metrics is None:
            self._failed(record)
            return
        self._metrics_of.setdefault((record.task, record.scorer), set()).update(record.metrics)
        for metric, value in record.metrics.items():
            stat = self._stat(record.task, metric)
            if isinstance(stat, _Clustered):
                stat.add_answer(record.id, value)
            else:
                stat.add(value)

    def add_response(self, record: ResponseRecord) -> None:
        """A response, for the consistency of a sample's repeats (nothing to do without repeats)."""
        if self._consistency is not None:
            self._consistency.add(record)

    def consistency(self) -> dict[str, float] | None:
        """Task -> the share of samples whose answers are identical; None without repeats."""
        if self._consistency is None:
            return None
        return {task: same / counted for task, (counted, same, _) in self._consistency.by_task(self._order).items()}

    def consistency_samples(self) -> dict[str, tuple[int, int]] | None:
        """The tasks whose consistency leaves samples out (a failed request) -> (samples it is over, samples
        answered); None where it leaves none out."""
        found = {} if self._consistency is None else self._consistency.by_task(self._order)
        return {task: (counted, of) for task, (counted, _, of) in found.items() if counted < of} or None

    def _failed(self, record: ScoreRecord) -> None:
        for metric in self._metrics_of.get((record.task, record.scorer)) or {record.scorer}:
            self._stat(record.task, metric).errors += 1

    def _stat(self, task: str, metric: str) -> _Stats:
        stat = self._stats.get((task, metric))
        if stat is None:
            stat = self._stats[task, metric] = _Clustered(k=self.k) if self.k > 1 else _Stats()
        return stat

    def summary(self, manifest_id: str, model: str, speed: Speed | None) -> Summary:
        """summary.json: the metric lines, the run's speed, and with repeats k and each task's consistency."""
        return Summary(manifest_id=manifest_id, model=model, metrics=self.summaries(), speed=speed,
                       repeats=self.k if self.k > 1 else None, consistency=self.consistency(),
                       consistency_samples=self.consistency_samples())

    def summaries(self) -> tuple[MetricSummary, ...]:
        """Lines in task order (as in the manifest), metrics sorted by name within a task."""
        self._fold_scorer_errors()
        keys = sorted(self._stats, key=lambda k: (self._order.get(k[0], len(self._order)), k[0], k[1]))
        return tuple(self._stats[k].summary(*k) for k in keys)

    def _fold_scorer_errors(self) -> None:
        """Errors first counted under a dict scorer's own name move to its metrics once they are known."""
        for (task, scorer), metrics in self._metrics_of.items():
            if scorer in metrics or (task, scorer) not in self._stats:
                continue
            errors = self._stats.pop((task, scorer)).errors
            for metric in metrics:
                self._stat(task, metric).errors += errors

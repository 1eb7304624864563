"""Per task x metric statistics, accumulated one score record at a time (memory flat in samples)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable

from benchrun.records import MetricSummary, ScoreRecord


@dataclass
class _Stats:
    """Exact running sums (ints stay ints, floats become Fractions): the result is independent of order."""

    n: int = 0
    total: int | Fraction = 0
    total_sq: int | Fraction = 0
    errors: int = 0

    def add(self, value: int | float) -> None:
        exact = value if isinstance(value, int) else Fraction(value)
        self.n += 1
        self.total += exact
        self.total_sq += exact * exact

    def summary(self, task: str, metric: str) -> MetricSummary:
        mean = Fraction(self.total, self.n) if self.n else None
        stderr = None
        if self.n > 1:
            variance = (self.total_sq - self.n * mean * mean) / (self.n - 1)
            stderr = math.sqrt(variance / self.n)
        return MetricSummary(task=task, metric=metric, n=self.n, mean=None if mean is None else float(mean),
                             stderr=stderr, errors=self.errors)


class Tally:
    """Running statistics of score records; a failed scorer counts as an error of its metrics."""

    def __init__(self, tasks: Iterable[str]):
        self._order = {task: i for i, task in enumerate(tasks)}
        self._stats: dict[tuple[str, str], _Stats] = {}
        self._metrics_of: dict[tuple[str, str], set[str]] = {}

    def add(self, record: ScoreRecord) -> None:
        if record.metrics is None:
            self._failed(record)
            return
        self._metrics_of.setdefault((record.task, record.scorer), set()).update(record.metrics)
        for metric, value in record.metrics.items():
            self._stat(record.task, metric).add(value)

    def _failed(self, record: ScoreRecord) -> None:
        for metric in self._metrics_of.get((record.task, record.scorer)) or {record.scorer}:
            self._stat(record.task, metric).errors += 1

    def _stat(self, task: str, metric: str) -> _Stats:
        return self._stats.setdefault((task, metric), _Stats())

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

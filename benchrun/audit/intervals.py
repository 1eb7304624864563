"""A run's metric lines with their 95% intervals, each within what the metric's values can be (a judge's grades)."""

from __future__ import annotations

from typing import Any, Iterable

from benchrun.archive.reader import Run
from benchrun.audit.stats import Interval, interval
from benchrun.core.records import MetricSummary

Bounds = dict[str, tuple[float, float]]
"""metric -> the least and the most one of its values can be."""


class MetricRow(MetricSummary):
    """One task x metric as in summary.json, with its 95% interval."""

    interval: Interval | None

    def to_json(self) -> dict[str, Any]:
        low, high, method = (self.interval.low, self.interval.high, self.interval.method) if self.interval else (
            None, None, None)
        repeated = {"pass_at_k": self.pass_at_k, "majority_at_k": self.majority_at_k} if self.pass_at_k is not None \
            else {}
        if self.at_k_samples is not None:
            repeated["at_k_samples"] = self.at_k_samples
        return {"task": self.task, "metric": self.metric, "n": self.n, "mean": self.mean, "stderr": self.stderr,
                "errors": self.errors, "low": low, "high": high, "interval": method, **repeated}


def with_intervals(lines: Iterable[MetricSummary], bounds: Bounds | None = None) -> list[MetricRow]:
    """The lines with their 95% intervals: Wilson's for a share of 0/1 answers (with repeats, each sample's answers
    one cluster, on its effective sample size), else a t interval with a degree of freedom per sample but one, within
    the metric's `bounds` (metric -> the least and most a value can be) when it has them; none with fewer than two."""
    bounds = bounds or {}
    return [MetricRow(**dict(line), interval=interval(line.n, line.mean, line.stderr, bool(line.binary),
                                                      line.samples, bounds.get(line.metric))) for line in lines]


def grade_bounds(run: Run) -> Bounds:
    """Each judge's metric of `run` -> the least and most its grades are: those its `scores` map them to, 0 and 1 of a
    bool, a number's `minimum` and `maximum` in its format (none when it gives not both); an answer's value is the
    mean of its grades, so within them too. Only a run whose judge model was asked (run.json's `judge`) has its
    manifest read to say: show reads no more of a run without judges than its summary."""
    if run.info.manifest_id is None or not run.info.judge:
        return {}
    bounds = {}
    for judge in run.manifest.judges:
        field = judge.format.json_schema.get("properties", {}).get(judge.score, {})
        low, high = field.get("minimum"), field.get("maximum")
        if judge.scores:
            bounds[judge.name] = (min(judge.scores.values()), max(judge.scores.values()))
        elif field.get("type") == "boolean":
            bounds[judge.name] = (0, 1)
        elif all(isinstance(end, (int, float)) and not isinstance(end, bool) for end in (low, high)):
            bounds[judge.name] = (low, high)
    return bounds

"""A run's metric lines, each knowing whether its metric is 0/1 (and with repeats its samples): summary.json's as
written. For a run that did not finish (no summary.json) they are tallied from the score records; for one whose
summary.json was written before it recorded those two, they are scanned for there: the one place the audit
commands look for them."""

from __future__ import annotations

from collections import deque
from typing import Iterable, Iterator

from benchrun.archive.reader import Run
from benchrun.archive.tally import Tally, zero_or_one
from benchrun.audit.listing import task_names
from benchrun.core.records import MetricSummary, ScoreRecord, Summary

Key = tuple[str, str]
"""(task, metric)"""


def complete(summary: Summary) -> bool:
    """Whether every metric line of `summary` says if its metric is 0/1 (and, with repeats, its samples)."""
    return all(line.binary is not None and (summary.repeats is None or line.samples is not None)
               for line in summary.metrics)


class _Kinds:
    """What an older summary.json does not say: the metrics with a value other than 0 or 1, and each metric's
    samples with a value (with repeats)."""

    def __init__(self, repeated: bool):
        self.scaled: set[Key] = set()
        self.samples: dict[Key, set[str]] | None = {} if repeated else None

    def add(self, record: ScoreRecord) -> None:
        for metric, value in (record.metrics or {}).items():
            if not zero_or_one(value):
                self.scaled.add((record.task, metric))
            if self.samples is not None:
                self.samples.setdefault((record.task, metric), set()).add(record.id)

    def completed(self, line: MetricSummary) -> MetricSummary:
        """The line as written, with whether its metric is 0/1 and, with repeats, its samples."""
        key = line.task, line.metric
        samples = None if self.samples is None else len(self.samples.get(key, ()))
        return line.model_copy(update={"binary": key not in self.scaled, "samples": samples})


class MetricLines:
    """The metric lines of a run; score records streamed past `watch` are scanned only when summary.json cannot
    say everything (so a reader that streams them anyway needs no second pass)."""

    def __init__(self, run: Run):
        self.run = run
        summary = run.summary
        self._scan: Tally | _Kinds | None = (Tally(task_names(run), _k(run)) if summary is None else
                                             None if complete(summary) else _Kinds(summary.repeats is not None))
        self._complete = self._scan is None

    def watch(self, records: Iterable[ScoreRecord]) -> Iterator[ScoreRecord]:
        """Pass the records through, scanning each if need be; the scan is complete when they are exhausted."""
        if self._scan is None:
            yield from records
            return
        add = self._scan.add
        for record in records:
            add(record)
            yield record
        self._complete = True

    def lines(self, task: str | None = None) -> list[MetricSummary]:
        """Every metric line (of `task` only, if given), in summary.json's order. Reads scores.jsonl if the lines
        need a scan not already watched to the end."""
        if not self._complete:
            deque(self.watch(self.run.scores()), maxlen=0)
        scan = self._scan
        if isinstance(scan, Tally):
            found: Iterable[MetricSummary] = scan.summaries()
        else:
            found = self.run.summary.metrics if scan is None else map(scan.completed, self.run.summary.metrics)
        return [line for line in found if task in (None, line.task)]

    def consistency(self, task: str | None = None) -> dict[str, float]:
        """With repeats, task -> the share of samples whose answers are identical (of `task` only, if given)."""
        scan = self._scan
        shares = (scan.consistency() if isinstance(scan, Tally) else self.run.summary.consistency) or {}
        return {name: share for name, share in shares.items() if task in (None, name)}

    def consistency_samples(self, task: str | None = None) -> dict[str, tuple[int, int]]:
        """The tasks whose consistency leaves samples out (of `task` only, if given) -> (samples it is over, samples
        answered); none for a summary.json written before it said so."""
        scan = self._scan
        over = (scan.consistency_samples() if isinstance(scan, Tally) else self.run.summary.consistency_samples) or {}
        return {name: found for name, found in over.items() if task in (None, name)}


def _k(run: Run) -> int:
    """The answers per sample of a run with no summary.json: its manifest's, or 1 for one that never compiled (it
    has no manifest, and no records)."""
    return run.manifest.k if run.info.manifest_id is not None else 1


def metric_lines(run: Run) -> list[MetricSummary]:
    """Every metric line of the run, complete (see MetricLines)."""
    return MetricLines(run).lines()



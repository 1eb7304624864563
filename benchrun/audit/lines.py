"""A run's metric lines, each knowing whether its metric is 0/1 (and with repeats its samples, and those its pass@k is
over): summary.json's as written. For a run that did not finish (no summary.json) they are tallied from the score
records; for one whose summary.json was written before it recorded those, they are scanned for there: the one place
the audit commands look for them. With repeats, a run's consistency is its responses' (a summary.json that leaves out
the samples it is over reads as an older benchrun's, which said none)."""

from __future__ import annotations

from collections import Counter, deque
from typing import Iterable, Iterator

from benchrun.archive.reader import Run
from benchrun.archive.tally import Tally, zero_or_one
from benchrun.audit.listing import task_names
from benchrun.core.records import MetricSummary, ScoreRecord, Summary

Key = tuple[str, str]
"""(task, metric)"""


def complete(summary: Summary) -> bool:
    """Whether every metric line of `summary` says if its metric is 0/1 (and, with repeats, its samples and those its
    pass@k is over: a line leaves them out where it is over all, as an older benchrun's does where it is not)."""
    return all(line.binary is not None and (summary.repeats is None or (line.samples is not None and
                                                                         line.pass_at_k is None))
               for line in summary.metrics)


class _Kinds:
    """What an older summary.json does not say: the metrics with a value other than 0 or 1, and with repeats each
    metric's samples with a value (and how many each has: pass@k is over those with k)."""

    def __init__(self, k: int | None):
        self.scaled: set[Key] = set()
        self.k = k
        self.samples: dict[Key, Counter[str]] | None = {} if k else None

    def add(self, record: ScoreRecord) -> None:
        for metric, value in (record.metrics or {}).items():
            if not zero_or_one(value):
                self.scaled.add((record.task, metric))
            if self.samples is not None:
                self.samples.setdefault((record.task, metric), Counter())[record.id] += 1

    def completed(self, line: MetricSummary) -> MetricSummary:
        """The line as written, with whether its metric is 0/1 and, with repeats, its samples and those its pass@k
        is over when fewer (`at_k_samples`, as `archive.tally` says them)."""
        key = line.task, line.metric
        valued = None if self.samples is None else self.samples.get(key, Counter())
        full = None if valued is None else sum(n >= (self.k or 1) for n in valued.values())
        at_k = full if line.pass_at_k is not None and valued is not None and full < len(valued) else None
        return line.model_copy(update={"binary": key not in self.scaled, "at_k_samples": at_k,
                                       "samples": None if valued is None else len(valued)})


class MetricLines:
    """The metric lines of a run; score records streamed past `watch` are scanned only when summary.json cannot
    say everything (so a reader that streams them anyway needs no second pass)."""

    def __init__(self, run: Run):
        self.run = run
        summary = run.summary
        self._scan: Tally | _Kinds | None = (Tally(task_names(run), _k(run)) if summary is None else
                                             None if complete(summary) else _Kinds(summary.repeats))
        self._complete = self._scan is None
        self._answers: Tally | None = None

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
        shares = self._repeated().consistency() or {}
        return {name: share for name, share in shares.items() if task in (None, name)}

    def consistency_samples(self, task: str | None = None) -> dict[str, tuple[int, int]]:
        """The tasks whose consistency leaves samples out (of `task` only, if given) -> (samples it is over, samples
        answered)."""
        over = self._repeated().consistency_samples() or {}
        return {name: found for name, found in over.items() if task in (None, name)}

    def _repeated(self) -> Tally:
        """The run's responses tallied for consistency (read once, with repeats only): the tally of an unfinished
        run's score records (it has none), or of the responses of a finished one."""
        if isinstance(self._scan, Tally):
            return self._scan
        if self._answers is None:
            repeats = self.run.summary.repeats if self.run.summary is not None else None
            self._answers = Tally(task_names(self.run), repeats or 1)
            for response in self.run.responses() if repeats else ():
                self._answers.add_response(response)
        return self._answers


def _k(run: Run) -> int:
    """The answers per sample of a run with no summary.json: its manifest's, or 1 for one that never compiled (it
    has no manifest, and no records)."""
    return run.manifest.k if run.info.manifest_id is not None else 1


def metric_lines(run: Run) -> list[MetricSummary]:
    """Every metric line of the run, complete (see MetricLines)."""
    return MetricLines(run).lines()



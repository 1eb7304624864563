"""What a run's records add up to as they are committed: the counts of run.json, the metric tally and speed of
summary.json, and how many answers are graded. The run's writer and a rescore keep them alike, one record at a
time (memory flat in the number of samples)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from benchrun.archive.agreement import Agreement
from benchrun.archive.speed import SpeedTally
from benchrun.archive.tally import Tally
from benchrun.core.judgeagreement import JudgeAgreement
from benchrun.core.layout import FORMAT_VALID
from benchrun.core.manifest import Manifest
from benchrun.core.records import Counts, JudgementRecord, ResponseRecord, ScoreRecord, Summary
from benchrun.core.shards import Shard, answers_of

if TYPE_CHECKING:  # the writer imports this module, and the reader the writer's neighbours
    from benchrun.archive.reader import Run


class Books:
    """Counts, tally and speed of the records of one manifest (of its `shard`, for a run of one part). `wall_s` is
    the time earlier sessions spent asking (None: unknown)."""

    def __init__(self, manifest: Manifest, wall_s: float | None = 0.0, shard: Shard | None = None):
        self.samples = answers_of(manifest, shard)
        self.tally = Tally((t.name for t in manifest.tasks), manifest.k)
        self.speed = SpeedTally(wall_s)
        self.responses = self.request_errors = self.scorer_errors = self.format_invalid = self.cached = 0
        self.graded = 0
        """Responses whose score lines are in (each answer's begin with format_valid)."""
        self._failed: set[tuple[str, int]] = set()
        self.agreement = Agreement(manifest) if manifest.judges else None
        """The answers whose request failed: their score lines are not also scorer errors or invalid formats."""

    def response(self, response: ResponseRecord) -> None:
        self.responses += 1
        self.request_errors += response.error is not None
        self.cached += response.cached_from is not None and response.carried_from is None  # taken from it in this run
        self.tally.add_response(response)
        self.speed.add(response)
        if response.error is not None:
            self._failed.add((response.id, response.repeat))

    def judgements(self, calls: Iterable[JudgementRecord]) -> None:
        if self.agreement is not None:
            self.agreement.calls(calls)

    def scores(self, scores: Iterable[ScoreRecord]) -> None:
        for score in scores:
            if self.agreement is not None:
                self.agreement.score(score)
            self.tally.add(score)
            self.graded += score.scorer == FORMAT_VALID
            if (score.id, score.repeat) not in self._failed:
                self.scorer_errors += score.error is not None
                self.format_invalid += score.scorer == FORMAT_VALID and score.detail is not None

    @property
    def ungraded(self) -> int:
        """Responses recorded whose scores are not (their scorers were still at work when the run stopped)."""
        return self.responses - self.graded

    def counts(self) -> Counts:
        return Counts(samples=self.samples, responses=self.responses, request_errors=self.request_errors,
                      scorer_errors=self.scorer_errors, format_invalid=self.format_invalid, cached=self.cached)

    def agreement_summaries(self) -> dict[str, JudgeAgreement]:
        """summary.json's `judges`: how each judge agrees with itself and the scorers (none without judges)."""
        return {} if self.agreement is None else self.agreement.summaries()

    def summary(self, manifest_id: str, model: str) -> Summary:
        summary = self.tally.summary(manifest_id, model, self.speed.speed())
        return summary.model_copy(update={"judges": self.agreement_summaries()}) if self.agreement else summary


def counts_of(run: Run) -> Counts:
    """The run's counts: run.json's, which its writer rewrites as it ends; for a run that has not ended (killed, or
    being written now) those are what its last writer found as it started, so what its records add up to instead."""
    if run.info.status != "running" or run.info.manifest_id is None:
        return run.info.counts
    checked = run.require_records()
    books = Books(checked.manifest, shard=checked.info.shard)
    for response in checked.responses():
        books.response(response)
    books.scores(checked.scores())
    return books.counts()

"""Whether a finished run's numbers (run.json's counts, summary.json's metric lines), and a finished rescore's (its
rescore.json's counts, its summary.json), are what their records make: a sealed run reads alike whichever reads it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from benchrun.archive.books import Books
from benchrun.archive.lineagefields import call_overran, parent_unmade, self_derived, span
from benchrun.archive.reader import Run, load_run
from benchrun.archive.repair import JudgeCalls
from benchrun.archive.trust import seal_broken, unreadable
from benchrun.archive.writer import file_digest
from benchrun.audit.answernames import AnswerNames
from benchrun.audit.askedservers import ResponseHosts, judge_servers, rejudge_servers
from benchrun.audit.judgegrades import JudgeGrades
from benchrun.audit.rescored import RescoreInfo
from benchrun.audit.speedcheck import READ, close, speed_unmade
from benchrun.audit.uncached import Uncached
from benchrun.core.errors import ArchiveError, BenchrunError
from benchrun.core.judgeagreement import JudgeAgreement
from benchrun.core.layout import JUDGEMENTS, RESCORE_FILE, RESCORES, RESPONSES, RUN, SCORES, SUMMARY
from benchrun.core.manifest import Manifest
from benchrun.core.records import (
    Counts,
    JudgementRecord,
    MetricSummary,
    ResponseRecord,
    ScoreRecord,
    Summary,
    answer_name,
)
from benchrun.core.recordvalues import moment_at

FIELDS = ("n", "errors", "mean", "stderr")
"""What a metric line says that its records make (as any benchrun wrote it: `binary` and `samples` came later)."""
LATER = tuple(field for field in MetricSummary.model_fields if field not in ("task", "metric", *FIELDS))
"""What a later benchrun's metric line says too (`binary`, `samples`, pass@k ...): checked where a line says it."""
TOGETHER = (("binary", "samples"), ("pass_at_k", "majority_at_k"))
"""Later fields that came in one benchrun: a line saying one of them was written by a benchrun that wrote each of them
its records make (a line without `samples` is read as of one answer per sample: Wilson's interval, McNemar's test)."""
TASK_FIGURES = ("repeats", "consistency_samples", "consistency")
"""What summary.json says beside its metric lines that the records make, checked where it says it (a later
benchrun's): consistency has been over the samples whose every request was answered since repeats came (fcd0ace),
before a benchrun said which (consistency_samples, 55ad209)."""
WITH_REPEATS = ("repeats", "consistency")
"""Of TASK_FIGURES, what every benchrun since repeats came (fcd0ace) has written for a run of repeats: checked where
a summary leaves it out too (read as a run without repeats: `6/6 samples`, no consistency)."""
RESCORE_READ = "not as the rescore wrote it, which tallied its records"


def books_for(run: Run) -> Books | None:
    """Empty books to keep a finished run's records in as verify reads them (`trust.unreadable`); None when there is
    nothing to check them against: the run has not ended (its counts are those it started with), a file is unreadable
    (verify says so), or its seal does not cover its run.json (verify says so already: its numbers are no writer's)."""
    try:
        seal, summary, manifest = run.seal, run.summary, run.manifest
    except ArchiveError:
        return None
    if summary is None or run.info.manifest_id is None or seal is None or seal_broken(run, seal):
        return None
    return Books(manifest, shard=run.info.shard)  # as its writer kept them (`counts_of`)


def disagreement(run: Run, books: Books) -> tuple[str, str] | None:
    """The first of run.json's counts and summary.json's metric lines that the run's records, kept in `books`, do not
    make, or run.json naming the run itself as its parent or a shard, as (file, `what: why`); None when all are
    theirs."""
    if (itself := self_derived(run.info) or _from_child(run)) is not None:
        return RUN, itself
    planned = parent_unmade(run.info, books.samples)
    return ((RUN, f"{planned}: {READ}") if planned else None) or _unmade(books, run.info.counts, run, (RUN, SUMMARY),
                                                                           READ) or speed_unmade(run, books)


def _from_child(run: Run) -> str | None:
    """Why a retry's parent, as run.json names it and its folder still holds it, is the run's own child: its parent is
    this run, and it started later (of two runs naming each other, the later is the retry, which the earlier's
    run.json was edited to name); None when it is not (or it is not there to tell)."""
    if (parent := run.info.parent) is None:
        return None
    try:
        made_of = load_run(parent.path)
        later = moment_at(made_of.info.started_at) > moment_at(run.info.started_at)
    except (BenchrunError, OSError, ValueError):
        return None
    if (not later or made_of.id != parent.run_id or made_of.info.parent is None
            or made_of.info.parent.run_id != run.id):
        return None
    return (f"parent.run_id is {parent.run_id!r}, the run in {parent.path}, whose own parent is this run: a retry is "
            "made of a run that ended before it, never of its child")


class RescoreBooks:
    """A finished rescore's books, kept as verify's one pass over the run reads its records: the run's first
    answers the rescore scored (as many as its rescore.json says) and, not rejudged, the run's judge calls."""

    def __init__(self, run: Run, manifest: Manifest, folder: Path, info: RescoreInfo):
        self.name, self.info, self.manifest = f"{RESCORES}/{folder.name}", info, info.graded(manifest)
        files = info.files if SUMMARY in info.files or not (folder / SUMMARY).is_file() else {  # before b364313: its
            **info.files, SUMMARY: file_digest(folder / SUMMARY)}  # summary.json read as it is, checked by its scores
        self.graded = Run(folder, run.info.model_copy(update={"files": files, "judge": info.judge or run.info.judge}))
        self.books, self.answered = Books(self.manifest, shard=run.info.shard), set[tuple[str, int]]()
        self.grades = JudgeGrades(self.manifest, None if info.judge is None else
                                  rejudge_servers(run, info.judge, f"{self.name}/{RESCORE_FILE}"))
        """Its own judge calls' grades, rejudged (a rescore from the archive reads the run's again, as graded now), and
        the chats its judge was asked."""
        self.names = AnswerNames()
        """The names its own judge calls (rejudged) gave their model."""
        self.span = span(info.started_at, info.created_at, info.clock_stepped_back_s or 0.0)
        """Seconds from its start to its end (and as far as its wall clock went back meanwhile), in which it asked its
        own judge calls (None: a rescore giving none)."""

    def response(self, response: ResponseRecord) -> None:
        if self.books.responses < self.info.counts.responses:  # what rescore.json says, which anyone may write: 10**30
            self.books.response(response)
            self.answered.add((response.id, response.repeat))
            if self.info.judge is not None:
                self.grades.response(response)

    def judgement(self, call: JudgementRecord) -> None:
        if self.info.judge is None:  # rejudged, its own (`disagreement`)
            self.books.judgements((call,))

    def disagreement(self) -> tuple[str, str] | None:
        """The first of the rescore's counts (rescore.json) and summary.json lines that its records (the run's answers
        and judge calls kept, its own scores and, rejudged, judgements) do not make, or a score line of it that grades
        no answer it scored, an answer twice, or leaves one ungraded, as (file, `what: why`)."""
        if self.info.judge is not None and (stray := self._stray_call()) is not None:
            return f"{self.name}/{JUDGEMENTS}", stray
        if found := self.names.judge_contradiction(f"{self.name}/{RESCORE_FILE}", self.info.judge, "the rescore"):
            return found
        if (stray := _stray_score(self.graded, self.answered, self.books,
                                   self.grades if self.info.judge is not None else None)) is not None:
            return f"{self.name}/{SCORES}", stray
        if self.books.ungraded:  # a run stopped while its scorers were at work leaves some
            return f"{self.name}/{SCORES}", (f"grades {self.books.graded} of the {self.books.responses} answers the "
                                             "rescore scored, and a rescore grades every one")
        files = (f"{self.name}/{RESCORE_FILE}", f"{self.name}/{SUMMARY}")
        return _unmade(self.books, self.info.counts, self.graded, files, RESCORE_READ)

    def _stray_call(self) -> str | None:
        """Each of the rescore's own judge calls into its books; the first that is no call of its grading (as a run's
        are vetted, `repair.JudgeCalls`: a judge of the task, a repeat asked, an answer it scored, once), said."""
        calls = JudgeCalls(self.manifest)
        for number, call in enumerate(self.graded.judgements(), 1):
            if (why := calls.problem(number, (call.id, call.repeat), call.judge, call.judge_repeat, self.answered)
                    or call_overran(call.model_dump(), self.span, f"{self.name}/{RESCORE_FILE}'s started_at to its "
                                                                  "created_at, in which the rescore asked it")):
                return f"line {number} {why}"
            self.grades.calls((call,))
            if (why := self.grades.misread(call)) is not None:
                return why
            self.books.judgements((call,))
            self.names.judgement(call)
        return None


class RunPass:
    """What verify keeps of its one pass over a run's records: the run's books (None: nothing to check them against,
    `books_for`), each finished rescore's, and the names its answers gave their model; `read` once every record was
    read."""

    def __init__(self) -> None:
        self.books: Books | None = None
        self.rescores: list[RescoreBooks] = []
        self.read = False
        self.grades: JudgeGrades | None = None
        self.misgraded: tuple[str, str] | None = None
        """The first record line of the run that is not what its writer made of what it asked and was told (a response
        naming a server no session asked, a judge call, a judge's score line its calls do not make), as (file, `line N
        ...`)."""
        self.names = AnswerNames()
        self.hosts: ResponseHosts | None = None
        self.uncached: Uncached | None = None

    def read_through(self, run: Run) -> tuple[str, str, int | None] | None:
        """Every record of the run read once (`trust.unreadable`) and kept; the first unreadable, as it says it."""
        self.books = books_for(run)
        self.grades = _grades_of(run)
        self.hosts, self.uncached = ResponseHosts(run), Uncached(run)
        found = unreadable(run, self)
        self.read = found is None
        return found

    def response(self, response: ResponseRecord) -> None:
        if self.books is not None:
            self.books.response(response)
        if self.grades is not None:
            self.grades.response(response)
        self.names.response(response)
        if self.misgraded is None and self.hosts is not None and self.uncached is not None:
            self.misgraded = self.hosts.misread(response) or self.uncached.misread(RESPONSES, response)
        for rescore in self.rescores:
            rescore.response(response)

    def judgements(self, calls: Iterable[JudgementRecord]) -> None:
        for call in calls:
            if self.books is not None:
                self.books.judgements((call,))
            for rescore in self.rescores:
                rescore.judgement(call)
            if self.grades is not None:
                self.grades.calls((call,))
                if self.misgraded is None and (why := self.grades.misread(call)):
                    self.misgraded = JUDGEMENTS, why
            if self.misgraded is None and self.uncached is not None:
                self.misgraded = self.uncached.misread(JUDGEMENTS, call)
            self.names.judgement(call)

    def scores(self, scores: Iterable[ScoreRecord]) -> None:
        for number, score in enumerate(scores, 1):
            if self.books is not None:
                self.books.scores((score,))
            if self.misgraded is None and self.grades is not None and (why := self.grades.problem(number, score)):
                self.misgraded = SCORES, why


def _grades_of(run: Run) -> JudgeGrades | None:
    """Where the run's judge calls' grades are kept to check its judges' score lines (None: no judges, or a manifest
    no reader reads, which `trust.unreadable` says)."""
    try:
        return JudgeGrades(run.manifest, judge_servers(run)) if run.manifest.judges else None
    except ArchiveError:
        return None


def _unmade(books: Books, counts: Counts, graded: Run, files: tuple[str, str], read: str) -> tuple[str, str] | None:
    """The first of `counts` and `graded`'s summary lines that the records kept in `books` do not make, tallied as
    their writer did (`counts_of`)."""
    made = books.counts()
    for field in Counts.model_fields:
        if (said := getattr(counts, field)) != getattr(made, field):
            return files[0], f"counts.{field} is {said}, its records make {getattr(made, field)}: {read}"
    summary = graded.summary or Summary(manifest_id=graded.info.manifest_id or "", model=graded.info.model, metrics=())
    for field in ("manifest_id", "model"):  # what its writer named it by: run.json's
        if (said := getattr(summary, field)) != (own := getattr(graded.info, field)):
            return files[1], f"{field} is {said!r}, where run.json's is {own!r}: a summary of another run's"
    tallied = books.tally.summary(summary.manifest_id, summary.model, None)
    written = {(line.task, line.metric): line for line in summary.metrics}
    found = {(line.task, line.metric): line for line in tallied.metrics}
    for key in [*written, *(key for key in found if key not in written)]:
        if (why := _differs(written.get(key), found.get(key))) is not None:
            return files[1], f"{'/'.join(key)}: {why}: {read}"
    for field in TASK_FIGURES:
        said, made = getattr(summary, field), getattr(tallied, field)
        if (said is not None or field in WITH_REPEATS) and not close(said, made):
            return files[1], f"{field}: summary.json's is {_json(said)}, its records make {_json(made)}: {read}"
    said, made = (graded.summary.judges if graded.summary else None) or {}, books.agreement_summaries()
    for judge in [*said, *(judge for judge in made if judge not in said)]:  # within rounding: before 156073d a
        if not close(_dumped(said.get(judge)), _dumped(made.get(judge))):  # kappa was worked out in floats
            return files[1], (f"judges.{judge}: summary.json's agreement is {_agreement(said.get(judge))}, its judge "
                              f"calls and scores make {_agreement(made.get(judge))}: {read}")
    return None


def _dumped(found: JudgeAgreement | None) -> dict[str, Any] | None:
    return None if found is None else found.model_dump(mode="json")


def _agreement(found: JudgeAgreement | None) -> str:
    return "none" if found is None else json.dumps(found.model_dump(mode="json"), sort_keys=True)


def _stray_score(graded: Run, answered: set[tuple[str, int]], books: Books, grades: JudgeGrades | None) -> str | None:
    """Each of `graded`'s score lines into `books`; the first that scores no answer `answered` holds, or an answer a
    scorer scored already (a run's own are vetted so already, `repair.check`; a rescore's only here), or a judge's
    that its calls kept in `grades` do not make, said."""
    seen: set[tuple[str, int, str]] = set()
    for number, score in enumerate(graded.scores(), 1):
        key = (score.id, score.repeat, score.scorer)
        if key[:2] not in answered or key in seen:
            what = (", an answer the run does not hold: a grading scores the run's answers only"
                    if key[:2] not in answered else f" with {score.scorer!r} again: a grading scores each answer once")
            return f"line {number} scores {answer_name(score.id, score.repeat)!r}{what}"
        if grades is not None and (why := grades.problem(number, score)) is not None:
            return why
        seen.add(key)
        books.scores((score,))
    return None


def _differs(written: MetricSummary | None, found: MetricSummary | None) -> str | None:
    if written is None or found is None:
        return "in its score records, not in summary.json" if written is None else "in summary.json, not in its score records"
    for field in (*FIELDS, *(field for field in LATER if getattr(written, field) is not None)):
        if not close(said := getattr(written, field), made := getattr(found, field)):
            return f"summary.json's {field} is {said}, its score records make {made}"
    return _left_out(written, found)


def _left_out(written: MetricSummary, found: MetricSummary) -> str | None:
    """A field of `TOGETHER` that a line leaves out where it says another of the same benchrun, and its records make."""
    for fields in TOGETHER:
        said = [field for field in fields if getattr(written, field) is not None]
        for field in fields if said else ():
            if getattr(written, field) is None and (made := getattr(found, field)) is not None:
                return (f"summary.json says {said[0]} but not {field}, which its score records make ({made}) and the "
                        f"benchrun writing {said[0]} writes with it")
    return None


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)

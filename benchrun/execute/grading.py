"""Grading one response: its format checked against the response class, then every scorer of its task.

The user's scorers (custom_scorer.py) run in a child process (`execute.scorerprocess`), never on the event loop:
each call has `scorer_timeout_s`; one that overruns is recorded as that sample's error ("timed out after 10 s"),
the process is replaced and the calls behind it go on. A scorer that exits, or kills its process, costs only
its own call. What scorers print goes to the run's log file, bounded. A grading is started (`Grader.start`) and its
scores collected when done, so the run asks the next samples meanwhile; the process answers each call as it ends.
benchrun's own scorers (exact_match, contains) are called in this process, as the child would call them: they are
not user code, and a round trip to the child costs more than they do.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchrun.compiler.scoring import BUILTIN, Scorer
from benchrun.core.layout import FORMAT_VALID
from benchrun.core.manifest import PROMPT_ID, Manifest, Sample
from benchrun.core.records import ErrorInfo, JudgementRecord, ResponseRecord, ScoreRecord
from benchrun.execute.formatcheck import FormatCheck, said_why
from benchrun.execute.judging import Judge
from benchrun.execute.scorer_worker import call
from benchrun.execute.scorerprocess import Result, ScorerProcess


class Grader:
    """Scores responses of one manifest with the given scorer functions (by name); an async context manager that
    owns the scorer process. Records on the per-sample path are built with `model_construct`: their fields are
    checked here (scorer results by `scoring.metrics`), and validating them again costs more than the rest."""

    def __init__(self, manifest: Manifest, scorers: dict[str, Scorer], log: Path, timeout_s: float,
                 judge: Judge | None = None):
        self._judge = judge
        self._formats = {t.name: FormatCheck(t.format.json_schema) for t in manifest.tasks}
        self._scorers = {t.name: [s.name for s in t.scorers] for t in manifest.tasks}
        self._calculated = {t.name for t in manifest.tasks if t.reference == "calculated"}
        used = {name: scorers[name] for names in self._scorers.values() for name in names}
        self._builtin = {name: fn for name, fn in used.items() if BUILTIN.get(name) is fn}
        self._process = ScorerProcess({name: fn for name, fn in used.items() if name not in self._builtin}, log,
                                      timeout_s)

    async def __aenter__(self) -> Grader:
        await self._process.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._process.close()

    async def grade(self, sample: Sample, response: ResponseRecord) -> Grading:
        """The answer graded: format_valid first, then one record per scorer and per judge, in the task's order
        (`Grading.records`), and each judge call (`Grading.judged`)."""
        grading = self.start(sample, response)
        self.send()
        await grading.scores()
        return grading

    def held(self) -> Held:
        """What holds back the gradings of this grader's judge failures until they are known to be their answers'."""
        return Held(self._judge)

    def send(self) -> None:
        """Send the scorer calls still waiting for a batch (before waiting on a grading that is not done)."""
        self._process.send()

    def start(self, sample: Sample, response: ResponseRecord) -> Grading:
        """Check the format and send the scorer calls; the scores are collected from the `Grading` when done."""
        names, of = self._scorers[sample.task], {"id": sample.id, "task": sample.task, "repeat": response.repeat}
        judges = self._judge.judges_of(sample.task) if self._judge else ()
        if response.text is None:
            error = ErrorInfo(type="NoResponse", message=f"no response: {response.error.message}")
            return Grading(response, [ScoreRecord(**of, scorer=n, metrics=None, error=error)
                                      for n in [FORMAT_VALID, *names, *judges]])
        reference = scorer_reference(sample, sample.task in self._calculated)
        calls = [self._call(name, response.text, reference) for name in names]
        judging = self._judge.start(sample, response) if judges else []
        return Grading(response, [self._format(of, sample.task, response)], of, names, calls, self._judge,
                       judging)

    def _call(self, name: str, text: str, reference: Any) -> asyncio.Future[Result]:
        """One scorer call: a built-in's result at once, a user scorer's from the scorer process."""
        fn = self._builtin.get(name)
        if fn is None:
            return self._process.call(name, text, reference)
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        found, error = call(name, fn, text, reference)
        future.set_result(found if error is None else ErrorInfo(type=error[0], message=error[1]))
        return future

    def _format(self, of: dict[str, Any], task: str, response: ResponseRecord) -> ScoreRecord:
        """The answer's format check, saying why an answer not in the format is not, where its server said why (cut at
        its limit, refused, its text left empty beside its thinking: `said_why`, as of a judge's reply)."""
        text = response.text or ""
        problem = self._formats[task].problem(text)
        if problem and (why := said_why(response.done_reason, response.extra, text, "the answer",
                                        "the model's token limit", "the model")):
            problem = f"{problem} ({why})"
        return ScoreRecord.model_construct(**of, scorer=FORMAT_VALID, metrics={FORMAT_VALID: int(problem is None)},
                                           detail=problem)


@dataclass
class Grading:
    """One response's grading under way: its format checked, its scorer calls sent, their results still coming."""

    response: ResponseRecord
    ready: list[ScoreRecord]
    """The records known at once: format_valid, or for a failed request every record."""
    of: dict[str, Any] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)
    calls: list[asyncio.Future[Result]] = field(default_factory=list)
    judge: Judge | None = None
    judging: list[asyncio.Future[JudgementRecord]] = field(default_factory=list)
    """The judge calls on the answer, under way."""
    judged: list[JudgementRecord] = field(default_factory=list)
    """The judge calls, once `scores` has waited for them."""
    records: list[ScoreRecord] = field(default_factory=list)
    """The score records, once `scores` has waited for them."""

    def done(self) -> bool:
        return all(call.done() for call in self.calls) and all(call.done() for call in self.judging)

    @property
    def new_judgements(self) -> list[JudgementRecord]:
        """The judge calls made for this grading (not read again from the archive): what is written."""
        return self.judge.new(self.judged) if self.judge else []

    async def scores(self) -> list[ScoreRecord]:
        """The response's score records, in the task's order: format_valid, the scorers, the judges (waiting for
        the scorers and judges still at work)."""
        results = [await call for call in self.calls]
        self.judged = list(await asyncio.gather(*self.judging))
        judges = self.judge.scores(self.of, self.response.task, self.judged) if self.judging else []
        self.records = [*self.ready, *(_record(self.of, n, r) for n, r in zip(self.names, results)), *judges]
        return self.records


class Held:
    """The gradings not to be recorded yet: those holding a judge call that failed in a run of judge failures not yet
    ended (`Judge.undecided`). Recorded once a reply (or a failure of another kind, or the end of the asking) shows the
    failure was the answer's own; never if the run of failures stops the run (FailFast), so `resume` grades them."""

    def __init__(self, judge: Judge | None):
        self._judge = judge
        self._held: list[Grading] = []

    def ready(self, gradings: list[Grading]) -> list[Grading]:
        """Of the gradings held and `gradings`, in order, those to record now; the others are held."""
        pending = [*self._held, *gradings]
        if self._judge is None:
            return pending
        self._held = [grading for grading in pending if self._judge.undecided(grading.judged)]
        return [grading for grading in pending if not self._judge.undecided(grading.judged)]

    def unkept(self) -> None:
        """Raise the judge's response cache failure to keep a reply (CacheFailed), once the call is recorded."""
        if self._judge is not None and (failed := self._judge.take_unkept()) is not None:
            raise failed

    def release(self) -> list[Grading]:
        """The gradings held: the asking ended without a broken judge, so their failures were their answers' own."""
        held, self._held = self._held, []
        return held


def scorer_reference(sample: Sample, calculated: bool) -> Any:
    """What a scorer gets as its second argument: the reference, or for `calculated` the values + prompt_id."""
    return {**sample.values, PROMPT_ID: sample.id} if calculated else sample.reference


def _record(of: dict[str, Any], name: str, result: Result) -> ScoreRecord:
    """One scorer's record for the response `of` names (id, task, repeat)."""
    if isinstance(result, ErrorInfo):
        return ScoreRecord(**of, scorer=name, metrics=None, error=result)
    return ScoreRecord.model_construct(**of, scorer=name, metrics=result)

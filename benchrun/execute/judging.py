"""Grading answers with a judge model: for each judge of a task and each of `judge.repeats` calls, the rubric
rendered for the answer is asked of the judge model in the judge's format (through the response cache, like any
answer), the reply read, and the call kept as a `JudgementRecord`. A reply that does not parse in the format, or
whose grade has no number, is that answer's scorer error, its raw reply kept: there is no default grade.

Calls archived already (a resume grading again what a killed run left ungraded, a rescore from the archive alone)
are read again instead of asked. In a run, `max_consecutive_failures` different answers in a row whose judge request
failed the same kind of way (`failure_kind`), no reply between, are a broken judge, not a benchmark result: FailFast,
every answer of that run of failures left ungraded for `resume` (its gradings held back until a reply, or a failure of
another kind, shows the failures were the answers' own: `undecided`)."""

from __future__ import annotations

import asyncio
import json
import time
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from benchrun.archive.reader import Run
from benchrun.compiler.scoring import metrics
from benchrun.core.errors import FailFast
from benchrun.core.manifest import JudgeSpec, Manifest, Message, Sample
from benchrun.core.metricvalue import MAX_METRIC, in_bounds, number_shown
from benchrun.core.records import Completion, ErrorInfo, JudgementRecord, ResponseRecord, ScoreRecord
from benchrun.core.recordvalues import Served
from benchrun.core.rubric import rubric_chat
from benchrun.core.text import NotJSON, json_value
from benchrun.execute.cache import CacheFailed, Entry, Repeat, RunCache
from benchrun.execute.cachehit import whole_hit
from benchrun.execute.failurekind import failure_kind, longer
from benchrun.execute.formatcheck import FormatCheck, said_why

if TYPE_CHECKING:  # a rescore from the archive alone asks no judge model: runner code is loaded only to ask one
    from benchrun.execute.hosts import Lost
    from benchrun.execute.runners.base import Runner

Key = tuple[str, int, str, int]
"""A judge call: (sample id, answer repeat, judge, judge repeat)."""
INVALID = "JudgeReplyInvalid"


def read_reply(spec: JudgeSpec, check: FormatCheck, reply: str,
               said: Mapping[str, Any] | None = None) -> tuple[Any, Any, ErrorInfo | None]:
    """(grade, its number, None), or (grade or None, None, why) for a reply that gives no number; why says what the
    server `said` of the reply (the call's `extra`) where that is why: it did not end as the judge meant (done_reason
    `length`, cut at the judge's token limit, as every reply of a run may be), or the judge refused (`refusal`, its
    content none), or its text is empty beside its thinking (`formatcheck.said_why`), which the message alone did not
    say (`not JSON: Unterminated string`, `Expecting value`)."""
    grade, value, error = _read(spec, check, reply)
    said = said or {}
    if error is None or not (why := said_why(said.get("done_reason"), said, reply, "the reply",
                                             "the judge's token limit", "the judge")):
        return grade, value, error
    return grade, value, ErrorInfo(type=error.type, message=f"{error.message} ({why})")


def _read(spec: JudgeSpec, check: FormatCheck, reply: str) -> tuple[Any, Any, ErrorInfo | None]:
    try:
        parsed = json_value(reply)
    except NotJSON as err:
        return None, None, ErrorInfo(type=INVALID, message=f"the judge's reply is not JSON: {err}")
    problem = check.data_problem(parsed)
    if problem is not None or not isinstance(parsed, dict):
        said = problem if problem is not None else "not an object"
        return None, None, ErrorInfo(type=INVALID, message=f"the judge's reply is not in format "
                                                           f"{spec.format.name}: {said}")
    if spec.score not in parsed:  # a grade field with a default: valid without it, but no default grades an answer
        return None, None, ErrorInfo(type=INVALID, message=f"the judge's reply gives no grade: it has no field "
                                                           f"'{spec.score}'")
    grade = parsed[spec.score]
    try:
        number = spec.grade(parsed)
    except KeyError:
        return grade, None, ErrorInfo(type=INVALID, message=f"grade {_as_written(reply, spec)} has no number in "
                                                            f"the scores of judge '{spec.name}'")
    if isinstance(number, (int, float)) and not in_bounds(number):
        return grade, None, ErrorInfo(type=INVALID, message=f"judge '{spec.name}' graded by "
                                                            f"{_as_written(reply, spec)}, out of a score's range: a "
                                                            f"grade is a finite number of magnitude at most "
                                                            f"{MAX_METRIC:g}")
    try:
        value = metrics(spec.name, number)[spec.name]
    except TypeError as err:
        return grade, None, ErrorInfo(type=INVALID, message=str(err))
    return grade, value, None


class _Written(str):
    """A JSON number with a fraction or exponent, as its text wrote it."""


def _as_written(reply: str, spec: JudgeSpec) -> str:
    """The grade of the judge's `reply` as it wrote it: a number as its own text (`1e400`, which Python reads as inf),
    bounded in length (`number_shown`); any other value as JSON."""
    grade = json_value(reply, parse_float=_Written)[spec.score]
    numeric = isinstance(grade, (_Written, int)) and not isinstance(grade, bool)
    return number_shown(grade) if numeric else json.dumps(grade)


def judge_score(of: Mapping[str, Any], spec: JudgeSpec, calls: Iterable[JudgementRecord]) -> ScoreRecord:
    """The judge's score of one answer: the mean of its calls' numbers, or the first call's error."""
    calls = list(calls)
    failed = next((call.error for call in calls if call.error is not None), None)
    if failed is not None:
        error = ErrorInfo(type=failed.type, message=f"{len(calls) - sum(c.error is None for c in calls)} of "
                                                    f"{len(calls)} judgements give no grade: {failed.message}")
        return ScoreRecord(**of, scorer=spec.name, metrics=None, error=error)
    mean = sum(Fraction(call.value) for call in calls) / len(calls)
    return ScoreRecord(**of, scorer=spec.name, metrics={spec.name: int(mean) if mean.denominator == 1 else float(mean)})


def _ended(done_reason: str | None) -> dict[str, str]:
    """What a judge call keeps of how its reply ended, beside what the server said of it (`extra`): its done_reason
    when the reply did not end as the judge meant (`length`: cut at its token limit, which is why it does not parse),
    nothing for a reply that ended as it should (`stop`)."""
    return {} if done_reason in (None, "stop") else {"done_reason": done_reason}


def _heard(call: asyncio.Future[JudgementRecord]) -> None:
    """Mark a finished call's failure as seen (awaiting it still raises it)."""
    if not call.cancelled():
        call.exception()


def _dispatch(runner: Runner, on_lost: Lost | None) -> Any:
    """Where the judge's requests go: its server, or the live one of its list with the fewest outstanding (a judge
    that inherits the model's list fails over as the model's requests do)."""
    from benchrun.execute.hosts import Dispatch, warned

    return Dispatch(runner, on_lost or warned, "the judge's server", "judging")


def archived_calls(run: Run, served: Served | None = None) -> dict[Key, JudgementRecord]:
    """A run's judge calls as archived, by (sample id, repeat, judge, judge repeat); the judge model they name kept
    in `served`, if given."""
    return {(c.id, c.repeat, c.judge, c.judge_repeat): c for c in (served or Served()).each(run.judgements())}


class Judge:
    """The judges of one manifest, asking its judge model (`runner`, answers from `cache` where it has them);
    `archived` holds the calls already in the archive, read again instead of asked; `on_lost` is told of a server of
    its list lost; `fail_fast` stops a run at the runner's max_consecutive_failures; `carried` holds calls of another
    run (a retry's parent), read again and written. Without a runner (a rescore from the archive alone) a call not
    archived is that answer's error."""

    def __init__(self, manifest: Manifest, runner: Runner | None, cache: RunCache | None = None,
                 archived: Mapping[Key, JudgementRecord] | None = None, on_lost: Lost | None = None,
                 fail_fast: bool = False, carried: Mapping[Key, JudgementRecord] | None = None):
        self.specs = {spec.name: spec for spec in manifest.judges}
        self.tasks = {task.name: task.judges for task in manifest.tasks}
        self._entries = {task.name: task for task in manifest.tasks}
        self.repeats = manifest.judge.repeats
        self._seed = manifest.judge.runner.options.get("seed")
        self._formats = {name: FormatCheck(spec.format.json_schema) for name, spec in self.specs.items()}
        self.runner = runner
        self._asker = _dispatch(runner, on_lost) if runner else None
        self.cache, self._archived, self._carried = cache, dict(archived or {}), dict(carried or {})
        self._slots = asyncio.Semaphore(self._asker.width if runner else 1)
        self._limit = runner.config.max_consecutive_failures if runner and fail_fast else None
        self._key = runner.config.key("max_consecutive_failures") if runner else ""
        self._failing: tuple[Any, set[str]] | None = None
        """The kind of failure of the judge requests failing in a row, and the answers (sample ids) they were for."""
        self._pending: set[Key] = set()
        """The calls that failed in that run of failures: whether each is its answer's own is not known yet."""
        self._broken = False
        """Whether the judge failed fast: the calls pending then were a broken judge's, whatever replies come after."""
        self.unkept: CacheFailed | None = None
        """The response cache's failure to keep a reply (`_keep`), not yet raised."""
        self._under_way: dict[str, asyncio.Future[None]] = {}
        """The cache keys of the calls being asked, each done once its call's reply is kept (or it failed)."""

    def judges_of(self, task: str) -> tuple[str, ...]:
        return self.tasks.get(task, ())

    def new(self, calls: Iterable[JudgementRecord]) -> list[JudgementRecord]:
        """The calls not read again from the archive: those to write."""
        return [c for c in calls if (c.id, c.repeat, c.judge, c.judge_repeat) not in self._archived]

    def start(self, sample: Sample, response: ResponseRecord) -> list[asyncio.Task[JudgementRecord]]:
        """Every judge call on an answer, under way (judges in the task's order, then repeats). A call's failure is
        raised where its grading is awaited; the calls of gradings a run stopped before awaiting (every server of the
        judge's list lost) fail unheard, not as asyncio's 'Task exception was never retrieved' on the console."""
        calls = [asyncio.ensure_future(self._judgement(sample, response, self.specs[name], j))
                 for name in self.judges_of(sample.task) for j in range(self.repeats)]
        for call in calls:
            call.add_done_callback(_heard)
        return calls

    def scores(self, of: Mapping[str, Any], task: str, calls: list[JudgementRecord]) -> list[ScoreRecord]:
        """Each judge's score of an answer from its calls (as `start` ordered them)."""
        return [judge_score(of, self.specs[name], calls[i * self.repeats:(i + 1) * self.repeats])
                for i, name in enumerate(self.judges_of(task))]

    async def _judgement(self, sample: Sample, response: ResponseRecord, spec: JudgeSpec, j: int) -> JudgementRecord:
        at = (sample.id, response.repeat, spec.name, j)
        archived = self._archived.get(at) or self._carried.get(at)
        if archived is not None:
            return self._read_again(spec, archived)
        messages = rubric_chat(spec, sample, response.text, self._entries[sample.task].messages(sample.prompt))
        of = {"id": sample.id, "task": sample.task, "repeat": response.repeat, "judge": spec.name,
              "judge_repeat": j, "messages": tuple(messages)}
        if self._asker is None:
            return JudgementRecord(**of, reply=None, error=ErrorInfo(
                type="NotJudged", message="the archive holds no judgement of this answer, and no judge model was "
                                          "asked (benchrun-audit rescore --rejudge asks one)"))
        seed = None if j == 0 or not isinstance(self._seed, int) else self._seed + j
        key = self.cache.key(messages, spec.format.json_schema, Repeat(j, seed)) if self.cache else None
        hit = await whole_hit(self.runner, self.cache, key, await self._cached(key)) if key else None
        if hit is not None:
            return self._judged(spec, of, hit.answer, seconds=0.0, attempts=0, cached_from=hit.run_id)
        under_way = None
        if key:
            under_way = self._under_way[key] = asyncio.get_running_loop().create_future()
        try:
            return await self._asked(spec, sample, of, messages, seed, key)
        finally:
            if under_way is not None:
                self._under_way.pop(key, None)
                under_way.set_result(None)

    async def _cached(self, key: str | None) -> Entry | None:
        """The cache's reply under `key`, once the call of that key under way in this run (the same judge, chat and
        repeat: a rubric that does not render the sample) has its reply kept; a call is asked once in a run, as in
        two."""
        while key and (under_way := self._under_way.get(key)) is not None:
            await asyncio.shield(under_way)  # a waiter cancelled leaves the call's own future alone
        return self.cache.get_many([key]).get(key) if key and self.cache else None

    async def _asked(self, spec: JudgeSpec, sample: Sample, of: dict[str, Any], messages: list[Message],
                     seed: int | None, key: str | None) -> JudgementRecord:
        """A call asked of the judge model, its reply kept in the cache under `key`."""
        async with self._slots:  # the call's time starts once it has its turn, as an answer's does
            started = time.perf_counter()
            outcome, host = await self._asker.ask(messages, spec.format.json_schema, seed,
                                                  f"sample '{sample.id}' with judge '{spec.name}'")
        seconds, attempts = round(time.perf_counter() - started, 6), len(outcome.failures)
        if host is not None:
            of["host"] = host
        self._tally(of, outcome.error if outcome.completion is None else None)
        if outcome.completion is None:
            return JudgementRecord(**of, reply=None, error=outcome.error, seconds=seconds, attempts=attempts)
        judged = self._judged(spec, of, outcome.completion, seconds=seconds, attempts=attempts + 1)
        if key:
            self._keep(key, outcome.completion)
        return judged

    def _keep(self, key: str, reply: Completion) -> None:
        """Keep a reply in the cache; where the cache fails, the failure is held (`unkept`) for the run to stop on once
        the call is recorded, and the cache left alone for the rest."""
        try:
            if self.cache is not None:  # gone once it failed a call asked beside this one
                self.cache.put(key, reply)
        except CacheFailed as err:
            self.unkept, self.cache = err, None

    def take_unkept(self) -> CacheFailed | None:
        """The cache's failure to keep a reply, once: the run stops on it after recording what was graded."""
        unkept, self.unkept = self.unkept, None
        return unkept

    def undecided(self, calls: Iterable[JudgementRecord]) -> bool:
        """Whether a call of `calls` failed in the run of failures not yet ended by a reply or a failure of another
        kind (or that ended the run): a grading holding one is not recorded yet, for if the run of failures reaches
        max_consecutive_failures it was a broken judge's, and `resume` must grade its answer again."""
        return bool(self._pending) and any((c.id, c.repeat, c.judge, c.judge_repeat) in self._pending for c in calls)

    def _tally(self, of: Mapping[str, Any], error: ErrorInfo | None) -> None:
        """Count the request of call `of` that failed with `error` (None: one replied to); FailFast once `_limit`
        different answers in a row had their judge requests fail the same kind of way."""
        if self._limit is None:
            return
        kind = None if error is None else failure_kind(error)
        if error is not None and kind is None:  # the answer's own: neither counted nor a reply
            return
        if self._broken:  # FailFast said once; a call that fails after it is the broken judge's too
            if kind is not None:
                self._pending.add((of["id"], of["repeat"], of["judge"], of["judge_repeat"]))
            return
        if kind is None:
            self._failing = None
            self._pending.clear()
            return
        if self._failing is None or self._failing[0] != kind:
            self._failing = (kind, set())
            self._pending.clear()
        self._failing[1].add(of["id"])
        self._pending.add((of["id"], of["repeat"], of["judge"], of["judge_repeat"]))
        if len(self._failing[1]) >= self._limit:
            self._broken = True
            raise FailFast(f"the judge's requests failed the same way for answer after answer ({self._limit} in a row), "
                           f"so the judge's setup is broken, not the benchmark: {error} ({self._key})",
                           longer(error, self.runner.config) if self.runner else None)

    def _judged(self, spec: JudgeSpec, of: dict[str, Any], answer: Completion, **how: Any) -> JudgementRecord:
        extra = {**answer.extra, **_ended(answer.done_reason)}
        grade, value, error = read_reply(spec, self._formats[spec.name], answer.text, extra)
        return JudgementRecord(**of, reply=answer.text, grade=grade, value=value, error=error,
                               prompt_tokens=answer.prompt_tokens, completion_tokens=answer.completion_tokens,
                               extra=extra, **how)

    def _read_again(self, spec: JudgeSpec, call: JudgementRecord) -> JudgementRecord:
        """An archived call, its reply read again with the judge as compiled (a failed request stays failed)."""
        if call.reply is None:
            return call
        grade, value, error = read_reply(spec, self._formats[spec.name], call.reply, call.extra)
        return call.model_copy(update={"grade": grade, "value": value, "error": error})

"""Whether a judge's score line of an answer is what its judge calls make (the mean of the grades of every one of its
repeats, or their first error: `execute.judging.judge_score`), as verify's one pass reads a run's (or a rejudged
rescore's) calls, then its score lines: a grade no call gave is a number nothing recorded stands behind."""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from typing import TYPE_CHECKING, Iterable

from benchrun.core.manifest import Manifest, Sample
from benchrun.core.records import ErrorInfo, JudgementRecord, ResponseRecord, ScoreRecord, answer_name
from benchrun.core.rubric import rubric_chat
from benchrun.core.text import NotJSON, json_value

if TYPE_CHECKING:
    from benchrun.audit.askedservers import Servers
    from benchrun.core.manifest import JudgeSpec
    from benchrun.execute.formatcheck import FormatCheck

NONE = object()
"""A reply's grade field where the reply gives none."""
Grade = tuple[int, float | int | None, ErrorInfo | None]
"""What a score line's judge call gives of itself: its judge repeat, its grade's number and its error."""


class JudgeGrades:
    """The grades of each judge's calls on each answer, as they are read, to check its score lines against; of a
    call only its number and error are kept, and of each answer the digest of each judge's chat (no text: memory of a
    few numbers an answer)."""

    def __init__(self, manifest: Manifest, servers: Servers | None = None):
        self.specs = {spec.name: spec for spec in manifest.judges}
        self.repeats = manifest.judge_calls
        self.grades: dict[tuple[str, str, int], list[Grade]] = {}
        self._line = 0
        self._formats: dict[str, FormatCheck] = {}
        self.manifest = manifest
        self.servers = servers
        """The servers the judge asked (`askedservers.judge_servers`): the one a call names is one of them."""
        self._chats: dict[tuple[str, int, str], bytes] = {}
        """(sample id, repeat, judge) -> the digest of the chat its judge is asked (`response`)."""

    def calls(self, calls: Iterable[JudgementRecord]) -> None:
        for call in calls:
            self.grades.setdefault((call.judge, call.id, call.repeat), []).append(
                (call.judge_repeat, call.value, call.error))

    def response(self, response: ResponseRecord) -> None:
        """The digest of what each judge of the answer's task is asked of `response` (its rubric rendered for it), kept
        to check the answer's judge calls' chats against: a few bytes an answer, not its text."""
        if response.text is None or (sample := self._samples.get(response.id)) is None:
            return
        for judge in self.manifest.task(sample.task).judges:
            if (spec := self.specs.get(judge)) is not None:
                chat = rubric_chat(spec, sample, response.text, self.manifest.messages(sample))
                self._chats[response.id, response.repeat, judge] = _digest(chat)

    @cached_property
    def _samples(self) -> dict[str, Sample]:
        return {sample.id: sample for sample in self.manifest.samples}

    def misread(self, call: JudgementRecord) -> str | None:
        """Why the run's next judge call line, `call`, is not what its writer made of what it asked and was told: its
        chat, the server it names, its grade; None when it is (or it cannot be told)."""
        self._line += 1
        why = self._unasked(call) or self._unlisted(call) or self._ungraded(call)
        return None if why is None else f"line {self._line} {why}"

    def _unasked(self, call: JudgementRecord) -> str | None:
        """Why the call's chat is not its judge's rubric rendered for the answer it judges (`response`)."""
        asked = self._chats.get((call.id, call.repeat, call.judge))
        if asked is None or asked == _digest(list(call.messages)):
            return None
        return ("gives messages other than its judge's rubric rendered for the answer it judges: not what the judge "
                "was asked")

    def _unlisted(self, call: JudgementRecord) -> str | None:
        """Why the call, asked in this run, names a server its judge did not ask."""
        return None if self.servers is None else self.servers.unasked(call)

    def _ungraded(self, call: JudgementRecord) -> str | None:
        """Why the call's grade (or its number, with none) is not its reply's grade field as a writer copies it, once
        the reply is in the judge's format; None when it is, or it gives neither, or its reply is no JSON this
        benchrun reads."""
        if (spec := self.specs.get(call.judge)) is None or (call.grade is None and call.value is None):
            return None
        try:
            said = json_value(call.reply or "")
        except NotJSON:  # no grade; or one an older benchrun read with Python's reader (a key given twice)
            return None
        given = said.get(spec.score, NONE) if isinstance(said, dict) else NONE
        if given is NONE or given != call.grade:
            gives = "no such field" if given is NONE else json.dumps(given)
            return f"gives grade {json.dumps(call.grade)}, where its reply gives {gives} ({spec.score!r})"
        if (refused := self._format(spec).data_problem(said)) is not None:
            return (f"gives grade {json.dumps(call.grade)} of a reply not in its judge's format {spec.format.name}: "
                    f"{refused}")
        return None

    def _format(self, spec: JudgeSpec) -> FormatCheck:
        """The check of judge `spec`'s format, compiled once (verify's alone: show and list import none)."""
        from benchrun.execute.formatcheck import FormatCheck

        if spec.name not in self._formats:
            self._formats[spec.name] = FormatCheck(spec.format.json_schema)
        return self._formats[spec.name]

    def problem(self, number: int, score: ScoreRecord) -> str | None:
        """Why score line `number`, a judge's, is not what its calls make; None when it is (or it is no judge's)."""
        if (spec := self.specs.get(score.scorer)) is None:
            return None
        answer = answer_name(score.id, score.repeat)
        grades = sorted(self.grades.pop((score.scorer, score.id, score.repeat), ()), key=lambda grade: grade[0])
        if not grades:  # an answer not asked (its request failed), or a rescore's answer the run holds no call of
            return None if score.metrics is None else (f"line {number} gives judge {score.scorer!r}'s grade of "
                                                       f"{answer!r}, of which there is no judge call")
        if len(grades) != self.repeats:  # each call once (`repair.JudgeCalls`): some are missing
            return (f"line {number} gives judge {score.scorer!r}'s score of {answer!r} from {len(grades)} of its "
                    f"{self.repeats} calls")
        from benchrun.execute.judging import judge_score  # verify's alone: not imported by show or list

        made = judge_score({"id": score.id, "task": score.task, "repeat": score.repeat}, spec,
                           [JudgementRecord.model_construct(value=value, error=error) for _, value, error in grades])
        if (score.metrics, score.error) == (made.metrics, made.error):
            return None
        return (f"line {number} gives judge {score.scorer!r}'s score of {answer!r} as {_said(score)}, its "
                f"{len(grades)} call{'s' * (len(grades) != 1)} make{'s' * (len(grades) == 1)} {_said(made)}")


def _digest(chat: list[dict[str, str]]) -> bytes:
    """A chat's digest, of what it says (each message's keys in one order, whatever order a writer gave them)."""
    return hashlib.blake2b(json.dumps(chat, ensure_ascii=False, sort_keys=True).encode(), digest_size=16).digest()


def _said(score: ScoreRecord) -> str:
    return f"error {score.error}" if score.metrics is None else str(score.metrics.get(score.scorer))

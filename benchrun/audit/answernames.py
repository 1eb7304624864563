"""The names a run's answers and judge calls gave their models, as verify's one pass reads them, against run.json's
`answers_as` of each (the name the server answered the preflight's probe as, or the run's answers did): a model no
answer came from is said, of the model under test and of its judge alike."""

from __future__ import annotations

from typing import Any

from benchrun.archive.reader import Run
from benchrun.core.layout import RUN
from benchrun.core.records import JudgementRecord, ResponseRecord
from benchrun.core.recordvalues import Served, same_model_name
from benchrun.core.text import one_line

SHOWN = 3
"""How many of the answers' names a finding shows."""


class AnswerNames:
    """The model names the answers and judge calls a run asked itself gave (one carried over by a retry, or taken from
    the response cache, was asked by another run)."""

    def __init__(self) -> None:
        self.served, self.judged = Served(), Served()

    def response(self, response: ResponseRecord) -> None:
        _note(self.served, response)

    def judgement(self, call: JudgementRecord) -> None:
        _note(self.judged, call)

    def contradiction(self, run: Run) -> tuple[str, str] | None:
        """run.json's `answers_as` (the model's, then its judge's) where no answer or call the run asked gave that name
        (and some gave one), as (file, why)."""
        if (found := _contradiction("answers_as", run.info.identity, self.served, "answer of the run", "model")):
            return RUN, f"{found} run.json names"
        return self.judge_contradiction(RUN, run.info.judge, "the run")

    def judge_contradiction(self, file: str, judge: dict[str, Any] | None, whose: str) -> tuple[str, str] | None:
        """`file`'s `judge.identity.answers_as` (run.json's, or that of a rescore `whose` calls asked a judge again)
        where no judge call it asked gave that name, as (file, why)."""
        identity = (judge or {}).get("identity")
        found = _contradiction("judge.identity.answers_as", identity if isinstance(identity, dict) else {},
                               self.judged, f"judge call of {whose}", "judge model")
        return None if found is None else (file, f"{found} {file.rsplit('/', 1)[-1]} names")


def _note(served: Served, record: ResponseRecord | JudgementRecord) -> None:
    if record.carried_from is None and record.cached_from is None:
        served.note(record)


def _contradiction(key: str, identity: dict[str, Any], served: Served, what: str, model: str) -> str | None:
    """`key` of `identity` where no name `served` kept is it (and some are), as said up to the file naming it."""
    said, names = identity.get("answers_as"), sorted(served.names)
    if not isinstance(said, str) or not names or any(same_model_name(said, name) for name in names):
        return None
    shown = " or ".join(repr(one_line(name, 80)) for name in names[:SHOWN])
    more = f" (and {len(names) - SHOWN} other names)" if len(names) > SHOWN else ""
    return (f"{key} is {one_line(said, 80)!r}, but every {what} names its model {shown}{more}: the {model} that "
            "answered is not the one")

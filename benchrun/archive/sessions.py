"""Which model answered which answers. A run is asked in sessions, the run's own and then each resume's, each by the
model its runner identified then: run.json's `identity` is the latest session's, and each resume's history entry
keeps the identity of the session that ended (and its judge model's, `judge_identity`), how many answers that session
recorded (`answers`) and how many the resume went on from (`kept`). A forced resume may go on with another model (a
re-pulled digest); what the first sessions asked stays said. So do the limits a resume asked the rest with (`set`).
A retry's first lines are the answers it carried over, and its history entry lists the parent's sessions that asked
them (`carried_by`), so it says so too."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from benchrun.archive.reader import Run
from benchrun.core.records import RunInfo
from benchrun.core.recordvalues import pin_named, pinned_as

RESUMED = "resumed_at"
"""The key that marks a resume's entry in run.json's history."""
CARRIED = "carried_by"
"""The key of a retry's history entry listing who asked the answers it carried over, in the order of its lines: the
parent's sessions, each with its model's identity (None when unknown), its judge model's, and its answers carried."""
JUDGED_AGAIN = "judged_again"
"""The key of a retry's history entry listing the answers it carried over and judged again (their judge requests had
failed in the parent)."""

CHANGED = "changed_while_asked"
"""The key of the history entry of a session whose model, or its server's build, changed while it asked (the run
failed; its answers kept, which of them came from which cannot be told): a resume finishes such a run only forced."""
CHANGED_BEFORE = re.compile(r"(model|the judge model) \S+ changed on \S+ while the run asked: "
                            r"|Ollama at \S+ changed version while it was asked: ")
"""What run.json's `reason` says of a run a benchrun before CHANGED failed as its model or its server's build changed
while it asked: the only record such a run keeps of it."""


@dataclass(frozen=True)
class Session:
    """One session of a run: its model's pin (`pinned_as`: None when the runner says nothing of it) and the answers it
    recorded (None when unknown: the session before a resume made by a benchrun that did not count them)."""

    digest: str | None
    answers: int | None


def ended(info: RunInfo, written: int, kept: int) -> dict[str, Any]:
    """What a resume records of the session that ended, from run.json before the resume (`info`): its model's and
    its judge model's identity, the response lines the run had committed (`written`) and those the resume keeps after
    its repair (`kept`)."""
    resumes = [entry for entry in info.history if RESUMED in entry]
    before = resumes[-1].get("kept") if resumes else _carried_answers(info.history)
    judge = {"judge_identity": info.judge["identity"]} if info.judge and "identity" in info.judge else {}
    answers = None if before is None or written < before else written - before  # fewer: records.sha256 cut short
    return {"identity": info.identity, **judge, "answers": answers, "kept": kept}


def session_count(info: RunInfo) -> int:
    """How many sessions asked the run: its first, then one per resume (a retry's note, a lost server's, are none)."""
    return 1 + sum(RESUMED in entry for entry in info.history)


def sessions(run: Run) -> list[Session]:
    """The run's sessions whose model is known, oldest first: a retry's parent's that asked what it carried over,
    each resumed one, then the latest."""
    resumes = [entry for entry in run.info.history if RESUMED in entry]
    found = [Session(pinned_as(entry["identity"]), entry.get("answers"))
             for entry in [*_carried(run.info.history), *resumes] if entry.get("identity") is not None]
    kept = resumes[-1].get("kept") if resumes else _carried_answers(run.info.history)
    latest = run.response_lines - kept if kept is not None else None
    return [*found, Session(pinned_as(run.info.identity), latest if latest is None or latest >= 0 else None)]



def mixed_models(run: Run) -> str | None:
    """`answers from 2 models: 8 by 45b1c9806e74, 12 by 920510199770`, when more than one model (digest) answered
    the run's answers; None when one did."""
    answered = answering(run)
    if len(answered) < 2:
        return None
    shares = [f"{_count(counts)} by {pin_named(digest) if digest else 'a model without a digest'}"
              for digest, counts in answered.items()]
    return f"answers from {len(answered)} models: {', '.join(shares)}"


def answering(run: Run) -> dict[str | None, list[int | None]]:
    """The models (their pins, `pinned_as`) that answered the run's answers, in the order they first did, each with
    the answers of each of its sessions (None where unknown)."""
    answered: dict[str | None, list[int | None]] = {}
    for session in sessions(run):
        if session.answers != 0:
            answered.setdefault(session.digest, []).append(session.answers)
    return answered


def _count(counts: list[int | None]) -> str:
    return "?" if None in counts else str(sum(counts))


def mixed_judges(run: Run) -> str | None:
    """`grades from 2 judge models: 4a65eed368b0, then ffffffffffff`, when a forced resume went on grading with another
    judge model (digest) than an earlier session's; None when one judge model graded the run."""
    earlier = [*_carried(run.info.history), *(entry for entry in run.info.history if RESUMED in entry)]
    resumes = [entry["judge_identity"] for entry in earlier if entry.get("judge_identity") is not None]
    now = [run.info.judge["identity"]] if run.info.judge and "identity" in run.info.judge else []
    digests = list(dict.fromkeys(pinned_as(identity) for identity in [*resumes, *now] if isinstance(identity, dict)))
    if len(digests) < 2:
        return None
    named = (pin_named(digest) if digest else "a judge model without a digest" for digest in digests)
    return f"grades from {len(digests)} judge models: {', then '.join(named)}"


def _carried(history: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """A retry's sessions of its parent's that asked the answers it carried over (`CARRIED`), in line order, as its
    run.json's `history` says."""
    return next((entry[CARRIED] for entry in history if CARRIED in entry), [])


def carry_cut(info: RunInfo, written: int, dropped: Sequence[int]) -> RunInfo:
    """`info` of a retry killed as it carried its parent's answers over (it holds `written` response lines, of which
    a forced resume drops the lines numbered `dropped`), saying what it carried: its lineage's `carried` (and
    `asked`, the rest) and its `carried_by` cut to the carried lines kept (a carried line dropped is asked again, as
    a line never written is), what they said kept in the retry's note (`carry_cut`); `info` as it is otherwise."""
    planned = _carried_answers(info.history)
    gone = [number for number in dropped if number <= planned]
    kept = min(written, planned) - len(gone)
    if info.parent is None or kept >= planned:
        return info
    cut, start = [], 0
    for session in _carried(info.history):
        end = start + session["answers"]
        if (take := min(written, end) - start - sum(start < number <= end for number in gone)) > 0:
            cut.append({**session, "answers": take})
        start = end
    history = tuple({**entry, CARRIED: cut, "carry_cut": {"planned": planned, "carried": kept}}
                    if CARRIED in entry else entry for entry in info.history)
    parent = info.parent.model_copy(update={"carried": kept, "asked": info.parent.asked + info.parent.carried - kept})
    return info.model_copy(update={"parent": parent, "history": history})


def _carried_answers(history: Sequence[dict[str, Any]]) -> int:
    """How many of the run's first response lines a retry carried over (0 for any other run)."""
    return sum(session["answers"] for session in _carried(history))


def askers(run: Run) -> list[tuple[int | None, dict[str, Any]]]:
    """Who asked the run's response lines, session by session in line order: the line each session's lines end
    before (None for the latest's, to the end) and its `identity` (None when no session before it kept its count:
    a resume by an older benchrun) with its `judge_identity` where it was judged."""
    spans: list[tuple[int | None, dict[str, Any]]] = []
    end = 0
    for session in _carried(run.info.history):
        end += session["answers"]
        spans.append((end, {key: session.get(key) for key in ("identity", "judge_identity") if key in session}))
    unknown = False
    for entry in (entry for entry in run.info.history if RESUMED in entry):
        if entry.get("kept") is None:
            unknown = True
            continue
        spans.append((entry["kept"], _asked(entry.get("identity"), entry.get("judge_identity"), unknown)))
        unknown = False
    spans.append((None, _asked(run.info.identity, run.info.judge.get("identity"), unknown)))
    return spans


def _asked(identity: dict[str, Any] | None, judge: dict[str, Any] | None, unknown: bool) -> dict[str, Any]:
    return {"identity": None if unknown else identity, **({"judge_identity": judge} if judge and not unknown else {})}


def carried_by(run: Run, asked_again: set[tuple[str, int]]) -> list[dict[str, Any]]:
    """What a retry of `run` records under `CARRIED`: the sessions of `run` that asked the answers it carries over
    (every response but those `asked_again`), in line order, each with how many of them it asked."""
    spans, span = askers(run), 0
    carried: list[tuple[int, int]] = []
    for line, response in enumerate(run.responses()):
        while (end := spans[span][0]) is not None and line >= end:
            span += 1
        if (response.id, response.repeat) in asked_again:
            continue
        if carried and carried[-1][0] == span:
            carried[-1] = (span, carried[-1][1] + 1)
        else:
            carried.append((span, 1))
    return [{**spans[span][1], "answers": answers} for span, answers in carried]


def limits_set(history: Sequence[dict[str, Any]]) -> str | None:
    """The limits a retry or each resume asked the rest with (`--set`), after how many answers of the sessions before
    it, as a run's `history` says (a merged run's shard's too): `runner.timeout_s=0.35 by resume 1 (after 0 answers);
    runner.timeout_s=5 by resume 2 (after 4 answers)`; None when none set any (run.json's runner, the last session's
    limits, is then every session's)."""
    said, answers, resumes = [], _carried_answers(history), 0
    for entry in history:
        if RESUMED in entry:
            resumes += 1
            answers = None if answers is None or not isinstance(entry.get("answers"), int) else answers + entry["answers"]
        if isinstance(limits := entry.get("set"), dict) and limits:
            given = " ".join(f"{key}={value}" for key, value in limits.items())
            counted = "? answers" if answers is None else f"{answers} answer{'s' * (answers != 1)}"
            said.append(f"{given} by resume {resumes} (after {counted})" if RESUMED in entry else f"{given} by the retry")
    return "; ".join(said) or None


def changed_while_asked(info: RunInfo) -> str | None:
    """Why the run's model changed while a session asked it (`CHANGED`, or a failed run's reason as a benchrun before
    it said so, `CHANGED_BEFORE`), where no forced resume has taken the run on since; None where none did."""
    for entry in reversed(info.history):
        if CHANGED in entry:
            return str(entry[CHANGED])
        if RESUMED in entry and entry.get("forced"):
            return None
    if info.status == "failed" and info.reason and CHANGED_BEFORE.match(info.reason):
        return info.reason
    return None

"""Which model answered which answers. A run is asked in sessions, the run's own and then each resume's, each by the
model its runner identified then: run.json's `identity` is the latest session's, and each resume's history entry
keeps the identity of the session that ended (and its judge model's, `judge_identity`), how many answers that session
recorded (`answers`) and how many the resume went on from (`kept`). A forced resume may go on with another model (a
re-pulled digest); what the first sessions asked stays said. So do the limits a resume asked the rest with (`set`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchrun.archive.reader import Run
from benchrun.core.records import RunInfo
from benchrun.core.recordvalues import pin_named, pinned_as

RESUMED = "resumed_at"
"""The key that marks a resume's entry in run.json's history."""


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
    before = resumes[-1].get("kept") if resumes else 0
    judge = {"judge_identity": info.judge["identity"]} if info.judge and "identity" in info.judge else {}
    return {"identity": info.identity, **judge, "answers": None if before is None else written - before, "kept": kept}


def sessions(run: Run) -> list[Session]:
    """The run's sessions whose model is known, oldest first: each resumed one, then the latest."""
    resumes = [entry for entry in run.info.history if RESUMED in entry]
    found = [Session(pinned_as(entry["identity"]), entry.get("answers")) for entry in resumes if "identity" in entry]
    kept = resumes[-1].get("kept") if resumes else 0
    return [*found, Session(pinned_as(run.info.identity), None if kept is None else run.info.counts.responses - kept)]


def mixed_models(run: Run) -> str | None:
    """`answers from 2 models: 8 by 45b1c9806e74, 12 by 920510199770`, when more than one model (digest) answered
    the run's answers; None when one did."""
    answered: dict[str | None, list[int | None]] = {}
    for session in sessions(run):
        if session.answers != 0:
            answered.setdefault(session.digest, []).append(session.answers)
    if len(answered) < 2:
        return None
    shares = [f"{_count(counts)} by {pin_named(digest) if digest else 'a model without a digest'}"
              for digest, counts in answered.items()]
    return f"answers from {len(answered)} models: {', '.join(shares)}"


def _count(counts: list[int | None]) -> str:
    return "?" if None in counts else str(sum(counts))


def mixed_judges(run: Run) -> str | None:
    """`grades from 2 judge models: 4a65eed368b0, then ffffffffffff`, when a forced resume went on grading with another
    judge model (digest) than an earlier session's; None when one judge model graded the run."""
    resumes = [entry["judge_identity"] for entry in run.info.history if RESUMED in entry and "judge_identity" in entry]
    now = [run.info.judge["identity"]] if run.info.judge and "identity" in run.info.judge else []
    digests = list(dict.fromkeys(pinned_as(identity) for identity in [*resumes, *now] if isinstance(identity, dict)))
    if len(digests) < 2:
        return None
    named = (pin_named(digest) if digest else "a judge model without a digest" for digest in digests)
    return f"grades from {len(digests)} judge models: {', then '.join(named)}"


def limits_set(run: Run) -> str | None:
    """The limits a retry or each resume asked the rest with (`--set`), after how many answers of the sessions before
    it: `runner.timeout_s=0.35 by resume 1 (after 0 answers); runner.timeout_s=5 by resume 2 (after 4 answers)`;
    None when none set any (run.json's runner, the last session's limits, is then every session's)."""
    said, answers, resumes = [], 0, 0
    for entry in run.info.history:
        if RESUMED in entry:
            resumes += 1
            answers = None if answers is None or not isinstance(entry.get("answers"), int) else answers + entry["answers"]
        if isinstance(limits := entry.get("set"), dict) and limits:
            given = " ".join(f"{key}={value}" for key, value in limits.items())
            counted = "? answers" if answers is None else f"{answers} answer{'s' * (answers != 1)}"
            said.append(f"{given} by resume {resumes} (after {counted})" if RESUMED in entry else f"{given} by the retry")
    return "; ".join(said) or None

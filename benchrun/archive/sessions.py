"""Which model answered which answers. A run is asked in sessions, the run's own and then each resume's, each by the
model its runner identified then: run.json's `identity` is the latest session's, and each resume's history entry
keeps the identity of the session that ended, how many answers that session recorded (`answers`) and how many the
resume went on from (`kept`), and, for a judged run, the identity of the judge model that graded in it
(`judge_identity`). A forced resume may go on with another model or judge model (a re-pulled digest); what the first
sessions asked and graded stays said."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchrun.archive.reader import Run
from benchrun.core.records import RunInfo
from benchrun.core.recordvalues import model_digest, short_digest

RESUMED = "resumed_at"
"""The key that marks a resume's entry in run.json's history."""


@dataclass(frozen=True)
class Session:
    """One session of a run: its model's digest (None when the runner reports none) and the answers it recorded
    (None when unknown: the session before a resume made by a benchrun that did not count them)."""

    digest: str | None
    answers: int | None


def ended(info: RunInfo, written: int, kept: int) -> dict[str, Any]:
    """What a resume records of the session that ended, from run.json before the resume (`info`), the response
    lines the run had committed (`written`) and those the resume keeps after its repair (`kept`)."""
    resumes = [entry for entry in info.history if RESUMED in entry]
    before = resumes[-1].get("kept") if resumes else 0
    judged = {"judge_identity": info.judge["identity"]} if "identity" in (info.judge or {}) else {}
    return {"identity": info.identity, "answers": None if before is None else written - before, "kept": kept,
            **judged}


def sessions(run: Run) -> list[Session]:
    """The run's sessions whose model is known, oldest first: each resumed one, then the latest."""
    resumes = [entry for entry in run.info.history if RESUMED in entry]
    found = [Session(model_digest(entry["identity"]), entry.get("answers")) for entry in resumes if "identity" in entry]
    kept = resumes[-1].get("kept") if resumes else 0
    return [*found, Session(run.model_digest, None if kept is None else run.info.counts.responses - kept)]


def mixed_models(run: Run) -> str | None:
    """`answers from 2 models: 8 by 45b1c9806e74, 12 by 920510199770`, when more than one model (digest) answered
    the run's answers; None when one did."""
    answered: dict[str | None, list[int | None]] = {}
    for session in sessions(run):
        if session.answers != 0:
            answered.setdefault(session.digest, []).append(session.answers)
    if len(answered) < 2:
        return None
    shares = [f"{_count(counts)} by {short_digest(digest) if digest else 'a model without a digest'}"
              for digest, counts in answered.items()]
    return f"answers from {len(answered)} models: {', '.join(shares)}"


def _count(counts: list[int | None]) -> str:
    return "?" if None in counts else str(sum(counts))

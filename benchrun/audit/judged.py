"""What show prints of a run's judges: the judge model's identity, each judge's agreement, each answer's calls; and
which answers a judge call of got no reply (for retry)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

from rich.table import Table

from benchrun.archive.reader import Run
from benchrun.audit.provenance import server_version
from benchrun.console import output
from benchrun.core.judgeagreement import JudgeAgreement
from benchrun.core.records import JudgementRecord
from benchrun.core.recordvalues import Served, model_digest
from benchrun.core.text import counted
from benchrun.execute.failurekind import failure_kind

Calls = dict[tuple[str, int], list[JudgementRecord]]
"""(sample id, repeat) -> the judge calls on that answer, in record order."""


def judge_identity(judge: dict[str, Any]) -> str | None:
    """run.json's judge (or a rejudging rescore's) on one line (runner model, name, digest, server, allow_self, and a
    rescore's judge.repeats above 1); None for a run without."""
    if not judge:
        return None
    identity, runner = judge.get("identity", {}), judge.get("runner", {})
    text = (f"{runner.get('model', '-')}  name {identity.get('name', '-')}  digest {model_digest(identity) or '-'}  "
            f"server {server_version(identity)}")
    repeats = judge.get("repeats", 1)
    return (text + ("  allowed to judge itself (judge.allow_self)" if judge.get("allow_self") else "")
            + (f"  asked {repeats} times an answer (judge.repeats)" if repeats != 1 else ""))


def unreplied(run: Run) -> set[tuple[str, int]]:
    """The run's answers (sample id, repeat) a judge call of which got no reply for the setup's failure (a 5xx, a
    timeout after its retries: `failure_kind`), as a model's request can, which is no grade of the answer; `retry`
    judges them again. A call refused for its own chat (a rubric longer than the judge's context) fails the same way
    however often it is asked: not one of them."""
    return {(call.id, call.repeat) for call in run.judgements()
            if call.reply is None and call.error is not None and failure_kind(call.error) is not None}


def calls_by_answer(run: Run, served: Served | None = None) -> Calls:
    """The run's judge calls grouped by the answer they judge (empty for a run without judges); the judge model they
    name kept in `served`, if given."""
    calls: Calls = defaultdict(list)
    if run.info.judge:
        for call in (served or Served()).each(run.judgements()):
            calls[call.id, call.repeat].append(call)
    return calls


def call_lines(calls: Iterable[JudgementRecord]) -> list[str]:
    """One line per judge call: judge#repeat, the grade and its number, or the error and the raw reply."""
    lines = []
    for call in calls:
        head = f"  judge     {call.judge}#{call.judge_repeat}: "
        if call.error is None:
            lines.append(head + f"{call.grade} -> {call.value}")
        else:
            reply = "none" if call.reply is None else repr(call.reply)
            lines.append(head + f"error {call.error}; reply {reply}")
    return lines


def agreements(run: Run) -> dict[str, JudgeAgreement]:
    """summary.json's judges' agreement (none before the run finished, or without judges)."""
    summary = run.summary
    return dict(summary.judges or {}) if summary is not None else {}


def agreement_rows(judges: dict[str, JudgeAgreement]) -> list[tuple[str, str, int, float | None, float | None]]:
    """judge x (itself, each 0/1 scorer): judge, with what, answers, agreement, kappa."""
    rows = []
    for name, found in judges.items():
        rows.append((name, f"itself ({counted(found.repeats, 'repeat')})", found.answers, found.self_agreement, found.kappa))
        rows += [(name, scorer, other.answers, other.agreement, other.kappa)
                 for scorer, other in found.with_scorers.items()]
    return rows


def agreement_table(judges: dict[str, JudgeAgreement]) -> Table:
    table = Table(title="judges' agreement", title_justify="left")
    for column in ("judge", "with", "answers", "agreement", "kappa"):
        table.add_column(column, justify="left" if column in ("judge", "with") else "right")
    for name, other, answers, agreement, kappa in agreement_rows(judges):
        table.add_row(name, other, str(answers), output.number(agreement), output.number(kappa))
    return table

"""The report page's samples: per task, each sample with every run's answers and scores, as HTML."""

from __future__ import annotations

from dataclasses import dataclass, field

from benchrun.archive.reader import Run
from benchrun.audit.report_page import Job, table
from benchrun.audit.report_text import html_text
from benchrun.core.manifest import Reference, Sample
from benchrun.core.records import ErrorInfo, ResponseRecord, ScoreRecord
from benchrun.core.text import counted

SAMPLE_CAP = 500
"""Samples shown per task; the rest are counted, not shown."""
TEXT_CAP = 10_000
"""Characters shown of one prompt or response."""


@dataclass
class Records:
    """A run's responses and scores for the samples shown."""

    responses: dict[str, list[ResponseRecord]] = field(default_factory=dict)
    """Sample id -> its responses, one per repeat."""
    scores: dict[tuple[str, int], list[ScoreRecord]] = field(default_factory=dict)
    """(sample id, repeat) -> the scores of that answer."""
    asked: dict[str, Sample] = field(default_factory=dict)
    """Sample id -> the sample as this run's manifest has it (its prompt and reference, which a benchmark edited
    between the runs makes other than the first run's)."""
    lengths: dict[tuple[str, int, str], int] = field(default_factory=dict)
    """(sample id, repeat, "" for the answer or a scorer's name for its detail) -> the characters of a text longer
    than TEXT_CAP, whose first TEXT_CAP alone are kept."""

    def keep(self, response: ResponseRecord) -> None:
        """Keep `response` with the TEXT_CAP characters of its text the page shows: a page of 500 answers of 8 MB
        held 4 GB to show 5 MB of them."""
        if response.text is not None and len(response.text) > TEXT_CAP:
            self.lengths[response.id, response.repeat, ""] = len(response.text)
            response = response.model_copy(update={"text": response.text[:TEXT_CAP]})
        self.responses.setdefault(response.id, []).append(response)

    def keep_score(self, score: ScoreRecord) -> None:
        """Keep `score` with the TEXT_CAP characters of its detail the page shows: a format check's detail quotes the
        answer it refused (`'yyy…' is not of type 'object'`), as long as the answer."""
        if score.detail is not None and len(score.detail) > TEXT_CAP:
            self.lengths[score.id, score.repeat, score.scorer] = len(score.detail)
            score = score.model_copy(update={"detail": score.detail[:TEXT_CAP]})
        self.scores.setdefault((score.id, score.repeat), []).append(score)


def shown_samples(scored: list[Job]) -> dict[str, tuple[list[Sample], int]]:
    """task -> (the first SAMPLE_CAP samples, how many distinct samples the runs have), across the runs."""
    tasks: dict[str, tuple[dict[str, Sample], set[str]]] = {}
    for job in scored:
        for sample in job.run.manifest.samples:
            kept, ids = tasks.setdefault(sample.task, ({}, set()))
            ids.add(sample.id)
            if len(kept) < SAMPLE_CAP:
                kept.setdefault(sample.id, sample)
    return {task: (list(kept.values()), len(ids)) for task, (kept, ids) in tasks.items()}


def read_records(run: Run, shown: dict[str, tuple[list[Sample], int]]) -> Records:
    """Stream the run's records, keeping those of the samples shown."""
    keep = {sample.id for samples, _ in shown.values() for sample in samples}
    records = Records(asked={sample.id: sample for sample in run.manifest.samples if sample.id in keep})
    for response in run.responses():
        if response.id in keep:
            records.keep(response)
    for score in run.scores():
        if score.id in keep:
            records.keep_score(score)
    return records


def samples_view(scored: list[Job], shown: dict[str, tuple[list[Sample], int]], records: dict[str, Records]) -> str:
    """Per task, a collapsible table: the sample, then each run's raw response and scores."""
    parts = ["<h2>Samples</h2>"]
    for task, (samples, total) in shown.items():
        left_out = ""
        if total > len(samples):
            left_out = f"; showing the first {len(samples)}, {total - len(samples)} left out"
        rows = [[_sample_cell(sample), *(_answer_cell(records[job.label], sample) for job in scored)]
                for sample in samples]
        parts.append(f'<details class="task"><summary>{html_text(task)} ({counted(total, "sample")}{left_out})'
                     f'</summary>{_chat_view(scored, task)}'
                     f'{table(["sample", *(html_text(job.label) for job in scored)], rows)}</details>')
    return "".join(parts)


def _chat_view(scored: list[Job], task: str) -> str:
    """The messages each run sent before every prompt of `task` (its system prompt and few-shot turns), once per
    distinct chat; nothing for a task asked as its prompts alone."""
    chats: dict[tuple, list[str]] = {}  # a run that sent nothing before is one of them: the others are named then
    for job in scored:
        if entry := next((t for t in job.run.manifest.tasks if t.name == task), None):
            chats.setdefault(tuple((m["role"], m["content"]) for m in entry.messages("")[:-1]), []).append(job.label)
    parts = []
    for before, labels in ((before, labels) for before, labels in chats.items() if before):
        sent = "".join(f'<div class="sub">{html_text(role)}</div>{_text(content)}' for role, content in before)
        whose = f" ({html_text(', '.join(labels))})" if len(chats) > 1 else ""
        parts.append(f'<div class="chat"><div class="sub">sent before each prompt{whose}:</div>{sent}</div>')
    return "".join(parts)


def _text(text: str, length: int | None = None) -> str:
    """At most TEXT_CAP characters of `text`, then how many more its whole `length` (its own by default) has."""
    length = len(text) if length is None else length
    more = f'<span class="note">… {length - TEXT_CAP} more characters</span>' if length > TEXT_CAP else ""
    return f"<pre>{html_text(text[:TEXT_CAP])}</pre>{more}"


def _sample_cell(sample: Sample) -> str:
    return f"<code>{html_text(sample.id)}</code>{_text(sample.prompt)}{_reference(sample.reference, 'reference')}"


def _reference(reference: Reference, said: str) -> str:
    return "" if reference is None else f'<div class="sub">{said}: <code>{html_text(repr(reference))}</code></div>'


def _answer_cell(records: Records, sample: Sample) -> str:
    """Each of the sample's answers (one per repeat, numbered when there are several) with its scores; first, the
    prompt and reference this run asked with where they are not the sample column's (the first run's)."""
    responses = records.responses.get(sample.id)
    if not responses:
        return '<p class="note">not asked in this run, or no response recorded</p>'
    own = records.asked.get(sample.id, sample)
    asked = f'<div class="sub">asked in this run as:</div>{_text(own.prompt)}' if own.prompt != sample.prompt else ""
    if own.reference != sample.reference:
        asked += _reference(own.reference, "reference in this run") or '<div class="sub">no reference in this run</div>'
    return asked + "".join(_answer(records, response, len(responses) > 1) for response in responses)


def _answer(records: Records, response: ResponseRecord, numbered: bool) -> str:
    heading = f'<div class="sub">repeat {response.repeat}</div>' if numbered else ""
    if response.text is None:
        answer = f'<p class="bad">no response: {_error(response.error)}</p>'
    else:
        answer = _text(response.text, records.lengths.get((response.id, response.repeat, "")))
    scores = "".join(f"<li>{_score(score, records.lengths.get((score.id, score.repeat, score.scorer)))}</li>"
                     for score in records.scores.get((response.id, response.repeat), []))
    return heading + answer + (f'<ul class="scores">{scores}</ul>' if scores else "")


def _error(error: ErrorInfo | None) -> str:
    return html_text(str(error) if error else "no value")


def _score(score: ScoreRecord, length: int | None = None) -> str:
    """`contains 1`, `check_name_dir: name 1, direction 0`, or the scorer's error; then its detail (at most TEXT_CAP
    characters of it, then how many more its whole `length` has)."""
    more = f" … {length - TEXT_CAP} more characters" if length is not None and length > TEXT_CAP else ""
    detail = f' <span class="sub">({html_text(score.detail)}{more})</span>' if score.detail else ""
    if score.metrics is None:
        return f'{html_text(score.scorer)}: <span class="bad">{_error(score.error)}</span>{detail}'
    values = ", ".join(f'{html_text(m.removeprefix(score.scorer + "."))} <span class="{"v0" if v == 0 else "good"}">'
                       f'{html_text(str(v))}</span>' for m, v in score.metrics.items())
    prefix = "" if list(score.metrics) == [score.scorer] else f"{html_text(score.scorer)}: "
    return f"{prefix}{values}{detail}"

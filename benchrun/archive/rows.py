"""A run's records as rows: one per sample x metric, with the run's varied settings and the sample's values as
columns (and optionally the prompt and the response), as `benchrun-audit export` writes them and `Run.to_pandas`
returns them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

from benchrun.core.records import ErrorInfo, ResponseRecord, ScoreRecord

if TYPE_CHECKING:  # the reader imports this module (Run.to_pandas)
    from benchrun.archive.reader import Run

def joined(responses: Iterable[ResponseRecord], scores: Iterable[ScoreRecord]
           ) -> Iterator[tuple[ResponseRecord, list[ScoreRecord]]]:
    """Each response with its score records (matched by sample id and repeat). Both files are written answer by
    answer, so they are read in step; score records out of step (scores re-graded by a resume come last) wait in
    memory for their response."""
    pending: dict[tuple[str, int], list[ScoreRecord]] = {}
    records = iter(scores)
    for response in responses:
        key = response.id, response.repeat
        for record in records:
            found = record.id, record.repeat
            pending.setdefault(found, []).append(record)
            if found != key and key in pending:
                break
        yield response, pending.pop(key, [])


def ungraded(run: Run) -> set[tuple[str, int]]:
    """The run's answers (sample id, repeat) recorded without their scores: a judge that failed fast (or a writer
    killed) left them for resume to grade."""
    return {(response.id, response.repeat) for response, scores in joined(run.responses(), run.scores()) if not scores}


RUN_COLUMNS = ("run_id", "label", "model", "manifest_id")
RECORD_COLUMNS = ("task", "sample_id", "repeat", "scorer", "metric", "value", "error")
TEXT_COLUMNS = ("system", "fewshot", "prompt", "response")
"""The chat a sample was asked as (its task's system prompt and few-shot turns, its prompt) and the raw answer."""
VALUE_PREFIX, SETTING_PREFIX = "value.", "setting."


def value_columns(runs: Sequence[Run]) -> list[str]:
    """`value.<name>` for every value name of the runs' samples, in order of first appearance."""
    names: dict[str, None] = {}
    for run in _compiled(runs):
        for sample in run.manifest_data()["samples"]:
            names.update(dict.fromkeys(sample["values"]))
    return [VALUE_PREFIX + name for name in names]


def setting_columns(runs: Sequence[Run]) -> list[str]:
    """One column per setting that varied in any of the runs (`runner.model`, ...), in order of first appearance."""
    keys = dict.fromkeys(key for run in _compiled(runs) for key in run.info.varied)
    return [setting_column(key) for key in keys]


def setting_column(key: str) -> str:
    """A varied setting's column: its dotted key, or `setting.<key>` where the key is a column of its own
    (`task`, `model`)."""
    return SETTING_PREFIX + key if key in (*RUN_COLUMNS, *RECORD_COLUMNS, *TEXT_COLUMNS, "reference") else key


def _compiled(runs: Sequence[Run]) -> list[Run]:
    """The runs that have a manifest (a run that failed before it compiled has no samples)."""
    return [run.require_records() for run in runs if run.info.manifest_id is not None]


def columns(runs: Sequence[Run], text: bool = False) -> list[str]:
    return [*RUN_COLUMNS, *setting_columns(runs), *RECORD_COLUMNS, *value_columns(runs), "reference",
            *(TEXT_COLUMNS if text else ())]


def scorer_metrics(run: Run) -> dict[tuple[str, str], list[str]]:
    """(task, scorer) -> the metric names its records give, so a failed scorer gets a row per metric."""
    found: dict[tuple[str, str], dict[str, None]] = {}
    for record in run.scores():
        if record.metrics is not None:
            found.setdefault((record.task, record.scorer), {}).update(dict.fromkeys(record.metrics))
    return {key: list(names) for key, names in found.items()}


def export_rows(run: Run, text: bool = False) -> Iterator[dict[str, Any]]:
    """One row per score record x metric, sample by sample in record order; a failed scorer's rows have no value
    and its error, one per metric the scorer gives elsewhere in the run (or one named after the scorer). A run
    that failed before it compiled has none."""
    if not _compiled([run]):
        return
    manifest = run.manifest_data()
    samples = {s["id"]: s for s in manifest["samples"]}
    chats = {t["name"]: {"system": t.get("system"), "fewshot": t.get("fewshot") or None} for t in manifest["tasks"]}
    metrics_of = scorer_metrics(run)
    info = run.info
    run_columns = {"run_id": info.run_id, "label": run.label, "model": info.model, "manifest_id": info.manifest_id,
                   **{setting_column(key): value for key, value in info.varied.items()}}
    for response, records in joined(run.responses(), run.scores()):
        sample = samples.get(response.id)
        extra = {**_sample_columns(sample), **(_text_columns(sample, chats.get(response.task), response) if text
                                               else {})}
        for record in records:
            for metric, value in _values(record, metrics_of):
                yield {**run_columns, "task": record.task, "sample_id": record.id, "repeat": record.repeat,
                       "scorer": record.scorer, "metric": metric, "value": value, "error": _error(record.error),
                       **extra}


def _values(record: ScoreRecord, metrics_of: dict[tuple[str, str], list[str]]) -> list[tuple[str, Any]]:
    if record.metrics is not None:
        return list(record.metrics.items())
    return [(metric, None) for metric in metrics_of.get((record.task, record.scorer)) or [record.scorer]]


def _sample_columns(sample: dict[str, Any] | None) -> dict[str, Any]:
    """The value columns and reference of a manifest sample (plain JSON data)."""
    if sample is None:
        return {"reference": None}
    return {**{VALUE_PREFIX + k: v for k, v in sample["values"].items()}, "reference": sample.get("reference")}


def _text_columns(sample: dict[str, Any] | None, chat: dict[str, Any] | None,
                  response: ResponseRecord) -> dict[str, Any]:
    """The task's system prompt and few-shot turns ({user, assistant} each), the prompt, as the manifest has them,
    and the raw response text (None when the request failed)."""
    return {**(chat or {"system": None, "fewshot": None}), "prompt": sample["prompt"] if sample else None,
            "response": response.text}


def _error(error: ErrorInfo | None) -> str | None:
    return None if error is None else str(error)

"""Grading one response: its format checked against the response class, then every scorer of its task."""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from benchrun.manifest import Manifest, Sample
from benchrun.records import FORMAT_VALID, ErrorInfo, ResponseRecord, ScoreRecord
from benchrun.scoring import Scorer, score


class Grader:
    """Scores responses of one manifest with the given scorer functions (by name).

    Records on the per-sample path are built with `model_construct`: their fields are checked here (scorer
    results by `scoring.metrics`), and validating them again costs more than the rest of grading."""

    def __init__(self, manifest: Manifest, scorers: dict[str, Scorer]):
        self._validators = {t.name: Draft202012Validator(t.format.json_schema) for t in manifest.tasks}
        self._scorers = {t.name: [(s.name, scorers[s.name]) for s in t.scorers] for t in manifest.tasks}
        self._calculated = {t.name for t in manifest.tasks if t.reference == "calculated"}

    def grade(self, sample: Sample, response: ResponseRecord) -> list[ScoreRecord]:
        """format_valid first, then one record per scorer, in the task's order."""
        names = [FORMAT_VALID] + [name for name, _ in self._scorers[sample.task]]
        if response.text is None:
            error = ErrorInfo(type="NoResponse", message=f"no response: {response.error.message}")
            return [ScoreRecord(id=sample.id, task=sample.task, scorer=n, metrics=None, error=error) for n in names]
        records = [self._format(sample, response.text)]
        reference = scorer_reference(sample, sample.task in self._calculated)
        for name, fn in self._scorers[sample.task]:
            result = score(name, fn, response.text, reference)
            records.append(_record(sample, name, result))
        return records

    def _format(self, sample: Sample, text: str) -> ScoreRecord:
        problem = format_problem(self._validators[sample.task], text)
        return ScoreRecord.model_construct(id=sample.id, task=sample.task, scorer=FORMAT_VALID,
                                           metrics={FORMAT_VALID: int(problem is None)}, detail=problem)


def scorer_reference(sample: Sample, calculated: bool) -> Any:
    """What a scorer gets as its second argument: the reference, or for `calculated` the values + prompt_id."""
    return {**sample.values, "prompt_id": sample.id} if calculated else sample.reference


def format_problem(validator: Draft202012Validator, text: str) -> str | None:
    """None when `text` is JSON valid for the response class, else what is wrong."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        return f"invalid JSON: {err}"
    error = best_match(validator.iter_errors(data))
    if error is None:
        return None
    where = "/".join(map(str, error.absolute_path))
    return f"{where}: {error.message}" if where else error.message


def _record(sample: Sample, name: str, result: dict | ErrorInfo) -> ScoreRecord:
    if isinstance(result, ErrorInfo):
        return ScoreRecord(id=sample.id, task=sample.task, scorer=name, metrics=None, error=result)
    return ScoreRecord.model_construct(id=sample.id, task=sample.task, scorer=name, metrics=result)

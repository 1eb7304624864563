"""References no answer can match: a task graded by exact_match whose format's `answer` takes only some values (an
Enum, YesNoAnswer's `yes`/`no`, a bool) and a reference none of them equals (`Yes` from a values.csv) would score
every answer to that sample 0, however right; refused at compile, naming the sample."""

from __future__ import annotations

import json
from typing import Any, Iterable

from benchrun.compiler.scoring import exact_match
from benchrun.compiler.sources import TaskSpec
from benchrun.core.errors import TaskError
from benchrun.core.manifest import Sample, TaskEntry

ANSWER = "answer"
"""The field of a response that exact_match reads."""


def choices(schema: dict[str, Any]) -> list[Any] | None:
    """Every value a format's `answer` may take (an Enum's, a const's, a bool's), or None when it may take any of a
    kind (a string, a number) or the format has no `answer`."""
    prop = schema.get("properties", {}).get(ANSWER)
    if not isinstance(prop, dict):
        return None
    if "$ref" in prop:
        prop = schema.get("$defs", {}).get(str(prop["$ref"]).rsplit("/", 1)[-1], {})
    if "enum" in prop:
        return list(prop["enum"])
    if "const" in prop:
        return [prop["const"]]
    return [True, False] if prop.get("type") == "boolean" else None


def refuse_unanswerable(spec: TaskSpec, entry: TaskEntry, samples: Iterable[Sample]) -> None:
    """Refuse a sample of a task graded by the built-in exact_match whose reference (none of its acceptable answers)
    matches no value the task's format lets the model answer."""
    if not any(s.name == "exact_match" and s.origin == "builtin" for s in entry.scorers):
        return
    given = choices(entry.format.json_schema)
    if given is None:
        return
    answers = [json.dumps({ANSWER: value}) for value in given]
    matched: set[str] = set()  # the references found matched (a few values, each checked once)
    for sample in samples:
        if (written := json.dumps(sample.reference)) in matched:
            continue
        items = sample.reference if isinstance(sample.reference, list) else [sample.reference]
        if any(exact_match(answer, item) for answer in answers for item in items):
            matched.add(written)
        else:
            shown = ", ".join(json.dumps(value, ensure_ascii=False) for value in given)
            raise TaskError(f"the reference of sample '{sample.id}' is {json.dumps(sample.reference, ensure_ascii=False)},"
                            f" which no answer of format '{entry.format.name}' ({shown}) matches: exact_match would "
                            "score every answer to it 0; write it as the format answers it", **spec.where("reference"))

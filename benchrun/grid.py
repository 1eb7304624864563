"""Value grids into samples: zip (`tuple`) or every combination, rendered prompts and stable ids."""

from __future__ import annotations

import hashlib
import itertools
import string
from typing import Any, Iterator

from benchrun.errors import TaskError
from benchrun.manifest import Sample
from benchrun.sources import TaskSpec

ID_COLUMN = "id"
_MAX_ID = 80


def template_fields(spec: TaskSpec) -> list[str]:
    """The value names a template uses, checked against the task's values."""
    try:
        parsed = list(string.Formatter().parse(spec.template))
    except ValueError as err:
        raise _error(spec, "template", f"not a valid str.format template: {err}") from None
    fields = []
    for _, field, _, _ in parsed:
        if field is None:
            continue
        base = field.split(".")[0].split("[")[0]
        if not base or base.isdigit():
            raise _error(spec, "template", "positional fields like {} are not allowed; name a value")
        if base not in spec.values:
            known = ", ".join(spec.values)
            raise _error(spec, "template", f"field '{{{base}}}' is not in values (values: {known})")
        fields.append(base)
    return fields


def rows(spec: TaskSpec) -> list[dict[str, Any]]:
    """One dict of values per sample, in order."""
    names = list(spec.values)
    if spec.value_combinations == "combinations":
        return [dict(zip(names, combo)) for combo in itertools.product(*spec.values.values())]
    lengths = {name: len(column) for name, column in spec.values.items()}
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{name}={n}" for name, n in lengths.items())
        raise _error(spec, "values", f"value lists differ in length ({shown}); "
                                     "value_combinations: tuple needs equal lengths")
    return [dict(zip(names, combo)) for combo in zip(*spec.values.values())]


def samples(spec: TaskSpec) -> list[Sample]:
    """Every sample of a task: rendered prompt, values, reference and a unique, stable id."""
    template_fields(spec)
    grid = rows(spec)
    references = _references(spec, len(grid))
    seen: dict[str, int] = {}
    out = []
    for index, (values, reference) in enumerate(zip(grid, references)):
        sample_id = _unique(spec, sample_id_for(spec.name, values), index, seen)
        prompt = spec.template.format_map(values)
        out.append(Sample.model_construct(id=sample_id, task=spec.name, prompt=prompt,
                                          values=values, reference=reference))
    return out


def _references(spec: TaskSpec, n: int) -> Iterator[Any] | list[Any]:
    if spec.reference == "calculated":
        return itertools.repeat(None, n)
    if len(spec.reference) != n:
        raise _error(spec, "reference", f"{len(spec.reference)} references for {n} samples")
    return spec.reference


def sample_id_for(task: str, values: dict[str, Any]) -> str:
    """`task:id` from an id column, else `task:a=2,b=3`; long ids keep a readable head and a hash."""
    if ID_COLUMN in values:
        return f"{task}:{values[ID_COLUMN]}"
    text = f"{task}:" + ",".join(f"{name}={value}" for name, value in values.items())
    if len(text) <= _MAX_ID:
        return text
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    return f"{text[:_MAX_ID - 14]}~{digest}"


def _unique(spec: TaskSpec, sample_id: str, index: int, seen: dict[str, int]) -> str:
    if sample_id in seen:
        has_ids = ID_COLUMN in spec.values
        fix = "make the ids unique" if has_ids else "make the values unique or add an 'id' column"
        raise _error(spec, "values.id" if has_ids else "values",
                     f"duplicate sample id '{sample_id}' (samples {seen[sample_id] + 1} and {index + 1}); {fix}")
    seen[sample_id] = index
    return sample_id


def _error(spec: TaskSpec, key: str, message: str) -> TaskError:
    return TaskError(message, **spec.where(key))

"""The JSON Schemas in `schemas/`: loading them and turning violations into one-line errors."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator, ValidationError, validators
from referencing import Registry, Resource

from benchrun.core.errors import JSONSCHEMA_BOUNDS, JSONSCHEMA_SIZED, BenchrunError, bound_said, sized_said
from benchrun.core.jsonwords import respelled
from benchrun.core.keys import key_path, unknown_key
from benchrun.core.resources import schemas_dir
from benchrun.core.text import name_said


@lru_cache(maxsize=None)
def _registry() -> Registry:
    resources = []
    for path in sorted(schemas_dir().glob("*.schema.json")):
        schema = json.loads(path.read_text(encoding="utf-8"))
        resource = Resource.from_contents(schema)
        resources += [(schema["$id"], resource), (path.name, resource)]
    return Registry().with_resources(resources)


def _whole_number(_checker: Any, instance: Any) -> bool:
    """An integer as a benchmark's file writes one: `1.0` is a float (JSON Schema's `integer` takes it, and `limit: 1.0`
    was taken as 1 and kept as 1.0 in the manifest), a bool no number."""
    return isinstance(instance, int) and not isinstance(instance, bool)


BenchmarkValidator = validators.extend(
    Draft202012Validator, type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _whole_number))
"""Draft 2020-12 with a count written as a whole number: where a benchmark's file means a count, `2.0` is refused."""


@lru_cache(maxsize=None)
def validator(name: str) -> Draft202012Validator:
    """The validator for `schemas/<name>.schema.json`, or for one of its definitions (`tasks.schema.json#/$defs/turn`)."""
    schema = {"$ref": name} if "#" in name else _registry().contents(f"{name}.schema.json")
    return BenchmarkValidator(schema, registry=_registry())


def check(name: str, instance: Any, error: type[BenchrunError], *, file: str | None = None,
          root: str = "", task_of: Any = None) -> None:
    """Raise `error` for the first violation of schema `name`, naming file, task and key path."""
    found = sorted(validator(name).iter_errors(instance), key=_error_order)
    if not found:
        return
    first = found[0]
    while first.validator == "oneOf" and (inner := _branch_error(first)) is not None:
        first = inner
    path = list(first.absolute_path) + _unknown_keys(first)[:1]
    task = task_of(path) if task_of else None
    raise error(describe(first), file=file, task=task, key=key_path(root, path) or None)


def _error_order(err: ValidationError) -> tuple:
    return (list(map(str, err.absolute_path)), err.validator != "additionalProperties")


YAML_KINDS = {"array": "a list", "object": "a mapping", "string": "text", "integer": "an integer", "number": "a number",
              "boolean": "true or false"}
"""A JSON schema type as a YAML file's writer says it."""


SOME_TEXT = "\\S"
"""The pattern of a text that must say something (a template, a system prompt, an example's turn): not only
whitespace, which an empty one would be refused as."""


def describe(err: ValidationError) -> str:
    """A short message for one violation; unknown keys get a 'did you mean' hint."""
    if extra := _unknown_keys(err):
        allowed = list(err.schema.get("properties", {}))
        return "; ".join(unknown_key(k, allowed) for k in extra)
    if err.validator == "required":
        return err.message.replace("is a required property", "is required")
    if err.validator == "oneOf" and (keys := _alternatives(err.schema)):
        given = [key for key in keys if key in err.instance]
        return f"{' and '.join(given)} are both given; give one" if given else f"give {' or '.join(keys)}"
    if err.validator == "oneOf":
        return f"{_show(err.instance)} is not valid here ({_expected(err.schema)})"
    if err.validator == "const":  # jsonschema's `'calculated' was expected`, what was given and why unsaid
        why = _expected(err.schema).rstrip(".")
        return f"{_show(err.instance)} is not valid here: only {_show(err.validator_value)} is ({why})"
    if err.validator == "uniqueItems":
        twice = next(item for index, item in enumerate(err.instance) if item in err.instance[:index])
        return f"{_show(twice)} is listed twice; list each once"
    if err.validator == "pattern" and err.validator_value == SOME_TEXT:
        return f"{_show(err.instance)} is only whitespace, which asks or says nothing: give the text"
    if err.validator == "pattern" and isinstance(err.instance, str) and not err.instance.isascii():
        return f"{name_said(err.instance)} does not match {err.validator_value!r}"  # a look-alike letter shown
    if err.validator == "type" and err.instance is None:
        where = "the file holds nothing (it is empty, or only comments)" if not err.absolute_path else "nothing is given"
        kinds = err.validator_value if isinstance(err.validator_value, list) else [err.validator_value]
        return f"{where}; give {' or '.join(YAML_KINDS.get(kind, kind) for kind in kinds)}"
    if err.validator == "type" and "integer" in err.validator_value and isinstance(err.instance, float) \
            and err.instance.is_integer():
        return f"{err.instance!r} is not an integer: write the whole number ({int(err.instance)})"
    if bound := JSONSCHEMA_BOUNDS.get(str(err.validator)):
        return bound_said(err.instance, bound, err.validator_value)
    if (relation := JSONSCHEMA_SIZED.get(str(err.validator))) and hasattr(err.instance, "__len__"):
        return sized_said(err.instance, len(err.instance), relation, err.validator_value)
    return _bounded(_json_spelled(err), err.instance)


def _json_spelled(err: ValidationError) -> str:
    """jsonschema's message with the value given, if it is no text, in JSON's words (`true is not of type 'integer'`,
    not Python's `True`); text stays quoted as benchrun quotes a name."""
    return err.message if isinstance(err.instance, str) else respelled(err.message, err.instance)


SHOWN = 60
"""The most characters of a value's repr a violation shows (jsonschema's message holds it whole)."""


def _bounded(message: str, instance: Any) -> str:
    """jsonschema's `message` with the value it quotes (`'aaa...' is too long`, a 10,000-character name) cut to its
    head and its length, so an error line of bounded length keeps the key it names."""
    shown = repr(instance)
    if len(shown) <= SHOWN or shown not in message:
        return message
    size = f" ({len(instance):,} characters)" if isinstance(instance, str) else ""
    return message.replace(shown, f"{shown[:SHOWN - 3]}...{size}", 1)


def _unknown_keys(err: ValidationError) -> list[str]:
    if err.validator != "additionalProperties" or not isinstance(err.instance, dict):
        return []
    return [k for k in err.instance if k not in err.schema.get("properties", {})]


def _alternatives(schema: dict) -> list[str]:
    """The keys of a `oneOf` that asks for exactly one of them ([{"required": ["a"]}, {"required": ["b"]}])."""
    options = schema.get("oneOf", [])
    if not all(list(option) == ["required"] and len(option["required"]) == 1 for option in options):
        return []
    return [option["required"][0] for option in options]


def _branch_error(err: ValidationError) -> ValidationError | None:
    """The first violation of the one `oneOf` branch that names the value's own type (a list given for `a name, or a
    list of them`: a name given twice, or none), said in place of `not valid here`; None when no or several do."""
    branches: dict[Any, list[ValidationError]] = {}
    for inner in err.context or ():
        branches.setdefault(inner.relative_schema_path[0], []).append(inner)
    fitting = [found for index, found in branches.items() if "type" in err.schema["oneOf"][index]
               and not any(inner.validator == "type" and not inner.relative_path for inner in found)]
    return min(fitting[0], key=_error_order) if len(fitting) == 1 else None


def _expected(schema: dict) -> str:
    return schema.get("description") or "see the schema"


def _show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def generated() -> dict[str, dict]:
    """The schemas written from benchrun's own models (regenerate: python -m benchrun.compiler.schemas): the records as they
    are written, and config.yaml (the composed config, `RunConfig`) as it is read."""
    from benchrun.core.manifest import Manifest  # the record models import nothing from here
    from benchrun.core.records import ResponseRecord, RunInfo, ScoreRecord, Seal, Summary
    from benchrun.core.settings import RunConfig
    from benchrun.core.sweeprecords import SweepSummary

    records = {"manifest": Manifest, "response": ResponseRecord, "score": ScoreRecord, "summary": Summary,
               "run": RunInfo, "seal": Seal, "sweep": SweepSummary}
    schemas = {name: model.model_json_schema(mode="serialization") for name, model in records.items()}
    schemas["config"] = RunConfig.model_json_schema(mode="validation")
    return {name: {"$schema": "https://json-schema.org/draft/2020-12/schema",
                   "$id": f"https://benchrun.dev/schemas/{name}.schema.json", **schema}
            for name, schema in schemas.items()}


def write_generated() -> None:
    for name, schema in generated().items():
        path = schemas_dir() / f"{name}.schema.json"
        path.write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write_generated()

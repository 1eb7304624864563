"""Which of an answer's items a format's `items` schema takes, asked of jsonschema-rs, so that the explanation of an
invalid answer (jsonschema's, `execute.formatcheck`) descends into the others only.

jsonschema explains an answer by walking all of it: an item under `anyOf` (pydantic writes it for `list[int | str]`)
cost ~60 µs, and an answer of 50,000 such items, anything else in it wrong, held the run's event loop 3 s. An item
jsonschema-rs takes yields no error of jsonschema's (tests/test_format_check.py pins that the two agree), so leaving
it out changes nothing said: the errors left come in the order they came. Where an `items` schema cannot be checked
alone exactly as in its format (a `$ref` not into the format's `$defs`, an `$id`, an anchor, `$defs` of its own), every
item is walked as before.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterator

import jsonschema_rs
from jsonschema import Draft202012Validator, ValidationError

from benchrun.execute.formatwords import asserted

ITEMS = Draft202012Validator.VALIDATORS["items"]
UNBOUND = ('"$id"', '"$anchor"', '"$dynamicRef"', '"$dynamicAnchor"', '"$recursiveRef"', '"$recursiveAnchor"')
"""What makes a subschema mean something else once taken out of its format."""
Taken = Callable[[Any], bool]


def _refs(schema: Any) -> Iterator[Any]:
    """Every `$ref`'s value in `schema`."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "$ref":
                yield value
            yield from _refs(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _refs(value)


def items_taken(schema: dict[str, Any]) -> Callable[[Any], Taken | None]:
    """For each `items` schema of the format `schema`, jsonschema-rs's check of an item against it, as the format
    would check it; None where the subschema cannot be checked alone so."""
    text = json.dumps(schema)
    bound = not any(word in text for word in UNBOUND) and all(
        isinstance(ref, str) and ref.startswith("#/$defs/") for ref in _refs(schema))
    defs: dict[str, Any] = schema.get("$defs", {})
    made: dict[int, tuple[Any, Taken | None]] = {}
    """Each subschema's check by its id, beside the subschema itself (kept alive, so that its id names no other)."""

    def taken(items: Any) -> Taken | None:
        if not bound or not isinstance(items, dict) or "$defs" in items:
            return None
        if id(items) not in made:
            try:
                made[id(items)] = items, jsonschema_rs.Draft202012Validator(
                    {**items, "$defs": defs}, validate_formats=True, formats=asserted()).is_valid
            except jsonschema_rs.ValidationError:
                made[id(items)] = items, None
        return made[id(items)][1]
    return taken


def pruned_items(taken: Callable[[Any], Taken | None]) -> Callable[..., Iterator[ValidationError]]:
    """jsonschema's `items` (its errors word for word), descending only into the items `taken` does not take."""

    def items(validator: Any, items: Any, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
        fits = taken(items) if validator.is_type(instance, "array") else None
        if fits is None:
            yield from ITEMS(validator, items, instance, schema)
            return
        for index in range(len(schema.get("prefixItems", [])), len(instance)):
            if not fits(instance[index]):
                yield from validator.descend(instance=instance[index], schema=items, path=index)
    return items

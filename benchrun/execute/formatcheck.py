"""Whether an answer fits its response format: JSON valid against the format's JSON Schema (draft 2020-12).

That validity is what the archive promises (`format_valid`), as the `jsonschema` package decides it. The answer path
asks jsonschema-rs first, a Rust validator of the same draft that takes 1-2 µs where jsonschema takes 15-30: a
valid answer is settled there; an invalid one goes to jsonschema, which decides again and says what is wrong.
tests/test_format_check.py pins that the two agree. A `format` keyword pydantic writes for a type it checks
(`date-time`, `uuid`, `uri`, ...) is asserted on both sides as pydantic reads that type (`execute.formatwords`).

A format's regexes (`pattern`, `patternProperties`, and the keys `additionalProperties` weighs against them) are
matched by jsonschema-rs's regex engine on both sides, never by Python's `re`: `re` backtracks, so a regex such as
`^(a+)+$` took time exponential in the length of an answer's string (40 characters: hours), and the run, whose
event loop checks each answer, hung on one answer. jsonschema-rs's engine runs in time linear in the text (its
backtracking, for lookarounds, is bounded), and it is the engine that settled every valid answer already. A format
giving `unevaluatedProperties` beside `patternProperties` (which pydantic never writes), where jsonschema's search is
out of reach of its keywords, is explained by jsonschema-rs alone.
"""

from __future__ import annotations

import ast
import json
import re
from functools import lru_cache
from typing import Any, Callable, Iterator, Mapping

import jsonschema_rs
from jsonschema import Draft202012Validator, ValidationError
from jsonschema.exceptions import best_match
from jsonschema.validators import extend

from benchrun.core.errors import ArchiveError
from benchrun.core.jsonwords import listed, respelled
from benchrun.core.layout import MANIFEST
from benchrun.core.text import NESTED, SURROGATE, SURROGATE_ESCAPE, NotJSON, json_value, one_line
from benchrun.execute.formatitems import Taken, items_taken, pruned_items
from benchrun.execute.formatwords import asserted, format_checker


@lru_cache(maxsize=1024)
def _regex(pattern: str) -> jsonschema_rs.Validator:
    """A check that a string holds a match of `pattern` (a JSON Schema regex, searched as `pattern` searches)."""
    return jsonschema_rs.validator_for({"type": "string", "pattern": pattern})


def search(pattern: str, text: str) -> bool:
    """Whether `text` holds a match of `pattern`, found by jsonschema-rs's engine (bounded in time)."""
    return _regex(pattern).is_valid(text)


def _pattern(validator: Any, pattern: str, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any,
                        schema: dict[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


ADDITIONAL = Draft202012Validator.VALIDATORS["additionalProperties"]


def _additional_properties(validator: Any, additional: Any, instance: Any,
                           schema: dict[str, Any]) -> Iterator[ValidationError]:
    """jsonschema's own (its errors word for word), the keys matched against `patternProperties` by `search`."""
    patterns = schema.get("patternProperties")
    if not patterns or not validator.is_type(instance, "object"):
        yield from ADDITIONAL(validator, additional, instance, schema)
        return
    extras = _extras(instance, schema)
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        verb = "does" if len(extras) == 1 else "do"
        yield ValidationError(f"{', '.join(map(repr, extras))} {verb} not match any of the regexes: "
                              f"{', '.join(map(repr, sorted(patterns)))}")


def _extras(instance: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """The keys of `instance` that neither `properties` nor `patternProperties` (matched by `search`) name, sorted."""
    known, patterns = schema.get("properties", {}), schema.get("patternProperties", {})
    return sorted(key for key in instance if key not in known and not any(search(p, key) for p in patterns))


def _pruned_additional(taken: Callable[[Any], Taken | None]) -> Callable[..., Iterator[ValidationError]]:
    """`_additional_properties`, descending only into the values (of the keys it weighs) that `taken` does not take
    (`formatitems`; in sorted order, where jsonschema's own took a set's)."""

    def additional_properties(validator: Any, additional: Any, instance: Any,
                              schema: dict[str, Any]) -> Iterator[ValidationError]:
        fits = taken(additional) if validator.is_type(instance, "object") else None
        if fits is None:
            yield from _additional_properties(validator, additional, instance, schema)
            return
        for extra in _extras(instance, schema):
            if not fits(instance[extra]):
                yield from validator.descend(instance[extra], additional, path=extra)
    return additional_properties


UNIQUE = jsonschema_rs.validator_for({"uniqueItems": True})


def _unique_items(validator: Any, unique: Any, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    """jsonschema's own (its error word for word), the items compared by jsonschema-rs, in time linear in their
    number: jsonschema compares each pair of items it cannot sort (`[1, "2", 3, ...]`, objects), and an answer of
    8,000 such took 10 s of the event loop, 20,000 a minute, whenever anything else in the answer was wrong."""
    if unique and validator.is_type(instance, "array") and not UNIQUE.is_valid(instance):
        yield ValidationError(f"{instance!r} has non-unique elements")


Explainer = extend(Draft202012Validator, {"pattern": _pattern, "patternProperties": _pattern_properties,
                                          "additionalProperties": _additional_properties,
                                          "uniqueItems": _unique_items})
"""jsonschema's draft 2020-12 validator, its regexes matched by `search`, its items' uniqueness by jsonschema-rs."""


def _pruned(schema: dict[str, Any]) -> Any:
    """Explainer for `schema`, descending only into the items and extra keys' values jsonschema-rs does not take."""
    taken = items_taken(schema)
    return extend(Explainer, {"items": pruned_items(taken), "additionalProperties": _pruned_additional(taken)})


def _holds_both(schema: Any) -> bool:
    """Whether a schema gives `unevaluatedProperties` and `patternProperties` (anywhere: jsonschema weighs the keys
    of the first against the regexes of the second with `re`, in code no keyword of its own can replace)."""
    text = json.dumps(schema)
    return '"unevaluatedProperties"' in text and '"patternProperties"' in text


class FormatCheck:
    """One format's check, compiled once from its JSON Schema."""

    def __init__(self, schema: dict[str, Any]):
        try:
            self._fast = jsonschema_rs.Draft202012Validator(schema, validate_formats=True, formats=asserted())
        except jsonschema_rs.ValidationError as err:  # a manifest the compiler never wrote (its id made to match)
            raise ArchiveError(f"a format's JSON schema is not a JSON Schema ({one_line(str(err), 200)}); the "
                               "compiler writes none such", file=MANIFEST) from None
        self._full = None if _holds_both(schema) else _pruned(schema)(schema, format_checker=format_checker())

    def problem(self, text: str) -> str | None:
        """None when `text` is JSON valid in the format, else what is wrong."""
        try:
            data = json_value(text)
        except NotJSON as err:
            return f"invalid JSON: {err}"
        if (problem := self.data_problem(data)) is not None or (half := _half_pair(text)) is None:
            return problem
        return f"invalid JSON: {half} is half of a UTF-16 surrogate pair, not a character"

    def data_problem(self, data: Any) -> str | None:
        """None when the parsed `data` is valid in the format, else what is wrong (jsonschema's best match; for a
        format whose regexes jsonschema could only match with `re`, jsonschema-rs's first error)."""
        if self._fast.is_valid(data):
            return None
        if self._full is None:
            error = next(self._fast.iter_errors(data))
            return _said(list(error.instance_path), _rs_words(error))
        try:
            error = best_match(self._full.iter_errors(data))
            return None if error is None else _said(list(error.absolute_path), json_words(error))
        except RecursionError:  # a recursive format and an answer nested as deep as JSON lets it
            return f"invalid: {NESTED}"


def ended_early(done_reason: str | None, what: str, limit: str) -> str | None:
    """Why `what` (the answer, the judge's reply) may not be whole, as its server said (`done_reason`): cut at `limit`
    (`length`), or ended otherwise; None for one that ended as it should (`stop`), or of which nothing was said."""
    if done_reason in (None, "stop"):
        return None
    how = f"was cut at {limit}" if done_reason == "length" else "ended early"
    return f"{what} {how}: done_reason {json.dumps(done_reason)}"


APART = ("thinking", "reasoning_content", "reasoning", "tool_calls")
"""Where a server keeps what a model said apart from its text, as a record's `extra` holds it: a thinking model's
thinking (Ollama's `thinking`; vLLM's, llama.cpp's and DeepSeek's `reasoning_content`; `reasoning` of others), and
the tool calls it made (their JSON text), where a model that calls a tool to answer put its answer."""


def said_why(done_reason: str | None, extra: Mapping[str, Any], text: str, what: str, limit: str,
             who: str) -> str | None:
    """Why `what` (the answer, the judge's reply) may not be in its format, as its server said: it did not end as it
    should (`ended_early`), `who` refused (its `refusal`), or its `text` is empty where its thinking or tool calls
    hold some (APART: a model that put what it meant to answer there); None where it said none of these."""
    if (ended := ended_early(done_reason, what, limit)) is not None:
        return ended
    if extra.get("refusal"):
        return f"{who} refused: {json.dumps(extra['refusal'])}"
    thought = [(key, len(said)) for key in APART if isinstance(said := extra.get(key), str) and said.strip()]
    if text.strip() or not thought:
        return None
    return f"{what} is empty, where its {thought[0][0]} (kept in the record's extra) holds {thought[0][1]:,} characters"


def _half_pair(text: str) -> str | None:
    """The first lone surrogate a JSON text's escapes make (`\\ud800` unpaired), as its escape; None when they make
    none. json_value keeps it as U+FFFD, fit to keep; no class takes it (pydantic refuses such a string)."""
    if "\\u" not in text or not SURROGATE_ESCAPE.search(text):
        return None
    found = SURROGATE.search(json.dumps(json.loads(text), ensure_ascii=False))
    return None if found is None else f"\\u{ord(found[0]):04x}"


def json_words(error: ValidationError) -> str:
    """jsonschema's message with the answer's value (and a schema's value it quotes: VALUED) in JSON's words, not
    Python's (`true is not of type 'number'`, not `True ...`; `{"a": 1}`, not `{'a': 1}`): each is written at the
    message's start or end, where jsonschema writes it; so are the answer's keys a message of KEYED names (`"x" was
    unexpected`, not `'x' ...`), and the values a message of LISTED names mid-message. A schema's names (a type, a
    pattern) stay as jsonschema says."""
    if error.validator in KEYED:
        return _keys_said(error.message)
    if error.validator in LISTED and (rebuilt := _listed_said(error)) is not None:
        return rebuilt
    message = error.message
    for value in (error.instance, *([error.validator_value] if error.validator in VALUED else []), *_beyond(error)):
        message = respelled(message, value)
    return message


def _listed_said(error: ValidationError) -> str | None:
    """A LISTED message rebuilt in JSON's words: its head (the answer's value in it so), the values it lists, each
    found among the error's own, and its tail; None where they are not found so."""
    head, tail, among = LISTED[error.validator]
    start, end = head(error), tail.search(error.message)
    if end is None or not error.message.startswith(start):
        return None
    said = listed(error.message[len(start):end.start()], among(error))
    return None if said is None else respelled(start, error.instance) + said + error.message[end.start():]


def _beyond(error: ValidationError) -> list[Any]:
    """The items `items: false` refuses past `prefixItems`, as its message quotes them at its end (`found 2 extra:
    [True, None]`): the list of them, or the one alone."""
    if error.validator != "items" or error.validator_value is not False or not isinstance(error.instance, list):
        return []
    rest = error.instance[len(error.schema.get("prefixItems", [])):]
    return [rest if len(rest) != 1 else rest[0]]


VALUED = ("const", "enum", "not")
"""The keywords whose value a message quotes as a value (`"x" was expected`, `... is not one of ["a", "b"]`)."""
KEYED = ("additionalProperties", "unevaluatedProperties", "required", "dependentRequired")
"""The keywords whose message names the answer's keys, each as Python quotes a string (`'x' was unexpected`, `'a' is a
required property`, `'b' is a dependency of 'a'`); a key a `propertyNames` refuses is the error's value."""
LISTED: dict[str, tuple[Callable[[ValidationError], str], re.Pattern[str], Callable[[ValidationError], list[Any]]]] = {
    "unevaluatedItems": (lambda error: "Unevaluated items are not allowed (",
                         re.compile(r" (?:was|were) unexpected\)$"), lambda error: error.instance),
    "oneOf": (lambda error: f"{error.instance!r} is valid under each of ", re.compile("$"),
              lambda error: error.validator_value * 2)}
"""The keywords whose message lists values mid-message, as Python's repr writes them: the message's head and tail
about the list, and the values each listed one is among (the answer's items, in their order; the `oneOf` schemas it
fits, the first it fits said last)."""
KEYS_OR_REGEXES = re.compile(r"('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")| not match any of the regexes: ")
"""A string as Python's repr writes it (a key), or where additionalProperties's message beside patternProperties
turns from the keys to the schema's regexes (outside a key: a key is read whole before)."""


def _keys_said(message: str) -> str:
    """A KEYED message with each key before the regexes it names (if any) in JSON's words."""
    said, at = [], 0
    for found in KEYS_OR_REGEXES.finditer(message):
        if found[1] is None:
            break
        said.append(message[at:found.start()] + json.dumps(ast.literal_eval(found[1]), ensure_ascii=False))
        at = found.end()
    return "".join(said) + message[at:]


def _rs_words(error: jsonschema_rs.ValidationError) -> str:
    """jsonschema-rs's message, the answer's keys it names as unexpected in JSON's words (it quotes each in `'`
    unescaped: `'b'x'`)."""
    unexpected = getattr(error.kind, "unexpected", None)
    if not unexpected:
        return error.message
    verb = "was" if len(unexpected) == 1 else "were"
    keys = ", ".join(json.dumps(key, ensure_ascii=False) for key in unexpected)
    return f"{error.message.partition(' (')[0]} ({keys} {verb} unexpected)"


def _said(path: list[Any], message: str) -> str:
    """An error as the answer's detail: where in the answer, then what."""
    where = "/".join(map(str, path))
    return f"{where}: {message}" if where else message

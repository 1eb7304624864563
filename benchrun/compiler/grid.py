"""Value grids into samples: zip (`tuple`) or every combination, rendered prompts and stable ids.

A template is a `str.format` template held to plain value names: `{a}`, `{a!r}`, `{a:>8}`, `{a:{width}}` (a format
spec's own fields are value names too). Indexing, attributes, other conversions and nested specs are refused
before anything is rendered, and so are format widths and precisions above `task.max_prompt_chars`, so a template
cannot reach into Python objects. A prompt is rendered field by field and its characters counted as it grows: it
stops once past `task.max_prompt_chars`, so many fields together (`{a:>99999}` or `{a}` a thousand times) cannot
render gigabytes either. The sample count is known from the value lists before they
are expanded, and refused above `task.max_samples`; the prompts' characters are counted as they are rendered, and
refused above `task.max_total_chars` in all (limits that hold one by one may not hold together: a million samples
of 100,000 characters each).
"""

from __future__ import annotations

import itertools
import math
import re
import string
import unicodedata
from dataclasses import dataclass
from typing import Any, Iterator

from benchrun.compiler.alike import first_alike
from benchrun.compiler.blanks import refuse_blank_example, refuse_blank_values
from benchrun.compiler.braces import refuse_escaped_fields
from benchrun.compiler.charcodes import formatted
from benchrun.compiler.chatcolumns import refuse_chat_values
from benchrun.compiler.data import Example, draw
from benchrun.compiler.examplevalues import check_example_values
from benchrun.compiler.files import REFERENCE
from benchrun.compiler.sampleids import ID_COLUMN, TWO_FORMS, refuse_id_lookalike, sample_id_for, unique_id
from benchrun.compiler.schemas import SHOWN
from benchrun.compiler.scoring import trimmed
from benchrun.compiler.shots import prompt_shown
from benchrun.compiler.sources import TaskSpec
from benchrun.core.errors import ConfigError, TaskError
from benchrun.core.manifest import Sample, Turn
from benchrun.core.text import counted, name_said, names_listed, says_nothing
from benchrun.core.written import shown

RESERVED = {REFERENCE: "the references", ID_COLUMN: "the sample ids"}
"""The columns of a values file that are no values, and what they hold."""
_SPEC = re.compile(r"(?:.?[<>=^])?[-+ ]?z?#?0?(?P<width>\d*)[,_]?(?:\.(?P<precision>\d+))?[bcdeEfFgGnosxX%]?")
"""The format-spec mini-language, for the width and precision it asks for."""


@dataclass(frozen=True)
class Limits:
    """What a benchmark may ask for (task.max_samples, task.max_prompt_chars, task.max_total_chars)."""

    max_samples: int
    max_prompt_chars: int
    max_total_chars: int


@dataclass
class Rendered:
    """The prompt characters rendered so far, the benchmark's tasks together (held to task.max_total_chars)."""

    chars: int = 0


@dataclass(frozen=True)
class Field:
    """One `{name!conversion:spec}` of a template."""

    name: str
    conversion: str | None
    spec: str
    spec_fields: tuple[str, ...]
    """Value names inside the spec (`{a:{width}}`): the spec is known only per sample."""


Parts = list[tuple[str, "Field | None"]]
"""A template as its literal texts, each with the field after it (None after the last)."""


def template_parts(spec: TaskSpec, limits: Limits) -> Parts:
    """The template's literal texts and fields, each field a plain value name with an allowed conversion and spec."""
    try:
        parsed = list(string.Formatter().parse(spec.template))
    except ValueError as err:
        raise _error(spec, "template", f"not a valid str.format template: {err}") from None
    refuse_escaped_fields(((literal, name) for literal, name, *_ in parsed), spec.values, spec.where("template"))
    return [(literal, None if name is None else _field(spec, name, conversion, format_spec or "", limits))
            for literal, name, format_spec, conversion in parsed]


def _fields(parts: Parts) -> list[Field]:
    return [field for _, field in parts if field is not None]


def fill(parts: Parts, values: dict[str, Any], limit: int) -> tuple[str, bool]:
    """(the template filled with `values`, True), or (its first characters, False) once they pass `limit` with parts
    left: no more is rendered then. A value its field cannot format raises ValueError or TypeError, as str.format
    does."""
    out: list[str] = []
    used = 0
    for index, (literal, field) in enumerate(parts):
        piece = literal if field is None else literal + _filled(field, values)
        out.append(piece)
        used += len(piece)
        if used > limit and index < len(parts) - 1:
            return "".join(out), False
    return "".join(out), True


def _filled(field: Field, values: dict[str, Any]) -> str:
    """One field as str.format renders it."""
    value = values[field.name]
    if isinstance(value, bool) and (field.conversion or not field.spec):  # a spec formats it as the int it is
        said = shown(value)  # `true` with !r and !s too, as a number's written form is
    else:
        said = repr(value) if field.conversion == "r" else str(value) if field.conversion == "s" else value
    spec = field.spec.format_map(values) if field.spec_fields else field.spec
    return formatted(said, spec, f"{{{field.name}:{field.spec}}}")


def _field(spec: TaskSpec, name: str, conversion: str | None, format_spec: str, limits: Limits) -> Field:
    shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{format_spec}" if format_spec else "") + "}"
    if not name or name.isdigit():
        raise _error(spec, "template", "positional fields like {} are not allowed; name a value")
    if not name.isidentifier():
        raise _error(spec, "template", f"field {shown}: only a value's name can stand in a field (no indexing or "
                                       "attributes)")
    if name not in spec.values:
        raise _error(spec, "template", f"field {name_said(f'{{{name}}}')} is not in values (values: {names_listed(spec.values)})")
    if conversion not in (None, "r", "s"):
        raise _error(spec, "template", f"field {shown}: conversion !{conversion} is not allowed (only !r and !s)")
    nested = [part for part in string.Formatter().parse(format_spec) if part[1] is not None]
    for _, inner, inner_spec, inner_conversion in nested:
        if not inner.isidentifier() or inner not in spec.values or inner_spec or inner_conversion:
            raise _error(spec, "template", f"field {shown}: a format spec's own field must be a value's name, as "
                                           "in {a:{width}}")
    if not nested:
        _check_spec(spec, shown, format_spec, limits)
    return Field(name, conversion, format_spec, tuple(part[1] for part in nested))


def _check_spec(spec: TaskSpec, shown: str, format_spec: str, limits: Limits, sample: str | None = None) -> None:
    """Refuse a width or precision that alone would pass task.max_prompt_chars."""
    match = _SPEC.fullmatch(format_spec)
    asked = max(int(match["width"] or 0), int(match["precision"] or 0)) if match else 0
    if asked > limits.max_prompt_chars:
        where = f" for sample '{sample}'" if sample else ""
        raise _error(spec, "template", f"field {shown}{where} asks for {asked:,} characters, more than "
                                       f"task.max_prompt_chars ({limits.max_prompt_chars:,})")


def sample_count(spec: TaskSpec) -> int:
    """How many samples the task's value lists give, without expanding them."""
    lengths = [len(column) for column in spec.values.values()]
    if spec.value_combinations == "combinations":
        n = math.prod(lengths)
        if ID_COLUMN in spec.values and n > len(spec.values[ID_COLUMN]):
            raise _error(spec, f"values.{ID_COLUMN}", "an id names one sample, but value_combinations: combinations "
                                                      "crosses the id list with the other value lists, so each id "
                                                      "would name several samples; leave the id list out (each "
                                                      "sample's id is then made of its values)")
        return n
    if len(set(lengths)) > 1:
        shown = ", ".join(f"{name}={len(column)}" for name, column in spec.values.items())
        raise _error(spec, "values", f"value lists differ in length ({shown}); "
                                     "value_combinations: tuple needs equal lengths")
    return lengths[0]


def rows(spec: TaskSpec) -> Iterator[dict[str, Any]]:
    """One dict of values per sample, in order."""
    names = list(spec.values)
    grid = itertools.product(*spec.values.values()) if spec.value_combinations == "combinations" \
        else zip(*spec.values.values())
    return (dict(zip(names, combo)) for combo in grid)


def samples(spec: TaskSpec, limits: Limits, rendered: Rendered, preamble: int = 0) -> list[Sample]:
    """Every sample of a task (its first `limit`, or `sample.n` drawn): rendered prompt, values, reference and a
    unique, stable id; each prompt's characters, with the `preamble` sent before it (the system prompt and
    examples), are held to task.max_prompt_chars and added to what the tasks before it `rendered`."""
    _names_apart(spec)
    refuse_id_lookalike(spec)
    _says_something(spec)
    parts = template_parts(spec, limits)
    shown = [name for field in _fields(parts) for name in (field.name, *field.spec_fields)]
    refuse_blank_values(spec, shown)
    refuse_chat_values(spec, shown)
    n = sample_count(spec)
    seen: dict[str, tuple[int, str]] = {}
    grid = [(unique_id(spec, sample_id_for(spec.name, values), index, seen), values, reference)
            for index, (values, reference) in enumerate(zip(rows(spec), _references(spec, n)))]
    render = _renderer(spec, parts, limits)
    out, fields_set = [], set(Sample.model_fields)  # one set for the task's samples: each their own kept 216 bytes
    asked: dict[int, int] = {}
    for index in chosen(spec, [sample_id for sample_id, _, _ in grid]):
        sample_id, values, reference = grid[index]
        prompt, whole = render(values, sample_id, limits.max_prompt_chars)
        chars = len(prompt) + preamble
        if chars > limits.max_prompt_chars:
            sent = " with the system prompt and examples sent before it" if preamble else ""
            raise _error(spec, "template", f"the prompt of sample '{sample_id}'{sent} has {_count(chars, whole)} "
                                           f"characters, more than task.max_prompt_chars ({limits.max_prompt_chars:,})")
        _asked_once(spec, asked, out, prompt, sample_id)
        rendered.chars += chars
        if rendered.chars > limits.max_total_chars:
            raise ConfigError(f"the benchmark's prompts pass task.max_total_chars ({limits.max_total_chars:,} "
                              f"characters in all) at sample {index + 1:,} of {n:,} of task '{spec.name}'; raise it, "
                              "or pick tasks with task.only", key="task.max_total_chars")
        out.append(Sample.model_construct(fields_set, id=sample_id, task=spec.name, prompt=prompt, values=values,
                                          reference=reference))
    return out


def _asked_once(spec: TaskSpec, asked: dict[int, int], out: list[Sample], prompt: str, sample_id: str) -> None:
    """Refuse a sample whose prompt is one of `out`'s (the samples rendered before it, `asked` by the hash of each
    prompt): the model would be sent one chat twice, so the two could only be answered alike, whatever their
    references. Prompts that differ only in white space or Unicode's form are two chats, and asked (a benchmark of
    how a model takes such differences asks exactly those)."""
    earlier = asked.setdefault(hash(prompt), len(out))
    if earlier < len(out) and out[earlier].prompt == prompt:
        raise _error(spec, "values", f"samples '{out[earlier].id}' and '{sample_id}' ask one question "
                                     f"({prompt_shown(prompt)}), and the model would be sent one chat twice; make each "
                                     "sample's prompt its own (a template field of the value that tells them apart), "
                                     "or ask again with repeats=N")


def _names_apart(spec: TaskSpec) -> None:
    """Refuse two value names of one text (`_unique`'s NFC): shown, and exported as columns, as one name; and two
    that print alike (`alike.look_alike`), or one that prints as a RESERVED name (a Cyrillic `р` in `reference`)."""
    named: dict[str, str] = {}
    for name in spec.values:
        if (other := named.setdefault(unicodedata.normalize("NFC", name), name)) != name:
            raise _error(spec, f"values.{name}", f"the value names '{other}' and '{name}' are shown, and exported as "
                                                 f"columns, as one: {TWO_FORMS}; give each its own name")
    if (alike := first_alike(list(dict.fromkeys([*RESERVED, *named.values()])))) is not None:
        (one, other), why = alike
        raise _error(spec, f"values.{other}", f"the value names {name_said(one)} and {name_said(other)} may print "
                     f"alike: {why}; give each its own name" if one in spec.values else f"{name_said(other)} may "
                     f"print as '{one}', the column of {RESERVED[one]}: {why}; write '{one}', or another name")


def _says_something(spec: TaskSpec) -> None:
    """Refuse a template, a system prompt or an example's turn of invisible characters alone (a zero-width space),
    which asks or says nothing, as one of only whitespace is refused where it is read."""
    for key, text in (("template", spec.template), ("system", spec.system)):
        if text is not None and says_nothing(text):
            raise _error(spec, key, _nothing_said(text))
    for example in spec.fewshot:
        for turn, text in (("user", example.user), ("assistant", example.assistant)):
            if text is not None and says_nothing(text):
                raise TaskError(_nothing_said(text), file=example.file, task=spec.name, key=f"{example.key}.{turn}")


def _nothing_said(text: str) -> str:
    return (f"{ascii(text)[:SHOWN]} is only whitespace and invisible characters (a zero-width space, a word joiner), "
            "which ask or say nothing: give the text")


def _count(chars: int, whole: bool) -> str:
    """A text's length as known: exact if it was rendered whole, else what was rendered before it stopped."""
    return f"{chars:,}" if whole else f"at least {chars:,}"


def chosen(spec: TaskSpec, ids: list[str]) -> range | list[int]:
    """The indices of the samples a task keeps: all, its first `limit`, or `sample.n` drawn by id with the seed."""
    if spec.limit is not None:
        return range(min(spec.limit, len(ids)))
    if spec.sample is None:
        return range(len(ids))
    if spec.sample.n > len(ids):
        raise _error(spec, "sample.n", f"{counted(spec.sample.n, 'sample')} asked for, but the task has {len(ids):,}")
    return draw(ids, spec.sample.n, spec.sample.seed)


def turns(spec: TaskSpec, limits: Limits) -> tuple[Turn, ...]:
    """The task's few-shot examples as sent: the user's text, or the template rendered with the example's values."""
    parts = template_parts(spec, limits)
    return tuple(Turn(user=_example_text(spec, example, parts, limits), assistant=example.assistant)
                 for example in spec.fewshot)


def _example_text(spec: TaskSpec, example: Example, parts: Parts, limits: Limits) -> str:
    if example.values is None:
        return example.user or ""
    where = {"file": example.file, "task": spec.name, "key": f"{example.key}.values"}
    fields = _fields(parts)
    check_example_values(example.values, [field.name for field in fields]
                         + [name for field in fields for name in field.spec_fields], where)
    refuse_blank_example(example.values, [field.name for field in fields], where)
    for field in fields:
        if field.spec_fields:
            shown = "{" + field.name + ":" + field.spec + "}"
            _check_spec(spec, shown, field.spec.format_map(example.values), limits, example.key)
    try:
        text, whole = fill(parts, example.values, limits.max_prompt_chars)
    except (ValueError, TypeError) as err:
        raise TaskError(f"cannot render the example: {err}", **where) from None
    if len(text) > limits.max_prompt_chars:
        raise TaskError(f"the example rendered has {_count(len(text), whole)} characters, more than "
                        f"task.max_prompt_chars ({limits.max_prompt_chars:,})", **where)
    return text


def _renderer(spec: TaskSpec, parts: Parts, limits: Limits):
    """values, sample id, limit -> (prompt, whole), as `fill`; a value its field cannot format is an error naming the
    sample."""
    nested = [field for field in _fields(parts) if field.spec_fields]

    def render(values: dict[str, Any], sample_id: str, limit: int) -> tuple[str, bool]:
        for field in nested:
            shown = "{" + field.name + ":" + field.spec + "}"
            _check_spec(spec, shown, field.spec.format_map(values), limits, sample_id)
        try:
            return fill(parts, values, limit)
        except (ValueError, TypeError) as err:
            raise _error(spec, "template", f"cannot render sample '{sample_id}': {err}{_as_text(err, values)}") from None
    return render


def _as_text(err: Exception, values: dict[str, Any]) -> str:
    """Why a value a number's format code was given is text, when one of the sample's values is a number's text: a
    values file's cell that is no number as written."""
    if not (isinstance(err, ValueError) and str(err).endswith("for object of type 'str'")
            and any(isinstance(value, str) and _numeral(value) for value in values.values())):
        return ""
    return ("; a values file's cell that is no number as written (a leading zero, more digits than a double holds, "
            "digits other than 0-9, an integer past 2^53) is text")


def _references(spec: TaskSpec, n: int) -> Iterator[Any] | list[Any]:
    if spec.reference == "calculated":
        return itertools.repeat(None, n)
    if len(spec.reference) != n:
        raise _error(spec, "reference", f"{counted(len(spec.reference), 'reference')} for {counted(n, 'sample')}")
    for index, reference in enumerate(spec.reference):
        if reference == [] or any(isinstance(item, str) and not trimmed(item) for item in _answers(reference)):
            what = "a list of no answers, which no answer matches" if reference == [] else (
                "an empty answer, which every answer contains")
            raise _error(spec, "reference", f"the reference of sample {index + 1:,} is {reference!r}: {what}; give "
                                            "the answer, or leave the sample out")
    return spec.reference


def _answers(reference: Any) -> list[Any]:
    """A reference's acceptable answers: the items of a list, else the one."""
    return reference if isinstance(reference, list) else [reference]


def _error(spec: TaskSpec, key: str, message: str) -> TaskError:
    return TaskError(message, **spec.where(key))


def _numeral(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True

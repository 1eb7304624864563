"""References no answer can match: a task graded by exact_match whose format's `answer` takes only some values (an
Enum, YesNoAnswer's `yes`/`no`, a bool) or only numbers (IntAnswer, FloatAnswer), and a reference none of them
equals (`Yes` from a values.csv, `1,000` or `2.5` for an IntAnswer), would score every answer to that sample 0,
however right; so would contains a reference none of them contains (`yes` for a BoolAnswer's `true`, `5 apples` for
an IntAnswer). Refused at compile, naming the sample and the scorer; so is the other side, a reference nearly every
answer holds: a capital letter (a multiple-choice answer's), which contains finds in any free-text answer with that
letter in it."""

from __future__ import annotations

import json
import unicodedata
from typing import Any, Callable, Iterable, Mapping

from benchrun.compiler.bounds import within
from benchrun.compiler.scoring import BUILTIN, Scorer, contains, exact_match, number_value, trimmed
from benchrun.compiler.sources import TaskSpec
from benchrun.core.errors import TaskError
from benchrun.core.manifest import Manifest, Sample, TaskEntry

ANSWER = "answer"
"""The field of a response that exact_match reads."""
VERB = {"exact_match": "matches", "contains": "contains"}
"""What a built-in scorer finds an answer does to a reference it scores 1, as an error says it."""
NUMBERS = {"integer": "an integer", "number": "a number"}
"""The JSON Schema types of an answer that only numbers give, as an error names them."""
BOUNDS = {"pattern", "maxLength"}
"""What bounds a string answer to a few texts (`^[A-D]$`), whose letters are the ones it allows: not free text."""
KEPT_AS_ASKED = "the run's references are as it asked them: choose another scorer"
"""A rescore's way out of a scorer refused for the run's references, which it cannot change."""


def answered(schema: dict[str, Any]) -> dict[str, Any]:
    """The object a format's schema asks for: the schema, or the definition its top `$ref` names (a model that holds
    itself, `child: Node | None`, whose fields pydantic puts in `$defs`: its `answer` was said to be missing)."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and isinstance(found := schema.get("$defs", {}).get(
            ref.removeprefix("#/$defs/")), dict):
        return found
    return schema


def answer_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema of a format's `answer` (its definition, for an Enum's `$ref`; its one kind besides null, for an
    `Optional[...]`'s `anyOf`); empty without one."""
    prop = answered(schema).get("properties", {}).get(ANSWER)
    if not isinstance(prop, dict):
        return {}
    if len(kinds := [one for one in prop.get("anyOf", ()) if isinstance(one, dict) and one.get("type") != "null"]) == 1:
        prop = kinds[0]
    if "$ref" in prop:
        return schema.get("$defs", {}).get(str(prop["$ref"]).rsplit("/", 1)[-1], {})
    return prop


def choices(schema: dict[str, Any]) -> list[Any] | None:
    """Every value a format's `answer` may take (an Enum's, a const's, a bool's), or None when it may take any of a
    kind (a string, a number) or the format has no `answer`."""
    prop = answer_schema(schema)
    if "enum" in prop:
        return list(prop["enum"])
    if "const" in prop:
        return [prop["const"]]
    return [True, False] if _types(prop) == ["boolean"] else None


def matcher(schema: dict[str, Any], scorer: Scorer = exact_match) -> tuple[Callable[[Any], bool], str] | None:
    """Whether a reference item can be matched by some answer of the format under the built-in `scorer`, and what
    the format answers (for the error); None when any reference can be (a string answer without bounds, no
    `answer` field)."""
    given = choices(schema)
    if given is not None:
        answers = [json.dumps({ANSWER: value}) for value in given]
        shown = ", ".join(json.dumps(value, ensure_ascii=False) for value in given)
        seen: dict[tuple[type, Any], bool] = {}  # a few references over many samples: each read once

        def matched(item: Any) -> bool:
            key = (type(item), item)
            if key not in seen:
                seen[key] = any(scorer(answer, item) for answer in answers)
            return seen[key]
        return matched, shown
    prop = answer_schema(schema)
    kinds = _types(prop)
    numeric = bool(kinds) and all(kind in NUMBERS for kind in kinds)
    bounded = within(prop) if scorer is exact_match or numeric else None  # a pattern, a length, a range
    if not numeric:
        return bounded
    whole = all(kind == "integer" for kind in kinds)
    shown = " or ".join(NUMBERS[kind] for kind in dict.fromkeys(kinds))
    if bounded is None:
        return (lambda item: _numbered(item, whole)), shown
    return (lambda item: _numbered(item, whole) and bounded[0](item)), bounded[1]


def _types(prop: dict[str, Any]) -> list[Any]:
    """The JSON types a schema allows, as the list JSON Schema's `type` may be (`["integer", "null"]`, which was a
    TypeError traceback at compile); none when it names none."""
    given = prop.get("type")
    if isinstance(given, str):
        return [given]
    return [kind for kind in given if isinstance(kind, str)] if isinstance(given, list) else []


def _numbered(item: Any, whole: bool) -> bool:
    """Whether the built-ins read `item` as a number (a whole one, for an integer answer): a number answer equals
    only a number (exact_match), and holds only the number it is (contains)."""
    value = number_value(item)
    return value is not None and (not whole or value == value.to_integral_value())


def refuse_unanswerable(spec: TaskSpec, entry: TaskEntry, samples: Iterable[Sample]) -> None:
    """Refuse a sample of a task graded by a built-in scorer (exact_match, contains) whose reference (none of its
    acceptable answers) matches no value the task's format lets the model answer, or, for contains on a free-text
    answer, one of whose acceptable answers is a capital letter."""
    listed = list(samples)
    names = [s.name for s in entry.scorers if s.origin == "builtin" and s.name in BUILTIN]
    refuse_whole_answers(entry, names, spec.where("scorer"))
    unanswerable(entry, listed, names, spec.where("reference"), "write it as the format answers it")
    _refuse_letters(entry, listed, names, spec.where("reference"),
                    "grade it with exact_match, or answer in a format that takes only the letters (an Enum)")


def _refuse_letters(entry: TaskEntry, samples: list[Sample], names: Iterable[str],
                    where: Mapping[str, str | None], fix: str) -> None:
    """Refuse, in one line at `where` ending in `fix`, a reference of one capital letter (`B`, `Ж`: a multiple-choice task's) when the built-in
    scorers `names` grade it by contains on a free-text answer: found, ignoring case, in every answer with that letter
    anywhere (`because` holds `B`, `Answer: (C)` holds `A`), so the task so graded scores nearly every answer 1."""
    schema = entry.format.json_schema
    if "contains" not in names or matcher(schema, contains) is not None or BOUNDS & answer_schema(schema).keys():
        return
    for sample in samples:
        items = sample.reference if isinstance(sample.reference, list) else [sample.reference]
        letter = next((item for item in items if isinstance(item, str) and len(trimmed(item)) == 1
                       and unicodedata.category(trimmed(item)) in ("Lu", "Lt")), None)
        if letter is not None:
            written = json.dumps(sample.reference, ensure_ascii=False)
            which = f", and {json.dumps(letter, ensure_ascii=False)} is" if isinstance(sample.reference, list) else ","
            raise TaskError(f"the reference of sample '{sample.id}' is {written}{which} a capital letter: contains "
                            "finds it, ignoring case, in every answer with that letter in it (\"Answer: (C)\" holds "
                            f"\"A\", \"because\" holds \"B\"), so nearly every answer would score 1; {fix}", **where)


def refuse_unscorable(manifest: Manifest, plan: Mapping[str, Iterable[str]], builtin: Callable[[str], bool],
                      file: str) -> None:
    """A rescore's: refuse a built-in scorer (`builtin` of its name) that `plan` gives a task of the run besides its
    own, when a sample's reference is one no answer of the task's format can score 1 with it, as a compile refuses
    it (a BoolAnswer's `yes` rescored by contains: every value 0), or one contains finds in nearly every answer (a
    capital letter on free text); the run's own scorers were weighed when it compiled."""
    added = {entry.name: [name for name in plan.get(entry.name, ()) if builtin(name)
                          and name not in {scorer.name for scorer in entry.scorers}] for entry in manifest.tasks}
    if not any(added.values()):
        return
    samples: dict[str, list[Sample]] = {}
    for sample in manifest.samples:
        samples.setdefault(sample.task, []).append(sample)
    for entry in manifest.tasks:
        where = {"file": file, "task": entry.name, "key": "reference"}
        refuse_whole_answers(entry, added[entry.name], where)
        unanswerable(entry, samples.get(entry.name, []), added[entry.name], where, KEPT_AS_ASKED)
        _refuse_letters(entry, samples.get(entry.name, []), added[entry.name], where, f"{KEPT_AS_ASKED} (exact_match)")


def refuse_whole_answers(entry: TaskEntry, names: Iterable[str], where: Mapping[str, str | None]) -> None:
    """Refuse exact_match for a format without an `answer` field: it compares the whole answer, a JSON object
    (`{"name": "at", ...}`), with the reference, so every answer would score 0 (the seed's NameSource so graded)."""
    if "exact_match" in names and ANSWER not in answered(entry.format.json_schema).get("properties", {}):
        raise TaskError(f"format '{entry.format.name}' has no '{ANSWER}' field, which exact_match compares with the "
                        "reference: every answer, a JSON object, would be compared whole and score 0; give the format "
                        f"an '{ANSWER}' field, or grade it with contains or a custom scorer", **where)


def unanswerable(entry: TaskEntry, samples: list[Sample], names: Iterable[str], where: Mapping[str, str | None],
                 fix: str) -> None:
    """Refuse, in one line at `where` ending in `fix`, the first sample whose reference the built-in scorers `names`
    score 0 whatever the task's format lets the model answer."""
    for name in names:
        if (found := matcher(entry.format.json_schema, BUILTIN[name])) is not None:
            _refuse(entry, samples, name, *found, where, fix)


def _refuse(entry: TaskEntry, samples: list[Sample], scorer: str, can_match: Callable[[Any], bool], shown: str,
            where: Mapping[str, str | None], fix: str) -> None:
    for sample in samples:
        items = sample.reference if isinstance(sample.reference, list) else [sample.reference]
        if not any(can_match(item) for item in items):
            written = json.dumps(sample.reference, ensure_ascii=False)
            raise TaskError(f"the reference of sample '{sample.id}' is {written}, which no answer of format "
                            f"'{entry.format.name}' ({shown}) {VERB[scorer]}: {scorer} would score every answer to it "
                            f"0; {fix}", **where)

"""A benchmark's judges.yml into `JudgeSpec`s: each judge's rubric, the format its model answers in, and how the
grade is read, checked before anything is asked (a rubric field that does not exist, a grade field the format does
not have, an Enum value the scores miss: one line naming judges.yml, the judge and the key)."""

from __future__ import annotations

import json
import string
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from benchrun.compiler import schemas
from benchrun.compiler.alike import printed_alike
from benchrun.compiler.answerable import answered
from benchrun.compiler.gradebounds import number_bounds_fault, refused_grade
from benchrun.compiler.sources import TaskSpec
from benchrun.core.errors import BenchrunError, TaskError
from benchrun.core.keys import unknown_key
from benchrun.core.layout import RESERVED_SCORERS
from benchrun.core.manifest import RUBRIC_RENDERING, FormatSpec, JudgeSpec, ScorerSpec, TaskEntry, grade_key
from benchrun.core.metricvalue import MAX_METRIC, in_bounds
from benchrun.core.rubric import field_in_fence
from benchrun.core.text import name_said, names_listed, says_nothing
from benchrun.core.yamlfile import load_yaml

JUDGES_FILE = "judges.yml"
ANSWER_FIELDS = ("prompt", "response", "reference", "chat")
"""What every rubric may name besides the sample's values: the question, the answer, the reference, and the whole chat
the model was asked (its system prompt and few-shot turns, then the question: `role: text` each)."""


def read_judges(bench: Path) -> list[dict[str, Any]]:
    """judges.yml's judges as written (none when there is no judges.yml), checked against judges.schema.json."""
    path = bench / JUDGES_FILE
    if not path.exists():
        return []
    raw = load_yaml(path, JUDGES_FILE)
    schemas.check("judges", raw, TaskError, file=JUDGES_FILE, root="judges")
    names = [judge["name"] for judge in raw]
    for index, name in enumerate(names):
        if name in names[:index]:
            raise TaskError(f"judge '{name}' is defined twice", file=JUDGES_FILE, key=f"judges[{index}].name")
        if name in RESERVED_SCORERS:
            raise TaskError(f"'{name}' is benchrun's own score: name the judge otherwise", file=JUDGES_FILE,
                            key=f"judges[{index}].name")
    return raw


def where(index: int, key: str) -> dict[str, str]:
    """File and key of judge `index`'s `key`, for an error about it."""
    return {"file": JUDGES_FILE, "key": f"judges[{index}].{key}"}


def judge_spec(raw: Mapping[str, Any], index: int, fmt: FormatSpec, max_chars: int) -> JudgeSpec:
    """One judge compiled, in the format `fmt` (its class's schema), its grade field and scores checked against it,
    its rubric against `max_chars` (`_check_rubric_text`)."""
    _check_rubric_text(raw["rubric"], index, max_chars)
    scores = _scores(raw, fmt.json_schema, index)
    return JudgeSpec(name=raw["name"], rubric=raw["rubric"], format=fmt, score=raw["score"], scores=scores,
                     render=RUBRIC_RENDERING)


def _check_rubric_text(rubric: str, index: int, max_chars: int) -> None:
    """A rubric is held to `max_chars` (task.max_prompt_chars) as a task's prompt is: every call sends it, and the
    archive keeps it whole in each call's line; and (rendering 2) it writes no field inside a fence of its own."""
    _parsed(rubric, index)
    if len(rubric) > max_chars:
        raise TaskError(f"the rubric has {len(rubric):,} characters, more than task.max_prompt_chars ({max_chars:,}): "
                        "each judge call sends it, and each call's line in judgements.jsonl keeps it whole",
                        **where(index, "rubric"))
    if RUBRIC_RENDERING and (fenced := field_in_fence(rubric)) is not None:
        raise TaskError(f"field {{{fenced[0]}}} is inside a fenced block the rubric opens (line {fenced[1]}): benchrun "
                        "fences each field's text in a fence the text cannot close, but an answer can close the "
                        "rubric's; write the field outside it", **where(index, "rubric"))


def _scores(raw: Mapping[str, Any], schema: dict[str, Any], index: int) -> dict[str, int | float] | None:
    """The judge's scores, checked against its grade field's kind: none for a bool or number, every value of an
    Enum exactly, some for a free string."""
    field = raw["score"]
    properties = answered(schema).get("properties", {})
    if field not in properties:
        raise TaskError(f"{unknown_key(field, list(properties), what='field')} of format '{raw['format']}'",
                        **where(index, "score"))
    try:
        kind, values = _grade_kind(properties[field], schema.get("$defs", {}))
    except TaskError as err:
        raise TaskError(f"field '{field}': {err}", **where(index, "score")) from None
    scores = raw.get("scores")
    if kind in ("boolean", "number"):
        if scores is not None:
            raise TaskError(f"field '{field}' is a {kind}, its own grade: scores are for an Enum or string grade",
                            **where(index, "scores"))
        if (why := number_bounds_fault(properties[field])) is not None:
            raise TaskError(f"field '{field}' {why}; give it a range of grades", **where(index, "score"))
        return None
    if scores is None:
        raise TaskError(f"field '{field}' is {'an Enum' if values else 'a string'}: give each value's number "
                        "with scores", **where(index, "scores"))
    _refuse_ungiven(field, properties[field], schema.get("$defs", {}), values or scores, index)
    if (blank := next((key for key in scores if says_nothing(str(key))), None)) is not None:
        raise TaskError(f"grade {json.dumps(blank)} of field '{field}' says nothing, so a reply that says nothing (an "
                        f"empty grade, a judge cut short) would score {scores[blank]}: give each grade a word",
                        **where(index, "scores"))
    if values is not None:
        scores, values = _keyed(scores, values, index), [grade_key(value) for value in values]
    if values is not None and set(scores) != set(values):
        missing, extra = sorted(set(values) - set(scores)), sorted(set(scores) - set(values))
        said = "; ".join(part for part in (f"missing {names_listed(missing)}" if missing else "",
                                           f"not values of it: {names_listed(extra)}" if extra else "") if part)
        raise TaskError(f"scores must give each value of field '{field}' ({names_listed(values)}) a number: {said}",
                        **where(index, "scores"))
    if (alike := printed_alike([str(key) for key in scores])) is not None:
        (one, other), why = alike
        raise TaskError(f"grades {name_said(one)} and {name_said(other)} of field '{field}' print alike: {why}; the "
                        "judge model cannot tell which it gives: make them differ", **where(index, "scores"))
    if values is not None and len(set(scores.values())) == 1:
        raise TaskError(f"every grade of field '{field}' ({names_listed(values)}) is scored "
                        f"{next(iter(scores.values()))}, so the judge's metric would be that whatever its model "
                        "answers: give its grades different numbers", **where(index, "scores"))
    for key, value in scores.items():  # a grade's number is the metric's value: held to what a scorer may give
        if not in_bounds(value):
            raise TaskError(f"{value} is not a finite number of magnitude at most {MAX_METRIC:g}, as a metric's "
                            "value must be", **where(index, f"scores.{key}"))
    return {str(key): value for key, value in scores.items()}


def _refuse_ungiven(field: str, prop: dict[str, Any], defs: dict[str, Any], grades: Iterable[Any], index: int) -> None:
    """A grade scored (an Enum's value, a string's scores key) that the field's own bounds refuse."""
    if (grade := refused_grade(prop, defs, grades)) is not None:
        raise TaskError(f"grade {json.dumps(grade)} of field '{field}' is one its format refuses ("
                        f"{json.dumps({key: prop[key] for key in prop if key != 'title'})}), so the judge never gives "
                        "it; take the bound off the field, or the grade out", **where(index, "score"))


def _keyed(scores: Mapping[Any, Any], values: list[Any], index: int) -> dict[str, Any]:
    """An Enum grade's scores by the keys its grades are looked up by (`_key`), each grade given once."""
    keyed: dict[str, Any] = {}
    for key, value in scores.items():
        found = _key(key, values)
        if found in keyed:
            twice = next(str(other) for other in scores if _key(other, values) == found)
            raise TaskError(f"keys {twice!r} and {str(key)!r} name one grade, {found}: give it one number",
                            **where(index, "scores"))
        keyed[found] = value
    return keyed


def _key(key: Any, values: list[Any]) -> str:
    """A scores key as the grade it names is looked up (`grade_key`): for an Enum of numbers, the number it writes
    ("1.0" and "1" are the grade 1.0)."""
    if any(isinstance(value, (int, float)) and not isinstance(value, bool) for value in values):
        try:
            return grade_key(Decimal(str(key).strip()))
        except InvalidOperation:
            pass
    return grade_key(key)


def _grade_kind(prop: dict[str, Any], defs: Mapping[str, Any]) -> tuple[str, list[Any] | None]:
    """("boolean" | "number" | "string", the Enum's values or None) of a grade field's schema."""
    if "$ref" in prop:
        prop = defs.get(prop["$ref"].rsplit("/", 1)[-1], {})
    if "enum" in prop or "const" in prop:  # a one-value Literal's schema is its const, a one-value Enum's an enum
        return "string", list(prop["enum"]) if "enum" in prop else [prop["const"]]
    kind = prop.get("type")
    if kind in ("integer", "number"):
        return "number", None
    if kind in ("boolean", "string"):
        return kind, None
    raise TaskError("the grade field must be a bool, a number, an Enum or a string")


def _parsed(rubric: str, index: int) -> list[tuple[str, str | None, str | None, str | None]]:
    """The rubric as str.format reads it, or refused when it reads none (a stray `}`): read so before anything else
    reads it (its fences)."""
    try:
        return list(string.Formatter().parse(rubric))
    except ValueError as err:
        raise TaskError(f"not a valid str.format template: {err}", **where(index, "rubric")) from None


def check_rubric(judge: JudgeSpec, index: int, task: str, values: list[str], calculated: bool) -> None:
    """The rubric's fields are the answer's (prompt, response, reference, chat) or the task's value names, plain (an
    optional !r or !s, no format spec), each named once at most: a rubric rendered is then the size of its text and
    each field's once, never a multiple of an answer (`{response}` ten thousand times over 8 MiB answers). The
    answer is among them: a rubric without it (`{{response}}`, escaped) had every answer graded unseen."""
    key = where(index, "rubric")["key"]
    parsed = _parsed(judge.rubric, index)
    allowed = [*ANSWER_FIELDS, *values]
    named: set[str] = set()
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if name in named:
            raise TaskError(f"field {{{name}}} is named twice: a rubric names each field once at most (each time is "
                            "the whole text again, an answer of up to runner.max_response_bytes)", file=JUDGES_FILE,
                            key=key)
        named.add(name)
        if not name.isidentifier() or conversion not in (None, "r", "s"):
            raise TaskError(f"field {{{name}}}: only a plain name can stand in a field", file=JUDGES_FILE, key=key)
        if spec:
            raise TaskError(f"field {{{name}:{spec}}}: a rubric's field takes no format spec (a width could ask for "
                            "any size)", file=JUDGES_FILE, key=key)
        if name in ANSWER_FIELDS and name in values:
            raise TaskError(f"field {{{name}}} of judge '{judge.name}' is both the answer's {name} and a value of task "
                            f"'{task}'; rename the value", file=JUDGES_FILE, key=key)
        if name not in allowed:
            raise TaskError(f"field {{{name}}} of judge '{judge.name}' is neither the answer's nor a value of task "
                            f"'{task}' ({unknown_key(name, allowed, what='field')})", file=JUDGES_FILE, key=key)
        if name == "reference" and calculated:
            raise TaskError(f"field {{reference}} of judge '{judge.name}': task '{task}' has no reference "
                            "(reference: calculated)", file=JUDGES_FILE, key=key)
    if "response" not in named:
        raise TaskError(f"judge '{judge.name}' is never shown the answer it grades: name {{response}} in its rubric",
                        file=JUDGES_FILE, key=key)


def metric_clash(judge: str, scorers: Iterable[str]) -> tuple[str, str] | None:
    """The scorer of `scorers` giving a metric named as `judge` is, and how it does: by its own name, or by its dict,
    which names its metrics `scorer.KEY` (a judge `s.x` beside a scorer `s` returning {"x": ...} made one row of
    both); None when none can."""
    for scorer in scorers:
        if judge == scorer:
            return scorer, "a scorer of the task"
        if judge.startswith(f"{scorer}."):
            return scorer, f"a metric that scorer '{scorer}' of the task gives with a dict ({scorer}.KEY)"
    return None


def refuse_metric_clashes(tasks: Iterable[TaskEntry], plan: Mapping[str, Iterable[str]],
                          origin: Callable[[str], str | None]) -> None:
    """A rescore's scorers (`plan`: each task's scorer names; `origin`: the file defining one) refused where one
    gives a metric named as a judge of the task is, as a run's are at compile."""
    for task in tasks:
        for judge in task.judges:
            clash = metric_clash(judge, plan[task.name])
            if clash is not None:
                raise BenchrunError(f"judge '{judge}' has the name of {clash[1]}: their metrics would merge; name the "
                                    f"scorer otherwise", file=origin(clash[0]), task=task.name)


def compile_judges(bench: Path, specs: list[TaskSpec], scorers: list[tuple[ScorerSpec, ...]],
                   format_of: Callable[[str, dict[str, str]], FormatSpec], max_chars: int) -> tuple[JudgeSpec, ...]:
    """The judges the tasks `specs` name (with their compiled `scorers`), in judges.yml's order, each checked
    against every task that names it; `format_of(name, where)` compiles a response class; a rubric is held to
    `max_chars`."""
    raw = read_judges(bench)
    defined = {judge["name"]: (index, judge) for index, judge in enumerate(raw)}
    used: dict[str, JudgeSpec] = {}
    for spec, task_scorers in zip(specs, scorers):
        for name in spec.judges:
            if name not in defined:
                why = unknown_key(name, list(defined), what="judge") if raw else \
                    f"judge '{name}' is not defined: the benchmark has no {JUDGES_FILE}"
                raise TaskError(why, **spec.where("judge"))
            index, judge = defined[name]
            if name not in used:
                used[name] = judge_spec(judge, index, format_of(judge["format"], where(index, "format")), max_chars)
            check_rubric(used[name], index, spec.name, list(spec.values), spec.reference == "calculated")
            clash = metric_clash(name, [scorer.name for scorer in task_scorers])
            if clash is not None:
                raise TaskError(f"judge '{name}' has the name of {clash[1]}: their metrics would merge",
                                **spec.where("judge"))
    return tuple(used[judge["name"]] for judge in raw if judge["name"] in used)

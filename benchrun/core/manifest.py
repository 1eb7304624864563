"""The frozen `Manifest`: everything that determines what a run asks, and its content hash."""

from __future__ import annotations

import hashlib
import json
from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal
from functools import cached_property
from typing import Annotated, Any, Iterable, Iterator, Literal, NamedTuple

from pydantic import AfterValidator, Field, model_validator

from benchrun.core.frozen import Frozen
from benchrun.core.layout import FORMAT_VALID, JUDGED_FILES, MANIFEST_VERSION, RECORD_FILES
from benchrun.core.recordvalues import Version

Scalar = str | int | float | bool
Reference = Scalar | list[Scalar] | None
Combinations = Literal["tuple", "combinations"]
"""How a task's value lists make samples: zipped, or every combination."""


class SourceFile(Frozen):
    """One file of the benchmark, as it was when compiled."""

    path: str
    """Relative to the benchmark directory, with forward slashes."""
    sha256: str
    size: int


class ScorerSpec(Frozen):
    """A scorer by name, where it came from and the sha256 of its source code."""

    name: str
    origin: Literal["builtin", "custom_scorer.py"]
    sha256: str


REF_KEYS = ("$ref", "$dynamicRef")
"""The keywords by which a JSON schema refers to another; one that does not begin with `#` points outside it."""


def outside_reference(schema: Any) -> tuple[str, str] | None:
    """The first (keyword, target) by which `schema` refers to what is outside it (a URL, a file), which the format
    check's validator would fetch or read; None when it refers to nothing outside itself."""
    return next(((key, value) for key, value in schema_references(schema) if not value.startswith("#")), None)


def schema_references(schema: Any) -> Iterator[tuple[str, str]]:
    """(keyword, target) of each reference (REF_KEYS) in `schema`, walked without recursion."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield from ((key, value) for key, value in node.items() if key in REF_KEYS and isinstance(value, str))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _self_contained(schema: dict[str, Any]) -> dict[str, Any]:
    """A format's schema refers to nothing outside itself (the compiler refuses such a format, naming its file): a
    manifest read from an archive is held to it too, or a rescore or a resume would fetch what it names."""
    if (found := outside_reference(schema)) is not None:
        raise ValueError(f"refers to {found[1]!r} ({found[0]}), outside the schema, and benchrun fetches nothing for a "
                         "format (no URL, no file)")
    return schema


class FormatSpec(Frozen):
    """The response class a task asks for, with the JSON schema sent to the model."""

    name: str
    origin: Literal["builtin", "custom_response.py"]
    json_schema: Annotated[dict[str, Any], AfterValidator(_self_contained)]


class Turn(Frozen):
    """One worked example of a few-shot prompt: what the user says and what the assistant answers."""

    user: str
    assistant: str


Message = dict[str, str]
"""One chat message as every runner sends it: {"role": "system" | "user" | "assistant", "content": text}."""


def _empty(value: Any) -> bool:
    """Left out of the JSON: a task without a system prompt or examples is written as before they existed (and
    keeps its manifest id)."""
    return not value


class TaskEntry(Frozen):
    """One task after compilation."""

    name: str
    description: str | None = None
    source: str
    """The file or folder the task came from (relative to the benchmark)."""
    template: str
    reference: Literal["list", "calculated"]
    value_combinations: Combinations
    format: FormatSpec
    scorers: tuple[ScorerSpec, ...]
    n_samples: int
    system: str | None = Field(None, exclude_if=_empty)
    """Sent as the first chat message of every sample of the task."""
    fewshot: tuple[Turn, ...] = Field((), exclude_if=_empty)
    """Worked examples sent before each sample's question, as alternating user and assistant messages, in order."""
    judges: tuple[str, ...] = Field((), exclude_if=_empty)
    """The judges (of the manifest's `judges`) that grade every answer of the task, each a metric of its name."""

    @property
    def score_names(self) -> tuple[str, ...]:
        """The score lines of each of the task's answers, in order: format_valid, the scorers, the judges."""
        return (FORMAT_VALID, *(scorer.name for scorer in self.scorers), *self.judges)

    def messages(self, prompt: str) -> list[Message]:
        """The chat a sample of this task is asked as: the system prompt, the examples, then `prompt`."""
        return [*preamble(self.system, self.fewshot), {"role": "user", "content": prompt}]


def preamble(system: str | None, fewshot: Iterable[Turn]) -> list[Message]:
    """The messages sent before a task's every prompt: its system prompt, then each example's user and assistant
    turns, in order."""
    chat = [{"role": "system", "content": system}] if system else []
    for turn in fewshot:
        chat += [{"role": "user", "content": turn.user}, {"role": "assistant", "content": turn.assistant}]
    return chat


class Sample(Frozen):
    """One question: a rendered prompt, the values it came from and its reference."""

    id: str
    task: str
    prompt: str
    values: dict[str, Scalar]
    reference: Reference = None
    """The reference from the task file; None for `calculated` (the scorer gets the values)."""


PROMPT_ID = "prompt_id"
"""What a `calculated` reference adds to the sample's values it gives a scorer: the sample's id (the seed's format:
"a dictionary of the values ... with the prompt_id added")."""


class Query(NamedTuple):
    """One answer to ask for: a sample and which of its repeats. An answer is identified by (sample id, repeat)."""

    sample: Sample
    repeat: int

    @property
    def key(self) -> tuple[str, int]:
        return self.sample.id, self.repeat


class RunnerSpec(Frozen):
    """How the model is asked: everything but where the server is and secrets."""

    type: str
    model: str
    options: dict[str, Any] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)
    """Runner-specific request settings such as keep_alive and think."""


class Repeats(Frozen):
    """Each sample asked k times, and how the repeats' seeds follow from runner.options.seed."""

    k: int = Field(ge=2)
    seeds: Literal["vary", "same"]
    """`vary`: repeat i is asked with seed + i; `same`: every repeat with the seed (no seed set: none is sent)."""


RUBRIC_RENDERING = 2
"""The rubric rendering a judge compiled now records (`JudgeSpec.render`)."""


class JudgeSpec(Frozen):
    """A judge of judges.yml, as compiled: what the judge model is asked (the rubric, a str.format template over
    prompt, response, reference and the sample's values), the format it answers in, and how its grade is read."""

    name: str
    rubric: str
    format: FormatSpec
    score: str
    """The field of the format's answer that holds the grade."""
    scores: dict[str, int | float] | None = Field(None, exclude_if=_empty)
    """An Enum or string grade's numbers; None for a bool (1/0) or number grade."""
    render: Literal[2] | None = Field(None, exclude_if=_empty)
    """How the rubric is rendered for an answer (`core.rubric`): 2, each field fenced; None (left out, as every
    manifest before rendering 2 was written, keeping its id) rendering 1, each field's text as it is."""

    def grade(self, reply: dict[str, Any]) -> int | float:
        """The number a reply (parsed, valid in the format) grades the answer: a bool 1 or 0, a number itself, an
        Enum or string value its number in `scores` (KeyError for a value they do not map). A number is looked up as
        the JSON value it is (`grade_key`): 2.0 as 2, as JSON Schema reads it (the format check passed `2.0` for a
        grade of `Literal[1, 2, 3]`, and `scores` then had no '2.0')."""
        value = reply[self.score]
        if self.scores is not None:
            return self.scores[grade_key(value)]
        return int(value) if isinstance(value, bool) else value


WHOLE_DIGITS = 640
"""A whole number of at most this many digits is keyed as Python writes the integer (the fewest digits Python may be
set to convert, PYTHONINTMAXSTRDIGITS); a longer one (a scores key `1e99999999`) by its digits and exponent, never
made an integer of that many digits."""


def grade_key(value: Any) -> str:
    """The key a grade is looked up by in a judge's scores: a number as the number it is, however written (1.0, 1 and
    the key "1.0" as 1: a grade of `Literal[0.0, 0.5, 1.0]`, whose scores say "1.0", was replied 1.0 and looked up
    as "1"), to its last digit; any other value as its text."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        return str(value)
    number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    if not number.is_finite():
        return str(value)
    if number == number.to_integral_value() and number.adjusted() < WHOLE_DIGITS:
        return str(int(number))
    return str(number.normalize(Context(prec=max(1, len(number.as_tuple().digits)), Emax=MAX_EMAX, Emin=MIN_EMIN)))


class JudgeModel(Frozen):
    """The judge model every judge asks, as the manifest pins it: how it is asked, and how many times per answer."""

    runner: RunnerSpec
    repeats: int = Field(1, ge=1)
    """Each answer is judged this many times (repeat j with the judge's seed + j); its grade is their mean."""


class Manifest(Frozen):
    """The compiled run. Its canonical JSON's sha256 is the manifest id."""

    schema_version: Version = MANIFEST_VERSION
    benchmark: str
    config: dict[str, Any]
    """The resolved config, less what does not change the questions (host, concurrency, ...)."""
    files: tuple[SourceFile, ...]
    runner: RunnerSpec
    tasks: tuple[TaskEntry, ...]
    samples: tuple[Sample, ...]
    repeats: Repeats | None = Field(None, exclude_if=lambda repeats: repeats is None)
    """None: each sample asked once (left out of the JSON, so such a manifest is byte for byte what it was before
    repeats existed, and keeps its id)."""
    judges: tuple[JudgeSpec, ...] = Field((), exclude_if=_empty)
    """The benchmark's judges that its tasks name (none: left out, as for a benchmark before judges)."""
    judge: JudgeModel | None = Field(None, exclude_if=_empty)
    """The judge model, when a task has judges."""

    @model_validator(mode="after")
    def _samples_of_its_tasks(self) -> Manifest:
        """Every sample is of one of the manifest's tasks (a manifest read from an archive may say otherwise)."""
        names = {task.name for task in self.tasks}
        if stray := next((sample for sample in self.samples if sample.task not in names), None):
            raise ValueError(f"sample {stray.id!r} is of task {stray.task!r}, which the manifest does not have")
        return self

    @property
    def k(self) -> int:
        """How many answers each sample gets."""
        return 1 if self.repeats is None else self.repeats.k

    @property
    def n_answers(self) -> int:
        """How many answers the run asks for: samples x repeats."""
        return len(self.samples) * self.k

    def queries(self, samples: Iterable[Sample] | None = None) -> Iterator[Query]:
        """Every (sample, repeat) to ask, of `samples` (default: all), a sample's repeats one after another."""
        for sample in self.samples if samples is None else samples:
            for repeat in range(self.k):
                yield Query(sample, repeat)

    def seed(self, repeat: int) -> int | None:
        """The seed repeat `repeat` is asked with, if other than runner.options.seed (None: as configured)."""
        base = self.runner.options.get("seed")
        if repeat == 0 or self.repeats is None or self.repeats.seeds == "same" or not isinstance(base, int):
            return None
        return base + repeat

    def canonical_json(self) -> bytes:
        return self.canonical_bytes

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Manifest:
        """A copy whose bytes and id are its own (pydantic would copy those made of this manifest)."""
        copied = super().model_copy(update=update, deep=deep)
        for made in ("canonical_bytes", "id"):
            copied.__dict__.pop(made, None)
        return copied

    @cached_property
    def canonical_bytes(self) -> bytes:
        """The manifest as written (made once: a manifest is frozen, and a large one takes a while to serialize)."""
        return canonical_json(self.model_dump(mode="json"))

    @cached_property
    def id(self) -> str:
        return hashlib.sha256(self.canonical_bytes).hexdigest()

    def task(self, name: str) -> TaskEntry:
        return next(t for t in self.tasks if t.name == name)

    def messages(self, sample: Sample) -> list[Message]:
        """The exact chat `sample` is asked as (its task's system prompt and examples, then its prompt)."""
        return self.task(sample.task).messages(sample.prompt)

    @property
    def record_files(self) -> tuple[str, ...]:
        """The record files of a run of this manifest (judgements.jsonl only with judges)."""
        return JUDGED_FILES if self.judges else RECORD_FILES

    @property
    def judge_calls(self) -> int:
        """The judge calls per answer of a task with one judge (the judge model's repeats), 0 without judges."""
        return self.judge.repeats if self.judge else 0


def canonical_json(data: Any) -> bytes:
    """Sorted keys, no spaces, UTF-8: the same data always gives the same bytes."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()

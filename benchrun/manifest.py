"""The frozen `Manifest`: everything that determines what a run asks, and its content hash."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import Field

from benchrun.frozen import Frozen

SCHEMA_VERSION = 1
Scalar = str | int | float | bool
Reference = Scalar | list[Scalar] | None


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


class FormatSpec(Frozen):
    """The response class a task asks for, with the JSON schema sent to the model."""

    name: str
    origin: Literal["builtin", "custom_response.py"]
    json_schema: dict[str, Any]


class TaskEntry(Frozen):
    """One task after compilation."""

    name: str
    description: str | None = None
    source: str
    """The file or folder the task came from (relative to the benchmark)."""
    template: str
    reference: Literal["list", "calculated"]
    value_combinations: Literal["tuple", "combinations"]
    format: FormatSpec
    scorers: tuple[ScorerSpec, ...]
    n_samples: int


class Sample(Frozen):
    """One question: a rendered prompt, the values it came from and its reference."""

    id: str
    task: str
    prompt: str
    values: dict[str, Scalar]
    reference: Reference = None
    """The reference from the task file; None for `calculated` (the scorer gets the values)."""


class RunnerSpec(Frozen):
    """How the model is asked: everything but where the server is and secrets."""

    type: str
    model: str
    options: dict[str, Any] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)
    """Runner-specific request settings such as keep_alive and think."""


class Manifest(Frozen):
    """The compiled run. Its canonical JSON's sha256 is the manifest id."""

    schema_version: Literal[1] = SCHEMA_VERSION
    benchmark: str
    config: dict[str, Any]
    """The resolved config, less what does not change the questions (host, concurrency, ...)."""
    files: tuple[SourceFile, ...]
    runner: RunnerSpec
    tasks: tuple[TaskEntry, ...]
    samples: tuple[Sample, ...]

    def canonical_json(self) -> bytes:
        return canonical_json(self.model_dump(mode="json"))

    @property
    def id(self) -> str:
        return hashlib.sha256(self.canonical_json()).hexdigest()

    def task(self, name: str) -> TaskEntry:
        return next(t for t in self.tasks if t.name == name)


def canonical_json(data: Any) -> bytes:
    """Sorted keys, no spaces, UTF-8: the same data always gives the same bytes."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()

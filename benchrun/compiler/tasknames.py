"""A benchmark's task names: each once, and once whatever its case (`t` and `T`: one folder on macOS's and Windows's
file systems, where a copy of the benchmark had one task in place of two); then the tasks `task.only` picks."""

from __future__ import annotations

from benchrun.compiler.sources import TaskSpec
from benchrun.core.errors import ConfigError, TaskError
from benchrun.core.text import name_said


def select(specs: list[TaskSpec], only: list[str] | None) -> list[TaskSpec]:
    """Check task names are unique, then keep those in `only` (all when None)."""
    seen: dict[str, TaskSpec] = {}
    for spec in specs:
        if (other := seen.setdefault(_folded(spec.name), spec)) is not spec:
            raise TaskError(_twice(spec.name, other), **spec.where("name"))
    if only is None:
        return specs
    names = [spec.name for spec in specs]
    missing = [name for name in only if name not in names]
    if missing:
        raise ConfigError(f"no task named {', '.join(map(name_said, missing))} (tasks: {', '.join(names)})",
                          key="task.only")
    return [spec for spec in specs if spec.name in only]


def _folded(name: str) -> str:
    """A task's name (ASCII: sources.py) as a case-blind file system reads it."""
    return name.casefold()


def _twice(name: str, other: TaskSpec) -> str:
    if other.name == name:
        return f"duplicate task name (also in {other.source})"
    return (f"duplicate task name: {name_said(name)} differs from {name_said(other.name)} (in {other.source}) only in "
            "its case, which a case-blind file system (macOS's, Windows's) reads as one name (two "
            "such folders are one there): rename one")

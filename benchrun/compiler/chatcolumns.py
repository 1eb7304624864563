"""A sample's value named as the part of the chat a task gives by its own key (`system`: a data file's `system`
column, empty in some rows or not): benchrun sends the task's `system:` alone, one for all its samples, so such a value
the template never shows was kept as metadata, every sample asked without the system prompt written for it. Refused,
naming the column."""

from __future__ import annotations

from typing import Iterable

from benchrun.compiler.sources import TaskSpec
from benchrun.core.errors import TaskError

CHAT_KEYS = ("system",)
"""A task's keys of the chat it sends that a sample's value can be named as."""


def refuse_chat_values(spec: TaskSpec, fields: Iterable[str]) -> None:
    """Refuse a value named as one of CHAT_KEYS that none of the template's `fields` shows."""
    for name in CHAT_KEYS:
        if name in spec.values and name not in set(fields):
            raise TaskError(f"a value named '{name}' is not sent as the sample's {name} prompt: a task sends its own "
                            f"'{name}' (one for all its samples), and a value the template never shows is kept as "
                            f"metadata, unsent; give the task '{name}', show the value in the template, or rename it",
                            **spec.where(f"values.{name}"))

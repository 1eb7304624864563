"""A field naming a value of the task (`{subject}`) in text benchrun sends as written: the task's system prompt (or
`task.system`) and an example's `user` text. Only the template is filled with a sample's values (an example's with its
`values`), so the braces reached the model as they were, before every sample. Refused, naming the text."""

from __future__ import annotations

import re

from benchrun.compiler.sources import TaskSpec
from benchrun.core.errors import ConfigError, TaskError

FIELD = re.compile(r"\{([A-Za-z_]\w*)\}")
"""A field as a template writes one, plain."""


def refuse_unfilled(spec: TaskSpec, given_system: str | None) -> None:
    """Refuse the system prompt (`given_system`, task.system's, else the task's own) or an example's user text
    naming one of the task's values in braces."""
    system = given_system or spec.system
    if system and (name := _value_named(spec, system)) is not None:
        why = _why(name, "a system prompt is sent as written, the same before every sample", "write the field in "
                   "the template")
        if given_system:
            raise ConfigError(f"{why} (task '{spec.name}' has a value '{name}')", file="config", key="task.system")
        raise TaskError(why, **spec.where("system"))
    for example in spec.fewshot:
        if example.user and (name := _value_named(spec, example.user)) is not None:
            raise TaskError(_why(name, "an example's user text is sent as written", "give the example as "
                                 "{values: ..., assistant: ...}, which fill the template"),
                            file=example.file, task=spec.name, key=f"{example.key}.user")


def _value_named(spec: TaskSpec, text: str) -> str | None:
    return next((name for name in FIELD.findall(text) if name in spec.values), None)


def _why(name: str, sent: str, instead: str) -> str:
    return (f"{{{name}}} names a value of the task, but {sent}, so the braces would reach the model as they are: "
            f"{instead}, or write the text without braces")

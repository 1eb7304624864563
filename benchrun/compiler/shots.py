"""A task's few-shot examples against its samples: an example asking a sample's own question shows the model that
sample's answer in the very chat it is asked (the same examples go before every sample of the task), so its score
measures nothing; refused at compile, naming the example and the sample. So are two examples asking one question."""

from __future__ import annotations

import json
import unicodedata
from typing import Iterable

from benchrun.compiler.scoring import trimmed
from benchrun.compiler.sources import TaskSpec
from benchrun.core.errors import TaskError
from benchrun.core.manifest import Sample, Turn

SHOWN = 60
"""How many characters of a prompt an error shows."""


def refuse_shown_answers(spec: TaskSpec, turns: tuple[Turn, ...], samples: Iterable[Sample]) -> None:
    """Refuse a task one of whose examples (`turns`, as sent; `spec.fewshot`, as written) is the question of one of
    its `samples` (the same text, as scoring compares texts: but for what cannot be seen around it, composed)."""
    if not turns:
        return
    asked = _asked_once(spec, turns)
    for sample in samples:
        index = asked.get(as_read(sample.prompt))
        if index is not None:
            example = spec.fewshot[index]
            asks = prompt_shown(sample.prompt)
            raise TaskError(f"example {index + 1} asks {asks}, the question of sample '{sample.id}': "
                            "that sample would be asked with an answer to it in its own chat (every sample of the "
                            "task is sent the examples), so its score would measure nothing; take the examples from "
                            "outside the samples, or leave the sample out", file=example.file, task=spec.name,
                            key=example.key)


def _asked_once(spec: TaskSpec, turns: tuple[Turn, ...]) -> dict[str, int]:
    """Each example's question (as read) and its index; refused where two examples ask one question (a line copied
    twice, two examples files joined): every sample was sent it twice, or answered two ways."""
    asked: dict[str, int] = {}
    for index, turn in enumerate(turns):
        first = asked.setdefault(as_read(turn.user), index)
        if first != index:
            same = "with the same answer" if turns[first].assistant == turn.assistant else "answered otherwise"
            example = spec.fewshot[index]
            raise TaskError(f"example {index + 1} asks {prompt_shown(turn.user)}, as example {first + 1} does, "
                            f"{same}: every sample of the task would be sent both; leave one out",
                            file=example.file, task=spec.name, key=example.key)
    return asked


def as_read(text: str) -> str:
    """A question as it reads: without the whitespace and format characters at its ends (a zero-width space copied
    with it), composed (`é` as one character or two, NFD)."""
    return unicodedata.normalize("NFC", trimmed(text))


def prompt_shown(prompt: str) -> str:
    text = prompt.strip()
    return json.dumps(text if len(text) <= SHOWN else text[:SHOWN - 3] + "...", ensure_ascii=False)

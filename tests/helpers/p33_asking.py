"""Helpers for the thirty-third hostile pass of the asking side."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchrun.execute.formatcheck import FormatCheck
from benchrun.testing.chat import Reply
from tests.helpers.p24_execute import asked, ollama_run, once, openai_run
from tests.helpers.wire import wire

GRADED = FormatCheck({"type": "object", "required": ["grade"], "properties": {
    "grade": {"type": "number"}, "verdict": {"enum": ["right", "wrong"]}, "pair": {"const": {"a": None}},
    "flag": {"not": {"type": "boolean"}}, "word": {"const": "yes"}}})
"""A format of a numeric grade, a verdict of two words, a constant object, a value that is no bool and a constant
word (as pydantic writes a `Literal` of one)."""

UNIQUE_TAGS = FormatCheck({"type": "object", "properties": {
    "tags": {"type": "array", "uniqueItems": True, "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]}},
    "n": {"type": "integer"}}})
"""A format of tags that are each given once, numbers or strings (as pydantic writes a `set[int | str]`), and a
count."""


def errored(tmp_path: Path, runner: str, body: bytes, status: str) -> Any:
    """The error a run of the product task against a fake of `runner` recorded of the sample whose first answer is
    `body` of `status`."""
    run = ollama_run if runner == "ollama" else lambda *args: openai_run(*args)[1]
    done = run(tmp_path, once(Reply(wire=wire(body, status=status))))
    assert (done.returncode, done.stderr) == (0, "")
    return asked(done.stdout)[1]

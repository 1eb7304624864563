"""Response formats: the built-in pydantic models and those of a benchmark's `custom_response.py`."""

from __future__ import annotations

import inspect
from enum import Enum
from pathlib import Path

from pydantic import BaseModel

from benchrun.compiler.usercode import defined_here, import_file

CUSTOM_FILE = "custom_response.py"
MAX_SCHEMA_BYTES = 2**20
"""The longest JSON schema a format has, as JSON (1 MiB: an enum of some 50,000 labels). It is sent with every
request, the server making a grammar of it each time, and kept in the manifest; an enum of a million values took
seconds to compile before anything was asked."""


class YesNo(str, Enum):
    yes = "yes"
    no = "no"


class StringAnswer(BaseModel):
    answer: str


class IntAnswer(BaseModel):
    answer: int


class FloatAnswer(BaseModel):
    answer: float


class BoolAnswer(BaseModel):
    answer: bool


class YesNoAnswer(BaseModel):
    answer: YesNo


class StringJustification(BaseModel):
    answer: str
    justification: str


class IntJustification(BaseModel):
    answer: int
    justification: str


class FloatJustification(BaseModel):
    answer: float
    justification: str


class YesNoJustification(BaseModel):
    answer: YesNo
    justification: str


BUILTIN: dict[str, type[BaseModel]] = {cls.__name__: cls for cls in (
    StringAnswer, IntAnswer, FloatAnswer, BoolAnswer, YesNoAnswer,
    StringJustification, IntJustification, FloatJustification, YesNoJustification,
)}


def custom_formats(bench: Path) -> dict[str, type[BaseModel]]:
    """The pydantic models defined in the benchmark's custom_response.py (none if absent)."""
    path = bench / CUSTOM_FILE
    if not path.exists():
        return {}
    module = import_file(path, CUSTOM_FILE)
    return {name: obj for name, obj in vars(module).items()
            if inspect.isclass(obj) and issubclass(obj, BaseModel) and defined_here(module, obj)}

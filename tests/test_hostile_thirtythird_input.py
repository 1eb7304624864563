"""The thirty-third hostile pass of issue 19, the side of what goes in: the items the thirty-second pass left, then a
fresh pass. /work/notes/p33/result-input.md has the whole list, what held and what was left.

Fixed:
1. A sweep listing one value in two spellings the config reads as one (`repeats=1,01`, `shard=1/2,01/2`,
   `task.only=[t,u],[u,t]`, `runner.host=h:9,http://H:09/`) refused: each value is read by RunConfig's own
   validation (a server as its requests reach it, task.only as a set) before they are compared
   (compose.sweptonce, out of callbacks).
2. A run whose cache_dir is refused (a run's or a sweep's directory, the benchmark's tasks/) leaves nothing behind: the
   cache's place is checked with the config, before the run claims its directory (execute.cache.checked_place, called
   by app.run), where it left a run directory recorded as failed.
3. A value of another kind than its key takes (`judge.model=[a,b]`: text, a whole number, a number, a boolean) and a
   list of too few items (`task.only=[]`) said in benchrun's words, with what was given (core.errors.TAKEN, SIZED), not
   pydantic's (`Input should be a valid string`, `List should have at least 1 item after validation, not 0`); the
   archive's readers and Ollama's answers alike (execute.runners.ollama._said adds no second `(a number was given)`).
4. One value of several servers' URLs parted by commas (`$OPENAI_BASE_URL` of two, where no list can be written)
   refused with the list to give (core.serverurls._one_url), where it was asked as one URL whose path held a comma
   (and $OLLAMA_HOST's was said as a port that is no number).
5. runner=local's num_predict of 0 or below -1 (llama.cpp reads any of 0 or less alike, until the context is full:
   three manifests of one question) and a temperature below 0 (read alike: the model's own chances) refused
   (core.optionbounds.LOCAL, LOCAL_UNLIMITED, in place of Ollama's bounds for runner=local's options).
6. A scorer's Decimal read as its float, as a Fraction is (compiler.scoring._plain): `Decimal('0.1')` was refused as
   no "finite number of magnitude at most 1e+100", which it is; one that is no finite number said as given
   (`Decimal('NaN')`, not `nan`).
7. A server's URL ending in a path of the API the runner adds itself (`$OPENAI_BASE_URL` of `.../v1/chat/completions`,
   the endpoint copied from an API's documentation; `runner.host=http://h:11434/api`) refused naming the URL to give
   (core.serverurls._no_endpoint, OPENAI_PATHS, OLLAMA_PATHS), where a dry run took it and a run failed its preflight
   (`has no /models (404)`) once it had made its directory.
8. A benchmark file raising, as it is imported, an error whose str() raises (or gives no text) said in one line, as a
   scorer's call says it (core.text.message_of, used by compiler.usercode.first_line and the scorer's process), where
   it was a traceback, exit 1; an error whose first line heads the others (pydantic's SchemaError, `Error building
   "model" validator:`) said with them, its reason (`regex parse error: ... unclosed group`) no longer cut off.
9. A preset of the user's own folder (--config-dir, hydra.searchpath) holding a key YAML reads as no text (`null: 1`,
   `5: 1`, `options: {1.5: 2}`) or a value of a tag JSON has none for (`!!binary`, `!!set`) refused naming its file,
   line and column in the words of a benchmark's files (compose.userpresets._unreadable, core.yamlfile.key_said,
   not_json_said), and a value YAML 1.1 reads as other than it looks (`timeout_s: 1:30`, `yes`, `010`:
   core.yamlfile.read_otherwise), where `null: 1` was Hydra's bare `ConfigCompositionException`, `5: 1` said of no
   file, `model: !!binary aGVsbG8=` asked the model `hello`, and `timeout_s: 1:30` was 90 seconds.
10. A task file's value of a key that takes one value alone (a folder task's info.yml `reference: ['1']`, where only
    `calculated` is) said with what was given and why (compiler.schemas.describe, jsonschema's `const`), not
    jsonschema's `'calculated' was expected`.
11. A look-alike letter right after a dot in an override's key (`task.оnly`, a Cyrillic о) said as that letter, not as
    the dot before it (cli._unquoted_character: Hydra's lexer marks where the token it could not read starts; the
    character said is the first from there its grammar takes only in quotes).
12. An override of a key under a section the config does not take (`Task.path=x`, `runer.model=x`,
    `runner.optons.x=1`, or deleted: `~runer.model`) said as that section unknown, with the nearest taken there
    (compose.commandline._section_unknown), as `+runer.model=x` is, not in Hydra's words advising `+Task.path=x`,
    refused in turn.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from benchrun.compiler.scoring import metrics
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.p30_input import TASK, ended, refusal
from tests.helpers.p31_input import preset_run
from tests.helpers.p33_input import dry_run_of


@pytest.mark.parametrize(("swept", "first", "second", "read"), [
    ("repeats=1,01", "1", "01", "1"),
    ("shard=1/2,01/2", "1/2", "01/2", '"1/2"'),
    ("task.only=[t,u],[u,t]", "[t,u]", "[u,t]", '["t", "u"]'),
    ("runner.host=http://h:9,http://H:09/", "http://h:9", "http://H:09/", '"http://h:9"')])
def test_a_sweep_of_one_value_in_two_spellings_the_config_reads_as_one_is_refused(tmp_path, swept, first, second,
                                                                                 read):
    """Before: taken, two jobs of one config (one manifest, one label but for the spelling)."""
    key = swept.partition("=")[0]
    assert ended(dry_run_of(tmp_path, "-m", swept)) == refusal(
        f"in 'config': {key}: the sweep lists {first!r} and {second!r}, which the config reads as one value ({read}), "
        "so two of its jobs would run one config; list each value once")


def test_a_sweep_of_values_the_config_reads_apart_is_taken(tmp_path):
    done = dry_run_of(tmp_path, "-m", "task.only=[t],[t,u]", "runner.host=http://127.0.0.1:9")
    assert (done.returncode, done.stderr, done.stdout.count("manifest id:")) == (0, "", 2)


def test_a_run_refused_for_its_caches_place_leaves_no_run_directory(tmp_path):
    """Before: the same refusal, and a run directory under outputs/ recorded as failed."""
    write_bench(tmp_path, {"tasks.yml": TASK, "../sweep/multirun.yaml": ""})
    done = call_benchrun("task.path=bench", "runner.host=http://127.0.0.1:9", f"outputs={tmp_path / 'o'}",
                         f"cache_dir={tmp_path / 'sweep'}", cwd=tmp_path)
    assert (ended(done), (tmp_path / "o").exists(), sorted(p.name for p in (tmp_path / "sweep").iterdir())) == (
        refusal(f"in 'config': cache_dir: {tmp_path / 'sweep'} is a sweep's directory, which holds that sweep's files "
                "alone; put the cache elsewhere (cache_dir=DIR), or cache=false"), False, ["multirun.yaml"])


@pytest.mark.parametrize(("given", "said"), [
    ("judge.model=[a,b]", "judge.model: a list, where text is taken"),
    ("task.only=[]", "task.only: an empty list, where one of at least 1 item is taken"),
    ("task.path=[a,b]", "task.path: a list, where text is taken")])
def test_a_value_of_another_kind_or_too_few_items_is_said_in_benchruns_words(tmp_path, given, said):
    """Before: `Input should be a valid string`, `List should have at least 1 item after validation, not 0`."""
    assert ended(dry_run_of(tmp_path, given)) == refusal(f"in 'config': {said}")


@pytest.mark.parametrize(("variable", "value", "args", "key"), [
    ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1, http://127.0.0.1:8/v1", ("runner=openai", "runner.model=m"),
     "runner.base_url"),
    ("OLLAMA_HOST", "127.0.0.1:9,127.0.0.1:8", (), "runner.host")])
def test_a_variable_of_several_servers_parted_by_commas_is_refused_with_the_list_to_give(tmp_path, variable, value,
                                                                                          args, key):
    """Before: OPENAI_BASE_URL taken (a dry run; a run: `cannot reach the OpenAI-compatible server at
    http://127.0.0.1:9/v1,http://127.0.0.1:8/v1`); OLLAMA_HOST's said as a port that is no number."""
    write_bench(tmp_path, {"tasks.yml": TASK})
    done = call_benchrun("task.path=bench", "dry_run=true", *args, cwd=tmp_path, env={variable: value})
    listed = value.replace(" ", "")
    assert ended(done) == refusal(f"in 'config': {key} (from ${variable}): '{value}' is 2 servers' URLs parted by "
                                  f"commas, which one value reads as one URL (its path holding the commas); give a "
                                  f"list of servers: [{listed}]")


@pytest.mark.parametrize(("given", "said"), [
    ("num_predict=-2", "-2 is a count of tokens to predict llama.cpp reads as -1 (any of 0 or less: until the context "
                       "is full): give -1 for that, or 1 or more"),
    ("num_predict=0", "0 is a count of tokens to predict llama.cpp reads as -1 (any of 0 or less: until the context "
                      "is full): give -1 for that, or 1 or more"),
    ("temperature=-1", "-1.0 is a temperature llama.cpp reads as any other below 0 (the model's own chances, top_k, "
                       "top_p and min_p unread): give 0 or more")])
def test_a_local_option_llama_cpp_reads_as_another_is_refused(tmp_path, given, said):
    """Before: taken, each its own manifest (and cache key) of what llama.cpp asks alike."""
    assert ended(dry_run_of(tmp_path, "runner=local", f"runner.options.{given}")) == refusal(
        f"in 'config': runner.options.{given.partition('=')[0]}: {said}")


def test_a_local_num_predict_of_no_limit_and_a_temperature_of_0_are_taken(tmp_path):
    done = dry_run_of(tmp_path, "runner=local", "runner.options.num_predict=-1", "runner.options.temperature=0")
    assert (done.returncode, done.stderr) == (0, "")


def test_a_scorers_decimal_is_read_as_its_float_as_a_fraction_is():
    """Before: each refused, `must be a finite number of magnitude at most 1e+100, or a bool; got Decimal('0.1')`."""
    assert [metrics("s", Decimal("0.1")), metrics("s", {"m": Decimal("-2.5")})] == [{"s": 0.1}, {"s.m": -2.5}]


@pytest.mark.parametrize("given", ["NaN", "sNaN", "-Infinity", "1E+500"])
def test_a_scorers_decimal_of_no_finite_number_is_refused_as_given(given):
    with pytest.raises(TypeError) as raised:
        metrics("s", Decimal(given))
    assert str(raised.value) == ("scorer result s must be a finite number of magnitude at most 1e+100, or a bool; "
                                 f"got Decimal('{given}')")


@pytest.mark.parametrize(("args", "env", "key", "given", "asked", "root"), [
    (("runner=openai", "runner.model=m"), {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1/chat/completions"},
     "runner.base_url (from $OPENAI_BASE_URL)", "http://127.0.0.1:9/v1/chat/completions",
     "/v1/chat/completions/chat/completions", "http://127.0.0.1:9/v1"),
    (("runner.host=[http://127.0.0.1:8,http://127.0.0.1:9/API/]",), {}, "runner.host", "http://127.0.0.1:9/API/",
     "/API/api", "http://127.0.0.1:9")])
def test_a_servers_url_ending_in_a_path_the_runner_adds_is_refused(tmp_path, args, env, key, given, asked, root):
    """Before: taken by a dry run; a run made its directory, then failed its preflight (`has no /models (404)`)."""
    write_bench(tmp_path, {"tasks.yml": TASK})
    done = call_benchrun("task.path=bench", "dry_run=true", *args, cwd=tmp_path, env=env)
    ended_in = "/chat/completions" if "completions" in given else "/api"
    assert ended(done) == refusal(f"in 'config': {key}: '{given}' ends in {ended_in}, a path of the API that benchrun "
                                  f"adds to the server's URL itself (each request would ask {asked}); give the URL "
                                  f"without it: '{root}'")


UNSAYABLE = "class E(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\n\n\nraise E()\n"
SCHEMA_ERROR = ("from pydantic import BaseModel, Field\n\n\n"
                "class F(BaseModel):\n    answer: str = Field(pattern='(')\n")


@pytest.mark.parametrize(("code", "said"), [
    (UNSAYABLE, "E: (its message cannot be shown: str() raised RuntimeError) (line 6)"),
    (SCHEMA_ERROR, 'SchemaError: Error building "model" validator: SchemaError: Error building "model-fields" '
                   'validator: SchemaError: Field "answer": SchemaError: Error building "str" validator: SchemaError: '
                   "regex parse error: ( ^ error: unclosed group (line 4)")])
def test_an_error_a_benchmark_file_raises_as_it_is_imported_is_said_whole_in_one_line(tmp_path, code, said):
    """Before: a traceback, exit 1 (str() raised inside the handler); `SchemaError: Error building "model" validator:
    (line 4)`, the reason cut off."""
    write_bench(tmp_path, {"tasks.yml": TASK, "custom_scorer.py": code})
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert ended(done) == refusal(f"in 'custom_scorer.py': cannot import: {said}")


@pytest.mark.parametrize(("written", "line", "said"), [
    ("null: 1", "5, column 1", "the key null is read by YAML as null, not as a name; quote it ('null')"),
    ("options:\n  1.5: 2", "6, column 3", "the key 1.5 is read by YAML as the float 1.5, not as a name; quote it "
                                          "('1.5')"),
    ("keep_alive: !!binary NW0=", "5, column 13", "a value tagged !!binary is read by YAML as bytes, which a "
                                                  "benchmark's or a runner's value cannot be: write it as text, a "
                                                  "number, a list or a mapping"),
    ("timeout_s: 1:30", "5, column 12", "1:30 is read by YAML as the int 90, not as written; quote it ('1:30') to keep "
                                        "it as text, or write 90")])
def test_a_preset_of_a_key_of_no_text_or_a_value_of_no_json_is_refused_as_a_benchmarks_file_is(tmp_path, written, line,
                                                                                               said):
    """Before: `benchrun: error: ConfigCompositionException`; `in 'config': runner.options[1.5]: ...`; the base64
    text decoded and taken (keep_alive `5m`); 1:30 taken as 90."""
    done = preset_run(tmp_path, f"defaults:\n  - ollama\n  - _self_\nmodel: m\n{written}\n".encode())
    assert ended(done) == refusal(f"in '{tmp_path / 'conf' / 'runner' / 'mine.yaml'}': line {line}: {said}")


def test_a_value_where_one_value_alone_is_taken_is_said_with_what_was_given_and_why(tmp_path):
    """Before: `reference: 'calculated' was expected`."""
    write_bench(tmp_path, {"tasks/t/template.txt": "say {a}\n", "tasks/t/values.csv": "a,reference\n1,1\n",
                           "tasks/t/info.yml": "reference: ['1']\n"})
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert ended(done) == refusal("in 'tasks/t/info.yml': task 't': reference: [\"1\"] is not valid here: only "
                                  "\"calculated\" is (calculated: the scorer gets the sample's values; a reference "
                                  "column in values.csv is then not allowed)")


def test_a_look_alike_letter_after_a_dot_in_a_key_is_said_as_itself(tmp_path):
    """Before: `Hydra's override grammar takes '.' (character 5) in no key`, a character every key holds."""
    done = dry_run_of(tmp_path, "task.\u043enly=[t]")
    assert ended(done) == refusal("the override 'task.\u043enly=[t]': Hydra's override grammar takes '\u043e' "
                                  "(\\u043e) (character 6) in no key, and no key of the config holds it: keys are "
                                  "written in ASCII (runner.model, task.path)")


@pytest.mark.parametrize(("given", "key", "unknown", "meant"), [
    ("Task.path=x", "Task", "Task", "task"), ("runer.model=x", "runer", "runer", "runner"),
    ("runner.optons.num_ctx=1", "runner.optons", "optons", "options"), ("~runer.model", "runer", "runer", "runner")])
def test_an_override_under_a_section_the_config_does_not_take_names_the_section(tmp_path, given, key, unknown, meant):
    """Before: Hydra's `Could not override 'Task.path'. To append to your config use +Task.path=x`; `Could not delete
    from config. 'runer.model' does not exist.`"""
    assert ended(dry_run_of(tmp_path, given)) == refusal(
        f"in 'config': {key}: unknown key '{unknown}' (did you mean '{meant}'?)")

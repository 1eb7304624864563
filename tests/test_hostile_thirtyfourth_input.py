"""The thirty-fourth hostile pass of issue 19, the side of what goes in: the items the thirty-third pass left, then a
fresh pass. /work/notes/p34/result-input.md has the whole list, what held and what was left.

Fixed:
1. A few-shot example's value the template never uses (`{values: {a: 2, zz: 3}}`) refused naming it, with the name
   it likely misspells (`did you mean 'a'?`) or the names the template uses (compiler.examplevalues): an example's
   values fill its template alone and are kept nowhere, where a sample's unused values are its metadata.
2. A task file's value of the wrong kind said in JSON's words (`sample.seed: true is not of type 'integer'`, not
   Python's `True`, `{'a': 1}`) where jsonschema's message starts with it (compiler.schemas._json_spelled).
3. A response class whose JSON schema is made otherwise at each import of its file (`json_schema_extra` holding a
   random number; a Literal of a set's items, whose order differs from process to process) refused naming it
   (compiler.schemaonce): the probe's process writes each class's schema's digest, and the compile's must match; each
   compile gave another manifest id with nothing said, a dry run and a run of one benchmark apart.
4. runner=ollama's (and openai's, a judge's) `options.temperature` below 0 refused (core.optionbounds.LEAST): Ollama's
   engine clamps it to 0 (sample.NewSampler) and llama.cpp's sampler takes the likeliest token for any of 0 or less,
   so -1 asked as 0 under another manifest.
5. A benchmark's file named as one benchrun reads but for its letters' case or `.yaml` for `.yml` (a task folder's
   `info.yaml`, `Info.yml`, a `judges.yaml`, `Tasks.yml` beside tasks.yml) refused naming it and the name benchrun
   reads (compiler.lookalikes, called by sources.read_tasks): it was read by nothing, its task run with the defaults
   (info.yaml's scorer and format unread) or its judges never asked, without a word.
6. A number with an exponent as JSON writes it read as a number in every YAML file of the user's, as tasks.yml's already
   was (core.yamlfile.EXPONENT, now on every loader but the archive's): judges.yml's `scores: {"yes": 1e-1}` was YAML
   1.1's text, refused as `'1e-1' is not of type 'number'`; a runner file's `options: {temperature: 1e-1}` as `Input
   should be a valid number, not "1e-1"`.
7. A judge's scores giving every grade of its Enum one number (`{"yes": 1, "no": 1}`) refused (compiler.judges._scores):
   the judge's metric was that number whatever its model answered.
"""

from __future__ import annotations

import pytest

from tests.helpers.p29_input import dry_run
from tests.helpers.p30_input import ended, refusal
from tests.helpers.p33_input import dry_run_of
from tests.helpers.p34_input import FOLDER_TASK, FORMAT_TASK, JUDGED_TASK, SHOT_TASK, judges


@pytest.mark.parametrize(("values", "name", "hint"), [
    ("{a: 2, zz: 3}", "zz", "it uses a"),
    ("{aa: 2}", "aa", "did you mean 'a'?")])
def test_an_examples_value_the_template_never_uses_is_refused(tmp_path, values, name, hint):
    """Before: `{a: 2, zz: 3}` taken, zz kept nowhere; `{aa: 2}` said as `no value 'a', which the template uses`."""
    assert ended(dry_run(tmp_path, {"tasks.yml": SHOT_TASK.format(values=values)})) == refusal(
        f"in 'tasks.yml': task 't': tasks[0].fewshot[0].values: '{name}' is a value the template never uses "
        f"({hint}), and an example's values fill its template alone (kept nowhere else): leave it out")


def test_an_examples_values_the_template_uses_are_taken(tmp_path):
    done = dry_run(tmp_path, {"tasks.yml": SHOT_TASK.format(values="{a: 2}")})
    assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.parametrize(("given", "said"), [
    ("true", "true"),
    ("false", "false"),
    ("{a: 1}", '{"a": 1}'),
    ("[1, x]", '[1, "x"]')])
def test_a_task_files_value_of_the_wrong_kind_is_said_in_jsons_words(tmp_path, given, said):
    """Before: `True is not of type 'integer'`, `{'a': 1} is not of type 'integer'` (Python's spelling)."""
    tasks = f"- name: t\n  template: say {{a}}\n  values: {{a: [1, 2]}}\n  reference: ['1', '2']\n" \
            f"  sample: {{n: 1, seed: {given}}}\n"
    assert ended(dry_run(tmp_path, {"tasks.yml": tasks})) == refusal(
        f"in 'tasks.yml': task 't': tasks[0].sample.seed: {said} is not of type 'integer'")


def test_a_format_whose_schema_is_made_otherwise_at_each_import_is_refused(tmp_path):
    """Before: taken, each compile (a dry run, then the run) another manifest id."""
    random_extra = ("import random\nfrom pydantic import BaseModel, ConfigDict\n\n\nclass F(BaseModel):\n"
                    "    model_config = ConfigDict(json_schema_extra={'x': random.random()})\n    answer: str\n")
    assert ended(dry_run(tmp_path, {"tasks.yml": FORMAT_TASK, "custom_response.py": random_extra})) == refusal(
        "in 'custom_response.py': task 't': format 'F': its JSON schema is made otherwise at each import of "
        "custom_response.py (a random number, the time, a set's order or the environment in it), so each compile "
        "would give the run another manifest id (a dry run and a run of the benchmark apart); make it of the file's "
        "text alone")


@pytest.mark.parametrize(("args", "key"), [
    ((), "runner.options.temperature"),
    (("runner=openai", "runner.model=m"), "runner.options.temperature"),
    (("judge.model=j",), "judge.options.temperature")])
def test_a_temperature_below_0_is_refused_for_ollama_and_openai(tmp_path, args, key):
    """Before: taken, asked as 0 (Ollama's engine clamps it) under a manifest of its own."""
    assert ended(dry_run_of(tmp_path, *args, f"{key}=-1")) == refusal(
        f"in 'config': {key}: -1.0 is no temperature of its own: Ollama and llama.cpp's server read any below 0 as 0 "
        "(the likeliest token each time): give 0 or more")


@pytest.mark.parametrize(("name", "task", "read"), [
    ("tasks/t/info.yaml", "task 't': ", "info.yml"),
    ("tasks/t/Info.yml", "task 't': ", "info.yml"),
    ("judges.yaml", "", "judges.yml"),
    ("Tasks.yml", "", "tasks.yml")])
def test_a_file_named_as_one_benchrun_reads_but_for_its_spelling_is_refused(tmp_path, name, task, read):
    """Before: taken, the file read by nothing (info.yaml's scorer and format unread, judges.yaml's judges unasked)."""
    assert ended(dry_run(tmp_path, {**FOLDER_TASK, name: "scorer: nosuch\n"})) == refusal(
        f"in '{name}': {task}'{name.rpartition('/')[2]}' is a name benchrun does not read (it reads {read}, by that "
        f"exact name), so the file would be ignored: rename it {read}")


def test_a_judges_score_written_with_an_exponent_is_a_number(tmp_path):
    """Before: `judges[0].scores.yes: '1e-1' is not of type 'number'` (YAML 1.1's text)."""
    files = {"tasks.yml": JUDGED_TASK, "judges.yml": judges('{"yes": 1e-1, "no": -1e308}')}
    assert ended(dry_run(tmp_path, files, "judge.model=j")) == refusal(
        "in 'judges.yml': judges[0].scores.no: -1e+308 is not a finite number of magnitude at most 1e+100, as a "
        "metric's value must be")


def test_a_judges_scores_of_one_number_for_every_grade_are_refused(tmp_path):
    """Before: taken, the judge's metric 1 whatever its model answered."""
    files = {"tasks.yml": JUDGED_TASK, "judges.yml": judges('{"yes": 1, "no": 1.0}')}
    assert ended(dry_run(tmp_path, files, "judge.model=j")) == refusal(
        "in 'judges.yml': judges[0].scores: every grade of field 'answer' (yes, no) is scored 1, so the judge's metric "
        "would be that whatever its model answers: give its grades different numbers")


def test_a_runner_files_number_written_with_an_exponent_is_a_number(tmp_path):
    """Before: `in 'r.yml': options.temperature: Input should be a valid number, not "-1e-1"` (YAML 1.1's text)."""
    files = {"tasks.yml": JUDGED_TASK.replace("  judge: j\n", ""),
             "r.yml": "runner_type: ollama\nmodel: m\noptions:\n  temperature: -1e-1\n"}
    assert ended(dry_run(tmp_path, files, "runner_file=bench/r.yml")) == refusal(
        "in 'bench/r.yml': options.temperature: -0.1 is no temperature of its own: Ollama and llama.cpp's server "
        "read any below 0 as 0 (the likeliest token each time): give 0 or more")

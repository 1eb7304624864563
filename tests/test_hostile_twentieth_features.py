"""The twentieth hostile pass, the features a benchmark is made of (data files, judges, chats, shards, repeats, the
cache) used together as a demanding researcher does.

Found and fixed:
- `value_combinations: combinations` on a task whose values come from a `values_file`: the file's columns were crossed
  as value lists, so a file of 2 records (a, b and a `split` column) made 8 samples, questions no record holds
  (`1 + 3`) and each asked once per split. Refused at compile (compiler.sources).
- An `id` list in a task's values under `value_combinations: combinations`: crossed with the other lists, each id named
  several samples, and the refusal said `4 references for 16 samples` (with 16 references: `duplicate sample id
  't:p'; make the ids unique`, ids that were unique as written). Refused naming values.id (compiler.grid).
- A sweep over the judge's settings labelled its jobs by the key's last part: `-m judge.model=qwen2.5,gemma3` gave
  columns `model=qwen2.5` and `model=gemma3` (read as the models under test, which were llama3.2), and
  `runner.options.temperature=0,0.7 judge.options.temperature=0,0.7` gave `temperature=0 temperature=0.7` beside
  `temperature=0.7 temperature=0`. A judge's key is labelled as the judge's: `judge.model=qwen2.5` (compose.labels).
- A judge naming no server, on a run of `runner=openai`: the judge (judge.runner=ollama, the default) asked the default
  Ollama, not the model's server as the README's judges section reads, and its refusal advised only `ollama serve` or
  judge.host. It now says why and how to ask the model's server: judge.runner=openai (execute.session).
- A value named `reference` in a task's inline values (`values: {a: [1, 2], reference: [3, 4]}`, as a values file's
  reference column is written) was kept as a value: with `reference: [1, 2]` beside it, samples `add:a=1,reference=3`
  scored against 1; without, `exact_match` was refused as having no reference. Refused naming values.reference
  (compiler.sources).
- A JSONL record giving a key twice (`{"a": 1, "b": 2, "a": 5, "reference": 3}` in a values file, an examples line
  with two `assistant`s): the last was taken without a word (asked `what is 5 + 2?` against the reference 3), where
  YAML and CSV refuse a key or column given twice. Refused naming the line, as a server's JSON is (compiler.files).
- A values.csv reference with a leading zero (a postcode `02139`, a code `007`) is kept as text, "not asked and scored
  as 2139" as the README says; but exact_match read such a text as its number, so the answers `2139` and 7 scored 1.
  A code's text is compared as text (core.text.CODE, one rule for the typing of cells and for exact_match).
- A BoolAnswer task whose references are a values.csv's `true`/`false` cells (text, as cells that are no number are):
  every right answer scored 0, exact_match comparing Python's `True` with `true`; a tasks.yml or JSONL reference `true`
  scored a StringAnswer's "true" 0 and "True" 1. A bool is compared as its JSON text, in any case
  (compiler.scoring._same).
- A YesNoAnswer (BoolAnswer, IntAnswer, a custom Enum answer) task graded by exact_match whose references no answer of
  the format can match (values.csv `Yes`/`No`, the format's `yes`/`no`; `1,000` for an integer): every answer scored
  0, however right. Refused
  at compile naming the sample and the values the format answers (compiler.answerable).
- `rescore RUN --rejudge judge.model=gemma3` printed the judge's old and new means (qwen2.5's grades, gemma3's) as a
  rescore's, saying nothing of another judge model. It now says which judge model graded again (audit.rescored).

Tried and held: the seed's listbench with a judge and repeats; values files with a BOM, ids holding `/` `:` `=`,
reference lists and numbers as text; ids 1 and "1" (refused as one); id null, a list, empty or with a line break;
folder tasks with values.csv and values.jsonl both; a judge's Enum of ints with YAML int `scores` keys (refused,
"quote it"); a data file named as values file and examples file (listed once); a shard retried and merged; judges on
runner=openai (the fake and the real llama_cpp.server); a judge model among runner_file's models (that job refused);
a judge list with another digest on one server (refused); tasks.yml `reference: [yes, no]` (the YAML reader refuses)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchrun.compose.labels import label
from benchrun.core.errors import EXIT
from benchrun.testing.ollama_server import FakeOllama, fake_digest
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import bench_run, call_benchrun, run_dir_of, sweep_dir_of
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, answer


def _dry_run(root: Path, files: dict[str, str], *args: str):
    """A dry run (in this process) of the benchmark made of `files`."""
    write_bench(root, files)
    return call_benchrun("task.path=bench", "dry_run=true", *args, cwd=root)


def test_crossing_the_columns_of_a_values_file_is_refused(tmp_path):
    result = _dry_run(tmp_path, {
        "tasks.yml": "- name: add\n  template: 'what is {a} + {b}?'\n  values_file: data/v.jsonl\n"
                     "  value_combinations: combinations\n  reference: calculated\n  scorer: s\n",
        "custom_scorer.py": "def s(response, values):\n    return 1\n",
        "data/v.jsonl": '{"a": 1, "b": 2, "split": "test"}\n{"a": 2, "b": 3, "split": "dev"}\n'})
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'tasks.yml': task 'add': tasks[0].value_combinations: 'combinations' crosses value "
        "lists, but a values file gives one sample per record (crossed, its columns made questions no record holds, "
        "each asked again for every other column's value); leave value_combinations out\n"))


def test_a_value_named_reference_in_a_tasks_values_is_refused(tmp_path):
    result = _dry_run(tmp_path, {"tasks.yml": "- name: add\n  template: 'what is {a}?'\n"
                                              "  values: {a: [1, 2], reference: [3, 4]}\n  reference: [1, 2]\n"})
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'tasks.yml': task 'add': tasks[0].values.reference: a value named 'reference' is kept as "
        "a value of each sample (in its id, its values), not as its reference, as a values file's reference column "
        "is; give the references with the task's reference key, or rename the value\n"))


def test_an_id_list_crossed_by_combinations_is_refused_naming_it(tmp_path):
    result = _dry_run(tmp_path, {
        "tasks.yml": "- name: t\n  template: 'what is {x} + {y}?'\n  values: {id: [p, q, r, s], x: [1, 2], y: [3, 4]}\n"
                     "  value_combinations: combinations\n  reference: [4, 5, 5, 6]\n"})
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'tasks.yml': task 't': tasks[0].values.id: an id names one sample, but "
        "value_combinations: combinations crosses the id list with the other value lists, so each id would name "
        "several samples; leave the id list out (each sample's id is then made of its values)\n"))


@pytest.mark.slow
def test_a_sweep_over_the_judges_settings_labels_its_jobs_as_the_judges(tmp_path):
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2", "qwen2.5", "gemma3"], responder=answer) as server:
        result = bench_run(tmp_path, server.url, "task.path=bench", "cache=false", "judge.model=qwen2.5,gemma3",
                           multirun=True)
    assert result.returncode == EXIT["ok"], result.stderr
    sweep = json.loads((sweep_dir_of(result.stdout) / "sweep.json").read_text())
    assert [(job["label"], job["model"]) for job in sweep["jobs"]] == [
        ("judge.model=qwen2.5", "llama3.2"), ("judge.model=gemma3", "llama3.2")]
    assert label({"runner.options.temperature": 0, "judge.options.temperature": 0.5}, "llama3.2") == (
        "temperature=0 judge.temperature=0.5")


def test_a_judge_of_another_runner_than_the_models_says_it_was_not_asked_at_the_models_server(tmp_path):
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOpenAI(models=["llama3.2", "qwen2.5"]) as server:
        result = call_benchrun("task.path=bench", "runner=openai", f"runner.base_url={server.url}",
                               "runner.model=llama3.2", "judge.model=qwen2.5", f"outputs={tmp_path / 'outputs'}",
                               cwd=tmp_path)
    assert (result.returncode, result.stderr.count("\n")) == (EXIT["runner"], 1)
    assert result.stderr.startswith("benchrun: error: the judge model: ")  # the default Ollama: not there
    assert result.stderr.endswith(
        " (the judge is asked with judge.runner=ollama, at its default server: a judge asks the model's server only "
        "with the model's runner, openai; set judge.runner=openai to ask it there)\n")


@pytest.mark.parametrize(("data", "said"), [
    ({"data/v.jsonl": '{"a": 1, "b": 2, "a": 5, "reference": 3}\n'}, "in 'data/v.jsonl': task 'add': line 1: the key "
     '"a" is given twice in one object (which one is meant, JSON does not say); give each key once'),
    ({"data/v.jsonl": '{"a": 1, "b": 2, "reference": 3}\n',
      "data/s.jsonl": '{"user": "what is 1 + 1?", "assistant": "2", "assistant": "3"}\n'},
     "in 'data/s.jsonl': task 'add': line 1: the key \"assistant\" is given twice in one object (which one is meant, "
     "JSON does not say); give each key once")])
def test_a_jsonl_record_giving_a_key_twice_is_refused(tmp_path, data, said):
    shots = "  fewshot: {file: data/s.jsonl}\n" if "data/s.jsonl" in data else ""
    result = _dry_run(tmp_path, {"tasks.yml": "- name: add\n  template: 'what is {a} + {b}?'\n"
                                              f"  values_file: data/v.jsonl\n{shots}", **data})
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", f"benchrun: error: {said}\n")


def test_a_reference_of_a_code_with_a_leading_zero_is_not_matched_by_its_number(tmp_path):
    write_bench(tmp_path, {"tasks/codes/template.txt": "what is the code of {place}?",
                           "tasks/codes/values.csv": "place,reference\nCambridge MA,02139\nBond,007\nOne,1\n"})
    given = {"Cambridge MA": "2139", "Bond": 7, "One": "01"}
    with FakeOllama(responder=lambda req: json.dumps({"answer": given[req.prompt[20:-1]]})) as server:
        result = bench_run(tmp_path, server.url, "task.path=bench", "cache=false")
    assert result.returncode == EXIT["ok"], result.stderr
    scores = read_jsonl(run_dir_of(result.stdout) / "scores.jsonl")
    assert [(s["id"], s["metrics"]) for s in scores if s["scorer"] == "exact_match"] == [
        ("codes:place=Cambridge MA", {"exact_match": 0}), ("codes:place=Bond", {"exact_match": 0}),
        ("codes:place=One", {"exact_match": 0})]


def test_a_bool_answer_matches_a_true_or_false_reference_cell(tmp_path):
    write_bench(tmp_path, {"tasks/truth/template.txt": "Is it true that {claim}?", "tasks/truth/info.yml":
                           "format: BoolAnswer\n", "tasks/truth/values.csv":
                           "claim,reference\nthe sky is blue,true\nfire is cold,false\nwater is wet,True\n"})
    with FakeOllama(responder=lambda req: json.dumps({"answer": "cold" not in req.prompt})) as server:
        result = bench_run(tmp_path, server.url, "task.path=bench", "cache=false")
    assert result.returncode == EXIT["ok"], result.stderr
    scores = read_jsonl(run_dir_of(result.stdout) / "scores.jsonl")
    assert [s["metrics"] for s in scores if s["scorer"] == "exact_match"] == [{"exact_match": 1}] * 3


@pytest.mark.parametrize(("fmt", "cells", "said"), [
    ("YesNoAnswer", "Yes\nfire is cold,No", '"Yes", which no answer of format \'YesNoAnswer\' ("yes", "no") matches'),
    ("IntAnswer", "\"1,000\"", '"1,000", which no answer of format \'IntAnswer\' (an integer) matches')])
def test_a_reference_no_answer_of_the_format_can_match_is_refused(tmp_path, fmt, cells, said):
    result = _dry_run(tmp_path, {"tasks/truth/template.txt": "How true is it that {claim}?",
                                 "tasks/truth/info.yml": f"format: {fmt}\n",
                                 "tasks/truth/values.csv": f"claim,reference\nthe sky is blue,{cells}\n"})
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'tasks/truth/values.csv': task 'truth': column 'reference': the reference of sample "
        f"'truth:claim=the sky is blue' is {said}: exact_match would score every answer to it 0; write it as the "
        "format answers it\n"))


@pytest.mark.slow
def test_a_rejudge_by_another_judge_model_says_which_graded_again(tmp_path):
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2", "qwen2.5", "gemma3"], responder=answer) as server:
        run = bench_run(tmp_path, server.url, "task.path=bench", "cache=false", "judge.model=qwen2.5")
        rejudged = call_benchrun("rescore", str(run_dir_of(run.stdout)), "--rejudge", "judge.model=gemma3",
                                 cwd=tmp_path, module="benchrun.audit")
    assert rejudged.returncode == EXIT["ok"], rejudged.stderr
    assert (f"judged again by gemma3  name gemma3:latest  digest {fake_digest('gemma3')}  server 0.12.6 (old mean: "
            "the run's judge, as show names it)") in rejudged.stdout.splitlines()

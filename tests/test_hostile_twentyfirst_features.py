"""The twenty-first hostile pass, the features a benchmark is made of (data files, examples, judges, scoring, shards,
repeats) used together as a demanding researcher does.

Found and fixed:
- A few-shot example asking a sample's own question (an inline `{values: {a: 10, b: 20}, ...}` or an examples-file
  line made from the data file's items): every sample of the task is sent the examples, so that sample was asked with
  an answer to it in its own chat and scored right, said by nothing. Refused at compile naming the example and the
  sample (compiler.shots).
- A reference written decomposed (NFD: `é` as `e` and a combining accent, as macOS, some keyboards and PDFs write it;
  Korean syllables as their letters) against the model's composed answer (NFC), the same text by Unicode's rule and on
  screen: exact_match and contains scored 0. Both compare texts composed (compiler.scoring).
- A BoolAnswer (YesNoAnswer, a custom Enum answer) task graded by `contains` whose references no answer of the format
  contains (values.csv `yes`/`no` for a BoolAnswer's `true`/`false`): every answer scored 0, however right, where
  exact_match's are refused at compile since the twentieth pass. Refused alike, naming contains (compiler.answerable).
- A few-shot example whose answer is empty (`assistant: ''`, an examples line `"assistant": ""`): the model was shown a
  question answered by nothing before every sample, where an empty `user` is refused. Refused alike
  (schemas/tasks.schema.json's turn).
- An answer of null (a custom format's `answer: str | None`, a model abstaining) was compared as Python's text `None`:
  exact_match matched a reference "None" and contains found "no" (and "one", "on") in it, so abstaining on a yes/no
  question scored right. A null is compared as JSON writes it, `null`, as a bool is (compiler.scoring).
- A reference carrying an invisible character at an end (`Paris` and a zero-width space, a byte-order mark before `7`,
  as text copied from a web page or files joined carry them): exact_match scored the answers `Paris` and 7 0, where
  whitespace there is stripped. What cannot be seen at the ends is trimmed, inside the text it stays
  (compiler.scoring).

Tried and held: numbers at their edges (other scripts' digits, `.5`, `1.`, `-0`, `07.0`, a code against its number);
tasks.yml references YAML reads otherwise (`0x1F`, `12:30`, `1,000`: refused); values that are objects, lists or
null, empty ids, a values file beside a reference list; examples whose assistant is no string; the README's chat
example with a judge, repeats and judge repeats, as two shards merged, exported and verified; a rejudge of a merged
run; a shard asking no sample."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import bench_run, call_benchrun, run_dir_of


def _dry_run(root: Path, files: dict[str, str], *args: str):
    """A dry run (in this process) of the benchmark made of `files`."""
    write_bench(root, files)
    return call_benchrun("task.path=bench", "dry_run=true", *args, cwd=root)


def _scored(root: Path, files: dict[str, str], answer) -> list[tuple[str, dict[str, int]]]:
    """(sample id, metrics) of each score but format_valid of a run (in this process) of the benchmark made of
    `files`, against a fake server whose model answers `{"answer": answer(prompt)}`."""
    write_bench(root, files)
    with FakeOllama(responder=lambda req: json.dumps({"answer": answer(req.prompt)})) as server:
        result = bench_run(root, server.url, "task.path=bench", "cache=false")
    assert result.returncode == EXIT["ok"], result.stderr
    scores = read_jsonl(run_dir_of(result.stdout) / "scores.jsonl")
    return [(s["id"], s["metrics"]) for s in scores if s["scorer"] != "format_valid"]


ADD = "- name: add\n  template: 'what is {a} + {b}?'\n  values_file: data/add.jsonl\n  format: IntAnswer\n"
ITEMS = '{"id": "q1", "a": 10, "b": 20, "reference": 30}\n{"id": "q2", "a": 4, "b": 5, "reference": 9}\n'


@pytest.mark.parametrize(("fewshot", "files", "at"), [
    ("  fewshot:\n    - {values: {a: 1, b: 1}, assistant: '{\"answer\": 2}'}\n"
     "    - {values: {a: 4, b: 5}, assistant: '{\"answer\": 9}'}\n", {}, "tasks.yml': task 'add': tasks[0].fewshot[1]"),
    ("  fewshot: {file: data/shots.jsonl}\n", {"data/shots.jsonl": '{"user": "what is 2 + 2?", "assistant": "4"}\n'
                                                                  '{"user": " what is 4 + 5?\\n", "assistant": "9"}\n'},
     "data/shots.jsonl': task 'add': line 2")])
def test_an_example_asking_a_samples_own_question_is_refused(tmp_path, fewshot, files, at):
    result = _dry_run(tmp_path, {"tasks.yml": ADD + fewshot, "data/add.jsonl": ITEMS, **files})
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in '{at}: example 2 asks \"what is 4 + 5?\", the question of sample 'add:q2': that sample "
        "would be asked with an answer to it in its own chat (every sample of the task is sent the examples), so its "
        "score would measure nothing; take the examples from outside the samples, or leave the sample out\n"))


def test_a_decomposed_reference_matches_the_composed_answer(tmp_path):
    words = ["café", "Ångström", "한국어"]
    cells = "".join(f"{i},{unicodedata.normalize('NFD', word)}\n" for i, word in enumerate(words))
    answers = {"0": "café", "1": "one ÅNGSTRÖM", "2": "한국어"}  # composed, as models write them
    assert _scored(tmp_path, {"tasks/say/template.txt": "say word {i}", "tasks/say/values.csv": f"i,reference\n{cells}",
                              "tasks/say/info.yml": "scorer: [exact_match, contains]\n"},
                   lambda prompt: answers[prompt[-1]]) == [
        ("say:i=0", {"exact_match": 1}), ("say:i=0", {"contains": 1}),
        ("say:i=1", {"exact_match": 0}), ("say:i=1", {"contains": 1}),
        ("say:i=2", {"exact_match": 1}), ("say:i=2", {"contains": 1})]


@pytest.mark.parametrize(("fmt", "cell", "answers"), [("BoolAnswer", "yes", "(true, false)"),
                                                  ("YesNoAnswer", "true", '("yes", "no")')])
def test_a_reference_no_answer_of_the_format_contains_is_refused(tmp_path, fmt, cell, answers):
    result = _dry_run(tmp_path, {"tasks/ask/template.txt": "{q}?",
                                 "tasks/ask/info.yml": f"format: {fmt}\nscorer: contains\n",
                                 "tasks/ask/values.csv": f"q,reference\nsky blue,{cell}\n"})
    said = (f"in 'tasks/ask/values.csv': task 'ask': column 'reference': the reference of sample 'ask:q=sky blue' is "
            f'"{cell}", which no answer of format \'{fmt}\' {answers} contains: contains would score every answer '
            "to it 0; write it as the format answers it")
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", f"benchrun: error: {said}\n")


@pytest.mark.parametrize(("fewshot", "files", "at"), [
    ("  fewshot:\n    - {user: 'what is 1 + 1?', assistant: ''}\n", {}, "tasks.yml': task 'add': tasks[0].fewshot[0]"),
    ("  fewshot: {file: shots.jsonl}\n", {"shots.jsonl": '{"user": "what is 1 + 1?", "assistant": ""}\n'},
     "shots.jsonl': task 'add': line 1")])
def test_an_example_with_an_empty_answer_is_refused(tmp_path, fewshot, files, at):
    result = _dry_run(tmp_path, {"tasks.yml": ADD + fewshot, "data/add.jsonl": ITEMS, **files})
    assert (result.returncode, result.stdout, result.stderr) == (
        EXIT["usage"], "",
        f"benchrun: error: in '{at}.assistant: an empty text, where one of at least 1 character is taken\n")


def test_an_answer_of_null_is_not_the_text_none(tmp_path):
    files = {"tasks.yml": "- name: ask\n  template: 'Is {x} prime?'\n  values: {x: [9, 11, 4]}\n"
                          "  reference: ['no', 'None', 'no']\n  format: Maybe\n  scorer: [exact_match, contains]\n",
             "custom_response.py": "from pydantic import BaseModel\n\n\nclass Maybe(BaseModel):\n"
                                   "    answer: str | None\n"}
    assert _scored(tmp_path, files, lambda prompt: "no" if " 9 " in prompt else None) == [
        ("ask:x=9", {"exact_match": 1}), ("ask:x=9", {"contains": 1}),
        ("ask:x=11", {"exact_match": 0}), ("ask:x=11", {"contains": 0}),
        ("ask:x=4", {"exact_match": 0}), ("ask:x=4", {"contains": 0})]


def test_a_reference_with_an_invisible_end_matches_the_answer(tmp_path):
    rows = ['{"q": "capital", "reference": "Paris\\u200b"}', '{"q": "seven", "reference": "\\u20607"}',
            '{"q": "joined", "reference": "Par\\u200bis"}']
    files = {"tasks.yml": "- name: t\n  template: 'say {q}'\n  values_file: v.jsonl\n", "v.jsonl": "\n".join(rows)}
    assert _scored(tmp_path, files, lambda prompt: 7 if prompt.endswith("seven") else "Paris") == [
        ("t:q=capital", {"exact_match": 1}), ("t:q=seven", {"exact_match": 1}), ("t:q=joined", {"exact_match": 0})]

"""The twenty-first hostile pass, the features a benchmark is made of (data files, examples, judges, scoring, shards,
repeats) used together as a demanding researcher does.

Found and fixed:
- A few-shot example asking a sample's own question (an inline `{values: {a: 10, b: 20}, ...}` or an examples-file
  line made from the data file's items): every sample of the task is sent the examples, so that sample was asked with
  an answer to it in its own chat and scored right, said by nothing. Refused at compile naming the example and the
  sample (compiler.shots)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun


def _dry_run(root: Path, files: dict[str, str], *args: str):
    """A dry run (in this process) of the benchmark made of `files`."""
    write_bench(root, files)
    return call_benchrun("task.path=bench", "dry_run=true", *args, cwd=root)


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

"""The twenty-second hostile pass against the twenty-first pass's own code (compiler.scoring's numbers,
compiler.patterns, grade_key, the runner file, few-shot examples, consistency).

Found and fixed:
- A text reference beginning or ending with a number (`$1`, `500 dollars`, `Apollo 1`) was found inside a number
  written in groups of three digits (`it costs $1,500`, `1,500 dollars`) or with an exponent (`Apollo 1e3`): contains
  scored a wrong answer 1, where the number reference 500 is not found in `1,500` since the last pass. The number at
  the reference's edge is one NUMERAL reads there whole (compiler.scoring's Held).
- NUMERAL read the 1 of `1½ cups`, the 10 of `10⁶ cells` and the 1 of `1_000`: contains found the references 1 and 10
  in them. A number followed by a fraction, a superscript or subscript, or a digit group's `_` is part of a longer
  one (compiler.scoring's AFTER).
- A format's pattern giving a character by its code in braces before a quantifier (`^\\x{41}{2}$`, `^\\u{30}+$`, which
  pydantic and the format check both read) was refused at compile as 'a quantifier after a quantifier' ({41}{2}),
  advice to put it in a group: a braced escape is one (compiler.patterns.ESCAPE).
- A judge's scores key `1e5000` was a ValueError traceback at compile (`1e99999999` first made an integer of 10^8
  digits, for minutes): core.manifest.grade_key keys a whole number past 640 digits by its digits and exponent.
- A runner file giving `runner_type: openai` and `type: ollama` ran the later one unsaid: refused, naming the file
  (compose.runneryml.by_our_names).
- A few-shot example asking a sample's question but for a zero-width space at its end or a decomposed letter was
  taken as another question: compared as scoring compares texts (compiler.shots).
- A number written with a fullwidth or small sign (`気温は－５度`, `－５`, `＋５`, `﹣5`) held 5 and not -5 (contains),
  and was no number to exact_match: read as ASCII's signs, a wide sign after a letter too (compiler.scoring).
- consistency and consistency_samples read a repeated run's samples once per task (282 s a call for 2,000 tasks of
  500 samples): one pass (archive.tally._Consistency.by_task).

Held (see /work/notes/p22/result-rev21.md): the format keywords against pydantic's readers on 34 answers, patterns
read alike by both readers, the converter on braced escapes, the half-surrogate check at any depth, a run killed and
started again into its directory, scoring's cost on 8 MB answers."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from benchrun.archive.tally import Tally
from benchrun.core.errors import EXIT
from benchrun.core.manifest import grade_key
from benchrun.core.records import ResponseRecord
from benchrun.testing.ollama_server import ChatRequest
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, make_run
from tests.helpers.scoredruns import TEXT, scored


def _contains_task(rows: list[dict]) -> dict[str, str]:
    """A benchmark of one task graded by contains, a sample per row of its values file."""
    return {"tasks.yml": "- name: t\n  template: 'say {q}'\n  values_file: v.jsonl\n  format: Text\n"
                         "  scorer: contains\n",
            "v.jsonl": "".join(json.dumps(row) + "\n" for row in rows), "custom_response.py": TEXT}


def test_a_text_reference_is_not_found_inside_a_number_in_groups_or_with_an_exponent(tmp_path):
    """Before: [1, 1, 1, 1, 1, 1]: each reference was found, its edge number inside a longer number."""
    rows = [{"q": "price", "reference": "$1"}, {"q": "total", "reference": "500 dollars"},
            {"q": "mission", "reference": "Apollo 1"}, {"q": "sentence", "reference": "is 5"},
            {"q": "signed", "reference": "5 km"}, {"q": "gas", "reference": "CO2"}]
    answers = {"price": "it costs $1,500", "total": "1,500 dollars", "mission": "Apollo 1e3",
               "sentence": "it is 5.", "signed": "+5 km", "gas": "the CO2 emissions"}
    assert scored(tmp_path, _contains_task(rows), answers) == [
        ("t:q=price", {"contains": 0}), ("t:q=total", {"contains": 0}), ("t:q=mission", {"contains": 0}),
        ("t:q=sentence", {"contains": 1}), ("t:q=signed", {"contains": 1}), ("t:q=gas", {"contains": 1})]


def test_a_number_followed_by_a_fraction_a_superscript_or_a_digit_group_is_part_of_it(tmp_path):
    """Before: [1, 1, 1, 1, 1]: 1 found in `1½ cups` and `1_000`, 10 in `10⁶ cells`, `step 1` in `step 1¼`."""
    rows = [{"q": "cups", "reference": 1}, {"q": "cells", "reference": 10}, {"q": "grouped", "reference": 1},
            {"q": "quarter", "reference": "step 1"}, {"q": "spaced", "reference": 5}]
    answers = {"cups": "1½ cups", "cells": "10⁶ cells", "grouped": "1_000", "quarter": "step 1¼", "spaced": "5 ½"}
    assert scored(tmp_path, _contains_task(rows), answers) == [
        ("t:q=cups", {"contains": 0}), ("t:q=cells", {"contains": 0}), ("t:q=grouped", {"contains": 0}),
        ("t:q=quarter", {"contains": 0}), ("t:q=spaced", {"contains": 1})]


CODED = ("from pydantic import BaseModel, Field\n\n\nclass Coded(BaseModel):\n"
         "    answer: str = Field(pattern=r'^\\x{41}{2}$')\n\n\nclass Zeros(BaseModel):\n"
         "    answer: str = Field(pattern=r'^\\u{30}+$')\n")


def _echo(req: ChatRequest) -> str:
    return json.dumps({"answer": req.prompt.removeprefix("Say ").removesuffix(".")})


def test_a_braced_escape_before_a_quantifier_is_compiled_and_checked_as_both_readers_read_it(tmp_path):
    """Before: exit 2, "... format 'Coded': field 'answer': its pattern '^\\x{41}{2}$' holds a quantifier after a
    quantifier ({41}{2}) ..."."""
    tasks = [{"name": name, "template": "Say {a}.", "values": {"a": values}, "reference": [values[0]] * 2,
              "scorer": "exact_match", "format": name}
             for name, values in (("Coded", ["AA", "A"]), ("Zeros", ["000", "0x"]))]
    write_bench(tmp_path, {"tasks.yml": json.dumps(tasks), "custom_response.py": CODED})
    dry = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (dry.returncode, dry.stderr) == (EXIT["ok"], "")
    run = make_run(tmp_path, "task.path=bench", responder=_echo)
    assert [(s["id"], s["metrics"]["format_valid"]) for s in read_jsonl(run / "scores.jsonl")
            if s["scorer"] == "format_valid"] == [("Coded:a=AA", 1), ("Coded:a=A", 0), ("Zeros:a=000", 1),
                                                  ("Zeros:a=0x", 0)]


PARTIAL = "from typing import Literal\n\nfrom pydantic import BaseModel\n\n\nclass Partial(BaseModel):\n" \
          "    grade: Literal[0.0, 0.5, 1.0]\n"


def test_a_judges_scores_key_of_a_whole_number_past_pythons_integers_is_refused_in_one_line(tmp_path):
    """Before: a traceback, exit 1 (`ValueError: Exceeds the limit (4300 digits) for integer string conversion`, after
    making an integer of 5,001 digits; a key '1e99999999' made one of 100,000,000 digits first, for minutes)."""
    write_bench(tmp_path, {
        "tasks.yml": "- name: t\n  template: 'say {x}'\n  values: {x: [a]}\n  reference: [a]\n  judge: partial\n",
        "judges.yml": "- name: partial\n  rubric: 'grade {response}'\n  format: Partial\n  score: grade\n"
                      "  scores: {'0': 0, '0.5': 0.5, '1': 1, '1e5000': 0}\n",
        "custom_response.py": PARTIAL})
    result = call_benchrun("task.path=bench", "dry_run=true", "judge.model=qwen2.5", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'judges.yml': judges[0].scores: scores must give each value of field 'grade' (0, 0.5, 1) "
        "a number: not values of it: 1E+5000\n"))


def test_a_grade_is_keyed_to_its_last_digit():
    assert [grade_key(value) for value in (Decimal("1.0"), 2.50, Decimal("1e5"), Decimal("1e700"),
                                           Decimal("0.12345678901234567890123456789"))] == [
        "1", "2.5", "100000", "1E+700", "0.12345678901234567890123456789"]
    assert grade_key(Decimal("0.12345678901234567890123456789")) != grade_key(
        Decimal("0.12345678901234567890123456788"))


@pytest.mark.slow
def test_a_runner_file_giving_its_type_by_both_names_is_refused(tmp_path):
    """Before: exit 0, a dry run of the runner type given later in the file (`type: ollama`), `runner_type: openai`
    dropped unsaid."""
    (tmp_path / "runner.yml").write_text("runner_type: openai\ntype: ollama\nmodel: llama3.2\n")
    for given in ([], ["runner=openai"]):  # the second was said of runner_type ollama, the file's later line
        done = call_benchrun("runner_file=runner.yml", *given, "dry_run=true", cwd=tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
            "benchrun: error: in 'runner.yml': runner_type and type: one key given twice, with other values (type is "
            "benchrun's name for runner_type, and one would be taken unsaid); give one\n"))
    (tmp_path / "runner.yml").write_text("runner_type: ollama\ntype: ollama\nmodel: llama3.2\n")
    assert call_benchrun("runner_file=runner.yml", "dry_run=true", cwd=tmp_path).returncode == EXIT["ok"]


ITEMS = '{"id": "q1", "a": 10, "b": 20, "reference": 30}\n{"id": "q2", "a": 4, "b": 5, "reference": 9}\n'


@pytest.mark.parametrize(("template", "asked", "shown"), [
    ("what is {a} + {b}?", "what is 4 + 5?\\u200b", "what is 4 + 5?"),
    ("où est {a} + {b}?", "ou\\u0300 est 4 + 5?", "où est 4 + 5?")])
def test_an_example_asking_a_samples_own_question_but_for_unseen_ends_or_composition_is_refused(
        tmp_path, template, asked, shown):
    """Before: exit 0, the dry run's plan: the example (a zero-width space after it, or `ù` decomposed) was taken as
    another question, sample q2 asked with its own answer in its chat."""
    write_bench(tmp_path, {
        "tasks.yml": f"- name: add\n  template: '{template}'\n  values_file: data/add.jsonl\n  format: IntAnswer\n"
                     "  fewshot: {file: data/shots.jsonl}\n", "data/add.jsonl": ITEMS,
        "data/shots.jsonl": f'{{"user": "what is 2 + 2?", "assistant": "4"}}\n{{"user": "{asked}", "assistant": "9"}}\n'})
    result = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'data/shots.jsonl': task 'add': line 2: example 2 asks {json.dumps(shown, ensure_ascii=False)}"
        ", the question of sample 'add:q2': that sample would be asked with an answer to it in its own chat (every "
        "sample of the task is sent the examples), so its score would measure nothing; take the examples from outside "
        "the samples, or leave the sample out\n"))


def test_a_fullwidth_or_small_sign_is_a_sign(tmp_path):
    """Before: `気温は－５度` held 5 and not -5 (contains 1 where -5 is right, 0 where it is), `－５` was no number to
    exact_match (0 against -5), `＋５` 0 against 5."""
    rows = [{"q": "cold", "reference": 5}, {"q": "colder", "reference": -5}, {"q": "bare", "reference": -5},
            {"q": "small", "reference": -5}, {"q": "plus", "reference": 5}, {"q": "minus", "reference": 3}]
    files = {**_contains_task(rows), "tasks.yml": "- name: t\n  template: 'say {q}'\n  values_file: v.jsonl\n"
                                                  "  format: Text\n  scorer: [exact_match, contains]\n"}
    answers = {"cold": "気温は－５度", "colder": "気温は－５度", "bare": "－５", "small": "\ufe635", "plus": "＋５",
               "minus": "５－３"}
    assert scored(tmp_path, files, answers) == [
        ("t:q=cold", {"exact_match": 0}), ("t:q=cold", {"contains": 0}),
        ("t:q=colder", {"exact_match": 0}), ("t:q=colder", {"contains": 1}),
        ("t:q=bare", {"exact_match": 1}), ("t:q=bare", {"contains": 1}),
        ("t:q=small", {"exact_match": 1}), ("t:q=small", {"contains": 1}),
        ("t:q=plus", {"exact_match": 1}), ("t:q=plus", {"contains": 1}),
        ("t:q=minus", {"exact_match": 0}), ("t:q=minus", {"contains": 1})]


class _Reads(dict):
    """A dict that counts how often it is read through."""

    reads = 0

    def __iter__(self):
        type(self).reads += 1
        return super().__iter__()

    def items(self):
        type(self).reads += 1
        return super().items()


def test_consistency_reads_the_samples_once_whatever_the_number_of_tasks():
    """Before: the samples were read through once per task (twice per task with consistency_samples): 2,000 tasks of
    500 samples with repeats took 282 s a call, two calls at each run's end."""
    tally = Tally([f"t{t}" for t in range(100)], k=2)
    for t in range(100):
        for s, texts in enumerate((["a", "a"], ["a", "b"], ["a", None])):
            for text in texts:
                tally.add_response(ResponseRecord.model_construct(id=f"t{t}:{s}", task=f"t{t}", text=text))
    tally._consistency._count = _Reads(tally._consistency._count)
    assert (tally.consistency()["t7"], tally.consistency_samples()["t7"], _Reads.reads) == (0.5, (2, 3), 2)

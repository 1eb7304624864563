"""The twenty-first hostile pass, the features a benchmark is made of, second wave: scoring semantics, what the
built-in scorers read of an answer and a reference at their edges.

Found and fixed:
- `contains` of an answer that is a JSON object without `answer` (a custom format), a list or an object searched the
  answer's JSON or Python text whole: a key's name was found (`on` in every `{"direction": ...}`), an escaped
  character was not (`caf\\u00e9` holds no `café`), and `[null]`, written `[None]`, held `no`. contains looks in the
  values the answer holds, as parsed (compiler.scoring).
- `contains` of a number answer (IntAnswer, FloatAnswer) found the reference's digits inside the answer's: 15, 50 and
  -5 were right for 5. A number holds only the number it is; a reference no number equals is refused at compile as
  exact_match's are (compiler.scoring, compiler.answerable).
- `contains` took a reference with an invisible end as written (`Paris` and a zero-width space was in no answer) where
  exact_match trims it: trimmed alike; a reference of invisible characters only, empty once trimmed, is refused as an
  empty one is (compiler.scoring, compiler.grid).
- `contains` of a number reference in a text answer searched its digits: `18 legs` held 8, and a values.csv cell
  `1.5e-7` (read as 1.5e-07) or `1e3` (1000.0) was in no answer writing it so. A number reference is found written as
  a number, read as exact_match reads one (compiler.scoring).
- A judge grading with whole float values (`Literal[0.0, 0.5, 1.0]`, scores `'1.0': 1`): the reply 1.0 was looked up
  as `1`, so every 0.0 and 1.0 grade was the answer's scorer error, and scores `'1': 1` were refused. One key for a
  grade, the number it writes (core.manifest's grade_key, compiler.judges).
- A reference outside the bounds the format sets its answer (`Field(pattern="^[A-D]$")` with `(C)`, `Field(ge=1,
  le=5)` with 7) scored every answer 0; refused at compile as a reference of another kind is (compiler.bounds).

Tried and held: scorer lists named twice, empty or in another case; a values.csv with a byte-order mark and CRLF,
short or long rows, a quoted line break; `reference: calculated` with a built-in scorer; a reference that is only
spaces.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import pytest

from benchrun.compiler.scoring import contains
from benchrun.core.errors import EXIT
from benchrun.testing.ollama_server import FakeOllama
from benchrun.testing.oracle import fenced_fields
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import bench_run, call_benchrun, run_dir_of


def _dry_run(root: Path, files: dict[str, str], *args: str):
    """A dry run (in this process) of the benchmark made of `files`."""
    write_bench(root, files)
    return call_benchrun("task.path=bench", "dry_run=true", *args, cwd=root)


def _scored(root: Path, files: dict[str, str], respond: Callable[[str], str]) -> list[tuple[str, dict[str, int]]]:
    """(sample id, metrics) of each score but format_valid of a run (in this process) of the benchmark made of
    `files`, against a fake server whose model answers `respond(prompt)`, the response's whole text."""
    write_bench(root, files)
    with FakeOllama(responder=lambda req: respond(req.prompt)) as server:
        result = bench_run(root, server.url, "task.path=bench", "cache=false")
    assert result.returncode == EXIT["ok"], result.stderr
    scores = read_jsonl(run_dir_of(result.stdout) / "scores.jsonl")
    return [(s["id"], s["metrics"]) for s in scores if s["scorer"] != "format_valid"]


PLACES = """from pydantic import BaseModel


class Place(BaseModel):
    direction: str
    city: str


class Names(BaseModel):
    answer: list[str | None]
"""


def test_contains_looks_in_the_values_an_answer_holds_not_its_text(tmp_path):
    files = {"tasks.yml": "- name: go\n  template: 'where is {x}?'\n  values: {x: [north, cafe]}\n"
                          "  reference: ['on', 'café']\n  format: Place\n  scorer: contains\n"
                          "- name: who\n  template: 'who is {x}?'\n  values: {x: [nobody, it]}\n"
                          "  reference: ['no', \"it's\"]\n  format: Names\n  scorer: contains\n",
             "custom_response.py": PLACES}
    answers = {"north": {"direction": "west", "city": "Oslo"}, "cafe": {"direction": "east", "city": "café"},
               "nobody": {"answer": [None]}, "it": {"answer": ["it's"]}}
    assert _scored(tmp_path, files, lambda prompt: json.dumps(answers[prompt.split()[-1][:-1]])) == [
        ("go:x=north", {"contains": 0}), ("go:x=cafe", {"contains": 1}),
        ("who:x=nobody", {"contains": 0}), ("who:x=it", {"contains": 1})]


def test_contains_of_a_number_answer_is_that_number(tmp_path):
    files = {"tasks.yml": "- name: n\n  template: 'give {x}'\n  values: {x: [a, b, c, d]}\n"
                          "  reference: [5, 5, 50, 3.14]\n  format: FloatAnswer\n  scorer: contains\n"}
    answers = {"a": "15", "b": "5.0", "c": "500", "d": "3.14159"}
    assert _scored(tmp_path, files, lambda prompt: f'{{"answer": {answers[prompt[-1]]}}}') == [
        ("n:x=a", {"contains": 0}), ("n:x=b", {"contains": 1}), ("n:x=c", {"contains": 0}), ("n:x=d", {"contains": 0})]


def test_a_reference_no_number_equals_is_refused_for_contains(tmp_path):
    result = _dry_run(tmp_path, {"tasks.yml": "- name: n\n  template: 'how many {x}?'\n  values: {x: [apples]}\n"
                                              "  reference: ['5 apples']\n  format: IntAnswer\n  scorer: contains\n"})
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'tasks.yml': task 'n': tasks[0].reference: the reference of sample 'n:x=apples' is "
        "\"5 apples\", which no answer of format 'IntAnswer' (an integer) contains: contains would score every answer "
        "to it 0; write it as the format answers it\n"))


def test_contains_finds_a_reference_with_an_invisible_end(tmp_path):
    rows = ['{"q": "fr", "reference": "Paris\\u200b"}', '{"q": "uk", "reference": "\\u2060London"}',
            '{"q": "de", "reference": "Ber\\u200blin"}']
    files = {"tasks.yml": "- name: t\n  template: 'capital of {q}'\n  values_file: v.jsonl\n  scorer: contains\n",
             "v.jsonl": "\n".join(rows)}
    capitals = {"fr": "It is Paris.", "uk": "london", "de": "Berlin"}
    assert _scored(tmp_path, files, lambda prompt: json.dumps({"answer": capitals[prompt[-2:]]})) == [
        ("t:q=fr", {"contains": 1}), ("t:q=uk", {"contains": 1}), ("t:q=de", {"contains": 0})]


def test_a_reference_of_invisible_characters_only_is_refused(tmp_path):
    result = _dry_run(tmp_path, {"tasks.yml": "- name: t\n  template: 'say {q}'\n  values_file: v.jsonl\n",
                                 "v.jsonl": '{"q": "a", "reference": "Paris"}\n{"q": "b", "reference": "\\u200b"}\n'})
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'v.jsonl': task 't': column 'reference': the reference of sample 2 is '\\u200b': an empty "
        "answer, which every answer contains; give the answer, or leave the sample out\n"))


def test_contains_finds_a_number_reference_as_a_number_in_a_text(tmp_path):
    cells = "legs,8\nwave,1.5e-7\nfar,1e3\nsays,8\nhuge,5\n"
    files = {"tasks/t/template.txt": "{q}?", "tasks/t/values.csv": f"q,reference\n{cells}",
             "tasks/t/info.yml": "scorer: contains\n"}
    answers = {"legs": "18 legs", "wave": "about 1.5e-7 m", "far": "1000 metres", "says": "It has 8.",
               "huge": "1e99999999999999999999999999999 or 5"}
    assert _scored(tmp_path, files, lambda prompt: json.dumps({"answer": answers[prompt[:-1]]})) == [
        ("t:q=legs", {"contains": 0}), ("t:q=wave", {"contains": 1}), ("t:q=far", {"contains": 1}),
        ("t:q=says", {"contains": 1}), ("t:q=huge", {"contains": 1})]


@pytest.mark.parametrize(("answer", "reference", "score"), [
    ("15 apples", "5", 0), ("page 5", "5", 1), ("5km", 5, 1), ("-5 degrees", 5, 0), ("pi is 3.14.", 3.14, 1),
    ("3.14159", "3.14", 0), ("agent 007", "007", 1), ("agent 007", 7, 0), ("CO2", 2, 0), ("১৫", 15, 1)])
def test_contains_reads_a_number_reference_as_exact_match_does(answer, reference, score):
    assert contains(json.dumps({"answer": answer}), reference) == score


PARTIAL = """from typing import Literal

from pydantic import BaseModel


class Partial(BaseModel):
    grade: Literal[0.0, 0.5, 1.0]
"""


def test_a_judge_grading_with_whole_float_values_is_graded(tmp_path):
    files = {"tasks.yml": "- name: t\n  template: 'say {x}'\n  values: {x: [a, b, c]}\n  reference: [a, b, c]\n"
                          "  judge: partial\n",
             "judges.yml": "- name: partial\n  rubric: 'grade {response} against {reference}'\n  format: Partial\n"
                           "  score: grade\n  scores: {'0.0': 0, '0.5': 0.5, '1.0': 1}\n",
             "custom_response.py": PARTIAL}
    grades = {"a": "1.0", "b": "0", "c": "0.5"}
    write_bench(tmp_path, files)

    def respond(req) -> str:
        if req.prompt.startswith("grade"):
            return f'{{"grade": {grades[fenced_fields(req.prompt)["reference"]]}}}'
        return json.dumps({"answer": req.prompt.split()[-1]})
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=respond) as server:
        result = bench_run(tmp_path, server.url, "task.path=bench", "cache=false", "judge.model=qwen2.5")
    assert result.returncode == EXIT["ok"], result.stderr
    scores = read_jsonl(run_dir_of(result.stdout) / "scores.jsonl")
    assert [(s["id"], s["metrics"], s["error"]) for s in scores if s["scorer"] == "partial"] == [
        ("t:x=a", {"partial": 1}, None), ("t:x=b", {"partial": 0}, None), ("t:x=c", {"partial": 0.5}, None)]


def test_scores_naming_one_grade_twice_are_refused(tmp_path):
    result = _dry_run(tmp_path, {
        "tasks.yml": "- name: t\n  template: 'say {x}'\n  values: {x: [a]}\n  reference: [a]\n  judge: partial\n",
        "judges.yml": "- name: partial\n  rubric: 'grade {response}'\n  format: Partial\n  score: grade\n"
                      "  scores: {'0': 0, '0.5': 0.5, '1': 1, '1.0': 0}\n",
        "custom_response.py": PARTIAL}, "judge.model=qwen2.5")
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'judges.yml': judges[0].scores: keys '1' and '1.0' name one grade, 1: give it one "
        "number\n"))


BOUNDED = """from pydantic import BaseModel, Field


class Choice(BaseModel):
    answer: str = Field(pattern="^[A-D]$")


class Rating(BaseModel):
    answer: int = Field(ge=1, le=5)
"""


@pytest.mark.parametrize(("task", "said"), [
    ("- name: mc\n  template: 'pick for {q}'\n  values: {q: [one, two, three]}\n  reference: ['A', ' B ', '(C)']\n"
     "  format: Choice\n",
     "task 'mc': tasks[0].reference: the reference of sample 'mc:q=three' is \"(C)\", which no answer of format "
     "'Choice' (a string with pattern \"^[A-D]$\") matches: exact_match"),
    ("- name: rate\n  template: 'rate {q}'\n  values: {q: [one, two]}\n  reference: [5, 7]\n  format: Rating\n"
     "  scorer: contains\n",
     "task 'rate': tasks[0].reference: the reference of sample 'rate:q=two' is 7, which no answer of format 'Rating' "
     "(an integer with minimum 1, maximum 5) contains: contains")])
def test_a_reference_outside_the_formats_bounds_is_refused(tmp_path, task, said):
    result = _dry_run(tmp_path, {"tasks.yml": task, "custom_response.py": BOUNDED})
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'tasks.yml': {said} would score every answer to it 0; write it as the format answers "
        "it\n"))

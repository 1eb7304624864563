"""The twenty-second hostile pass, the features a benchmark is made of (data files, examples, judges, scoring, shards,
repeats, the cache) used together as a demanding researcher does.

Found and fixed:
- A judge request that failed for one answer (a 5xx, a timeout after the judge's retries: no reply, so no grade of
  the answer) was that answer's scorer error for good: `retry` said "every sample ... has an answer; nothing to retry"
  and `resume` "completed_with_errors; nothing to resume", while a model's failed request is asked again by `retry`.
  `retry` judges such a carried answer again, the calls that got a reply read again (audit.retry), and `resume` of
  such a run names it (audit.resume).
- A multiple-choice task from a CSV whose references are the option's letter (`B`), graded by contains on a free-text
  answer (StringAnswer): contains finds the letter anywhere, ignoring case (`Answer: (C)` holds A, `because` holds B),
  so nearly every answer scored 1. A capital-letter reference so graded is refused at compile; an Enum of letters or
  a pattern-bound answer compiles (compiler.answerable).
- A retry onto a model or judge model pulled again was refused with `resume with --force to continue with it anyway`:
  resume of the finished parent says `nothing to resume`. It names `retry with --force` (audit.resume.check_model).

Tried and held: GSM8K- and MMLU-like tasks from JSONL and CSV graded as a researcher would; two judges on one task with
repeats and judge repeats, on the loopback server and on llama-cpp-python's; rejudges by another judge model, kept
apart from the cache; compare naming a changed judge; shards from the cache and not, merged; a retry of a shard merged;
data files named by several tasks, 100,000 rows, replaced after the run; a sweep whose judge is one of its models."""

from __future__ import annotations

import json

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.chat import ChatRequest, Reply
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import bench_run, call_benchrun, run_dir_of

SUMMARIES = {
    "tasks.yml": "- name: summ\n  template: 'Summarise: {text}'\n  values_file: data/docs.jsonl\n  scorer: contains\n"
                 "  judge: [quality, faithful]\n",
    "judges.yml": "- name: quality\n  rubric: 'Rate 1-5. Summary: {response}'\n  format: Rating\n  score: rating\n"
                  "- name: faithful\n  rubric: 'Faithful? {response}'\n  format: Faith\n  score: ok\n",
    "custom_response.py": "from pydantic import BaseModel, Field\n\n\nclass Rating(BaseModel):\n"
                          "    rating: int = Field(ge=1, le=5)\n\n\nclass Faith(BaseModel):\n    ok: bool\n",
    "data/docs.jsonl": '{"id": "d1", "text": "The cat sat.", "reference": "cat"}\n'
                       '{"id": "d2", "text": "Stocks fell.", "reference": "stocks"}\n'}
"""A summarisation task graded by `contains` and by two judges: a 1-5 rating and a yes/no faithfulness check."""


class JudgeDownOnce:
    """The model summarises; the judge qwen2.5 rates 4 and says faithful, but its first rating of d2 is a 500."""

    def __init__(self) -> None:
        self.failed = False

    def __call__(self, req: ChatRequest) -> Reply | str:
        if not req.model.startswith("qwen2.5"):
            return json.dumps({"answer": "A cat." if "cat" in req.prompt else "Markets dropped."})
        if req.prompt.startswith("Rate") and "Markets" in req.prompt and not self.failed:
            self.failed = True
            return Reply(status=500, error="judge overloaded")
        return json.dumps({"rating": 4} if req.prompt.startswith("Rate") else {"ok": True})


def test_a_retry_judges_again_a_carried_answer_whose_judge_request_failed(tmp_path):
    write_bench(tmp_path, SUMMARIES)
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=JudgeDownOnce()) as server:
        ran = bench_run(tmp_path, server.url, "task.path=bench", "cache=false", "judge.model=qwen2.5",
                        "+judge.retries=0")
        parent = run_dir_of(ran.stdout)
        resumed = call_benchrun("resume", str(parent), cwd=tmp_path, module="benchrun.audit")
        retried = call_benchrun("retry", str(parent), cwd=tmp_path, module="benchrun.audit")
    assert ran.returncode == EXIT["ok"], ran.stderr
    assert json.loads((parent / "run.json").read_text())["counts"]["scorer_errors"] == 1
    parent_id = json.loads((parent / "run.json").read_text())["run_id"]
    assert (resumed.returncode, resumed.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{parent}': run {parent_id} is completed_with_errors; nothing to resume; to ask its "
        f"failed judge requests again: benchrun-audit retry {parent}\n"))
    assert retried.returncode == EXIT["ok"], retried.stderr
    assert retried.stdout.splitlines()[-1] == (
        f"retry of run {parent_id}: 2 answers carried over (1 judged again), 0 samples asked again")
    child = run_dir_of(retried.stdout)
    assert [(c["id"], c["judge"], c["reply"], c.get("carried_from")) for c in read_jsonl(child / "judgements.jsonl")] == [
        ("summ:d1", "quality", '{"rating": 4}', parent_id), ("summ:d1", "faithful", '{"ok": true}', parent_id),
        ("summ:d2", "quality", '{"rating": 4}', None), ("summ:d2", "faithful", '{"ok": true}', parent_id)]
    info = json.loads((child / "run.json").read_text())
    assert (info["status"], info["counts"]["scorer_errors"], info["history"][0]["judged_again"]) == (
        "completed", 0, ["summ:d2"])
    summary = {(m["task"], m["metric"]): (m["n"], m["mean"], m["errors"])
               for m in json.loads((child / "summary.json").read_text())["metrics"]}
    assert summary["summ", "quality"] == (2, 4, 0)
    assert [r["carried_from"] for r in read_jsonl(child / "responses.jsonl")] == [parent_id, parent_id]
    assert call_benchrun("verify", str(child), cwd=tmp_path, module="benchrun.audit").returncode == EXIT["ok"]
    shown = call_benchrun("show", str(child), cwd=tmp_path, module="benchrun.audit").stdout
    assert "(2 answers carried over (1 judged again), 0 samples asked again)" in " ".join(shown.split()), shown


MMLU = {"tasks.yml": "- name: mmlu\n  template: \"{question}\\n(A) {A}\\n(B) {B}\\n(C) {C}\\nAnswer with the letter.\"\n"
                     "  values_file: data/mmlu.csv\n  scorer: contains\n",
        "data/mmlu.csv": "id,question,A,B,C,reference\nm1,Capital of France?,Berlin,Paris,Rome,B\n"
                         "m2,Largest planet?,Mars,Venus,Jupiter,C\n",
        "custom_response.py": "from enum import Enum\n\nfrom pydantic import BaseModel, Field\n\n\n"
                              "class L(str, Enum):\n    A = 'A'\n    B = 'B'\n    C = 'C'\n\n\n"
                              "class Letter(BaseModel):\n    answer: L\n\n\n"
                              "class Lettered(BaseModel):\n    answer: str = Field(pattern='^[A-C]$')\n"}
"""A multiple-choice task from a CSV, its references the right option's letter, graded by contains."""


@pytest.mark.parametrize("fmt", ["StringAnswer", "StringJustification"])
def test_a_capital_letter_graded_by_contains_on_a_free_text_answer_is_refused(tmp_path, fmt):
    """Before: compiled; `{"answer": "Answer: (C)"}` scored contains 1 for A, and `The answer is (A) because` for B."""
    write_bench(tmp_path, {**MMLU, "tasks.yml": MMLU["tasks.yml"] + f"  format: {fmt}\n"})
    result = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'data/mmlu.csv': task 'mmlu': column 'reference': the reference of sample 'mmlu:m1' is "
        "\"B\", a capital letter: contains finds it, ignoring case, in every answer with that letter in it (\"Answer: "
        "(C)\" holds \"A\", \"because\" holds \"B\"), so nearly every answer would score 1; grade it with exact_match, "
        "or answer in a format that takes only the letters (an Enum)\n"))


@pytest.mark.parametrize("fmt", ["Letter", "Lettered"])
def test_a_capital_letter_graded_by_contains_on_an_answer_of_letters_compiles(tmp_path, fmt):
    write_bench(tmp_path, {**MMLU, "tasks.yml": MMLU["tasks.yml"] + f"  format: {fmt}\n"})
    result = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")


def test_a_retry_onto_a_model_pulled_again_names_retry_force(tmp_path):
    """Before: `...; resume with --force to continue with it anyway`, and resume of the finished parent says `nothing to
    resume`."""
    write_bench(tmp_path, SUMMARIES)
    down = {"first": True}

    def responder(req: ChatRequest) -> Reply | str:
        if "Stocks" in req.prompt and down.pop("first", False):
            return Reply(status=500, error="overloaded")
        return json.dumps({"rating": 4} if req.prompt.startswith("Rate") else {"ok": True}
                          if req.prompt.startswith("Faithful") else {"answer": "A cat."})

    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=responder) as server:
        ran = bench_run(tmp_path, server.url, "task.path=bench", "cache=false", "judge.model=qwen2.5",
                        "runner.retries=0")
        server.digests.update({"llama3.2": "f" * 64, "llama3.2:latest": "f" * 64})
        retried = call_benchrun("retry", str(run_dir_of(ran.stdout)), cwd=tmp_path, module="benchrun.audit")
    assert (retried.returncode, retried.stdout) == (EXIT["archive"], "")
    assert retried.stderr.startswith("benchrun: error: model llama3.2 is now ffffffffffff, the run used ")
    assert retried.stderr.endswith("; retry with --force to continue with it anyway (recorded in run.json)\n")

"""Hostile input, eighth pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad, each
with the rule it now obeys.

- a response cache whose entries were planted or damaged (a shared cache, another program's writes): an entry whose
  token counts or durations no server can have measured (-5, 10**30 tokens, a negative duration) was taken into the
  run's records as it was (the integer beyond 2^53 - 1 in responses.jsonl), and one whose text passed
  runner.max_response_bytes was recorded whole; now a cached answer passes the boundary a server's answer passes
  (`received`): the counts not reported, and a text too long a miss (asked afresh, the entry deleted)
- a scorer returning an empty dict for a sample (a dict scorer whose every key was left out): no metric and no
  error, so the sample left the scorer's statistics unseen (`n` one less, `errors` 0, the mean over the others); now
  that call's scorer error, counted as one
- a server quoting the API key as a JSON encoder writes it (`/` as `\\/`, PHP's json_encode; `+` and `/` as
  `\\u002B`, .NET's default encoder, or in lower case) in a body benchrun quotes as it came (an answer of the wrong
  shape, Ollama's error body without an `error` field): kept unmasked in responses.jsonl; now each form is masked as
  the key is
- an answer or a judge's reply giving one key twice (`{"score": 0, "score": 1}`): read as its last, without a word, so
  a judge that gave two grades was graded by the second and the format check passed an answer of two; now the one
  reader of answers' JSON (`core.text.json_value`) refuses it, naming the key: the answer's format problem, the
  reply's scorer error
- a model pulled again while the run asked (Ollama's `ollama pull` of a new version under the name): the run said one
  digest answered all its answers; now the digest is asked again as the run ends and one that changed fails the run
  (its answers kept), naming both digests and the server
"""

from __future__ import annotations

import json

import pytest

from benchrun.core.errors import EXIT
from benchrun.core.recordvalues import short_digest
from benchrun.testing.lab import Lab, half_right
from benchrun.testing.ollama_server import FakeOllama, Reply, fake_digest
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import odd_one
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import scorer, write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.judges import TASKS
from tests.helpers.p38_archive import resealed
from tests.helpers.sqlitefile import sqlite_db
from tests.helpers.wire import asking, records, wire

pytestmark = pytest.mark.slow


def _planted(lab: Lab, cache, plant) -> list[dict]:
    """A run that fills the cache, `plant` applied to every entry's answer, and the records of a second run."""
    args = [arg for arg in lab.args("runner.max_response_bytes=2048") if arg != "cache=false"] + [f"cache_dir={cache}"]
    assert lab.call(*args).returncode == EXIT["ok"]
    with sqlite_db(cache / "responses.sqlite3") as db:
        for key, answer in db.execute("SELECT key, answer FROM answers").fetchall():
            db.execute("UPDATE answers SET answer = ? WHERE key = ?", (json.dumps(plant(json.loads(answer))), key))
        resealed(db)  # as a hand that seals what it planted leaves it: the checks after the seal's see it
    assert lab.call(*args).returncode == EXIT["ok"]
    return read_jsonl(lab.run_dirs()[1] / "responses.jsonl")


def test_a_cached_answer_holds_only_what_a_server_can_have_measured(tmp_path):
    def unmeasurable(answer: dict) -> dict:
        return {**answer, "prompt_tokens": -5, "completion_tokens": 10**30,
                "durations_ns": {"total": -1, "eval": 10**30, "load": 5}}

    with Lab(tmp_path, n=2, latency_s=0) as lab:
        rows = _planted(lab, tmp_path / "cache", unmeasurable)
    assert [(r["cached_from"] is not None, r["prompt_tokens"], r["completion_tokens"], r["durations_ns"])
            for r in rows] == [(True, None, None, {"load": 5})] * 2


def test_a_cached_answer_longer_than_max_response_bytes_is_asked_afresh(tmp_path):
    with Lab(tmp_path, n=2, latency_s=0) as lab:
        rows = _planted(lab, tmp_path / "cache", lambda answer: {**answer, "text": "x" * 3000})
    assert [(r["cached_from"], r["text"], r["attempts"]) for r in rows] == [
        (None, '{"answer": 0}', 1), (None, '{"answer": 0}', 1)]
    with sqlite_db(tmp_path / "cache" / "responses.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM answers WHERE length(answer) > 2048").fetchone() == (2,)


def test_a_scorer_giving_an_empty_dict_is_that_samples_error_not_a_sample_left_out(tmp_path):
    with Lab(tmp_path, n=3, latency_s=0, scorer=scorer("return {} if values['a'] == 1 else {'right': 1}")) as lab:
        assert lab.call(*lab.args()).returncode == EXIT["ok"]
        [run_dir] = lab.run_dirs()
    empty = {"type": "TypeError", "message": "scorer result s is an empty dict, which gives no metric (the sample "
                                             "would be left out of the scorer's statistics unseen); return a number, a "
                                             "bool or a dict of them"}
    assert [(r["metrics"], r["error"]) for r in read_jsonl(run_dir / "scores.jsonl") if r["scorer"] == "s"] == [
        ({"s.right": 1}, None), (None, empty), ({"s.right": 1}, None)]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert [(m["metric"], m["n"], m["errors"]) for m in summary["metrics"]] == [("format_valid", 3, 0),
                                                                               ("s.right", 2, 1)]


KEY = "sk-proj/AbCdEfGhIjKl+MnOpQrStUv0123"
WRITTEN = {"PHP": KEY.replace("/", "\\/"), ".NET": KEY.replace("/", "\\u002F").replace("+", "\\u002B"),
           "lower case": KEY.replace("/", "\\u002f").replace("+", "\\u002b")}


@pytest.mark.parametrize("encoder", list(WRITTEN))
def test_a_key_a_server_quotes_as_a_json_encoder_writes_it_is_masked(tmp_path, encoder):
    body = f'{{"oops": "you sent {WRITTEN[encoder]}"}}'.encode()
    with FakeOpenAI(models=["m"], responder=odd_one(Reply(wire=wire(body))), api_key=KEY) as server, \
            Lab(tmp_path, n=4, latency_s=0) as lab:
        result = call_benchrun(*asking(lab, server, "openai", "runner.retries=0"), cwd=tmp_path,
                               env={"OPENAI_API_KEY": KEY})
        errors = [r["error"] for r in records(lab) if r["error"]]
    assert (result.returncode, errors) == (EXIT["ok"], [
        {"type": "APIError", "message": 'not a chat completion: {"oops": "you sent ***"}'}])
    assert [p for p in tmp_path.rglob("*") if p.is_file() and b"AbCdEfGhIjKl" in p.read_bytes()] == []


TWICE = 'the key "{}" is given twice in one object (which one is meant, JSON does not say); give each key once'


def test_an_answer_giving_a_key_twice_is_its_format_problem(tmp_path):
    with Lab(tmp_path, n=4, latency_s=0, responder=odd_one('{"answer": 0, "answer": 21}')) as lab:
        assert lab.call(*lab.args()).returncode == EXIT["ok"]
        checks = [(s["metrics"], s["detail"]) for s in records(lab, "scores.jsonl") if s["scorer"] == "format_valid"]
    assert checks == [({"format_valid": 1}, None)] * 3 + [({"format_valid": 0}, "invalid JSON: " + TWICE.format("answer"))]


SCORED = """- name: names
  rubric: "Q {prompt} A {response} R {reference}"
  format: Score
  score: score
"""


def test_a_judges_reply_giving_two_grades_grades_nothing(tmp_path):
    def replies(req):
        return '{"score": 0, "score": 1}' if req.model.startswith("qwen2.5") else '{"answer": "at"}'

    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": SCORED,
                           "custom_response.py": "from pydantic import BaseModel\n\n\nclass Score(BaseModel):\n"
                                                 "    score: float\n"})
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=replies) as server:
        result = call_benchrun(f"runner.host={server.url}", "task.path=bench", "judge.model=qwen2.5", "cache=false",
                               f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert result.returncode == EXIT["ok"], result.stderr
    [scores] = (tmp_path / "outputs").rglob("scores.jsonl")
    assert [(s["metrics"], s["error"]) for s in read_jsonl(scores) if s["scorer"] == "names"] == [
        (None, {"type": "JudgeReplyInvalid", "message": "1 of 1 judgements give no grade: the judge's reply is not "
                                                        "JSON: " + TWICE.format("score")})] * 3


def test_a_model_pulled_again_while_the_run_asks_fails_the_run_naming_both_digests(tmp_path):
    asked = []

    def repulled(req):
        asked.append(req)
        if len(asked) == 2:  # the second answer on, another model answers under the name
            lab.server.digests["llama3.2"] = "f" * 64
        return half_right(req)

    with Lab(tmp_path, n=4, latency_s=0, responder=repulled) as lab:
        result = lab.call(*lab.args("runner.concurrency=1"))
        [run_dir] = lab.run_dirs()
    began = fake_digest("llama3.2")
    line = (f"model llama3.2 changed on {lab.server.url} while the run asked: digest {short_digest(began)} when it "
            f"began, digest {short_digest('f' * 64)} as it ended (pulled again?); its answers may come from either "
            "model and cannot be told apart: run it again")
    assert (result.returncode, result.stderr) == (EXIT["runner"], f"benchrun: error: {line}\n")
    info = json.loads((run_dir / "run.json").read_text())
    assert (info["status"], info["reason"], info["identity"]["digest"]) == ("failed", line, began)
    assert len(read_jsonl(run_dir / "responses.jsonl")) == 4


def test_a_server_that_cannot_say_its_digest_as_the_run_ends_changes_nothing(tmp_path):
    asked = []

    def gone_from_the_list(req):
        asked.append(req)
        if len(asked) == 4:
            lab.server.models.remove("llama3.2")
        return half_right(req)

    with Lab(tmp_path, n=4, latency_s=0, responder=gone_from_the_list) as lab:
        result = lab.call(*lab.args("runner.concurrency=1"))
        [run_dir] = lab.run_dirs()
    assert result.returncode == EXIT["ok"], result.stderr
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"

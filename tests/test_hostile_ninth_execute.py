"""Hostile input, ninth pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad, each
with the rule it now obeys.

- an Ollama answer whose token counts or durations are not JSON integers (`"eval_count": true`,
  `"prompt_eval_count": "7"`, `"total_duration": 5.0`): the official client's lax model took them as 1, 7 and 5, and
  responses.jsonl said the server had measured those; one of 1.5 lost the whole answer (`not Ollama's chat answer:
  ... got a number with a fractional part`), though an OpenAI-compatible answer keeps its text with such a count. Now
  a count or duration that is not a JSON integer is left out of the answer before the client reads it: not reported,
  the answer kept (one rule for both runners, `runners.base.json_count`); likewise a `done_reason` that is not a
  string (`5`: the answer was lost, where an OpenAI-compatible `finish_reason` of 5 is not kept and the answer is)
- a scorer returning an int subclass whose `__abs__` or `__float__` lies (`class Odd(int)` of 10**400, `abs()` 0):
  it passed the bound on a metric's magnitude, 10**400 reached scores.jsonl whole and the run crashed summing it (a
  traceback, exit 1, no summary.json); now a value is read as Python's own int or float (through those types' own
  methods) before it is checked, so that call's scorer error says what it is (`got an int of 1,329 bits`)
- a server describing its model at length (Ollama's /api/show with a template of 8 MiB, /api/version an 8 MiB
  version, its /api/tags entry 8 MiB of details; an OpenAI-compatible /models entry likewise), each answer within
  runner.max_response_bytes: kept whole in run.json, once for each server of a list (and once more for the list), so
  a run over two such servers wrote a run.json of 75 MB and exited 0, and every reader of the run then refused it
  (`verify`: `75,492,682 bytes, more than benchrun writes in a run.json (67,108,864 bytes)`, exit 4); now what one
  server says of its model is at most 1 MiB of JSON (a real server's is a few KB), else the preflight's one line
  naming the server (exit 3)
- a scorer writing, to the scorer process's reply pipe, a line in the shape of its call's reply whose score no
  scorer may give (`[0, {"s": Infinity}, null]`): taken as the reply (the seventh pass refused only lines not in that
  shape), so the run crashed summing an infinite score (`OverflowError`, exit 1) with `{"s": null}` in scores.jsonl;
  now a reply is taken only as the scorer process writes one (names without control characters, finite numbers
  within 1e100, or an error of two strings), else it is that call's `ScorerProtocolError`, the process replaced
- a server's URL with a query or a fragment (`runner.base_url='http://gpu1:8000/v1?x=1'`, `runner.host=...#f`):
  taken, and recorded in run.json as given, though httpx adds the API's paths after the query
  (`/v1?x=1/chat/completions`: the preflight said `has no /models (404)`), a fragment and Ollama's client drop it;
  now refused with the other malformed URLs, naming the key, before anything is made
- an Ollama /api/tags entry that names no model (`{"name": "x"}`, which the official client takes, its `model`
  None) while the model asked for is not listed: a traceback (`TypeError: '<' not supported between instances of
  'str' and 'NoneType'`, exit 1) as the models it has were listed; now the one line saying what it has
- an OpenAI-compatible answer whose `model`, `system_fingerprint` or `refusal` is not a string but JSON nested 300
  deep: the run crashed writing the record (`PydanticSerializationError: ... Maximum serialization depth exceeded`,
  a traceback, exit 1), or with an API key set the answer was lost to that error (900 deep: `RecursionError`); now
  each is kept only as the API gives it, a string, else not kept (null), the answer kept
- an Ollama model list giving the model asked for twice with two digests (a damaged or hand-edited store): the first
  was taken without a word, though which one answers cannot be told; now refused at the preflight, naming both
- a server's description of its model nested deep (a /models entry's `owned_by`, Ollama's `model_info`, 300 deep):
  a traceback as run.json was written (900 deep: `RecursionError` making its strings writable); now at most 32
  levels, else the preflight's one line naming the server
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.lab import Lab, half_right
from benchrun.testing.ollama_server import Reply
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import odd_one
from tests.helpers.benchfiles import scorer, write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.judges import JUDGES, RESPONSE, TASKS
from tests.helpers.wire import answering, asking, records, wire

pytestmark = pytest.mark.slow

DEFAULT_DURATIONS = {"load": 5_000_000, "prompt_eval": 10_000_000, "eval": 30_000_000}


def _counted(**counts: object):
    """The lab's answers, with these counts and durations as the server writes them."""
    def respond(req):
        reply = half_right(req)
        return replace(Reply(content=reply) if isinstance(reply, str) else reply, **counts)
    return respond


@pytest.mark.parametrize("counts, reported", [
    ({"eval_count": True, "prompt_eval_count": "7", "total_duration": 5.0}, (None, None, DEFAULT_DURATIONS, "stop")),
    ({"eval_count": 1.5, "prompt_eval_count": 7, "eval_duration": "30"},
     (7, None, {"total": 50_000_000, "load": 5_000_000, "prompt_eval": 10_000_000}, "stop")),
    ({"eval_count": 2, "done_reason": 5}, (7, 2, {"total": 50_000_000, **DEFAULT_DURATIONS}, None)),
])
def test_an_ollama_count_that_is_not_a_json_integer_is_not_reported_and_the_answer_kept(tmp_path, counts, reported):
    with Lab(tmp_path, n=1, latency_s=0, responder=_counted(**counts)) as lab:
        assert lab.call(*lab.args()).returncode == EXIT["ok"]
        [row] = records(lab)
    assert (row["prompt_tokens"], row["completion_tokens"], row["durations_ns"], row["done_reason"]) == reported
    assert (row["text"], row["error"]) == ('{"answer": 0}', None)


LYING_INT = """class Odd(int):
    def __abs__(self):
        return 0

    def __float__(self):
        return 0.0

    def __repr__(self):
        return '1'

return Odd(10**400)"""


def test_a_scorer_value_of_an_int_subclass_is_read_as_the_int_it_is(tmp_path):
    with Lab(tmp_path, n=1, latency_s=0, scorer=scorer(LYING_INT)) as lab:
        result = lab.call(*lab.args())
        [run_dir] = lab.run_dirs()
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    assert [(s["metrics"], s["error"]) for s in records(lab, "scores.jsonl") if s["scorer"] == "s"] == [
        (None, {"type": "TypeError", "message": "scorer result s must be a finite number of magnitude at most 1e+100, "
                                                "or a bool; got an int of 1,329 bits"})]
    assert (run_dir / "summary.json").exists()


LONG = "t" * 1_100_000


def test_an_ollama_describing_its_model_at_length_is_refused_at_the_preflight(tmp_path):
    with Lab(tmp_path, n=1, latency_s=0) as lab:
        answering(lab.server, "/api/show", {"template": LONG, "model_info": {}, "details": {}})
        result = lab.call(*lab.args())
        url = lab.server.url
    assert (result.returncode, result.stderr) == (EXIT["runner"], (
        f"benchrun: error: Ollama at {url} describes the model in 1,100,378 bytes of JSON, more than run.json keeps of "
        "a server's description (1,048,576 bytes; a real server's is a few KB): not what a model server says; "
        "runner.host must name one\n"))


def test_an_openai_server_describing_its_model_at_length_is_refused_at_the_preflight(tmp_path):
    with FakeOpenAI(models=["m"]) as server, Lab(tmp_path, n=1, latency_s=0) as lab:
        answering(server, "/v1/models", {"data": [{"id": "m", "object": "model", "notes": LONG}]})
        result = call_benchrun(*asking(lab, server, "openai"), cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["runner"], (
        f"benchrun: error: the server at {server.url} describes the model in 1,100,185 bytes of JSON, more than "
        "run.json keeps of a server's description (1,048,576 bytes; a real server's is a few KB): not what a model "
        "server says; runner.base_url must name one\n"))


FORGED = """import os
for fd in range(100, 110):
    try:
        os.write(fd, b'[0, {"s": Infinity}, null]\\n')
    except OSError:
        pass
return 1"""


def test_a_reply_a_scorer_forges_on_the_reply_pipe_is_taken_only_if_a_scorer_could_give_it(tmp_path):
    with Lab(tmp_path, n=1, latency_s=0, scorer=scorer(FORGED)) as lab:
        result = lab.call(*lab.args())
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    assert [(s["metrics"], s["error"]) for s in records(lab, "scores.jsonl") if s["scorer"] == "s"] == [
        (None, {"type": "ScorerProtocolError", "message": (
            "the scorer wrote \"[0, {\\\"s\\\": Infinity}, null]\\n\" to the scorer process's reply pipe, a file "
            "descriptor of benchrun's: what a scorer prints goes to stdout or stderr (benchrun.log); a file it "
            "writes, it opens")})]


NOT_A_ROOT = ("is not a server's URL: a query (?...) or a fragment (#...) has no place in it, for benchrun adds the "
              "API's paths to it (the query sent as part of the path, or dropped); give http://host:port and the "
              "path of the API's root")


@pytest.mark.parametrize("key, url", [("runner.host", "http://gpu1:11434/?x=1"), ("runner.host", "http://gpu1:11434#f"),
                                      ("judge.host", "http://gpu2:11434?"),
                                      ("runner.base_url", "http://gpu1:8000/v1?x=1#f")])
def test_a_servers_url_with_a_query_or_a_fragment_is_refused(tmp_path, key, url):
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    runner = ["runner=openai", "runner.model=m"] if key == "runner.base_url" else []
    result = call_benchrun(*runner, f"{key}='{url}'", "task.path=bench", "judge.model=qwen2.5",
                           f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (
        EXIT["usage"], "", f"benchrun: error: in 'config': {key}: '{url}' {NOT_A_ROOT}\n")
    assert list((tmp_path / "outputs").rglob("*")) == []


def test_an_ollama_listing_an_entry_without_a_model_name_says_what_it_has(tmp_path):
    with Lab(tmp_path, n=1, latency_s=0) as lab:
        answering(lab.server, "/api/tags", {"models": [{"name": "x"}, {"model": "y"}]})
        result = lab.call(*lab.args())
        url = lab.server.url
    assert (result.returncode, result.stderr) == (EXIT["runner"], (
        f"benchrun: error: model 'llama3.2' is not pulled on {url} (it has: y); run `ollama pull llama3.2` or pick "
        "another runner.model\n"))


def test_an_ollama_listing_the_model_twice_with_two_digests_is_refused_at_the_preflight(tmp_path):
    twice = [{"model": "llama3.2:latest", "digest": digest} for digest in ("b" * 64, "a" * 64)]
    with Lab(tmp_path, n=1, latency_s=0) as lab:
        answering(lab.server, "/api/tags", {"models": [{"model": "gemma3:latest"}, *twice]})
        result = lab.call(*lab.args())
        url = lab.server.url
    assert (result.returncode, result.stderr) == (EXIT["runner"], (
        f"benchrun: error: Ollama at {url} lists model 'llama3.2:latest' 2 times with different digests ({'a' * 64}, "
        f"{'b' * 64}): which one answers cannot be told; remove the copies with `ollama rm` and pull it again\n"))


DEEP = json.loads("[" * 300 + "]" * 300)


def test_an_openai_answers_model_id_that_is_not_a_string_is_not_kept(tmp_path):
    body = json.dumps({"choices": [{"message": {"content": '{"answer": 21}', "refusal": DEEP},
                                    "finish_reason": "stop"}], "model": DEEP, "system_fingerprint": 7}).encode()
    with FakeOpenAI(models=["m"], responder=odd_one(Reply(wire=wire(body)))) as server, \
            Lab(tmp_path, n=4, latency_s=0) as lab:
        result = call_benchrun(*asking(lab, server, "openai", "runner.retries=0"), cwd=tmp_path)
        rows = records(lab)
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    assert [(r["text"], r["error"], r["extra"]) for r in rows][3] == (
        '{"answer": 21}', None, {"model": None, "system_fingerprint": None})


def _served(lab: Lab, openai: FakeOpenAI, runner: str) -> tuple[object, str]:
    """The server that describes the model, and the start of its error line."""
    if runner == "ollama":
        return lab.server, f"Ollama at {lab.server.url}"
    return openai, f"the server at {openai.url}"


@pytest.mark.parametrize("runner, path, described", [
    ("ollama", "/api/show", {"model_info": {"a": DEEP}, "details": {}}),
    ("openai", "/v1/models", {"data": [{"id": "m", "owned_by": DEEP}]}),
])
def test_a_description_of_the_model_nested_deep_is_refused_at_the_preflight(tmp_path, runner, path, described):
    with FakeOpenAI(models=["m"]) as openai, Lab(tmp_path, n=1, latency_s=0) as lab:
        server, named = _served(lab, openai, runner)
        answering(server, path, described)
        result = call_benchrun(*asking(lab, openai, runner), cwd=tmp_path)
    key = "runner.host" if runner == "ollama" else "runner.base_url"
    assert (result.returncode, result.stderr) == (EXIT["runner"], (
        f"benchrun: error: {named} describes the model in JSON nested more than 32 deep, deeper than run.json keeps "
        f"of a server's description (a real server's is a few levels): not what a model server says; {key} must "
        "name one\n"))

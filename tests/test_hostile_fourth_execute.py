"""Hostile input, fourth pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad, each
with the rule it now obeys.

- a server that began to answer and broke the answer (a body shorter than its Content-Length, a bad or conflicting
  Content-Length, an illegal status line or chunk header): counted as a lost server, so one odd answer interrupted
  the whole run; now that sample's error once its retries are used up (the server answered: it is there)
- a preflight answer longer than runner.max_response_bytes, or broken off (/api/tags, /api/show, /api/version,
  GET /models): a traceback; now one line naming the server
- an answer holding an integer of more digits than Python reads (4,300): the format check's ValueError crashed the
  run (exit 1, left `running`); every reader of an answer's JSON (the format check, the built-in scorers, the judge's
  reply) now reads it one way (`core.text.json_value`), and that is the answer's format problem
- an OpenAI-compatible answer whose token counts are not whole numbers (1.5, "many", 1e400): the answer was lost to a
  pydantic error of three lines and a link; now kept, the counts not reported (as for a negative count). An answer of
  the wrong shape (content a list or a number, message a string) is one line saying which field holds what, not
  `AttributeError: 'str' object has no attribute 'get'`; Ollama's, `not Ollama's chat answer: ...` without the link
- a list of servers of which one answers 5xx, or 404 (the model removed from that server alone): that server's error
  was the sample's (half the samples lost to one node's 404, and no fail-fast, answers coming in between), though
  another server was there to ask; now a request that failed at one server after its retries there is asked of a
  live one it has not tried, its failed attempts kept (`at URL: ...`); the sample's error only when every one failed
- a judge that inherits the model's list of servers: asked the first server only (the pool's `complete`), so one
  server lost took the run down (`interrupted`) and one answering 5xx gave every answer a scorer error; the judge now
  asks through the same dispatch as the model (fewest outstanding, failover, a lost server in run.json's history)
- an answer or a judge's reply whose JSON escapes half a surrogate pair (`{"answer": "\\ud800"}`, ASCII text): the
  Rust validator of the format check cannot encode the string it holds, and the run crashed (exit 1, `failed`); the one
  reader of answers' JSON now makes its strings writable (U+FFFD), the text kept as received
- one server listed under two names (`localhost` and `127.0.0.1`): taken as two, so twice `runner.concurrency` went
  to it and its figures were split in two; now refused before any question, naming the address both reach
"""

from __future__ import annotations

import json
import threading

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.http_fake import Response
from benchrun.testing.lab import Lab
from benchrun.testing.ollama_server import FakeOllama, Reply
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import listbench_answer, odd_one
from tests.helpers.archives import read_jsonl, summary_of
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import run_dir_of
from tests.helpers.judges import RESPONSE, answer
from tests.helpers.wire import ANSWER, GRADES, MODELS, asking, judge_grades, judged_over, listed, over, records, wire

LIMIT = 100_000
BROKEN = {  # what the server sends for a = 3 -> the error recorded for it
    "a body cut short": (wire(ANSWER[:20], length=len(ANSWER)), "RemoteProtocolError", "the answer broke off: peer "
                         f"closed connection without sending complete message body (received 20 bytes, expected "
                         f"{len(ANSWER)})"),
    "a bad Content-Length": (wire(ANSWER, length="-5"), "RemoteProtocolError", "bad Content-Length"),
    "an illegal status line": (b"HTTX/9 abc\r\n\r\n", "RemoteProtocolError",
                               'illegal status line: "HTTX/9 abc"'),
    "an illegal chunk": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
                         "RemoteProtocolError", 'the answer broke off: illegal chunk header: "zz\\r\\n"'),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_an_answer_broken_mid_way_is_that_samples_error_not_a_lost_server(tmp_path, case):
    data, kind, message = BROKEN[case]
    with Lab(tmp_path, n=6, latency_s=0, responder=odd_one(Reply(wire=data))) as lab:
        result = lab.call(*lab.args())
        responses = records(lab)
    assert result.returncode == EXIT["ok"], result.stderr
    [odd] = [r for r in responses if r["id"] == "times7:a=3"]
    error = {"type": kind, "message": message}
    assert (odd["text"], odd["error"], odd["attempts"]) == (None, error, 2)
    assert [a["error"] for a in odd["failed_attempts"]] == [error, error]
    assert sorted(r["id"] for r in responses if r["error"] is None) == [f"times7:a={a}" for a in (0, 1, 2, 4, 5)]


PREFLIGHT = {  # (runner, path, the answer) -> what the run says
    ("ollama", "/api/tags", "endless"): "Ollama at {url} answered the preflight with what is not Ollama's answer "
                                        "(TooLarge: the answer is longer than runner.max_response_bytes (100,000 "
                                        "bytes); the rest was not read); runner.host must name an Ollama server",
    ("ollama", "/api/version", "short"): "Ollama at {url} answered the preflight with what is not Ollama's answer "
                                         "(BrokenAnswer: the answer broke off: peer closed connection without sending "
                                         "complete message body (received 2 bytes, expected 100)); runner.host must "
                                         "name an Ollama server",
    ("openai", "/v1/models", "endless"): "the server at {url} answered GET /models without a model list (TooLarge: the "
                                         "answer is longer than runner.max_response_bytes (100,000 bytes); the rest "
                                         "was not read); runner.base_url is the API root, usually ending in /v1",
    ("openai", "/v1/chat/completions", "endless"): "the server at {url} did not answer the structured-output probe "
                                                   "(the answer is longer than runner.max_response_bytes (100,000 "
                                                   "bytes); the rest was not read); runner.structured=json_schema, "
                                                   "json_object or none skips it",
}
ODD = {"endless": Response(200, b'{"models": [', endless=True), "short": Response(200, b"", wire=wire(b"{}", 100))}


@pytest.mark.parametrize("case", list(PREFLIGHT))
def test_a_preflight_answer_too_large_or_broken_off_is_one_line(tmp_path, case):
    runner, path, odd = case
    with Lab(tmp_path, n=6, latency_s=0) as lab, FakeOpenAI(models=["m"]) as openai:
        server = lab.server if runner == "ollama" else openai
        served = server.dispatch
        server.dispatch = lambda request: ODD[odd] if request.path == path else served(request)
        result = lab.call(*asking(lab, openai, runner, f"runner.max_response_bytes={LIMIT}"))
    message = PREFLIGHT[case].format(url=server.url)
    assert (result.returncode, result.stderr) == (EXIT["runner"], f"benchrun: error: {message}\n")


def test_an_answer_with_an_integer_too_long_for_python_is_invalid_json_not_a_crash(tmp_path):
    with Lab(tmp_path, n=6, latency_s=0, responder=odd_one('{"answer": ' + "9" * 5000 + "}")) as lab:
        result = lab.call(*lab.args())
        scores = [s for s in records(lab, "scores.jsonl") if s["id"] == "times7:a=3"]
        [run_dir] = lab.run_dirs()
        rescored = lab.call("rescore", str(run_dir), module="benchrun.audit")
    assert (result.returncode, rescored.returncode) == (EXIT["ok"], EXIT["ok"]), result.stderr
    assert [(s["scorer"], s["metrics"], s["detail"]) for s in scores] == [
        ("format_valid", {"format_valid": 0}, "invalid JSON: an integer of more than 4,300 digits, more than Python "
                                              "reads"), ("times7", None, None)]
    assert json.loads((run_dir / "run.json").read_text())["counts"]["format_invalid"] == 1


def chat_completion(content: object = '{"answer": 21}', message: object = None, **usage: object) -> bytes:
    choice = {"index": 0, "message": {"role": "assistant", "content": content} if message is None else message,
              "finish_reason": "stop"}
    return json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [choice],
                       "usage": usage}).encode()


SHAPES = {  # runner, the answer to a = 3 -> what is recorded: (its text, counts), or its error
    ("openai", "counts that are not whole numbers"): (wire(chat_completion(prompt_tokens=1.5, completion_tokens="x")),
                                                      ('{"answer": 21}', None, None)),
    ("openai", "a count past any float"): (wire(chat_completion(completion_tokens=7).replace(b"7", b"1e400")),
                                           ('{"answer": 21}', None, None)),
    ("openai", "content parts"): (wire(chat_completion([{"type": "text", "text": "{}"}])), ("{}", None, None)),
    ("openai", "content a number"): (wire(chat_completion(5)), {
        "type": "APIError", "message": "not a chat completion: choices[0].message.content is a number, not a string"}),
    ("openai", "a message that is a string"): (wire(chat_completion(message="hi")), {
        "type": "APIError", "message": "not a chat completion: choices[0].message is a string, not an object"}),
    ("ollama", "content a number"): (wire(ANSWER.replace(b'"{\\"answer\\": 21}"', b"5")), {
        "type": "ValidationError", "message": "not Ollama's chat answer: message.content: 5 is a number, "
                                              "where text is taken"}),
    ("ollama", "a list"): (wire(b"[1, 2]"), {
        "type": "TypeError", "message": "not Ollama's chat answer: the answer is a list, not a JSON object"}),
}


@pytest.mark.parametrize("case", list(SHAPES))
def test_an_answer_of_an_odd_shape_keeps_what_it_can_and_says_what_is_wrong_in_one_line(tmp_path, case):
    data, kept = SHAPES[case]
    odd = odd_one(Reply(wire=data))
    with Lab(tmp_path, n=6, latency_s=0, responder=odd) as lab, FakeOpenAI(models=["m"], responder=odd) as openai:
        result = lab.call(*asking(lab, openai, case[0]))
        [answer] = [r for r in records(lab) if r["id"] == "times7:a=3"]
    assert result.returncode == EXIT["ok"], result.stderr
    if isinstance(kept, tuple):
        assert (answer["text"], answer["prompt_tokens"], answer["completion_tokens"], answer["error"]) == (*kept, None)
    else:
        assert (answer["text"], answer["error"]) == (None, kept)


BUSY = Reply(status=503, error="overloaded")


GONE = Reply(status=404, error="model 'llama3.2' not found")


@pytest.mark.parametrize("refusal", [BUSY, GONE])
def test_a_request_one_server_of_a_list_fails_is_asked_of_another(tmp_path, refusal):
    with FakeOllama(responder=lambda _: refusal) as busy, FakeOllama(responder=listbench_answer) as well:
        result = over(tmp_path, [busy, well])
        busy_chats = sum(r["path"] == "/api/chat" for r in busy.requests)
    assert result.returncode == EXIT["ok"], result.stderr
    run_dir = run_dir_of(result.stdout)
    responses = read_jsonl(run_dir / "responses.jsonl")
    assert {(r["host"], r["error"]) for r in responses} == {(well.url, None)} and len(responses) == 18
    moved = [r["failed_attempts"] for r in responses if r["failed_attempts"]]
    assert busy_chats == len(moved) > 0
    assert {(a["number"], a["error"]["type"], a["error"]["message"]) for attempts in moved for a in attempts} == {
        (1, "ResponseError", f"at {busy.url}: HTTP {refusal.status}: {refusal.error}")}
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"


def test_a_sample_every_server_of_a_list_fails_is_its_error_with_each_servers_attempts(tmp_path):
    with FakeOllama(responder=lambda _: BUSY) as one, FakeOllama(responder=lambda _: BUSY) as two:
        result = over(tmp_path, [one, two], "task.only=[symbol]", "runner.concurrency=1")
    assert result.returncode == EXIT["ok"], result.stderr
    responses = read_jsonl(run_dir_of(result.stdout) / "responses.jsonl")
    assert len(responses) == 3
    for response in responses:
        first = one if response["host"] == two.url else two
        assert (response["error"], response["attempts"]) == (
            {"type": "ResponseError", "message": "HTTP 503: overloaded"}, 2)
        assert [a["error"]["message"] for a in response["failed_attempts"]] == [
            f"at {first.url}: HTTP 503: overloaded", "HTTP 503: overloaded"]


def test_a_judge_that_inherits_a_list_of_servers_fails_over_from_a_5xx(tmp_path):
    def busy_judge(req):
        return BUSY if req.model.startswith("qwen2.5") else answer(req)

    with FakeOllama(models=MODELS, responder=busy_judge) as busy, FakeOllama(models=MODELS, responder=answer) as well:
        result = judged_over(tmp_path, [busy, well])
    assert result.returncode == EXIT["ok"], result.stderr
    run_dir = run_dir_of(result.stdout)
    assert judge_grades(run_dir) == sorted(GRADES)
    assert {call["host"] for call in read_jsonl(run_dir / "judgements.jsonl")} == {well.url}  # who judged, kept


def test_a_judge_that_inherits_a_list_of_servers_goes_on_when_one_is_lost(tmp_path):
    def dying_judge(req):
        if req.model.startswith("qwen2.5"):
            threading.Thread(target=dying.stop).start()
            return Reply(drop=True)
        return answer(req)

    with FakeOllama(models=MODELS, responder=dying_judge) as dying, \
            FakeOllama(models=MODELS, responder=answer) as well:
        result = judged_over(tmp_path, [dying, well], "runner.concurrency=1", "runner.backoff_s=0")
    assert result.returncode == EXIT["ok"], result.stderr
    run_dir = run_dir_of(result.stdout)
    assert judge_grades(run_dir) == sorted(GRADES)
    info = json.loads((run_dir / "run.json").read_text())
    [lost] = info["history"]
    assert (info["status"], lost["host_lost"]) == ("completed", dying.url)
    assert lost["reason"].startswith(f"lost the judge's server {dying.url}: ")
    assert lost["reason"].endswith("; 1 of 2 servers left")
    assert summary_of(run_dir)[("symbol", "names")][:2] == (3, 2 / 3)


@pytest.mark.parametrize("runner", ["ollama", "openai"])
def test_one_server_listed_under_two_names_is_refused(tmp_path, runner):
    result, server, asked = listed(tmp_path, runner, "{url}", "http://localhost:{port}{root}")
    named = server.url.replace("127.0.0.1", "localhost")
    key = "runner.host" if runner == "ollama" else "runner.base_url"
    assert (result.returncode, result.stderr, asked) == (EXIT["usage"], (
        f"benchrun: error: in 'config': {key}: '{named}' is '{server.url}' again (both reach 127.0.0.1 port "
        f"{server.port}): list each server once\n"), [])


LONE = '{"verdict": "\\ud800"}'
"""An answer whose JSON escapes half a surrogate pair: the text is ASCII, the string it holds a lone surrogate."""
VERDICTS = ("- name: v\n  template: 'grade {a}'\n  values:\n    a: [1, 2]\n  reference: [right, right]\n  format: Verdict\n"
            "  scorer: contains\n")


def test_an_answer_escaping_half_a_surrogate_pair_is_checked_not_a_crash(tmp_path):
    write_bench(tmp_path, {"tasks.yml": VERDICTS, "custom_response.py": RESPONSE})
    with FakeOllama(responder=lambda req: LONE if req.prompt == "grade 1" else '{"verdict": "right"}') as server:
        result = over(tmp_path, [server], "task.path=bench")
    assert result.returncode == EXIT["ok"], result.stderr
    run_dir = run_dir_of(result.stdout)
    assert [(r["id"], r["text"]) for r in read_jsonl(run_dir / "responses.jsonl")] == [
        ("v:a=1", LONE), ("v:a=2", '{"verdict": "right"}')]
    assert [(s["id"], s["metrics"], s["detail"]) for s in read_jsonl(run_dir / "scores.jsonl")] == [
        ("v:a=1", {"format_valid": 0}, "verdict: \"\ufffd\" is not one of [\"right\", \"wrong\"]"),
        ("v:a=1", {"contains": 0}, None), ("v:a=2", {"format_valid": 1}, None), ("v:a=2", {"contains": 1}, None)]


def test_a_judges_reply_escaping_half_a_surrogate_pair_is_its_error_not_a_crash(tmp_path):
    def lone_judge(req):
        return '{"verdict": "\\udfff"}' if req.model.startswith("qwen2.5") else answer(req)

    with FakeOllama(models=MODELS, responder=lone_judge) as server:
        result = judged_over(tmp_path, [server])
    assert result.returncode == EXIT["ok"], result.stderr
    error = {"type": "JudgeReplyInvalid", "message": "the judge's reply is not in format Verdict: verdict: "
                                                     "\"\ufffd\" is not one of [\"right\", \"wrong\"]"}
    assert judge_grades(run_dir_of(result.stdout)) == [(f"symbol:symb={s}", None, error) for s in "#$@"]

"""The twenty-seventh hostile pass of issue 19, the asking side: what the twenty-sixth left, and a fresh pass.

- an `error` that says little (`{"code": 0}`, `{"type": "x"}`, a message that is an object) was quoted as `no
  message`, or as a Python repr: it is quoted as the server sent it, its JSON, but for JSON nested deeper than
  QUOTED_DEPTH, said as what it is (`runners.errorbody.quoted`)
- FastAPI's error body (`{"detail": [{"loc": [...], "msg": ...}]}`) was quoted as a Python repr of its list: its
  problems are quoted where and what each is (`runners.errorbody.quoted`)
- an error status whose body is in a coding benchrun does not read (`br`), or does not decode, was said a broken
  answer, its status lost, asked again whatever the status: the status is the failure, the body's state said beside it
  (`runners.http._Bounded`)
- a server's token count over the time it says it took, or over the request's own time, gave speeds of 10^15 tokens a
  second in the archive and `show`: a duration or count no server can have measured so is not reported
  (`execute.boundary._counted`)
- a judge whose replies were all cut at its token limit left every answer ungraded, each said `not JSON: Unterminated
  string`, and a judge that refused (an OpenAI-compatible `refusal`) `not JSON: Expecting value`: a reply that gives no
  grade says what its server said of why (done_reason, refusal) (`execute.judging.read_reply`). A run of cut replies
  does not stop the run: the judge's options are the manifest's, which a resume cannot change, so a run stopped for
  them could never be finished (as `ContextFull` is not counted by fail-fast)
- a 101 answer (a switch to another protocol, never asked) was said in the HTTP parser's words, `Received server
  _SWITCH_UPGRADE event without a pending proposal`: it is said as what the server did (`runners.base.SWITCHED`)
- Ollama's preflight said an error status of /api/version in httpx's words (`Server error '500 Internal Server Error'
  for url ... For more information check: https://developer.mozilla.org/...`), the server's message lost, and of
  /api/show in the official client's (`store offline (status code: 500)`): each as a request's is, `HTTP 500: store
  offline` (`runners.ollama._refusal`)
- an OpenAI-compatible /models answer of 200 that is an error (`{"error": {"message": "key expired"}}`, a proxy's) was
  said `answered GET /models without a model list; runner.base_url is the API root`, the error lost and the advice
  wrong: it is that error, as a chat answer's is (`runners.openai.OpenAIRunner._models`, `errorbody.error_said`)
- Ollama's chat answered 401 or 403 (a key revoked mid-run) was said `HTTP 401: unauthorized`, naming neither the
  variable nor the fix, which the preflight and the OpenAI-compatible runner's requests name: so do its requests
  (`runners.ollama.OllamaRunner.complete`, `_key_refused`)
"""

from __future__ import annotations

import json

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.chat import Reply
from benchrun.testing.http_fake import Response
from benchrun.testing.ollama_server import FakeOllama
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import bench_run, call_benchrun, run_dir_of
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, answer
from tests.helpers.p24_execute import asked, ollama_run, once, openai_run
from tests.helpers.p27_asking import answering
from tests.helpers.wire import wire

TYPES = {"openai": "APIError", "ollama": "ResponseError"}
OPENAI = {"choices": [{"index": 0, "message": {"role": "assistant", "content": '{"answer": 6}'},
                       "finish_reason": "stop"}]}
OLLAMA = {"model": "llama3.2", "created_at": "2024-01-01T00:00:00Z", "done": True, "done_reason": "stop",
          "message": {"role": "assistant", "content": '{"answer": 6}'}}
ANSWERS = {"openai": OPENAI, "ollama": OLLAMA}
DEEP = json.loads("[" * 500 + "]" * 500)
"""An error nested deeper than an error quotes: written, it ran out of Python's stack in one runner, not another."""
UNREAD = ("(body not read: the answer's body is in a content coding benchrun does not read within "
          "runner.max_response_bytes (br); it asks for gzip, deflate)")


def _run(tmp_path, ask: str, response: bytes, *args: str):
    """A run of the product task by runner `ask` whose first answer to the sample is `response` (whole HTTP)."""
    answer = once(Reply(wire=response))
    return openai_run(tmp_path, answer, *args)[1] if ask == "openai" else ollama_run(tmp_path, answer, *args)


def _coded(body: bytes, status: str, coding: str) -> bytes:
    return wire(body, status=status).replace(b"\r\n\r\n", f"\r\nContent-Encoding: {coding}\r\n\r\n".encode(), 1)


@pytest.mark.parametrize("ask", ["openai", "ollama"])
@pytest.mark.parametrize(("error", "said"), [
    ({"code": 0}, 'HTTP 200 saying an error: {"code": 0}'), ({"type": "x"}, 'HTTP 200 saying x: {"type": "x"}'),
    ({"message": {"why": "quota"}}, 'HTTP 200 saying an error: {"why": "quota"}'), (5, "HTTP 200 saying an error: 5"),
    (["bad", "worse"], 'HTTP 200 saying an error: ["bad", "worse"]'),
    ({"type": "invalid", "param": "timeout"}, 'HTTP 200 saying invalid: {"type": "invalid", "param": "timeout"}'),
    (DEEP, "HTTP 200 saying an error: a list nested too deep to quote")])
def test_an_error_that_says_little_is_quoted_as_the_server_sent_it(tmp_path, ask, error, said):
    done = _run(tmp_path, ask, wire(json.dumps({**ANSWERS[ask], "error": error}).encode()))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert asked(done.stdout) == (None, {"type": TYPES[ask], "message": said}, 1, [said])


FASTAPI = {"detail": [{"loc": ["body", "messages", 0, "content"], "msg": "field required", "type": "missing"},
                      {"loc": ["body", "model"], "msg": "str type expected", "type": "type_error.str"}]}


@pytest.mark.parametrize("ask", ["openai", "ollama"])
@pytest.mark.parametrize(("body", "said"), [
    (FASTAPI, "HTTP 422: body.messages.0.content: field required; body.model: str type expected"),
    ({"detail": [{"msg": "no place"}]}, "HTTP 422: no place"),
    ({"detail": {"reason": "odd"}}, 'HTTP 422: {"reason": "odd"}'),
    ({"error": {"message": ["a", 1]}}, 'HTTP 422: ["a", 1]')])
def test_an_error_body_of_fastapis_problems_or_other_json_is_quoted_readably(tmp_path, ask, body, said):
    done = _run(tmp_path, ask, wire(json.dumps(body).encode(), status="422 Unprocessable Entity"))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert asked(done.stdout) == (None, {"type": TYPES[ask], "message": said}, 1, [said])


@pytest.mark.parametrize("ask", ["openai", "ollama"])
def test_an_error_body_in_a_coding_not_read_is_said_with_its_status_and_asked_again_as_that_says(tmp_path, ask):
    done = _run(tmp_path, ask, _coded(b"\x1b\x03\x00", "503 Service Unavailable", "br"))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert asked(done.stdout) == ('{"answer": 6}', None, 2, [f"HTTP 503: {UNREAD}"])


@pytest.mark.parametrize("ask", ["openai", "ollama"])
def test_an_error_body_that_does_not_decode_is_said_with_its_status_not_asked_again_for_a_400(tmp_path, ask):
    done = _run(tmp_path, ask, _coded(b"not gzip at all", "400 Bad Request", "gzip"))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    said = ("HTTP 400: (body not read: the answer's body does not decode as its Content-Encoding (gzip) says: Error -3 "
            "while decompressing data: incorrect header check)")
    assert asked(done.stdout) == (None, {"type": TYPES[ask], "message": said}, 1, [said])


def _counted(stdout: str) -> tuple[object, object, dict]:
    [record] = [r for r in read_jsonl(run_dir_of(stdout) / "responses.jsonl") if r["id"] == "product:a=2,b=3"]
    return record["prompt_tokens"], record["completion_tokens"], record["durations_ns"]


@pytest.mark.parametrize(("counts", "kept"), [
    ({"eval_count": 10**12, "eval_duration": 1000}, (7, None, {"total": 50_000_000, "load": 5_000_000,
                                                                 "prompt_eval": 10_000_000})),
    ({"eval_count": 50, "eval_duration": 1}, (7, 50, {"total": 50_000_000, "load": 5_000_000,
                                                      "prompt_eval": 10_000_000})),
    ({"prompt_eval_count": 10**9, "prompt_eval_duration": 10**6, "eval_count": 3},
     (10**9, 3, {"total": 50_000_000, "load": 5_000_000, "eval": 30_000_000}))])
def test_ollamas_counts_faster_than_a_server_can_count_are_not_reported(tmp_path, counts, kept):
    done = ollama_run(tmp_path, once(Reply(content='{"answer": 6}', **counts)))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert _counted(done.stdout) == kept


def test_a_completion_count_faster_than_a_server_can_write_is_not_reported(tmp_path):
    done = openai_run(tmp_path, once(Reply(content='{"answer": 6}', eval_count=10**12)))[1]
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert _counted(done.stdout) == (7, None, {})


def _cut_judge(req):
    return Reply(content='{"verdict": "ri', done_reason="length") if req.model.startswith("qwen2.5") else answer(req)


def test_a_judge_reply_cut_at_its_token_limit_says_so_where_it_gives_no_grade(tmp_path):
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=_cut_judge) as fake:
        done = bench_run(tmp_path, fake.url, "task.path=bench", "judge.model=qwen2.5", "cache=false")
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    said = ("the judge's reply is not JSON: Unterminated string starting at: line 1 column 13 (char 12) (the reply was "
            'cut at the judge\'s token limit: done_reason "length")')
    run_dir = run_dir_of(done.stdout)
    assert {r["error"]["message"] for r in read_jsonl(run_dir / "judgements.jsonl")} == {said}
    assert {r["error"]["message"] for r in read_jsonl(run_dir / "scores.jsonl") if r["scorer"] == "names"} == {
        f"1 of 1 judgements give no grade: {said}"}


@pytest.mark.parametrize("ask", ["openai", "ollama"])
def test_a_101_answer_is_said_as_a_switch_of_protocol_not_as_the_parsers_event(tmp_path, ask):
    switched = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    done = _run(tmp_path, ask, switched)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    said = "HTTP 101: the server switched to another protocol, which benchrun never asks for (it sends no Upgrade)"
    assert asked(done.stdout) == ('{"answer": 6}', None, 2, [said])


REFUSED = {"choices": [{"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": None, "refusal": "I cannot grade that."}}]}


def test_a_judge_that_refused_says_so_where_its_reply_gives_no_grade(tmp_path):
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2"], responder=answer) as model, FakeOpenAI(
            models=["judge"], responder=lambda _: Reply(wire=wire(json.dumps(REFUSED).encode()))) as judge:
        done = call_benchrun(f"runner.host={model.url}", "task.path=bench", "judge.runner=openai",
                             f"judge.base_url={judge.url}", "judge.model=judge", "+judge.structured=json_schema",
                             "cache=false", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    said = ("the judge's reply is not JSON: Expecting value: line 1 column 1 (char 0) (the judge refused: \"I cannot "
            'grade that.")')
    assert {r["error"]["message"] for r in read_jsonl(run_dir_of(done.stdout) / "judgements.jsonl")} == {said}


@pytest.mark.parametrize("path", ["/api/version", "/api/show"])
def test_an_error_status_of_ollamas_preflight_is_said_as_a_requests_is(tmp_path, path):
    url, done = answering(tmp_path, "ollama", path, Response(500, b'{"error": "store offline"}'))
    assert (done.returncode, done.stdout) == (EXIT["runner"], "")
    assert done.stderr == f"benchrun: error: Ollama at {url} refused the preflight: HTTP 500: store offline\n"


def test_an_openai_compatible_model_list_of_200_that_is_an_error_is_that_error(tmp_path):
    url, done = answering(tmp_path, "openai", "/v1/models", Response(200, b'{"error": {"message": "key expired", '
                                                                           b'"code": "auth"}}'))
    assert (done.returncode, done.stdout) == (EXIT["runner"], "")
    assert done.stderr == f"benchrun: error: the server at {url} refused the preflight: HTTP 200 saying auth: key expired\n"


@pytest.mark.parametrize("status", [401, 403])
def test_ollamas_chat_refused_for_its_key_names_the_variable_and_the_fix(tmp_path, status):
    url, done = answering(tmp_path, "ollama", "/api/chat", Response(status, b'{"error": "unauthorized"}'))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    said = (f"HTTP {status}: Ollama at {url} wants an API key ({status}) and $OLLAMA_API_KEY is not set; export it (the "
            "official client sends it as a bearer token), or point runner.host at a server that needs none")
    assert asked(done.stdout) == (None, {"type": "ResponseError", "message": said}, 1, [said])

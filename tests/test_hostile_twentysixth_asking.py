"""The twenty-sixth hostile pass of issue 19, the asking side: what the twenty-fifth left, and a fresh pass.

- an `error` beside a whole answer was kept by the OpenAI-compatible runner and refused by Ollama's: the server says
  the request failed, so the answer is neither runner's whole answer (`runners.errorbody.error_said`)
- an error body that is no text (500 bytes of 0x00-0xff) was quoted as 500 characters of U+FFFD; a `latin-1`
  charset declared on a UTF-8 error body garbled its words; Ollama's error body that is JSON but no object (`[1, 2]`,
  `"boom"`) was the official client's AttributeError, not its status, and not asked again. An error body is read
  from its bytes as an answer is, by both runners (`runners.errorbody.server_message`, Ollama's through
  `runners.ollama._ErrorSaid`)
- `HTTP 600` (no status HTTP defines) was asked again as a 5xx; it is the server's error of its own kind, said once
  (`runners.errorbody.status_said`)
- an `error` that says none (`false`, `0`, `""`, `{}`) beside a whole answer refused Ollama's answer as `HTTP 200 saying
  an error: no message`: an error is one where it says one, for both runners (`runners.errorbody.said_error`)
- Ollama's answer whose tool call gives its arguments as a JSON string (as an OpenAI-compatible answer does), or of
  any shape the official client does not read, was refused whole (`1 validation error for ChatResponse
  message.tool_calls.0.function.arguments`), its text lost: such calls are set aside and kept as they came, as an
  OpenAI-compatible answer's are (`runners.ollama._apart`)
- Ollama's chat answer that is a JSON list or number was said `ollama._types.ChatResponse() argument after ** must be
  a mapping, not list`: `the answer is a list, not a JSON object` (`runners.ollama._as_typed`)
- an error status whose body was longer than runner.max_response_bytes (a proxy's 503 page) was said `the answer is
  longer than runner.max_response_bytes`, its status lost, not asked again: an error body ends at the bound, the
  failure is its status's (`runners.http._Bounded`)
- a judge call the same as another of the run (the same judge, chat and repeat: a rubric that does not render the
  question) was asked again: each call looked the cache up as it started, before any reply was kept. A call waits for
  the one of its key under way, then reads the cache (`execute.judging.Judge._cached`)
"""

from __future__ import annotations

import gzip
import json

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.chat import Reply
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import bench_run, run_dir_of
from tests.helpers.judges import JUDGES, RESPONSE
from tests.helpers.p24_execute import asked, ollama_run, once, openai_run
from tests.helpers.wire import wire

TYPES = {"openai": "APIError", "ollama": "ResponseError"}
OPENAI = {"choices": [{"index": 0, "message": {"role": "assistant", "content": '{"answer": 6}'},
                       "finish_reason": "stop"}]}
OLLAMA = {"model": "llama3.2", "created_at": "2024-01-01T00:00:00Z", "done": True, "done_reason": "stop",
          "message": {"role": "assistant", "content": '{"answer": 6}'}}


def _run(tmp_path, ask: str, response: bytes, *args: str):
    """A run of the product task by runner `ask` whose first answer to the sample is `response` (whole HTTP)."""
    answer = once(Reply(wire=response))
    return openai_run(tmp_path, answer, *args)[1] if ask == "openai" else ollama_run(tmp_path, answer, *args)


def _labelled(body: bytes, status: str, content_type: str) -> bytes:
    return wire(body, status=status).replace(b"application/json", content_type.encode(), 1)


@pytest.mark.parametrize(("ask", "answer"), [("openai", OPENAI), ("ollama", OLLAMA)])
@pytest.mark.parametrize("error", [{"message": "upstream hiccup"}, "upstream hiccup"])
def test_an_error_beside_a_whole_answer_is_that_error_for_both_runners(tmp_path, ask, answer, error):
    done = _run(tmp_path, ask, wire(json.dumps({**answer, "error": error}).encode()))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    said = "HTTP 200 saying an error: upstream hiccup"
    assert asked(done.stdout) == (None, {"type": TYPES[ask], "message": said}, 1, [said])


@pytest.mark.parametrize("ask", ["openai", "ollama"])
@pytest.mark.parametrize(("body", "content_type", "said"), [
    (bytes(range(256)) * 2, "application/octet-stream", "a body of 512 bytes that is not text"),
    (b"\x00\x01\x02 oops", "text/plain", "a body of 8 bytes that is not text"),
    (bytes(range(256)), "text/plain; charset=latin-1", "a body of 256 bytes that is not text"),
    (b"caf\xe9 is closed today", "text/plain", "caf\ufffd is closed today"),
    ("café brûlé".encode(), "text/plain; charset=latin-1", "café brûlé"),
    ("café brûlé".encode("latin-1"), "text/plain; charset=latin-1", "café brûlé"),
    (json.dumps({"error": "café"}, ensure_ascii=False).encode(), "application/json; charset=latin-1", "café"),
    (b"[1, 2]", "application/json", "[1, 2]")])
def test_an_error_body_is_read_from_its_bytes_as_an_answer_is(tmp_path, ask, body, content_type, said):
    done = _run(tmp_path, ask, _labelled(body, "500 Internal Server Error", content_type))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert asked(done.stdout) == ('{"answer": 6}', None, 2, [f"HTTP 500: {said}"])


@pytest.mark.parametrize(("ask", "answer"), [("openai", OPENAI), ("ollama", OLLAMA)])
@pytest.mark.parametrize("error", [False, 0, "", " ", {}, []])
def test_an_error_that_says_none_beside_a_whole_answer_keeps_it_for_both_runners(tmp_path, ask, answer, error):
    done = _run(tmp_path, ask, wire(json.dumps({**answer, "error": error}).encode()))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert asked(done.stdout) == ('{"answer": 6}', None, 1, [])


@pytest.mark.parametrize("calls", [[{"function": {"name": "f", "arguments": "{not json"}}], "f()",
                                   [{"function": {"name": 5, "arguments": {}}}], [1]])
def test_ollamas_tool_calls_the_client_does_not_read_are_kept_beside_the_answer(tmp_path, calls):
    answer = {**OLLAMA, "message": {**OLLAMA["message"], "tool_calls": calls}}
    done = _run(tmp_path, "ollama", wire(json.dumps(answer).encode()))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert asked(done.stdout) == ('{"answer": 6}', None, 1, [])
    [record] = [r for r in read_jsonl(run_dir_of(done.stdout) / "responses.jsonl") if r["id"] == "product:a=2,b=3"]
    assert record["extra"] == {"tool_calls": json.dumps(calls, sort_keys=True)}


@pytest.mark.parametrize(("body", "kind"), [(b"[1, 2]", "a list"), (b"5", "a number"), (b'"x"', "a string")])
def test_an_ollama_chat_answer_that_is_no_object_is_said_so(tmp_path, body, kind):
    done = _run(tmp_path, "ollama", wire(body))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    said = f"not Ollama's chat answer: the answer is {kind}, not a JSON object"
    assert asked(done.stdout) == (None, {"type": "TypeError", "message": said}, 1, [said])


@pytest.mark.parametrize("ask", ["openai", "ollama"])
def test_an_error_body_of_json_that_is_no_object_is_said_with_its_status(tmp_path, ask):
    done = _run(tmp_path, ask, wire(b'"boom"', status="400 Bad Request"))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert asked(done.stdout) == (None, {"type": TYPES[ask], "message": "HTTP 400: boom"}, 1, ["HTTP 400: boom"])


@pytest.mark.parametrize("ask", ["openai", "ollama"])
@pytest.mark.parametrize("status", ["600 Odd", "999 Odd"])
def test_a_status_http_does_not_define_is_said_once_not_asked_again(tmp_path, ask, status):
    done = _run(tmp_path, ask, wire(b'{"error": "odd"}', status=status))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    said = f"HTTP {int(status[:3])} (a status HTTP does not define): odd"
    assert asked(done.stdout) == (None, {"type": TYPES[ask], "message": said}, 1, [said])


SAME = ("- name: item\n  template: 'item {n}'\n  values: {n: [1, 2, 3]}\n  reference: [a, a, a]\n"
        "  scorer: contains\n  judge: names\n")
SAME_RUBRIC = JUDGES.replace("Question: {prompt}\\n", "")
"""Three answers `a`, each graded by a judge whose rubric holds the answer and the reference, not the question: three
calls the same."""


def _same_calls(req) -> str:
    return json.dumps({"verdict": "right"} if req.model.startswith("qwen2.5") else {"answer": "a"})


@pytest.mark.parametrize("concurrency", ["1", "4"])
def test_a_judge_call_the_same_as_one_before_in_the_run_is_read_from_the_cache(tmp_path, concurrency):
    write_bench(tmp_path, {"tasks.yml": SAME, "judges.yml": SAME_RUBRIC, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=_same_calls) as fake:
        done = bench_run(tmp_path, fake.url, "task.path=bench", "judge.model=qwen2.5", "cache=true",
                         f"cache_dir={tmp_path / 'cache'}", f"runner.concurrency={concurrency}")
        judged = [r for r in fake.requests if r["model"].startswith("qwen2.5") and r["path"] == "/api/chat"]
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    run_dir = run_dir_of(done.stdout)
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    calls = sorted((c["id"], c["value"], c["cached_from"]) for c in read_jsonl(run_dir / "judgements.jsonl"))
    assert (len(judged), [c[:2] for c in calls]) == (1, [("item:n=1", 1), ("item:n=2", 1), ("item:n=3", 1)])
    assert sorted(c[2] for c in calls if c[2]) == [run_id, run_id]


PAGE = b"<html><body><h1>503 Service Temporarily Unavailable</h1>" + b"<!-- pad -->" * 400 + b"</body></html>"


@pytest.mark.parametrize("ask", ["openai", "ollama"])
@pytest.mark.parametrize("coding", ["identity", "gzip"])
def test_an_error_body_longer_than_the_bound_is_cut_there_its_status_said(tmp_path, ask, coding):
    page = _labelled(gzip.compress(PAGE) if coding == "gzip" else PAGE, "503 Service Unavailable", "text/html")
    page = page.replace(b"\r\n\r\n", f"\r\nContent-Encoding: {coding}\r\n\r\n".encode(), 1)
    done = _run(tmp_path, ask, page, "runner.max_response_bytes=2048")
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert asked(done.stdout) == ('{"answer": 6}', None, 2, ["HTTP 503: 503 Service Temporarily Unavailable"])

"""The runners' HTTP transport: connections kept alive, and no response taken for a request it did not answer (a
server that sends a second complete response after the first, on a connection kept open)."""

from __future__ import annotations

import json

import pytest

from benchrun.testing.lab import Lab, half_right
from benchrun.testing.ollama_server import ChatRequest, Reply
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.wire import asking, records, wire

STALE = ("RemoteProtocolError", "the server had sent this response before the request was (a second response to an "
         "earlier request on the connection): not taken as the answer, the connection closed")


def kept_open(body: bytes) -> bytes:
    return wire(body).replace(b"\r\nConnection: close", b"")


def ollama_answer(content: str) -> bytes:
    return json.dumps({"model": "llama3.2", "created_at": "2024-01-01T00:00:00Z", "done": True,
                       "done_reason": "stop", "message": {"role": "assistant", "content": content}}).encode()


def openai_answer(content: str) -> bytes:
    choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
    return json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [choice],
                       "usage": {}}).encode()


def twice(answer):
    """Each request answered rightly, then answered again with `{"answer": 99}` on the same connection."""
    def respond(req: ChatRequest) -> Reply | str:
        words = req.prompt.split()
        if words[:4] != ["find", "the", "product", "of"]:
            return half_right(req)
        right = json.dumps({"answer": int(words[4]) * 7})
        return Reply(wire=kept_open(answer(right)) + kept_open(answer('{"answer": 99}')), keep_open=True)
    return respond


@pytest.mark.parametrize("runner", ["ollama", "openai"])
def test_a_second_response_on_a_kept_alive_connection_is_never_the_next_requests_answer(tmp_path, runner):
    answer = ollama_answer if runner == "ollama" else openai_answer
    with Lab(tmp_path, n=6, latency_s=0, responder=twice(answer)) as lab, \
            FakeOpenAI(["m"], responder=twice(answer)) as openai:
        result = lab.run(*asking(lab, openai, runner, "runner.concurrency=1"))
        assert result.returncode == 0, result.stderr
        lines, scores = records(lab), records(lab, "scores.jsonl")
    assert [s["metrics"] for s in scores if s["scorer"] == "times7"] == [{"times7": 1}] * 6  # each answer its own prompt's
    first = [1, 1] if runner == "ollama" else [1]  # ollama: /api/ps, asked after the first answer, met its stale one
    assert sorted(r["attempts"] for r in lines) == first + [2] * (6 - len(first))  # each after a connection's first
    assert {(a["error"]["type"], a["error"]["message"]) for r in lines for a in r["failed_attempts"]} == {STALE}


def test_an_answer_on_a_kept_alive_connection_reuses_it(tmp_path):
    with Lab(tmp_path, n=6, latency_s=0) as lab:
        result = lab.run(*lab.args("runner.concurrency=1"))
        assert result.returncode == 0, result.stderr
        assert lab.server.connections == 3  # /api/version's own client (at the preflight, and as the run ends to see
        # the server was not upgraded), and one for the rest: six answers

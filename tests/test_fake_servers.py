"""The fake Ollama and OpenAI servers, exercised through the official `ollama` client, httpx and raw sockets."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path

import httpx
import ollama
import pytest
from pydantic import BaseModel, Field

from benchrun.testing.lab import wait_for
from benchrun.testing.ollama_server import ChatRequest, FakeOllama, Reply, fake_digest
from benchrun.testing.openai_server import FakeOpenAI

ROOT = Path(__file__).resolve().parents[1]
USER_HI = [{"role": "user", "content": "hi there"}]


class Colour(str, Enum):
    red = "red"
    blue = "blue"


class Inner(BaseModel):
    flag: bool
    ratio: float


class Answer(BaseModel):
    name: str
    count: int
    score: int = Field(ge=1, le=5)
    colour: Colour
    tags: list[str]
    inner: Inner
    note: str | None = None


@pytest.fixture
def srv() -> Iterator[FakeOllama]:
    with FakeOllama(models=["llama3.2", "gemma3:4b"]) as server:
        yield server


def test_root_version_tags_and_ps(srv: FakeOllama) -> None:
    with httpx.Client(base_url=srv.url) as http:
        assert http.get("/").text == "Ollama is running"
        assert http.get("/api/version").json() == {"version": "0.12.6"}
        assert http.get("/api/ps").json() == {"models": []}
        assert http.get("/api/nope").status_code == 404


def test_list_shows_full_names_and_digests(srv: FakeOllama) -> None:
    with ollama.Client(host=srv.url) as client:
        models = client.list().models
    assert [m.model for m in models] == ["llama3.2:latest", "gemma3:4b"]
    assert [m.digest for m in models] == [fake_digest("llama3.2"), fake_digest("gemma3:4b")]
    assert models[1].details is not None and models[1].details.family == "gemma"
    assert models[1].details.format == "gguf"


def test_show_and_unknown_model(srv: FakeOllama) -> None:
    with ollama.Client(host=srv.url) as client:
        shown = client.show("llama3.2:latest")
        with pytest.raises(ollama.ResponseError) as err:
            client.show("mistral")
    assert shown.capabilities == ["completion"]
    assert shown.details is not None and shown.details.family == "llama"
    assert shown.modelinfo == {"general.architecture": "llama", "llama.context_length": 131072}
    assert (err.value.status_code, err.value.error) == (404, "model 'mistral' not found")


def test_default_reply_is_valid_json_for_a_pydantic_schema(srv: FakeOllama) -> None:
    with ollama.Client(host=srv.url) as client:
        response = client.chat(model="llama3.2", messages=USER_HI, format=Answer.model_json_schema())
    assert Answer.model_validate_json(response.message.content or "") == Answer(
        name="ok", count=0, score=1, colour=Colour.red, tags=[], inner=Inner(flag=False, ratio=0.0), note="ok"
    )
    assert (response.model, response.done, response.done_reason) == ("llama3.2", True, "stop")
    assert (response.prompt_eval_count, response.eval_count) == (2, len(response.message.content.split()))


@pytest.mark.parametrize(("fmt", "content"), [(None, "ok"), ("json", "{}")])
def test_default_reply_without_a_schema(srv: FakeOllama, fmt: str | None, content: str) -> None:
    with ollama.Client(host=srv.url) as client:
        assert client.chat(model="gemma3:4b", messages=USER_HI, format=fmt).message.content == content


def test_custom_responder_and_request_record() -> None:
    seen: list[ChatRequest] = []

    def responder(req: ChatRequest) -> str:
        seen.append(req)
        return f"echo {req.prompt}"

    with FakeOllama(models=["llama3.2"], responder=responder) as srv, ollama.Client(host=srv.url) as client:
        messages = [{"role": "system", "content": "be brief"}, *USER_HI]
        response = client.chat(model="llama3.2", messages=messages, format={"type": "string"},
                               options={"temperature": 0, "seed": 7}, keep_alive="5m")
    assert response.message.content == "echo hi there"
    assert seen == [ChatRequest(model="llama3.2", messages=messages, prompt="hi there", format={"type": "string"},
                                options={"temperature": 0, "seed": 7}, keep_alive="5m", think=None, attempt=1,
                                path="/api/chat")]
    assert srv.requests == [{"model": "llama3.2", "stream": False, "messages": messages, "tools": [],
                             "format": {"type": "string"}, "options": {"temperature": 0, "seed": 7},
                             "keep_alive": "5m", "path": "/api/chat"}]


def test_generate_and_streaming() -> None:
    with FakeOllama(responder=lambda req: Reply(content=f"said {req.prompt} twice", eval_count=9)) as srv, \
            ollama.Client(host=srv.url) as client:
        generated = client.generate(model="llama3.2", prompt="hello", system="sys")
        chunks = list(client.chat(model="llama3.2", messages=USER_HI, stream=True))
    assert (generated.response, generated.eval_count, generated.prompt_eval_count) == ("said hello twice", 9, 1)
    assert [c.message.content for c in chunks] == ["said ", "hi ", "there ", "twice", ""]
    assert [c.done for c in chunks] == [False, False, False, False, True]
    assert chunks[-1].eval_count == 9


def test_unknown_model_chat_is_404(srv: FakeOllama) -> None:
    with ollama.Client(host=srv.url) as client, pytest.raises(ollama.ResponseError) as err:
        client.chat(model="gemma3", messages=USER_HI)
    assert (err.value.status_code, err.value.error) == (404, 'model "gemma3" not found, try pulling it first')


def test_attempts_count_per_model_and_prompt() -> None:
    def responder(req: ChatRequest) -> Reply | str:
        return Reply(status=500, error="boom") if req.attempt == 1 else f"attempt {req.attempt}"

    with FakeOllama(responder=responder) as srv, ollama.Client(host=srv.url) as client:
        with pytest.raises(ollama.ResponseError) as err:
            client.chat(model="llama3.2", messages=USER_HI)
        assert (err.value.status_code, err.value.error) == (500, "boom")
        assert client.chat(model="llama3.2", messages=USER_HI).message.content == "attempt 2"
        assert client.chat(model="llama3.2", messages=USER_HI).message.content == "attempt 3"
        with pytest.raises(ollama.ResponseError):  # the pair is exact: another spelling starts at attempt 1
            client.chat(model="llama3.2:latest", messages=USER_HI)
        with pytest.raises(ollama.ResponseError):
            client.generate(model="llama3.2", prompt="other")


def test_error_without_text_uses_status_phrase() -> None:
    with FakeOllama(responder=lambda req: Reply(status=503)) as srv, ollama.Client(host=srv.url) as client, \
            pytest.raises(ollama.ResponseError) as err:
        client.chat(model="llama3.2", messages=USER_HI)
    assert (err.value.status_code, err.value.error) == (503, "Service Unavailable")


def test_drop_closes_the_connection_without_a_response() -> None:
    with FakeOllama(responder=lambda req: Reply(drop=True)) as srv, ollama.Client(host=srv.url) as client, \
            pytest.raises(httpx.RemoteProtocolError):
        client.chat(model="llama3.2", messages=USER_HI)


def test_delay_beyond_the_client_timeout_times_out() -> None:
    with FakeOllama(responder=lambda req: Reply(content="late", delay_s=1.0)) as srv, \
            ollama.Client(host=srv.url, timeout=0.1) as client, pytest.raises(httpx.ReadTimeout):
        client.chat(model="llama3.2", messages=USER_HI)


def test_stop_refuses_connections_and_start_reuses_the_port(srv: FakeOllama) -> None:
    with ollama.Client(host=srv.url) as client:
        assert client.chat(model="llama3.2", messages=USER_HI).message.content == "ok"
        url = srv.url
        srv.stop()
        with pytest.raises(ConnectionError):  # the ollama client's translation of httpx.ConnectError
            client.chat(model="llama3.2", messages=USER_HI)
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{url}/api/version")
        srv.start()
        assert srv.url == url
        assert client.chat(model="llama3.2", messages=USER_HI).message.content == "ok"


def test_max_parallel_bounds_the_requests_in_flight() -> None:
    async def six_at_once(url: str) -> list[str]:
        async with ollama.AsyncClient(host=url) as client:
            calls = [client.chat(model="llama3.2", messages=[{"role": "user", "content": f"q{i}"}]) for i in range(6)]
            return [r.message.content or "" for r in await asyncio.gather(*calls)]

    def once_all_came(req: ChatRequest) -> str:
        """The prompt, once the server has all six requests: four wait for a slot while two are answered."""
        wait_for(lambda: len(srv.requests) == 6)
        return req.prompt

    with FakeOllama(responder=once_all_came, max_parallel=2) as srv:
        assert asyncio.run(six_at_once(srv.url)) == [f"q{i}" for i in range(6)]
    assert srv.max_in_flight == 2
    assert len(srv.requests) == 6


def test_keep_alive_pipelining_chunked_body_and_connection_close(srv: FakeOllama) -> None:
    body = json.dumps({"model": "llama3.2", "messages": USER_HI, "stream": False}).encode()
    payload = (b"GET /api/version HTTP/1.1\r\nHost: x\r\n\r\n"
               b"POST /api/chat HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
               + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
               + b"GET /api/ps HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as sock:
        sock.sendall(payload)
        received = b"".join(iter(lambda: sock.recv(65536), b""))  # ends only when the server closes
    assert received.count(b"HTTP/1.1 200 OK\r\n") == 3
    assert received.count(b"Content-Length: ") == 3
    assert received.count(b"Connection: close\r\n") == 1
    assert received.endswith(b'{"models": []}')
    assert srv.requests[0]["messages"] == USER_HI


@pytest.fixture
def openai_srv() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(models=["qwen2.5"], api_key="sk-test", system_fingerprint="fp_test") as server:
        yield server


def test_openai_requires_the_api_key(openai_srv: FakeOpenAI) -> None:
    with httpx.Client(base_url=openai_srv.url) as http:
        missing = http.get("/models")
        wrong = http.get("/models", headers={"Authorization": "Bearer sk-wrong"})
        listed = http.get("/models", headers={"Authorization": "Bearer sk-test"})
    error = {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "param": None,
                       "code": "invalid_api_key"}}
    assert (missing.status_code, missing.json()) == (401, error)
    assert (wrong.status_code, wrong.json()) == (401, error)
    assert listed.json() == {"object": "list", "data": [
        {"id": "qwen2.5", "object": "model", "created": 1_704_067_200, "owned_by": "library"}]}
    assert openai_srv.auth_headers == [None, "Bearer sk-wrong", "Bearer sk-test"]
    assert openai_srv.url.endswith("/v1")


def test_openai_chat_completion_shape_and_recorded_format(openai_srv: FakeOpenAI) -> None:
    schema = Answer.model_json_schema()
    body = {"model": "qwen2.5", "messages": USER_HI, "temperature": 0, "seed": 3, "max_tokens": 64,
            "response_format": {"type": "json_schema", "json_schema": {"name": "Answer", "schema": schema}}}
    with httpx.Client(base_url=openai_srv.url, headers={"Authorization": "Bearer sk-test"}) as http:
        completion = http.post("/chat/completions", json=body).json()
    content = completion["choices"][0]["message"]["content"]
    Answer.model_validate_json(content)
    assert completion == {
        "id": "chatcmpl-000001", "object": "chat.completion", "created": 1_704_067_200, "model": "qwen2.5",
        "system_fingerprint": "fp_test",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 2, "completion_tokens": len(content.split()),
                  "total_tokens": 2 + len(content.split())},
    }
    assert openai_srv.requests == [{**body, "path": "/v1/chat/completions"}]


def test_openai_responder_sees_format_and_options() -> None:
    seen: list[ChatRequest] = []

    def responder(req: ChatRequest) -> Reply:
        seen.append(req)
        return Reply(content="fine", done_reason="length") if req.attempt > 1 else Reply(status=503, error="busy")

    body = {"model": "qwen2.5:latest", "messages": USER_HI, "top_p": 0.5, "stop": ["x"], "n": 1,
            "response_format": {"type": "json_object"}}
    with FakeOpenAI(responder=responder) as srv, httpx.Client(base_url=srv.url) as http:
        busy = http.post("/chat/completions", json=body)
        fine = http.post("/chat/completions", json=body).json()
    assert (busy.status_code, busy.json()["error"]["message"], busy.json()["error"]["type"]) == (
        503, "busy", "server_error")
    assert (fine["choices"][0]["message"]["content"], fine["choices"][0]["finish_reason"]) == ("fine", "length")
    assert [(r.format, r.options, r.attempt, r.path) for r in seen] == [
        ("json", {"top_p": 0.5, "stop": ["x"]}, n, "/v1/chat/completions") for n in (1, 2)]


def test_openai_unknown_model_is_404(openai_srv: FakeOpenAI) -> None:
    with httpx.Client(base_url=openai_srv.url, headers={"Authorization": "Bearer sk-test"}) as http:
        response = http.post("/chat/completions", json={"model": "gpt-4o", "messages": USER_HI})
    assert response.status_code == 404
    assert response.json()["error"] == {"message": "The model `gpt-4o` does not exist",
                                        "type": "invalid_request_error", "param": None, "code": "model_not_found"}


@pytest.mark.slow
@pytest.mark.parametrize(("module", "args", "path", "expected"), [
    ("ollama_server", ["--latency", "0.01", "--max-parallel", "2", "--models", "llama3.2,gemma3",
                       "--ollama-version", "9.9.9"], "/api/version", {"version": "9.9.9"}),
    ("openai_server", ["--models", "qwen2.5"], "/models",
     {"object": "list", "data": [{"id": "qwen2.5", "object": "model", "created": 1_704_067_200,
                                  "owned_by": "library"}]}),
])
def test_command_line_serves_until_sigterm(module: str, args: list[str], path: str, expected: object) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", f"benchrun.testing.{module}", "--port", "0", *args]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env) as proc:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        assert httpx.get(url + path).json() == expected
        proc.terminate()
        assert proc.wait(timeout=10) == 0
        assert proc.stdout.read() == ""


@contextmanager
def command_line_server(module: str, *args: str) -> Iterator[str]:
    """A fake server started from its command line, as the README starts it; yields its URL."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", f"benchrun.testing.{module}", "--port", "0", *args]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env) as proc:
        assert proc.stdout is not None
        try:
            yield proc.stdout.readline().strip()
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def means_by_score(right: float, weak_product: float = 1.0, weak_combination: float = 1.0,
                   weak_sum: float = 1.0) -> dict[tuple[str, str], float]:
    """Task x metric -> mean on listbench and folderbench: `right` on every answer metric, times the weak model's
    share on the arithmetic ones; format_valid is always 1."""
    return {("product", "calculated_answer"): right * weak_product, ("product", "format_valid"): 1.0,
            ("product_combination", "add_justify"): right * weak_combination,
            ("product_combination", "calculated_answer"): right * weak_combination,
            ("product_combination", "format_valid"): 1.0, ("symbol", "contains"): right,
            ("symbol", "format_valid"): 1.0, ("symbol_dir", "check_name_dir.direction"): right,
            ("symbol_dir", "check_name_dir.name"): right, ("symbol_dir", "format_valid"): 1.0,
            ("add", "exact_match"): right * weak_sum, ("add", "format_valid"): 1.0}


@pytest.mark.slow
@pytest.mark.parametrize(("flags", "model", "means"), [
    ((), "qwen2.5", means_by_score(1.0)),
    (("--wrong",), "qwen2.5", means_by_score(0.0)),
    ((), "mistral", means_by_score(1.0, 1 / 3, 4 / 9, 2 / 3)),  # 3x4, 5x5; 3x4, 3x5, 5x3, 5x4, 5x5; 8+9 are off
])
def test_command_line_ollama_answers_the_shipped_benchmarks(tmp_path: Path, flags: tuple[str, ...], model: str,
                                                           means: dict[tuple[str, str], float]) -> None:
    with command_line_server("ollama_server", *flags) as url:
        names = [m["name"] for m in httpx.get(url + "/api/tags").json()["models"]]
        env = {**os.environ, "OLLAMA_HOST": url}
        for task in ("listbench", "folderbench"):
            subprocess.run([sys.executable, "-m", "benchrun", f"task={task}", f"runner.model={model}"],
                           cwd=tmp_path, env=env, check=True, capture_output=True)
    assert names == ["llama3.2:latest", "gemma3:latest", "qwen2.5:latest", "mistral:latest"]
    summaries = [json.loads(p.read_text()) for p in sorted(tmp_path.glob("outputs/*/*/summary.json"))]
    assert {(m["task"], m["metric"]): m["mean"] for s in summaries for m in s["metrics"]} == pytest.approx(means)

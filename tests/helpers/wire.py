"""Raw answers for the hostile tests of the asking side, and runs of the seed's benchmark (or of a judged one) over a
list of fake servers."""

from __future__ import annotations

import json
from typing import Any

from benchrun.testing.http_fake import FakeServer, json_response
from benchrun.testing.lab import Lab
from benchrun.testing.ollama_server import FakeOllama
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import listbench_answer
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.judges import JUDGES, RESPONSE, TASKS

ANSWER = json.dumps({"model": "llama3.2", "created_at": "2024-01-01T00:00:00Z", "done": True, "done_reason": "stop",
                     "message": {"role": "assistant", "content": '{"answer": 21}'}}).encode()
"""Ollama's answer to the sample of a = 3, rightly."""


def wire(body: bytes, length: object = None, status: str = "200 OK") -> bytes:
    """A whole HTTP response saying its body is `length` bytes long (by default, as long as it is)."""
    head = [f"HTTP/1.1 {status}", "Content-Type: application/json",
            f"Content-Length: {len(body) if length is None else length}", "Connection: close"]
    return "\r\n".join(head).encode() + b"\r\n\r\n" + body


def coded(body: bytes, coding: str) -> bytes:
    """A whole HTTP response whose body is `body` under `Content-Encoding: coding`."""
    return wire(body).replace(b"\r\n\r\n", f"\r\nContent-Encoding: {coding}\r\n\r\n".encode(), 1)


def asking(lab: Lab, openai: FakeOpenAI, runner: str, *extra: str) -> list[str]:
    """A lab's run of its Ollama, or (runner=openai) of `openai`'s model m."""
    if runner == "ollama":
        return lab.args(*extra)
    served = ["runner=openai", f"runner.base_url={openai.url}", "runner.model=m"]
    return [*served, *(arg for arg in lab.args(*extra) if not arg.startswith("runner.host="))]


def records(lab: Lab, name: str = "responses.jsonl") -> list[dict]:
    [run_dir] = lab.run_dirs()
    return read_jsonl(run_dir / name)


def over(tmp_path, servers, *args: str):
    """A run of the seed's benchmark over a list of `servers`, each asked once (no retries)."""
    urls = ",".join(server.url for server in servers)
    return call_benchrun(f"runner.host=[{urls}]", "cache=false", "runner.retries=0", f"outputs={tmp_path / 'outputs'}",
                         *args, cwd=tmp_path)


def listed(tmp_path, runner: str, *spellings: str) -> tuple[Any, FakeServer, list[dict]]:
    """A run of a fake server of `runner` (ollama, openai) listed under `spellings` (`{url}`, `{port}` and
    `{root}`, the API's path, filled in):
    what benchrun said, the server, and the chat requests it was asked."""
    with FakeOllama(responder=listbench_answer) as ollama, FakeOpenAI(responder=listbench_answer) as openai:
        server = ollama if runner == "ollama" else openai
        urls = ",".join(spelling.format(url=server.url, port=server.port, root=server.url_suffix) for spelling in spellings)
        key = "runner.host" if runner == "ollama" else "runner.base_url"
        result = call_benchrun(f"runner={runner}", f"{key}=[{urls}]", "runner.model=qwen2.5", "cache=false",
                               f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
        return result, server, [r for r in server.requests if r["path"] in ("/api/chat", "/v1/chat/completions")]


def judged_over(tmp_path, servers, *args: str):
    """A run of a judged benchmark (the judge qwen2.5) over a list of `servers`."""
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    return over(tmp_path, servers, "task.path=bench", "judge.model=qwen2.5", "+judge.backoff_s=0", *args)


MODELS = ["llama3.2", "qwen2.5"]
GRADES = [("symbol:symb=@", 1, None), ("symbol:symb=$", 1, None), ("symbol:symb=#", 0, None)]


def judge_grades(run_dir) -> list[tuple[str, int | None, dict | None]]:
    return sorted((c["id"], c["value"], c["error"]) for c in read_jsonl(run_dir / "judgements.jsonl"))


def answering(server: FakeServer, path: str, described: dict) -> None:
    """`server` answering GET or POST `path` with `described` (its answers otherwise as they were)."""
    answered = server.dispatch
    server.dispatch = lambda request: json_response(described) if request.path == path else answered(request)

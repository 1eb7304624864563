"""Helpers for the thirty-first hostile pass of the asking side."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from benchrun.testing.http_fake import Response
from benchrun.testing.ollama_server import FakeOllama
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import listbench_answer
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, run_dir_of
from tests.helpers.judges import answer
from tests.helpers.p27_asking import SERVED
from tests.helpers.p29_asking import NUMBERED
from tests.helpers.wire import wire

LISTS = {"ollama": "/api/tags", "openai": "/v1/models"}
"""The path of each runner's model list, its preflight's first request."""
BUSY = "503 Service Unavailable"


def busy_listing(tmp_path: Path, runner: str, after: str, times: int = 1, path: str = "",
                 status: str = BUSY) -> tuple[str, Any, int]:
    """A run of the product task against a fake of `runner` whose model list (or GET `path`) answers its first `times`
    requests with a 503 (or `status`, its body saying 503) asking `Retry-After: after`: its URL, the result and how
    many times it was asked."""
    fake_type = FakeOllama if runner == "ollama" else FakeOpenAI
    said = wire(b'{"error": {"message": "warming up", "code": 503}}', status=status)
    busy = Response(503, b"", wire=said.replace(b"\r\n\r\n", f"\r\nRetry-After: {after}\r\n\r\n".encode(), 1))
    asked: list[str] = []
    with fake_type(models=["llama3.2", "m"], responder=listbench_answer) as fake:
        answered = fake.dispatch

        def dispatch(request: Any) -> Any:
            if request.path != (path or LISTS[runner]):
                return answered(request)
            asked.append(request.path)
            return busy if len(asked) <= times else answered(request)

        fake.dispatch = dispatch
        done = call_benchrun(*SERVED[runner](fake.url), "cache=false", "task.only=[product]",
                             f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
        return fake.url, done, len(asked)


def identity_loaded(tmp_path: Path, context_length: Any) -> dict[str, Any]:
    """run.json's identity of a run of the product task against a fake Ollama whose /api/ps says each model asked of
    is loaded with `context_length`."""
    with FakeOllama(models=["llama3.2"], responder=listbench_answer, context_length=context_length) as fake:
        done = call_benchrun(f"runner.host={fake.url}", "cache=false", "task.only=[product]",
                             f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    return json.loads(run_dir_of(done.stdout).joinpath("run.json").read_text())["identity"]


def judged_loaded(tmp_path: Path, context_length: int) -> tuple[Any, Any]:
    """The context_length run.json's identity and its judge's identity say, of a run of a judged benchmark (the judge
    qwen2.5) against a fake Ollama whose /api/ps says each model asked of is loaded with `context_length`."""
    write_bench(tmp_path, NUMBERED)
    with FakeOllama(models=["llama3.2", "qwen2.5"], context_length=context_length,
                    responder=lambda req: '{"grade": 1}' if req.model.startswith("qwen2.5") else answer(req)) as fake:
        done = call_benchrun(f"runner.host={fake.url}", "task.path=bench", "judge.model=qwen2.5", "cache=false",
                             f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    info = json.loads(run_dir_of(done.stdout).joinpath("run.json").read_text())
    return info["identity"].get("context_length"), info["judge"]["identity"].get("context_length")


def pooled_loaded(tmp_path: Path, *lengths: int) -> tuple[Any, list[Any]]:
    """The context_length of run.json's identity, and of each entry of its `hosts`, of a run of the product task
    against a list of fake Ollama servers, each saying the model is loaded with one of `lengths`."""
    with ExitStack() as stack:
        fakes = [stack.enter_context(FakeOllama(responder=listbench_answer, context_length=n)) for n in lengths]
        done = call_benchrun(f"runner.host=[{','.join(fake.url for fake in fakes)}]", "cache=false",
                             "task.only=[product]", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    identity = json.loads(run_dir_of(done.stdout).joinpath("run.json").read_text())["identity"]
    return identity.get("context_length"), [host.get("context_length") for host in identity["hosts"]]


def slow_first_loaded(tmp_path: Path) -> tuple[Any, list[Any]]:
    """`pooled_loaded` of two servers (4096, 8192) whose first answers /api/ps a byte each 0.05 s (a second)."""
    slow = Response(200, b'{"models": []}' + b" " * 6, drip_s=0.05)
    with FakeOllama(responder=listbench_answer, context_length=4096) as first, \
            FakeOllama(responder=listbench_answer, context_length=8192) as second:
        answered = first.dispatch
        first.dispatch = lambda request: slow if request.path == "/api/ps" else answered(request)
        done = call_benchrun(f"runner.host=[{first.url},{second.url}]", "cache=false", "task.only=[product]",
                             f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    identity = json.loads(run_dir_of(done.stdout).joinpath("run.json").read_text())["identity"]
    return identity.get("context_length"), [host.get("context_length") for host in identity["hosts"]]

"""Helpers for the thirty-second hostile pass of the asking side."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Callable

from benchrun.testing.chat import Reply
from benchrun.testing.http_fake import Response
from benchrun.testing.ollama_server import FakeOllama
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import listbench_answer
from tests.helpers.archives import read_jsonl
from tests.helpers.auditcli import squeezed
from tests.helpers.commands import call_benchrun, run_dir_of
from tests.helpers.p24_execute import ollama_run, once, openai_run
from tests.helpers.p27_asking import SERVED
from tests.helpers.p31_asking import LISTS
from tests.helpers.wire import wire


def pooled_warned(tmp_path: Path, *lengths: int | None) -> tuple[list[str], str, str]:
    """A run of the product task against a list of fake Ollama servers, each saying the model is loaded with one of
    `lengths`: the servers' URLs, what it said on stderr, and what `show` says of it (white space squeezed)."""
    with ExitStack() as stack:
        fakes = [stack.enter_context(FakeOllama(responder=listbench_answer, context_length=n)) for n in lengths]
        done = call_benchrun(f"runner.host=[{','.join(fake.url for fake in fakes)}]", "cache=false",
                             "task.only=[product]", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return [fake.url for fake in fakes], done.stderr, squeezed(tmp_path, "show", str(run_dir_of(done.stdout)))


BIG = "1" * 5000
"""An integer of more digits than Python converts (4,300)."""
HUGE = {
    "ollama content": '{"model": "llama3.2", "done": true, "message": {"role": "assistant", "content": BIG}}',
    "ollama other": '{"model": "llama3.2", "odd": BIG, "done": true, '
                    '"message": {"role": "assistant", "content": ANSWER}}',
    "openai content": '{"model": "m", "choices": [{"message": {"role": "assistant", "content": BIG}}]}',
    "openai model": '{"model": BIG, "choices": [{"message": {"role": "assistant", "content": ANSWER}}]}',
    "ollama error": '{"error": {"message": "bad thing", "code": BIG}}',
    "openai error": '{"error": {"message": "bad thing", "code": BIG}}',
    "ollama lines": '{"model": "llama3.2", "n": BIG, "done": false}\n{"model": "llama3.2", "done": true}\n',
    "openai lines": '{"id": "x", "n": BIG, "choices": []}\n{"id": "x", "choices": []}\n',
}
"""Answers to a chat holding BIG: as its text, as a field benchrun reads nothing of, as the served model's name, as
an error's code, in the first of an answer streamed in JSON lines."""


def huge_answered(tmp_path: Path, case: str, status: str = "200 OK") -> tuple[Any, Any, Any]:
    """What a run of the product task recorded of the sample whose first answer is `HUGE[case]` (its runner the
    case's first word) of `status`: its text, error and what it kept besides."""
    body = HUGE[case].replace("BIG", BIG).replace("ANSWER", json.dumps('{"answer": 6}'))
    runner = ollama_run if case.startswith("ollama") else lambda *args: openai_run(*args)[1]
    done = runner(tmp_path, once(Reply(wire=wire(body.encode(), status=status))))
    assert (done.returncode, done.stderr) == (0, "")
    [record] = [r for r in read_jsonl(run_dir_of(done.stdout) / "responses.jsonl") if r["id"] == "product:a=2,b=3"]
    return record["text"], record["error"], record["extra"]


def shown_huge(tmp_path: Path) -> Any:
    """run.json's `identity.model_info` of a run against a fake Ollama whose /api/show gives a number of BIG in it."""
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as fake:
        answered = fake.dispatch

        def dispatch(request: Any) -> Any:
            if request.path != "/api/show":
                return answered(request)
            shown = json.loads(answered(request).body)
            body = json.dumps({**shown, "model_info": {"general.parameter_count": 0}}).replace(": 0}", f": {BIG}}}")
            return Response(200, body.encode())

        fake.dispatch = dispatch
        done = call_benchrun(f"runner.host={fake.url}", "cache=false", "task.only=[product]",
                             f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    return json.loads(run_dir_of(done.stdout).joinpath("run.json").read_text())["identity"]["model_info"]


def preflight_answered(tmp_path: Path, path: str, change: Callable[[dict[str, Any]], Any]) -> tuple[str, Any]:
    """A run of the product task against a fake Ollama whose answer to `path` is `change` of its answer, as JSON:
    its URL and the result."""
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as fake:
        answered = fake.dispatch

        def dispatch(request: Any) -> Any:
            said = answered(request)
            return Response(200, json.dumps(change(json.loads(said.body))).encode()) if request.path == path else said

        fake.dispatch = dispatch
        return fake.url, call_benchrun(f"runner.host={fake.url}", "cache=false", "task.only=[product]",
                                       f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)


def listed_ids(tmp_path: Path, model: str, *ids: Any) -> tuple[str, Any]:
    """A run of the product task asking `model` of a fake OpenAI-compatible server whose GET /models lists an entry
    of each of `ids`: its URL and the result."""
    models = json.dumps({"object": "list", "data": [{"id": each, "object": "model"} for each in ids]}).encode()
    with FakeOpenAI(models=["m"], responder=listbench_answer) as fake:
        answered = fake.dispatch
        fake.dispatch = lambda request: Response(200, models) if request.path == "/v1/models" else answered(request)
        return fake.url, call_benchrun("runner=openai", f"runner.base_url={fake.url}", f"runner.model='{model}'",
                                       "cache=false", "task.only=[product]", f"outputs={tmp_path / 'outputs'}",
                                       cwd=tmp_path)


def probed_huge(tmp_path: Path) -> dict[str, Any]:
    """What run.json's identity says of the name and fingerprint a structured-output probe's answer gave, an answer
    holding a field of BIG beside them (runner.structured=auto)."""
    probe = {"model": "m-2024-08-06", "system_fingerprint": "fp_1", "odd": 0,
             "choices": [{"message": {"role": "assistant", "content": '{"answer": "ok"}'}, "finish_reason": "stop"}]}
    body = json.dumps(probe).replace('"odd": 0', f'"odd": {BIG}').encode()
    with FakeOpenAI(models=["m"], responder=listbench_answer) as fake:
        answered = fake.dispatch
        fake.dispatch = lambda request: Response(200, body) if b"Say ok." in request.body else answered(request)
        done = call_benchrun("runner=openai", f"runner.base_url={fake.url}", "runner.model=m", "cache=false",
                             "task.only=[product]", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    identity = json.loads(run_dir_of(done.stdout).joinpath("run.json").read_text())["identity"]
    return {key: identity.get(key) for key in ("answers_as", "system_fingerprint")}


def versions_warned(tmp_path: Path, *versions: Any) -> tuple[list[str], str]:
    """A run of the product task against a list of fake Ollama servers, each saying one of `versions` as its version
    (`{"version": ...}`): the servers' URLs and what the run said on stderr."""
    with ExitStack() as stack:
        fakes = [stack.enter_context(FakeOllama(responder=listbench_answer, version=v)) for v in versions]
        done = call_benchrun(f"runner.host=[{','.join(fake.url for fake in fakes)}]", "cache=false",
                             "task.only=[product]", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return [fake.url for fake in fakes], done.stderr


def busy_at_the_end(tmp_path: Path, runner: str) -> tuple[str, Any]:
    """A run of the product task against a fake of `runner` whose model list answers its second request (the check
    as the run ends that the model is the one it began with) 503 asking `Retry-After: 1`: its URL and the result."""
    said = wire(b'{"error": {"message": "warming up", "code": 503}}', status="503 Service Unavailable")
    busy = Response(503, b"", wire=said.replace(b"\r\n\r\n", b"\r\nRetry-After: 1\r\n\r\n", 1))
    root = json.dumps({"object": "list", "data": [{"id": "m", "object": "model", "root": "/models/m"}]}).encode()
    asked: list[str] = []
    fake_type = FakeOllama if runner == "ollama" else FakeOpenAI
    with fake_type(models=["llama3.2", "m"], responder=listbench_answer) as fake:
        answered = fake.dispatch

        def dispatch(request: Any) -> Any:
            if request.path not in LISTS.values():
                return answered(request)
            asked.append(request.path)
            return busy if len(asked) == 2 else answered(request) if runner == "ollama" else Response(200, root)

        fake.dispatch = dispatch
        return fake.url, call_benchrun(*SERVED[runner](fake.url), "cache=false", "task.only=[product]",
                                       f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)


def unversioned(tmp_path: Path) -> tuple[dict[str, Any], str]:
    """run.json's identity of a run against a fake Ollama saying no version (`{"version": null}`), and `show`'s
    line of its model (white space squeezed)."""
    with FakeOllama(responder=listbench_answer, version=None) as fake:
        done = call_benchrun(f"runner.host={fake.url}", "cache=false", "task.only=[product]",
                             f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    run_dir = run_dir_of(done.stdout)
    shown = squeezed(tmp_path, "show", str(run_dir))
    return json.loads((run_dir / "run.json").read_text())["identity"], shown[shown.index("model "):]


def vllm_pooled(tmp_path: Path, *lengths: int) -> tuple[list[str], str]:
    """A run of the product task against a list of fake OpenAI-compatible servers whose model entries say one of
    `lengths` each as `max_model_len` (vLLM's): the servers' URLs and what the run said on stderr."""
    with ExitStack() as stack:
        fakes = [stack.enter_context(FakeOpenAI(models=["m"], responder=listbench_answer)) for _ in lengths]
        for fake, length in zip(fakes, lengths):
            listed = json.dumps({"object": "list", "data": [{"id": "m", "object": "model", "max_model_len": length}]})
            answered = fake.dispatch
            fake.dispatch = lambda request, body=listed.encode(), answered=answered: (
                Response(200, body) if request.path == "/v1/models" else answered(request))
        urls = [fake.url for fake in fakes]
        done = call_benchrun("runner=openai", f"runner.base_url=[{','.join(urls)}]", "runner.model=m",
                             "runner.structured=json_schema", "cache=false", "task.only=[product]",
                             f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return urls, done.stderr

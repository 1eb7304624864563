"""Runs of the seed's benchmark for the twenty-fourth hostile pass of the asking side: against a fake server whose
first answer to one sample is a hostile one, and what the run recorded of that sample."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchrun.testing.chat import Reply
from benchrun.testing.http_fake import json_response
from benchrun.testing.ollama_server import FakeOllama
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import listbench_answer
from tests.helpers.archives import read_jsonl
from tests.helpers.commands import call_benchrun, run_dir_of

PROMPT = "find the product of 2 and 3"
"""The prompt of the sample (product:a=2,b=3) whose first answer is the hostile one."""


def once(reply: Reply, prompt: str = PROMPT):
    """A responder answering the first request of `prompt` with `reply`, then rightly."""
    seen: list[str] = []

    def responder(request):
        if request.prompt == prompt and prompt not in seen:
            seen.append(prompt)
            return reply
        return listbench_answer(request)
    return responder


def openai_run(tmp_path: Path, responder, *args: str, server: type[FakeOpenAI] = FakeOpenAI) -> tuple[str, Any]:
    """A run of the product task against an OpenAI-compatible fake answering as `responder`: its URL and the result."""
    with server(models=["m"], responder=responder) as fake:
        return fake.url, call_benchrun(
            "runner=openai", f"runner.base_url={fake.url}", "runner.model=m", "cache=false", "runner.backoff_s=0",
            "task.only=[product]", "runner.structured=json_schema", f"outputs={tmp_path / 'outputs'}", *args,
            cwd=tmp_path)


def ollama_run(tmp_path: Path, responder, *args: str) -> Any:
    """A run of the product task against a fake Ollama answering as `responder`."""
    with FakeOllama(models=["llama3.2"], responder=responder) as fake:
        return call_benchrun(f"runner.host={fake.url}", "cache=false", "runner.backoff_s=0", "task.only=[product]",
                             f"outputs={tmp_path / 'outputs'}", *args, cwd=tmp_path)


def asked(stdout: str, sample: str = "product:a=2,b=3") -> tuple[Any, Any, int, list[str]]:
    """What the run recorded of `sample`: its text, error, attempts and its failed attempts' messages."""
    [record] = [r for r in read_jsonl(run_dir_of(stdout) / "responses.jsonl") if r["id"] == sample]
    return record["text"], record["error"], record["attempts"], [a["error"]["message"]
                                                                 for a in record["failed_attempts"]]


def ollama_saying(tmp_path: Path, path: str, change) -> Any:
    """A run of the product task against a fake Ollama whose answer to GET or POST `path` (a JSON object) is first
    passed through `change`."""
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as fake:
        answered = fake.dispatch

        def dispatch(request):
            response = answered(request)
            return json_response(change(json.loads(response.body))) if request.path == path else response
        fake.dispatch = dispatch
        return call_benchrun(f"runner.host={fake.url}", "cache=false", "task.only=[product]",
                             f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)

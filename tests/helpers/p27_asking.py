"""Runs for the twenty-seventh hostile pass of the asking side: a fake Ollama whose answer to one path of its API is
another."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchrun.testing.http_fake import Response
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.answers import listbench_answer
from tests.helpers.commands import call_benchrun


def ollama_answering(tmp_path: Path, path: str, response: Response) -> tuple[str, Any]:
    """A run of the product task against a fake Ollama answering GET or POST `path` with `response`: its URL and
    the result."""
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as fake:
        answered = fake.dispatch
        fake.dispatch = lambda request: response if request.path == path else answered(request)
        return fake.url, call_benchrun(f"runner.host={fake.url}", "cache=false", "task.only=[product]",
                                       f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)

"""Runs for the twenty-seventh hostile pass of the asking side: a fake server whose answer to one path of its API is
another."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchrun.testing.http_fake import Response
from benchrun.testing.ollama_server import FakeOllama
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import listbench_answer
from tests.helpers.commands import call_benchrun

SERVED = {"ollama": lambda url: [f"runner.host={url}"],
          "openai": lambda url: ["runner=openai", f"runner.base_url={url}", "runner.model=m",
                                 "runner.structured=json_schema"]}
"""The arguments of a run of each runner against a fake at `url`."""


def answering(tmp_path: Path, runner: str, path: str, response: Response) -> tuple[str, Any]:
    """A run of the product task against a fake of `runner` (ollama, openai) answering GET or POST `path` with
    `response`: its URL and the result."""
    fake_type = FakeOllama if runner == "ollama" else FakeOpenAI
    with fake_type(models=["llama3.2", "m"], responder=listbench_answer) as fake:
        answered = fake.dispatch
        fake.dispatch = lambda request: response if request.path == path else answered(request)
        return fake.url, call_benchrun(*SERVED[runner](fake.url), "cache=false", "task.only=[product]",
                                       f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)

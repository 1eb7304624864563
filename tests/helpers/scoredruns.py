"""A benchmark of text answers run against a fake server that answers each prompt by its last word: the scores."""

from __future__ import annotations

import json
from pathlib import Path

from benchrun.core.errors import EXIT
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import bench_run, run_dir_of

TEXT = "from pydantic import BaseModel\n\n\nclass Text(BaseModel):\n    answer: str\n"
"""A response format of one text field, `answer`."""


def scored(root: Path, files: dict[str, str], answers: dict[str, str]) -> list[tuple[str, dict[str, int]]]:
    """(sample id, metrics) of each score but format_valid of a run (in this process) of the benchmark made of
    `files`, against a fake server whose model answers `{"answer": answers[the prompt's last word]}`."""
    write_bench(root, files)
    reply = lambda req: json.dumps({"answer": answers[req.prompt.split()[-1]]})  # noqa: E731
    with FakeOllama(responder=reply) as server:
        result = bench_run(root, server.url, "task.path=bench", "cache=false")
    assert result.returncode == EXIT["ok"], result.stderr
    scores = read_jsonl(run_dir_of(result.stdout) / "scores.jsonl")
    return [(s["id"], s["metrics"]) for s in scores if s["scorer"] != "format_valid"]

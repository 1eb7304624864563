"""Benchmarks and servers for the twenty-ninth hostile pass of the asking side: a benchmark whose judge grades by a
number (no `scores`), and the run of it with the judge replying a given text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchrun.testing.chat import Reply
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.answers import listbench_answer
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.judges import TASKS, answer

NUMBERED = {"tasks.yml": TASKS, "custom_response.py": (
    "from pydantic import BaseModel\n\n\nclass Graded(BaseModel):\n    grade: float\n"),
    "judges.yml": "- name: names\n  rubric: 'Q {prompt} A {response} R {reference}'\n  format: Graded\n  score: grade\n"}


def judged_by(tmp_path: Path, reply: str) -> tuple[Any, list[tuple[Any, Any, Any]]]:
    """The run of a benchmark whose judge (qwen2.5) grades by a number and replies `reply` to every call: the command's
    result and each judgement's (grade, value, error)."""
    write_bench(tmp_path, NUMBERED)
    with FakeOllama(models=["llama3.2", "qwen2.5"],
                    responder=lambda req: reply if req.model.startswith("qwen2.5") else answer(req)) as server:
        result = call_benchrun(f"runner.host={server.url}", "task.path=bench", "judge.model=qwen2.5", "cache=false",
                               f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    [run_dir] = sorted(p.parent for p in (tmp_path / "outputs").glob("*/*/run.json"))
    return result, [(j["grade"], j["value"], j["error"]) for j in read_jsonl(run_dir / "judgements.jsonl")]


def no_tokens(request: Any) -> Reply:
    """listbench's answer, its server saying it wrote it in 0 tokens (a proxy that counts none)."""
    said = listbench_answer(request)
    return Reply(content=said, eval_count=0) if isinstance(said, str) else said


def eleven_days(request: Any) -> Reply:
    """listbench's answer, its server saying it took 11 days to load the model, and 3 to write the answer."""
    said = listbench_answer(request)
    return Reply(content=said, load_duration=10**15, total_duration=10**15 + 50_000_000,
                 eval_duration=3 * 10**14) if isinstance(said, str) else said

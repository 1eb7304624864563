"""Deterministic model answers for the shipped benchmarks, and helpers to run benchrun (in this process) against a
fake server."""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchrun.runners.openai import PROBE_PROMPT
from benchrun.testing.chat import default_responder
from benchrun.testing.ollama_server import ChatRequest, Reply
from tests.conftest import call_benchrun

SYMBOLS = {"@": {"answer": "at"}, "$": {"answer": "dollar"}, "#": {"answer": "hash or pound"}}
DIRECTIONS = {"^": {"name": "carat", "direction": "up"}, "<": {"name": "less", "direction": "right"},
              ">": {"name": "greater than", "direction": "right"}}
SUMS = {(2, 3): "5", (4, 5): "9", (8, 9): "16"}


def listbench_answer(req: ChatRequest) -> Reply | str:
    """product: (3,4) wrong; product_combination: (5,5) wrong, 'add' when a == 2; symbols and directions above."""
    if m := re.fullmatch(r"find the product of (\d+) and (\d+)", req.prompt):
        a, b = int(m[1]), int(m[2])
        if "justification" in req.format["properties"]:
            answer = 24 if (a, b) == (5, 5) else a * b
            return json.dumps({"answer": answer, "justification": "add a to itself b times" if a == 2 else "times"})
        return json.dumps({"answer": 11 if (a, b) == (3, 4) else a * b})
    if m := re.fullmatch(r"what is the name for the following symbol\? (.)", req.prompt):
        return json.dumps(SYMBOLS[m[1]])
    if m := re.fullmatch(r"what direction does the (.) symbol point\? and what is its name ", req.prompt):
        return json.dumps(DIRECTIONS[m[1]])
    if m := re.fullmatch(r"what is (\d+) \+ (\d+)\?", req.prompt):
        return json.dumps({"answer": SUMS[int(m[1]), int(m[2])]})
    if req.prompt == PROBE_PROMPT:  # runner=openai's structured-output probe
        return default_responder(req)
    return Reply(status=400, error=f"unexpected prompt {req.prompt!r}")


def run_dir_of(stdout: str) -> Path:
    return Path(re.search(r"^run directory: (.+)$", stdout, re.M)[1])


def sweep_dir_of(stdout: str) -> Path:
    return Path(re.search(r"^sweep directory: (.+)$", stdout, re.M)[1])


def bench_run(tmp_path: Path, url: str, *args: str, multirun: bool = False):
    """`python -m benchrun [-m] runner.host=url outputs=tmp_path/outputs args...` in tmp_path, in this process."""
    flags = ["-m"] if multirun else []
    return call_benchrun(*flags, f"runner.host={url}", f"outputs={tmp_path / 'outputs'}", *args, cwd=tmp_path)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def make_run(root: Path, *overrides: str, responder=listbench_answer, models=("llama3.2", "gemma3"),
             multirun: bool = False) -> Path:
    """A real run (or sweep) made by `python -m benchrun` (in this process) in `root` against a fresh fake server; its
    directory. The answers are the responder's: the response cache is off (cache=false)."""
    from benchrun.testing.ollama_server import FakeOllama

    root.mkdir(parents=True, exist_ok=True)
    with FakeOllama(models=list(models), responder=responder) as server:
        result = bench_run(root, server.url, "cache=false", *overrides, multirun=multirun)
    if result.returncode not in (0, 1):
        raise AssertionError(f"benchrun failed ({result.returncode}): {result.stderr}")
    return sweep_dir_of(result.stdout) if multirun else run_dir_of(result.stdout)

"""A run killed mid-way by a real signal: the times7 benchmark of N samples, started as `python -m benchrun` against
a loopback server that holds every answer after KILLED_AT until the run is killed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from benchrun.core.resources import demos_dir
from benchrun.testing.holding import holding_answers
from benchrun.testing.lab import line_count, wait_for
from benchrun.testing.ollama_server import FakeOllama

N = 60


def write_bench(path: Path) -> Path:
    path.mkdir(parents=True)
    shutil.copy(demos_dir() / "listbench" / "custom_scorer.py", path)
    (path / "tasks.yml").write_text(
        "- name: times7\n  template: 'find the product of {a} and {b}'\n"
        f"  values:\n    a: {list(range(N))}\n    b: {[7] * N}\n"
        "  reference: calculated\n  scorer: calculated_answer\n  format: IntAnswer\n")
    return path


KILLED_AT = 10
"""The answers a killed run holds: the server holds every request after these until the run is killed."""


def killed_run(tmp_path: Path, server: FakeOllama, signum: int = signal.SIGKILL) -> Path:
    """Start a run (two samples at a time), kill it with `signum` once it holds KILLED_AT answers and waits for the
    next (SIGTERM: it ends `interrupted`, sealed); its run directory."""
    env = {**os.environ, "COLUMNS": "200"}
    with holding_answers(server, after=KILLED_AT) as hold:
        proc = subprocess.Popen([sys.executable, "-m", "benchrun", "task.path=bench", f"runner.host={server.url}",
                                 f"outputs={tmp_path / 'outputs'}", "runner.concurrency=2"],
                                cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: hold.holding and [line_count(path) for path in responses_files(tmp_path)] == [KILLED_AT])
        os.kill(proc.pid, signum)
        proc.wait()
    [found] = responses_files(tmp_path)
    return found.parent


def responses_files(tmp_path: Path) -> list[Path]:
    return list((tmp_path / "outputs").glob("*/*/responses.jsonl"))

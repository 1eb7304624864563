"""A submitit_local sweep of two models, stopped by SIGTERM to its process alone once both jobs ask."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Callable

from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import wait_for
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.benchfiles import tasks_yml, write_bench

TASK = {"name": "t", "template": "say {a}", "values": {"a": [1, 2]}, "reference": ["1", "2"]}


def stopped_local_sweep(root: Path, started: Callable[[], None] | None = None) -> tuple[int, str, Path, list[dict]]:
    """(exit code, last line of standard error, sweep directory, each job's run.json) of the sweep, started in `root`
    with `started` run in its process before it execs (`preexec_fn`), its model answering after 60 s."""
    outputs = root / "outputs"
    write_bench(root, {"tasks.yml": tasks_yml(TASK)})
    with FakeOllama(models=["llama3.2", "gemma3"], latency_s=60) as server:
        sweep = subprocess.Popen([sys.executable, "-m", "benchrun", "-m", "runner.model=llama3.2,gemma3",
                                  "hydra/launcher=submitit_local", "task.path=bench", f"runner.host={server.url}",
                                  "cache=false", f"outputs={outputs}"], cwd=root, env=child_env(),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=started)
        try:
            wait_for(lambda: len(list(outputs.glob("*/*_sweep/*/responses.jsonl"))) == 2, 120)
            sweep.send_signal(signal.SIGTERM)
            _, stderr = sweep.communicate(timeout=120)
        finally:
            sweep.kill()
    [sweep_dir] = outputs.glob("*/*_sweep")
    runs = [json.loads((job / "run.json").read_text()) for job in sorted(sweep_dir.glob("[01]_*"))]
    return sweep.returncode, stderr.splitlines()[-1], sweep_dir, runs

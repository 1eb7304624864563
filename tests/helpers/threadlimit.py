"""A run in a process that can start only so many threads (a pids limit, `ulimit -u` or `-v`), as a real process."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchrun.testing.inprocess import child_env
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.benchfiles import tasks_yml, write_bench

NO_THREAD = ("no thread could be started (can't start new thread): the system's limit of processes and threads is "
             "reached (ulimit -u, a container's or cgroup's pids.max), or of memory (ulimit -v)")
TASK = {"name": "t", "template": "say {a}", "values": {"a": [1, 2]}, "reference": ["1", "2"], "scorer": "s"}


def run_with_threads(root: Path, threads: int) -> subprocess.CompletedProcess:
    """A run in `root` of a benchmark of two samples and a custom scorer, in a process that can start `threads`
    threads and no more."""
    write_bench(root, {"tasks.yml": tasks_yml(TASK), "custom_scorer.py": "def s(response, reference):\n    return 1\n"})
    with FakeOllama(models=["llama3.2"]) as server:
        return subprocess.run([sys.executable, "-m", "benchrun", "task.path=bench", f"runner.host={server.url}",
                               "cache=false", "outputs=outputs"], cwd=root, env=child_env(), capture_output=True,
                              text=True, timeout=300, preexec_fn=lambda: _limited(threads))


def audit_with_threads(root: Path, threads: int, *args: str) -> subprocess.CompletedProcess:
    """`benchrun-audit ARGS` in `root`, in a process that can start `threads` threads and no more."""
    return subprocess.run([sys.executable, "-m", "benchrun.audit", *args], cwd=root, env=child_env(),
                          capture_output=True, text=True, timeout=300, preexec_fn=lambda: _limited(threads))


def _limited(threads: int) -> None:
    """This process's limits such that it can start `threads` threads and no more: each thread's stack takes
    RLIMIT_STACK (4 GiB) of the address space, which RLIMIT_AS bounds 2 GiB above that many stacks."""
    stack = 4 << 30
    resource.setrlimit(resource.RLIMIT_STACK, (stack, stack))
    resource.setrlimit(resource.RLIMIT_AS, ((threads * 2 + 1) * stack // 2, (threads * 2 + 1) * stack // 2))


def failed_for_a_thread(root: Path) -> tuple[dict[str, Any], str]:
    """The run.json of the one run under `root`/outputs, and the line a run failed for a thread not started says."""
    [run_dir] = (root / "outputs").glob("*/*")
    info, where = json.loads((run_dir / "run.json").read_text()), run_dir.absolute()
    return info, (f"benchrun: error: {NO_THREAD}; run {info['run_id'][:12]} is recorded as 'failed' with 0 of 2 "
                  f"samples in {where}; finish it with: benchrun-audit resume {where}\n")

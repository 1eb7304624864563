"""A run killed mid-way by a real signal: the times7 benchmark of N samples, started as `python -m benchrun` against
a loopback server that holds every answer after KILLED_AT until the run is killed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from benchrun.core.resources import demos_dir
from benchrun.testing.holding import holding_answers
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import Lab, line_count, wait_for
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
        wait_for(lambda: hold.holding and [_committed(path) for path in responses_files(tmp_path)] == [KILLED_AT])
        os.kill(proc.pid, signum)
        proc.wait()
    [found] = responses_files(tmp_path)
    return found.parent


def _committed(responses: Path) -> int:
    """How many lines of `responses` are committed: their digests are in records.sha256 (a line written, its digest
    not yet, is dropped by readers: a run killed then held one answer fewer)."""
    digests = responses.parent / "records.sha256"
    if not digests.is_file():
        return 0
    return min(line_count(responses), sum(line.startswith(b"r ") for line in digests.read_bytes().splitlines()))


def responses_files(tmp_path: Path) -> list[Path]:
    return list((tmp_path / "outputs").glob("*/*/responses.jsonl"))


def from_the_terminal(lab: Lab, signum: int, *args: str, ignored: bool = False) -> subprocess.CompletedProcess:
    """A run in a session of its own (a terminal's), sent `signum` to its whole process group, as a terminal sends
    SIGHUP when it closes (or Ctrl-\\ SIGQUIT), once 2 answers are recorded; started ignoring `signum` if `ignored`
    (`nohup`, a shell's background job)."""
    with lab.holding_answers(after=2) as hold:
        proc = subprocess.Popen([sys.executable, "-m", "benchrun", *args], cwd=lab.root, env=child_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                                preexec_fn=(lambda: signal.signal(signum, signal.SIG_IGN)) if ignored else None)
        run_dir = lab.first_run_dir()
        lab.wait_for(lambda: hold.holding and lab.lines(run_dir) == 2)
        os.killpg(proc.pid, signum)
        if ignored:
            time.sleep(0.5)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

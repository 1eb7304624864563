"""Runs for the thirty-third hostile pass of the archive side: a retry killed (SIGKILL) as it records an answer, a
parent run with two failed requests to retry, the hidden folder a killed merge leaves, a judged run."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from benchrun.archive.writer import now
from benchrun.testing.chat import ChatRequest, Reply
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.answers import listbench_answer
from tests.helpers.archives import synthetic_run
from tests.helpers.commands import run_in_process
from tests.helpers.judgedruns import Judging, judged_eight

KILLED_RECORDING = """
import os, signal, sys
from benchrun.archive.writer import RunWriter
from benchrun.audit.__main__ import main
record, recorded, after = RunWriter.record_response, [], int(sys.argv.pop(1))
def killed(self, *args, **kwargs):
    recorded.append(1)
    if len(recorded) > after:
        os.kill(os.getpid(), signal.SIGKILL)
    return record(self, *args, **kwargs)
RunWriter.record_response = killed
sys.argv = ["benchrun-audit", *sys.argv[1:]]
sys.exit(main())
"""
"""`benchrun-audit ARGS` (after the number of answers it records), killed by SIGKILL as it records the next (its
line not written)."""


def killed_audit(after: int, *args: str) -> subprocess.CompletedProcess:
    """`benchrun-audit ARGS` killed as it records its answer after `after` (`KILLED_RECORDING`)."""
    return subprocess.run([sys.executable, "-c", KILLED_RECORDING, str(after), *args],
                          cwd=Path(__file__).parents[2], capture_output=True, text=True)


FAILED = ("find the product of 5 and 5", "find the product of 3 and 4")
"""The prompts `two_failed` answers with HTTP 503."""


def two_failed(req: ChatRequest) -> Reply | str:
    """listbench_answer, but for HTTP 503 to the prompts FAILED."""
    return Reply(status=503, error="server busy") if req.prompt in FAILED else listbench_answer(req)


def killed_retry(root: Path) -> tuple[Path, Path]:
    """A run of listbench's product and symbol tasks (two requests failed: 4 answers to carry, 2 to ask), and its
    retry killed as it recorded its sixth answer (4 carried over, 1 asked); the two run directories."""
    shutil.copytree(Path(__file__).parents[2] / "benchrun" / "demos" / "listbench", root / "bench")
    parent = run_in_process(root, "p", "task.path=bench", "task.only=[product,symbol]", "runner.retries=0",
                            responder=two_failed)
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
        killed = killed_audit(5, "retry", str(parent), "--host", server.url, "--set", "runner.concurrency=1")
    assert killed.returncode == -9, killed.stderr
    return parent, parent.with_name("p.retry1")


def merge_left(root: Path) -> Path:
    """The hidden folder a merge into root/merged makes its run in (`.merged.merging-<run id>`), as a merge killed
    before it ended leaves it: a finished synthetic run whose run.json names two shards."""
    shards = [{"run_id": str(i) * 12, "path": str(root / f"s{i}"), "shard": f"{i}/2", "status": "completed",
               "responses": 1} for i in (1, 2)]
    run_dir = synthetic_run(root / "made", [1, 0], merged={"shards": shards, "merged_at": now()})
    return run_dir.rename(root / f".merged.merging-{'5' * 12}")


def judged_run(root: Path) -> Path:
    """A finished run of eight answers, each graded by the judge `names` (`tests.helpers.judgedruns.judged_eight`)."""
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Judging()) as server:
        done, run_dir = judged_eight(root, server.url)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return run_dir

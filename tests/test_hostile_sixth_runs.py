"""Hostile input, sixth pass, the process side (issue 19's fresh pass of the same kinds): real `python -m benchrun`
processes under abuse, the cases it found bad, each with the rule it now obeys.

- a run (or `benchrun-audit resume`) started with its stderr closed (`2>&-`, as some launchers and cron set-ups do):
  it hung forever before its first question, `running` under a live lock: the scorer process, which inherits the
  run's stderr, took file descriptor 2 for its replies and then pointed 2 at its log, so the run never heard it was
  ready. Now every entry point opens /dev/null on a standard descriptor that is closed, inheritable, before anything
  else, so no file, pipe or child takes its number
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import Lab


def closed_stderr(lab: Lab, *args: str, module: str = "benchrun") -> subprocess.CompletedProcess:
    """`python -m module args` in the lab with file descriptor 2 closed, as `2>&-` starts it."""
    return subprocess.run([sys.executable, "-m", module, *args], cwd=lab.root, env=child_env(),
                          stdout=subprocess.PIPE, text=True, timeout=60, preexec_fn=lambda: os.close(2))


def test_a_run_and_a_resume_started_with_stderr_closed_finish(tmp_path):
    with Lab(tmp_path, n=4, latency_s=0) as lab:
        with lab.held_after(2, *lab.args()) as (proc, run_dir):
            proc.terminate()
            proc.communicate(timeout=30)
            assert proc.returncode == EXIT["interrupted"]
        resumed = closed_stderr(lab, "resume", str(run_dir), module="benchrun.audit")
        assert resumed.returncode == EXIT["ok"]
        ran = closed_stderr(lab, *lab.args())
    assert ran.returncode == EXIT["ok"] and "completed: 4/4 samples" in ran.stdout
    assert [(json.loads((run / "run.json").read_text())["status"], '"ready"' in (run / "benchrun.log").read_text())
            for run in lab.run_dirs()] == [("completed", False)] * 2

"""Hostile input, fifteenth pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad,
each with the rule it now obeys.

- a custom scorer that starts a process of its own (a HumanEval-like scorer running an answer's code with
  `subprocess`): when the call overran scorer_timeout_s, the scorer process was killed and replaced, but the child
  running the answer's code (a loop without end) was left running for good, reparented to init, after benchrun had
  exited; so was a child a call left behind when the run ended. Now the scorer process leads a process group of its
  own and is ended with the whole group (`scorerprocess._ended`), as its call overruns, as it dies, and as the run ends
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.lab import Lab, wait_for
from tests.helpers.wire import records

pytestmark = pytest.mark.slow

SPAWNING = """import json
import subprocess
import sys
from pathlib import Path

FOREVER = [sys.executable, '-c', 'import time\\nwhile True: time.sleep(1)']


def spawns(response, values):
    if values['a'] in (1, 2):
        child = subprocess.Popen(FOREVER)
        Path({pids!r}, str(values['a'])).write_text(str(child.pid))
        if values['a'] == 2:
            child.wait()
    return int(json.loads(response)['answer'] == values['a'] * 7)
"""


def _running(pid: int) -> bool:
    """Whether process `pid` is there and not a zombie (dead, waiting to be reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_the_processes_a_scorer_starts_end_with_its_call_or_the_run(tmp_path):
    """a = 1 leaves its child running and returns; a = 2 waits on a child that never ends, overrunning its time."""
    pids = tmp_path / "pids"
    pids.mkdir()
    with Lab(tmp_path, n=4, latency_s=0, scorer=SPAWNING.format(pids=str(pids))) as lab:
        result = lab.run(*lab.args("scorer_timeout_s=2"))
        scored = {s["id"]: (s["metrics"], s["error"]) for s in records(lab, "scores.jsonl") if s["scorer"] == "spawns"}
    children = [int(pids.joinpath(name).read_text()) for name in ("1", "2")]
    try:
        wait_for(lambda: not any(map(_running, children)), timeout=20)
    except Exception:
        for pid in filter(_running, children):
            os.kill(pid, signal.SIGKILL)
        raise
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    assert scored == {"times7:a=0": ({"spawns": 1}, None), "times7:a=1": ({"spawns": 0}, None),
                      "times7:a=2": (None, {"type": "TimeoutError", "message": "timed out after 2 s"}),
                      "times7:a=3": ({"spawns": 0}, None)}

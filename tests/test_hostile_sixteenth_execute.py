"""Hostile input, sixteenth pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad,
each with the rule it now obeys.

- a run killed by SIGKILL (the OOM killer, a batch scheduler past its grace, `kill -9`) while a custom scorer had
  started a process of its own (a HumanEval-like scorer running an answer's code): the scorer process died with the
  run (PR_SET_PDEATHSIG), but the process it had started, in its process group, was reparented to init and ran for
  good, the fifteenth pass's "found and not fixed"; now the scorer process's group holds a keeper that runs no user
  code and takes no signal but SIGKILL, and kills the group once the scorer process has ended
  (`scorer_worker._keep_group`)
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from benchrun.testing.lab import Lab, wait_for

pytestmark = pytest.mark.slow

LEAVING = """import json
import os
import subprocess
import sys
import time
from pathlib import Path


def leaves(response, values):
    if values['a'] == 1:
        subprocess.Popen([sys.executable, '-c', 'import time\\nwhile True: time.sleep(1)'])
        Path({group!r}).write_text(str(os.getpgrp()))
        time.sleep(1000)
    return int(json.loads(response)['answer'] == values['a'] * 7)
"""


def _in_group(pgid: int) -> list[int]:
    """The processes of process group `pgid` still running (not zombies)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state, _, group = entry.joinpath("stat").read_text().rsplit(")", 1)[1].split()[:3]
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(group) == pgid and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")
def test_the_processes_a_scorer_started_end_with_a_run_killed_by_sigkill(tmp_path):
    group = tmp_path / "group"
    with Lab(tmp_path, n=3, latency_s=0, scorer=LEAVING.format(group=str(group))) as lab:
        proc = lab.start(*lab.args("scorer_timeout_s=600"))
        wait_for(group.exists)
        pgid = int(group.read_text())
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    try:
        wait_for(lambda: not _in_group(pgid), timeout=20)
    finally:
        for pid in _in_group(pgid):
            os.kill(pid, signal.SIGKILL)

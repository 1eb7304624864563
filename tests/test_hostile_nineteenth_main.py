"""The nineteenth hostile pass, the lead's side: a local sweep stopped by a signal said a job was still `running`
when submitit's controller had ended before the job it killed was gone."""

from __future__ import annotations

import fcntl
import subprocess
import sys
import textwrap

import pytest

from benchrun.compose import takeback
from benchrun.core.layout import LOCK
from benchrun.core.procfs import stat_fields

pytestmark = pytest.mark.slow

CONTROLLER = textwrap.dedent("""
    import os, signal, subprocess, sys, time
    job = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]])
    signal.signal(signal.SIGINT, lambda *_: os._exit(0))
    print(job.pid, flush=True)
    time.sleep(60)
""")
"""As submitit's controller is when its job is slow to stop: gone at once, its job left below it, still alive."""
JOB = textwrap.dedent("""
    import fcntl, signal, sys, time
    lock = open(sys.argv[1], "a")
    fcntl.flock(lock, fcntl.LOCK_EX)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    print("locked", flush=True)
    time.sleep(1.5)
""")
"""A job that holds its run's lock and takes 1.5 s to stop."""


def test_a_stopped_local_sweep_waits_for_the_jobs_below_its_launchers_not_only_for_the_launchers(tmp_path,
                                                                                               monkeypatch):
    sweep_dir, job_dir = tmp_path / "sweep", tmp_path / "sweep" / "0"
    job_dir.mkdir(parents=True)
    with subprocess.Popen([sys.executable, "-c", CONTROLLER, JOB, str(job_dir / LOCK)], stdout=subprocess.PIPE,
                          text=True) as controller:
        job = int(controller.stdout.readline())
        (sweep_dir / takeback.LAUNCHER_FILES / str(controller.pid)).mkdir(parents=True)
        while not _locked(job_dir / LOCK):
            pass
        monkeypatch.setattr(takeback, "LOCAL_SWEEPS", [sweep_dir])
        takeback.stop_launched_jobs()
        assert (controller.wait(), _locked(job_dir / LOCK), _running(job)) == (0, False, False)


def _locked(path) -> bool:
    """Whether another process holds an exclusive flock on `path`."""
    if not path.exists():
        return False
    with open(path) as file:
        try:
            fcntl.flock(file, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False


def _running(pid: int) -> bool:
    """Whether process `pid` runs (a zombie no longer holds anything)."""
    fields = stat_fields(pid)
    return fields is not None and fields[0] != "Z"

"""A Slurm sweep stopped by Ctrl-C while its jobs wait in the queue, on the single-node cluster (`.ci/slurm-up`)."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from typing import Callable

from benchrun.testing.lab import wait_for


def interrupted_while_queued(sweep: subprocess.Popen, outputs: Path,
                             ready: Callable[[], bool] = lambda: True) -> tuple[str, str]:
    """SIGINT to `sweep` (writing under `outputs`) once its jobs are submitted and `ready()`; its standard error and
    what squeue then lists of its jobs. Its jobs are cancelled and it is killed whatever happens."""
    jobs: list[str] = []
    try:
        wait_for(lambda: bool(list(outputs.glob("*/*_sweep/.submitit/*_1"))), 120)
        jobs = [path.name.split("_")[0] for path in outputs.glob("*/*_sweep/.submitit/*_1")]
        wait_for(lambda: ready() or sweep.poll() is not None, 120)
        sweep.send_signal(signal.SIGINT)
        _, stderr = sweep.communicate(timeout=120)
        queued = subprocess.run(["squeue", "-h", "-o", "%i", "-j", jobs[0]], capture_output=True, text=True).stdout
    finally:
        sweep.kill()
        subprocess.run(["scancel", *jobs], check=False)
    return stderr, queued

"""What Slurm's queue says of the jobs of the sweeps this process launched: a job that can never start as it asks
(more CPUs or memory than any node of its partition has, a time over the partition's limit, constraints no node
meets, a dependency that can never hold) ends the sweep in one line. It pended for ever, and with Slurm's
accounting off (no sacct) the sweep waited for it for ever, saying nothing."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from typing import Callable

from benchrun.compose.takeback import slurm_job_ids

NEVER = frozenset({"PartitionConfig", "PartitionNodeLimit", "PartitionTimeLimit", "BadConstraints",
                   "DependencyNeverSatisfied", "InvalidAccount", "InvalidQOS", "AccountNotAllowed"})
"""The reasons squeue gives for a pending job that only a change of its request (or of the cluster's configuration)
lets start: the job reason codes that say the request itself cannot be met."""
POLL_S = 5.0
"""How often the queue is asked."""


def watch(stop: Callable[[str], None]) -> None:
    """Ask the queue every POLL_S, in a thread of its own, for as long as the process lives; `stop` the process with
    the line for a job that can never start."""
    threading.Thread(target=_watching, args=(stop,), name="benchrun-slurm-queue", daemon=True).start()


def _watching(stop: Callable[[str], None]) -> None:
    while True:
        time.sleep(POLL_S)
        if (why := never_starts(slurm_job_ids())) is not None:
            stop(why)
            return


def never_starts(ids: list[str]) -> str | None:
    """The line for the first of jobs `ids` (array job ids) that pends for a reason of NEVER; None when none does, or
    when squeue cannot say."""
    if not ids:
        return None
    try:
        listed = subprocess.run(["squeue", "-h", "-u", str(os.getuid()), "-o", "%F|%i|%T|%r"], capture_output=True,
                                text=True, timeout=60, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):  # no squeue here, or a controller that hangs: ask again later
        return None
    for line in listed.splitlines():
        array, job, state, reason = (line.split("|") + ["", "", ""])[:4]
        if array in ids and state == "PENDING" and reason in NEVER:
            return (f"Slurm job {array if '[' in job else job} can never start as it asks (squeue: {reason}): its request is more than the "
                    "partition allows or its nodes have; change hydra.launcher's partition, cpus_per_task, mem_gb, "
                    "gpus_per_node, timeout_min or constraint")
    return None

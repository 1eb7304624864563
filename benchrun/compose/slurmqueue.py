"""What Slurm's queue says of the jobs of the sweeps this process launched, asked every POLL_S while the sweep waits
for them: with Slurm's accounting off (no sacct) submitit follows a job by its result file alone, so a job that can
never start as it asks (more CPUs or memory than any node of its partition has, a time over the partition's limit)
pended for ever, and one that left the queue without a result (cancelled before it ran, its srun failed at once)
was waited for for ever, the sweep saying nothing. Either now ends the sweep in one line."""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from pathlib import Path
from typing import Callable

from benchrun.compose import takeback
from benchrun.compose.slurmcommands import slurm
from benchrun.compose.takeback import LAUNCHER_FILES, SLURM_JOB
from benchrun.core.errors import EXIT
from benchrun.core.text import one_line

NEVER = frozenset({"PartitionConfig", "PartitionNodeLimit", "PartitionTimeLimit", "BadConstraints",
                   "DependencyNeverSatisfied", "InvalidAccount", "InvalidQOS", "AccountNotAllowed"})
"""The reasons squeue gives for a pending job that only a change of its request (or of the cluster's configuration)
lets start: the job reason codes that say the request itself cannot be met."""
POLL_S = 5.0
"""How often the queue is asked; a job is taken to have left it without a result when two askings in a row miss it
and its result, and Slurm says it did not complete."""
LOG_TAIL = 300
"""How much of the end of a lost job's log is read for its last line (characters)."""
TASK_ENDED = re.compile(r"srun: error: \S+: tasks? [0-9,\-]+: ")
"""srun's line saying how a job's task ended (`srun: error: vm: task 0: Exited with exit code 1`), written after
the task's own last line, which says why."""
Stop = Callable[[str, int], None]


def watch(stop: Stop) -> None:
    """Ask the queue every POLL_S, in a thread of its own, for as long as the process lives; `stop` the process with
    the line and exit code for a job that can never start or that left the queue without a result."""
    threading.Thread(target=_watching, args=(stop,), name="benchrun-slurm-queue", daemon=True).start()


def _watching(stop: Stop) -> None:
    missed: set[str] = set()
    known: dict[str, Path] = {}
    while True:
        time.sleep(POLL_S)
        if (queued := _queue()) is None:
            continue
        known.update(_tasks())  # and those whose folder went since (the sweep's directory removed): no result comes
        if (why := never_starts(queued, known)) is not None:
            stop(why, EXIT["usage"])
            return
        now = _without_result(queued, known)
        lost, missed = {job for job in missed & now if _ended_badly(job)}, now
        if lost:
            job = min(lost)
            stop(f"Slurm job {job} left the queue without a result (cancelled before it ran, killed, or its setup "
                 f"failed){_last_said(known[job] / f'{job}_0_log.err')}", EXIT["sweep_failed"])
            return


def _queue() -> dict[str, tuple[str, str]] | None:
    """This user's jobs in Slurm's queue, each task of an array on its own: (state, reason) by job id (`123_4`); None
    when squeue cannot say (none here, a controller that hangs or fails)."""
    listed = slurm("squeue", "-h", "-r", "-u", str(os.getuid()), "-o", "%i|%T|%r")
    if listed is None or listed.returncode:
        return None
    return {job: (state, reason) for job, state, reason in
            (((line.split("|") + ["", ""])[:3]) for line in listed.stdout.splitlines())}


def never_starts(queued: dict[str, tuple[str, str]], known: dict[str, Path]) -> str | None:
    """The line for the first of the `known` jobs that pends for a reason of NEVER; None when none does."""
    for job in sorted(known):
        state, reason = queued.get(job, ("", ""))
        if state == "PENDING" and reason in NEVER:
            return (f"Slurm job {job} can never start as it asks (squeue: {reason}): its request is more than the "
                    "partition allows or its nodes have; change hydra.launcher's partition, cpus_per_task, mem_gb, "
                    "gpus_per_node, timeout_min or constraint")
    return None


def _without_result(queued: dict[str, tuple[str, str]], known: dict[str, Path]) -> set[str]:
    """The `known` jobs that are not in the queue and have written no result."""
    return {job for job, folder in known.items() if job not in queued and not (folder / f"{job}_0_result.pkl").exists()}


def _ended_badly(job: str) -> bool:
    """Whether Slurm says job `job` ended in a state that leaves no result (failed, cancelled, killed), or no longer
    knows it (forgotten MinJobAge after it ended); not for one that completed, whose result a shared file system
    may show late."""
    if (said := slurm("scontrol", "show", "job", "-o", job)) is None:
        return False
    if said.returncode:  # `Invalid job id specified`; `Job 12_1 not found` (an array's task cancelled as it waited)
        return any(words in said.stdout + said.stderr for words in ("Invalid job id", "not found"))
    return not any(word in ("JobState=COMPLETED", "JobState=COMPLETING") for word in said.stdout.split())


def _last_said(log: Path) -> str:
    """The last line the job's standard error holds (srun's error, say), to be said after the job's line; srun's
    word of how the task ended passed over for the task's own last line (`ImportError: ...`), the cause, which the
    sweep's directory taken back with its logs left nowhere else to read."""
    with contextlib.suppress(OSError):
        with log.open("rb") as file:
            file.seek(max(0, file.seek(0, os.SEEK_END) - LOG_TAIL))
            lines = [line for line in file.read().decode("utf-8", "replace").splitlines() if line.strip()]
        if lines:
            said = [line for line in lines if not TASK_ENDED.match(line)] or lines
            return f"; its log ends: {one_line(said[-1], LOG_TAIL)}"
    return ""


def _tasks() -> dict[str, Path]:
    """The folder submitit keeps each job of the sweeps in, by job id (an array's tasks, not the array's own)."""
    folders = {entry.name: entry for sweep_dir in takeback.MADE.slurm_sweeps if (sweep_dir / LAUNCHER_FILES).is_dir()
               for entry in (sweep_dir / LAUNCHER_FILES).iterdir() if SLURM_JOB.fullmatch(entry.name)}
    arrays = {name.split("_")[0] for name in folders if "_" in name}
    return {name: folder for name, folder in folders.items() if name not in arrays}

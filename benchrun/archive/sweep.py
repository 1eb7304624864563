"""Sweeps: the jobs' run directories on disk, summarised side by side (works whatever ran the jobs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchrun.archive.atomic import write_atomic
from benchrun.archive.dirlock import DirLock, not_remotely_written
from benchrun.archive.lookup import job_dirs
from benchrun.archive.reader import load_run
from benchrun.archive.writer import final_config, now, write_seal
from benchrun.core.errors import ArchiveError
from benchrun.core.layout import NO_RUN, RUN, SWEEP_FILE, UNREADABLE
from benchrun.core.records import Summary
from benchrun.core.sweeprecords import SweepJob, SweepLine, SweepSummary


def write_sweep_summary(sweep_dir: Path) -> SweepSummary:
    """Read every job's run.json and summary.json, and write sweep.json."""
    jobs, lines, speed = [], {}, {}
    for job_dir in job_dirs(sweep_dir):
        job, summary = _read_job(job_dir)
        jobs.append(job)
        for line in summary.metrics if summary else ():
            lines.setdefault((line.task, line.metric), {})[job_dir.name] = line
        if summary is not None and summary.speed is not None:
            speed[job_dir.name] = summary.speed
    sweep = SweepSummary(jobs=tuple(jobs), metrics=tuple(
        SweepLine(task=task, metric=metric, jobs=by_job) for (task, metric), by_job in lines.items()), speed=speed)
    write_atomic(sweep_dir / SWEEP_FILE, sweep.model_dump_json(indent=2).encode() + b"\n")
    return sweep


def settle_dead_jobs(sweep_dir: Path, reason: str) -> list[Path]:
    """Record as `interrupted` (with `reason`) every job of the sweep that says `running` while no process holds
    its lock: its process died (a launcher's worker killed, the out-of-memory killer), so it cannot say so itself;
    `resume` finishes it, or, one that died before it compiled (it asked nothing), it is sealed here. The jobs
    settled."""
    jobs = [job_dir for job_dir in job_dirs(sweep_dir) if (job_dir / RUN).is_file()]
    unwritten = not_remotely_written(jobs)  # not those a writer on another machine, whose lock is unseen here, writes
    return [job_dir for job_dir, note in unwritten.items() if _settle(job_dir, reason, note)]


def _settle(job_dir: Path, reason: str, watched: dict[str, Any] | None) -> bool:
    try:
        lock = DirLock(job_dir).acquire(watched=watched)
    except ArchiveError:  # a live writer holds it: that job speaks for itself
        return False
    settled = False
    try:
        info = load_run(job_dir).info
        if info.status == "running":
            dead = info.model_copy(update={"status": "interrupted", "reason": reason, "ended_at": now()})
            if info.manifest_id is None:  # it asked nothing, and resume cannot finish it: ended as its writer ends one
                dead = dead.model_copy(update={"files": final_config(job_dir, info)})
            run_json = dead.model_dump_json(indent=2).encode() + b"\n"
            write_atomic(job_dir / RUN, run_json)
            if info.manifest_id is None:
                write_seal(job_dir, info.run_id, run_json, dead.ended_at)
            settled = True
        return settled
    finally:
        lock.release(ended=settled)


def _read_job(job_dir: Path) -> tuple[SweepJob, Summary | None]:
    """A job as its run directory says (read like any run), or why it cannot be read."""
    if job_dir.is_symlink() or not (job_dir / RUN).is_file():  # a link's run is no job's (`own_run`)
        return SweepJob(dir=job_dir.name, model=None, status=NO_RUN,
                        reason="the job left no run.json; see its log"), None
    try:
        run = load_run(job_dir)
        summary = run.summary
    except ArchiveError as err:
        return SweepJob(dir=job_dir.name, model=None, status=UNREADABLE, reason=str(err)), None
    info = run.info
    return SweepJob(dir=job_dir.name, model=info.model, label=info.label, status=info.status, reason=info.reason,
                    run_id=info.run_id, manifest_id=info.manifest_id), summary

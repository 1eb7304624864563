"""Sweeps: the jobs' run directories on disk, summarised side by side (works whatever ran the jobs)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from benchrun import console
from benchrun.archive import RUN, SUMMARY, write_atomic
from benchrun.records import RunInfo, Summary, SweepJob, SweepLine, SweepSummary
from benchrun.runs import SWEEP_FILE, job_dirs

def write_sweep_summary(sweep_dir: Path) -> SweepSummary:
    """Read every job's run.json and summary.json, and write sweep.json."""
    jobs, lines = [], {}
    for job_dir in job_dirs(sweep_dir):
        job, summary = _read_job(job_dir)
        jobs.append(job)
        for line in summary.metrics if summary else ():
            lines.setdefault((line.task, line.metric), {})[job_dir.name] = line
    sweep = SweepSummary(jobs=tuple(jobs), metrics=tuple(
        SweepLine(task=task, metric=metric, jobs=by_job) for (task, metric), by_job in lines.items()))
    write_atomic(sweep_dir / SWEEP_FILE, sweep.model_dump_json(indent=2).encode() + b"\n")
    return sweep


def _read_job(job_dir: Path) -> tuple[SweepJob, Summary | None]:
    if not (job_dir / RUN).is_file():
        return SweepJob(dir=job_dir.name, model=None, status="missing",
                        reason="the job left no run.json; see its log"), None
    info = RunInfo.model_validate_json((job_dir / RUN).read_bytes())
    summary_path = job_dir / SUMMARY
    summary = Summary.model_validate_json(summary_path.read_bytes()) if summary_path.is_file() else None
    return SweepJob(dir=job_dir.name, model=info.model, status=info.status, reason=info.reason,
                    run_id=info.run_id, manifest_id=info.manifest_id), summary


class SweepSummaryCallback(Callback):
    """Hydra callback: after a multirun, summarise the sweep from disk; exit 1 if any job failed."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if config.get("dry_run"):
            return
        sweep_dir = Path(config.hydra.sweep.dir)
        summary = write_sweep_summary(sweep_dir)
        console.print_sweep(summary, sweep_dir, console.stdout())
        if summary.failed:
            sys.exit(1)

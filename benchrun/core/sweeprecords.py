"""sweep.json: the jobs of a sweep as found on disk, and their metrics and speed side by side."""

from __future__ import annotations

from pydantic import Field

from benchrun.core.frozen import Frozen
from benchrun.core.layout import FAILED_JOB, JobStatus
from benchrun.core.records import RECORD_VERSION, MetricSummary, Speed
from benchrun.core.recordvalues import Version


class SweepJob(Frozen):
    """One job of a sweep, as found on disk."""

    dir: str
    """The job's run directory, relative to the sweep directory."""
    model: str | None
    label: str | None = None
    """What the job is called: the values the sweep varies (run.json's label)."""
    status: JobStatus
    """The run's status; `missing` when the job left no run.json, `unreadable` when it cannot be read."""
    reason: str | None = None
    run_id: str | None = None
    manifest_id: str | None = None


class SweepLine(Frozen):
    """One task x metric across the jobs of a sweep (keyed by job directory)."""

    task: str
    metric: str
    jobs: dict[str, MetricSummary]


class SweepSummary(Frozen):
    """sweep.json: the jobs of a sweep and their metrics side by side."""

    schema_version: Version = RECORD_VERSION
    jobs: tuple[SweepJob, ...]
    metrics: tuple[SweepLine, ...]
    speed: dict[str, Speed] = Field(default_factory=dict)
    """Job directory -> the job's speed (jobs with none are left out)."""

    @property
    def failed(self) -> list[SweepJob]:
        return [job for job in self.jobs if job.status in FAILED_JOB]

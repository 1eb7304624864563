"""Whether a sweep's jobs read one benchmark as it was: each job compiles its benchmark as it starts, so a file
changed while the sweep ran (a reference mended, a scorer edited) had its jobs ask different benchmarks under one
name, compared side by side in the sweep's table as one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchrun.archive.manifesthead import leading_field
from benchrun.archive.reader import load_run
from benchrun.core.errors import BenchrunError
from benchrun.core.layout import MANIFEST


def changed_source(job_dirs: list[Path]) -> str | None:
    """The first benchmark file two of the jobs read with other bytes, said as a line; None when none did (a job that
    left no manifest, refused or failed before it compiled, says why of itself)."""
    first: dict[tuple[str, str], tuple[str, str]] = {}
    for job_dir in job_dirs:
        for where, path, sha in _sources(job_dir):
            seen, by = first.setdefault((where, path), (sha, job_dir.name))
            if seen != sha:
                return (f"jobs {by} and {job_dir.name} read {Path(where) / path} with other bytes (sha256 "
                        f"{seen[:12]}, then {sha[:12]}): the benchmark changed while the sweep ran, and the sweep's "
                        "table compares them as one; run the sweep again")
    return None


def _sources(job_dir: Path) -> list[tuple[str, str, str]]:
    """(benchmark directory, file, sha256) of each benchmark file the job's manifest names (its `files`, read
    without its samples); none when it has none."""
    if job_dir.is_symlink():  # no job's run (`lookup.own_run`)
        return []
    try:
        where = str(load_run(job_dir).bench_dir())
        files: list[dict[str, Any]] = leading_field(job_dir / MANIFEST, "files")
        return [(where, str(entry["path"]), str(entry["sha256"])) for entry in files]
    except (BenchrunError, OSError, KeyError, TypeError):
        return []

"""The runs an audit command's arguments name: a run by path or id prefix, a sweep's directory standing for its jobs.
A run a `retry` or `merge` made in a sweep's directory is no job of it, and is said to be passed over."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from benchrun.archive.lookup import named, named_runs
from benchrun.archive.reader import PathLike, Run
from benchrun.archive.writer import file_digest
from benchrun.console.output import warning
from benchrun.core.errors import BenchrunError
from benchrun.core.layout import JUDGED_FILES
from benchrun.core.records import FileDigest


def runs_named(refs: Sequence[PathLike], root: PathLike) -> list[Run]:
    """Every run `refs` name, in order, a sweep's jobs in job order."""
    runs = []
    for ref in refs:
        found, later = named_runs(ref, root)
        runs.extend(found)
        say_passed_over(Path(named(ref)), later)
    return runs


def say_passed_over(folder: Path, later: list[Run]) -> None:
    """A warning for each run made `later` in the sweep's directory `folder`: read by its own path only."""
    for run in later:
        made = f"a retry of run {run.info.parent.run_id}" if run.info.parent else "a merge of shard runs"
        warning(f"{run.path} is {made}, made in the sweep's directory {folder}, and no job of the sweep: "
                "name it to read it")


def one_each(runs: Sequence[Run], told_by: str) -> list[Run]:
    """Each run once, where a command tells runs apart by their id (`told_by`: how): a directory named twice (by path
    and id) once; two directories of one run id (a copy, perhaps resumed apart since), which would be read as one,
    refused, saying whether they hold the same records."""
    ids: dict[str, Run] = {}
    for run in {os.path.realpath(run.path): run for run in runs}.values():
        if (twin := ids.setdefault(run.id, run)) is not run:
            raise BenchrunError(f"{twin.path} and {run.path} hold one run id, "
                                f"{run.id} ({_copies(twin, run)}): {told_by}; name one of them")
    return list(ids.values())


def _copies(run: Run, twin: Run) -> str:
    """What two folders of one run id are: copies of one run, or a copy that was edited or resumed apart since."""
    if _records(run) == _records(twin):
        return "copies of one run: their records are the same"
    return "a copy of a run, edited or resumed apart since: their records differ"


def _records(run: Run) -> tuple[FileDigest | None, ...]:
    """The digests of the run's record files (None for one it lacks)."""
    return tuple(file_digest(run.path / name) if (run.path / name).is_file() else None for name in JUDGED_FILES)

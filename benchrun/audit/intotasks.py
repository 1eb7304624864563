"""A directory a retry or a merge is to write its run into (`--into DIR`), refused inside the run's benchmark's tasks/
folder, each of whose folders the benchmark's next run read as a task (`compiler.tasksdir.tasks_around`): `merge
--into bench/tasks/merged` made every later run fail as `task 'merged': file is missing`."""

from __future__ import annotations

from pathlib import Path

from benchrun.archive.reader import Run
from benchrun.compiler.tasksdir import tasks_around


def among_tasks(run: Run, into: Path, chosen_by: str) -> str | None:
    """Why `into` cannot take a run of `run`'s benchmark (`chosen_by` naming the option); None when it can."""
    bench = (run.config.get("task") or {}).get("path")
    if not isinstance(bench, str) or not bench:
        return None
    why = tasks_around(str(Path(run.info.cwd or Path.cwd()) / bench), into)  # as rescore finds it
    return why and f"{into}: {why}; nothing was changed; pick a new directory ({chosen_by})"

"""A benchmark's tasks/ folder, each of whose folders is a task, and what may never be made inside it. Light: what
checks a run's, a sweep's, a cache's or an `--into` directory before anything is compiled imports it alone."""

from __future__ import annotations

import os
from pathlib import Path

from benchrun.core.errors import ConfigError
from benchrun.core.home import expanded

TASKS_DIR = "tasks"
TASKS_FILE = "tasks.yml"
TOP_FILES = (TASKS_FILE, "custom_scorer.py", "custom_response.py", "judges.yml")
"""The files of a benchmark folder's top that are its own: its tasks, scorers, response formats and judges."""


def tasks_around(bench: str, path: Path) -> str | None:
    """Why `path`, a run's or a sweep's directory or the response cache's to be, cannot be there: inside the tasks/
    folder of the benchmark at `bench` (`outputs=bench/tasks`, or a run started in it: `cd bench/tasks; benchrun
    task.path=..`), whose every folder is read as a task: the run was refused as `task '2026-12-05': file is
    missing`, recorded failed in that folder, where every later run of the benchmark met it. None when it is not, or
    is beneath a task's own folder (its template.txt there), of which compile reads its own files alone, or when
    `bench` names no folder this system has (`~nosuchuser/b`: said where task.path is checked)."""
    try:
        tasks = Path(os.path.realpath(expanded(bench, "task.path") / TASKS_DIR))  # through links: `outputs=link`
    except ConfigError:
        return None
    inside = Path(os.path.realpath(path))
    if not inside.is_relative_to(tasks):
        return None
    if (first := inside.relative_to(tasks).parts[:1]) and (tasks / first[0] / "template.txt").is_file():
        return None
    return f"inside the benchmark's {TASKS_DIR}/ folder ({tasks}), each of whose folders is read as a task"


def bench_around(bench: str, path: Path) -> str | None:
    """Why `path`, a run's or a sweep's directory to be, cannot be there: the folder of the benchmark at `bench` itself
    (`hydra.run.dir=bench`), or one holding it (`hydra.run.dir=.` beside it): the run's files were written among the
    benchmark's, and a run directory held its sources, which removing the run removed. None when it is neither, or
    `bench` names no folder here (a shipped demo, `demo:listbench`; a path that is not there, said where task.path
    is checked)."""
    try:
        folder = Path(os.path.realpath(expanded(bench, "task.path")))
    except ConfigError:
        return None
    around = Path(os.path.realpath(path))
    if not os.path.isdir(folder) or not folder.is_relative_to(around):  # a demo's `demo:name`, a typo, a link
        return None
    where = "the benchmark's own folder" if folder == around else f"a folder holding the benchmark ({folder})"
    return (f"{where}: a run's directory holds the run's files alone, and removing the run would remove the "
            "benchmark with it")

"""Every error benchrun reports to a user, and the exit code each maps to.

    BenchrunError                 a user-facing problem: one line, no traceback, exit 2
    ├── ConfigError               the composed config or a runner file is wrong
    ├── TaskError                 a task source (tasks.yml, tasks/<name>/, custom_*.py) is wrong
    ├── RunnerError               the model server is unreachable or lacks the model
    └── ArchiveError              a run directory is missing, incomplete or inconsistent
"""

from __future__ import annotations


class BenchrunError(Exception):
    """A problem the user can fix; `str(err)` is the whole one-line message."""

    exit_code = 2

    def __init__(self, message: str, *, file: str | None = None, task: str | None = None, key: str | None = None):
        self.file, self.task, self.key = file, task, key
        where = ": ".join(part for part in (_quote(file), _task(task), key) if part)
        super().__init__(f"{where}: {message}" if where else message)


class ConfigError(BenchrunError):
    """The composed config (overrides, presets, a runner file) is invalid."""


class TaskError(BenchrunError):
    """A benchmark's task files are invalid; names the file, the task and the key."""


class RunnerError(BenchrunError):
    """The model server cannot be used: unreachable, model missing, bad answer at preflight."""

    exit_code = 3


class ArchiveError(BenchrunError):
    """A run directory cannot be read, written or trusted."""

    exit_code = 4


def _quote(file: str | None) -> str | None:
    return f"in '{file}'" if file else None


def _task(task: str | None) -> str | None:
    return f"task '{task}'" if task else None

"""Where benchrun's data lives: the shipped `conf/`, `schemas/` and demo benchmarks, and the benchmark a
`task.path` names."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from benchrun.core.errors import ConfigError, os_problem
from benchrun.core.home import expanded
from benchrun.core.unicodeforms import other_form

_PACKAGE = Path(__file__).resolve().parent.parent
"""The benchrun package directory."""
DEMO_SCHEME = "demo:"


def data_dir(name: str) -> Path:
    """`conf` or `schemas`: inside the wheel (`benchrun/_data/`) or at the top of a checkout."""
    shipped = _PACKAGE / "_data" / name
    return shipped if shipped.is_dir() else _PACKAGE.parent / name


def conf_dir() -> Path:
    return data_dir("conf")


PRIMARY_CONFIG = "config"
"""The name of benchrun's primary config in conf/ (its defaults list: a benchmark, a runner, a model preset)."""


def schemas_dir() -> Path:
    return data_dir("schemas")


def demos_dir() -> Path:
    return _PACKAGE / "demos"


def demo_names() -> list[str]:
    return sorted(p.name for p in demos_dir().iterdir() if p.is_dir() and not p.name.startswith("_"))


def bench_dir(path: str, cwd: str | os.PathLike[str] | None = None) -> Path:
    """The benchmark directory named by `task.path` (`demo:<name>` for a shipped one)."""
    if path.startswith(DEMO_SCHEME):
        name = path[len(DEMO_SCHEME):]
        if name not in demo_names():
            raise ConfigError(f"no shipped benchmark '{name}' (shipped: {', '.join(demo_names())})",
                              key="task.path")
        return demos_dir() / name
    folder = expanded(path, "task.path")
    folder = folder if folder.is_absolute() else Path(cwd or Path.cwd()) / folder
    try:
        os.stat(folder)
    except OSError as err:  # there, but not to be reached: a folder on the way this user may not enter, a name too long
        if err.errno not in (errno.ENOENT, errno.ENOTDIR):
            raise ConfigError(f"'{path}' cannot be reached: {os_problem(err)} (looked in {folder})",
                              key="task.path") from None
    if not folder.is_dir():
        other = other_form(folder)
        raise ConfigError(f"'{path}' is not a directory (looked in {folder}){f'; {other}' if other else ''}",
                          key="task.path")
    return folder.resolve()

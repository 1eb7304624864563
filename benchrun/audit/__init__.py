"""Auditing past runs from the archive alone: list, show, rescore, compare, verify, export, resume, report.

The functions load on first use, so a command imports only what it needs (and only `resume` loads
runner code). Where a function takes a run (or a list of runs), a path to one is taken as well (`str` or
`os.PathLike`), loaded with `load_run`; anything else is a TypeError naming what was given."""

from __future__ import annotations

import functools
import inspect
import os
from importlib import import_module
from typing import Any, Callable

_API = {
    "list_runs": ("listing", "list_runs"), "metric_rows": ("show", "metric_rows"), "samples": ("show", "samples"),
    "verify_run": ("verify", "verify_run"), "export_rows": ("export", "export_rows"),
    "write_csv": ("export", "write_csv"), "write_jsonl": ("export", "write_jsonl"),
    "rescore_run": ("rescore", "rescore"), "compare_runs": ("compare", "compare"),
    "write_report": ("report", "write_report"), "resume_run": ("resume", "resume_run"),
}
"""Public name -> (module of benchrun.audit, function in it)."""
__all__ = sorted(_API)

_RUNS = {"metric_rows": "run", "samples": "run", "verify_run": "run", "export_rows": "run", "rescore_run": "run",
         "resume_run": "run", "write_csv": "runs", "write_jsonl": "runs", "compare_runs": "runs"}
"""Public name -> its argument that is a run (`run`) or a list of runs (`runs`)."""


def __getattr__(name: str) -> Any:
    if name not in _API:
        raise AttributeError(f"module 'benchrun.audit' has no attribute '{name}'")
    module, attribute = _API[name]
    function = getattr(import_module(f"benchrun.audit.{module}"), attribute)
    return _taking_paths(function, _RUNS[name]) if name in _RUNS else function


def _taking_paths(function: Callable[..., Any], argument: str) -> Callable[..., Any]:
    """`function`, its `argument` (a run, or with `runs` a list of them) taken as a Run or as a path to one."""
    signature = inspect.signature(function)
    parameter = next(iter(signature.parameters))

    @functools.wraps(function)
    def called(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        given = bound.arguments[parameter]
        bound.arguments[parameter] = [_run(one) for one in given] if argument == "runs" else _run(given)
        return function(*bound.args, **bound.kwargs)

    return called


def _run(given: Any) -> Any:
    """A Run as given; a path (`str`, `os.PathLike`) as the run in that directory; anything else a TypeError."""
    from benchrun.archive.reader import Run, load_run

    if isinstance(given, Run):
        return given
    if isinstance(given, (str, os.PathLike)):
        return load_run(given)
    raise TypeError(f"a run (benchrun.load_run(path)) or a path to one, not {type(given).__name__}")

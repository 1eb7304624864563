"""Auditing past runs from the archive alone: list, show, rescore, compare, verify, export, resume, report.

The functions load on first use, so a command imports only what it needs (and only `resume` loads
runner code)."""

from __future__ import annotations

from importlib import import_module
from typing import Any

_API = {
    "list_runs": ("listing", "list_runs"), "metric_rows": ("show", "metric_rows"), "samples": ("show", "samples"),
    "verify_run": ("verify", "verify_run"), "export_rows": ("export", "export_rows"),
    "write_csv": ("export", "write_csv"), "write_jsonl": ("export", "write_jsonl"),
    "rescore_run": ("rescore", "rescore"), "compare_runs": ("compare", "compare"),
    "write_report": ("report", "write_report"), "resume_run": ("resume", "resume_run"),
}
"""Public name -> (module of benchrun.audit, function in it)."""
__all__ = sorted(_API)


def __getattr__(name: str) -> Any:
    if name not in _API:
        raise AttributeError(f"module 'benchrun.audit' has no attribute '{name}'")
    module, attribute = _API[name]
    return getattr(import_module(f"benchrun.audit.{module}"), attribute)

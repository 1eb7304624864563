"""benchrun: declarative LLM benchmarks against local models, kept as reproducible, auditable archives.

The public names load on first use, so `import benchrun` (and every audit command) pays only for what it uses."""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.3.0"
_API = {
    "compile": "compiler", "compile_plan": "compiler", "Plan": "compiler", "Manifest": "manifest",
    "Sample": "manifest", "Run": "runs", "find_runs": "runs", "load_run": "runs", "resolve_run": "runs",
    "ArchiveError": "errors", "BenchrunError": "errors", "ConfigError": "errors", "RunnerError": "errors",
    "TaskError": "errors",
}
"""Public name -> the module of benchrun that defines it."""
__all__ = sorted([*_API, "__version__"])


def __getattr__(name: str) -> Any:
    if name not in _API:
        raise AttributeError(f"module 'benchrun' has no attribute '{name}'")
    return getattr(import_module(f"benchrun.{_API[name]}"), name)

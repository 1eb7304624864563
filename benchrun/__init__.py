"""benchrun: declarative LLM benchmarks against local models, kept as reproducible, auditable archives.

The public names load on first use, so `import benchrun` (and every audit command) pays only for what it uses."""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.3.0"
_API = {
    "Plan": "compiler.plan", "Manifest": "core.manifest",
    "Sample": "core.manifest", "Run": "archive.reader", "find_runs": "archive.lookup", "load_run": "archive.reader",
    "resolve_run": "archive.lookup", "ArchiveError": "core.errors", "BenchrunError": "core.errors",
    "ConfigError": "core.errors", "RunnerError": "core.errors", "TaskError": "core.errors",
}
"""Public name -> the module of benchrun that defines it."""
__all__ = sorted([*_API, "__version__", "compile", "compile_plan"])


def compile_plan(config: Any, cwd: Any = None) -> Any:
    """Check a composed config (a DictConfig or plain data, one model) and compile it into a `Plan`: the frozen
    manifest and the scorer functions it names. Relative paths resolve against `cwd` (default: the working
    directory). No network."""
    from benchrun.compiler.plan import compiled
    from benchrun.compose.config import plain_config

    return compiled(plain_config(config, cwd), cwd)


def compile(config: Any, cwd: Any = None) -> Any:  # noqa: A001 - the name the user asked for
    """`compile_plan(config, cwd).manifest`: the run's frozen `Manifest`."""
    return compile_plan(config, cwd).manifest


def __getattr__(name: str) -> Any:
    if name not in _API:
        raise AttributeError(f"module 'benchrun' has no attribute '{name}'")
    return getattr(import_module(f"benchrun.{_API[name]}"), name)

"""benchrun: declarative LLM benchmarks against local models, kept as reproducible, auditable archives."""

from benchrun.compiler import Plan, compile, compile_plan
from benchrun.errors import ArchiveError, BenchrunError, ConfigError, RunnerError, TaskError
from benchrun.manifest import Manifest, Sample
from benchrun.runs import Run, find_runs, load_run, resolve_run

__version__ = "0.1.0"
__all__ = [
    "ArchiveError", "BenchrunError", "ConfigError", "Manifest", "Plan", "Run", "RunnerError", "Sample",
    "TaskError", "__version__", "compile", "compile_plan", "find_runs", "load_run", "resolve_run",
]

"""What `python -m benchrun` imports before it asks anything: `--help` and the dry run of the seed's 18-sample
benchmark load none of what only a run that asks a model needs (the executor, the response cache and SQLite,
tenacity, the runners not chosen, the statistics libraries), as `python -X importtime` lists them; and the scorer
process, started for every run and every rescore, loads none of what only compiling a benchmark needs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchrun.testing.inprocess import child_env

RUN_ONLY = {"benchrun.execute.executor", "benchrun.execute.session", "benchrun.execute.cache",
            "benchrun.execute.grading", "sqlite3", "tenacity", "jsonschema_rs", "scipy", "numpy", "llama_cpp"}
"""Needed only once a model is asked."""
RUNNERS = {"ollama", "httpx", "rich.progress", "benchrun.execute.runners.base"}
"""The HTTP runners' libraries (httpx loads rich.progress for its command line)."""


COMPILE_ONLY = {"benchrun.core.manifest", "benchrun.compiler.sources", "jsonschema", "hydra", "omegaconf", "yaml",
                "pydantic"}
"""Needed to compile a benchmark (pydantic: its models, and the records'), not to score its answers."""


def imported(tmp_path, *args: str) -> set[str]:
    """The modules `python -X importtime ARGS` imports (`-m benchrun` unless ARGS say another)."""
    args = args if args[:1] in (("-c",), ("-m",)) else ("-m", "benchrun", *args)
    done = subprocess.run([sys.executable, "-X", "importtime", *args], cwd=tmp_path,
                          env=child_env(None), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")
            and "|" in line}


@pytest.mark.parametrize(("args", "unneeded"), [
    (("--help",), RUN_ONLY | RUNNERS),
    (("dry_run=true", "runner=local"), RUN_ONLY | RUNNERS),
    (("dry_run=true", "runner.host=http://127.0.0.1:9"), RUN_ONLY),
])
def test_start_up_imports_nothing_only_a_run_needs(tmp_path, args, unneeded):
    found = imported(tmp_path, *args)
    assert "benchrun.compiler.plan" in found or args == ("--help",)
    assert sorted(found & unneeded) == []


def test_the_scorer_process_imports_nothing_only_compiling_needs(tmp_path):
    found = imported(tmp_path, "-c", "import benchrun.execute.scorer_worker")
    assert "benchrun.compiler.scoring" in found
    assert sorted(found & COMPILE_ONLY) == []

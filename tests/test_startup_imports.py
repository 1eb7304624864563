"""What `python -m benchrun` imports before it asks anything: `--help` and the dry run of the seed's 18-sample
benchmark load none of what only a run that asks a model needs (the executor, the response cache and SQLite,
tenacity, the runners not chosen, the statistics libraries), as `python -X importtime` lists them."""

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


def imported(tmp_path, *args: str) -> set[str]:
    """The modules `python -X importtime -m benchrun ARGS` imports."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "benchrun", *args], cwd=tmp_path,
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

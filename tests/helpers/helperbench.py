"""The listbench demo whose custom_scorer.py imports a module of its own (`from helpers import same`), run for real:
code that scores from a file the scorer's own source does not show."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.commands import run_dir_of

SAME = "def same(a, b):\n    return int(a == b)\n"
"""helpers.py as the run imports it."""


def helper_bench_run(tmp_path: Path) -> tuple[Path, Path]:
    """The benchmark (in tmp_path/bench) and its run, made by `python -m benchrun` in the benchmark's folder."""
    bench = tmp_path / "bench"
    shutil.copytree(Path(__file__).parents[2] / "benchrun" / "demos" / "listbench", bench)
    (bench / "helpers.py").write_text(SAME)
    scorer = (bench / "custom_scorer.py").read_text()
    (bench / "custom_scorer.py").write_text("from helpers import same\n" + scorer.replace(
        "return int(ref == response_object['answer'])", "return same(ref, response_object['answer'])"))
    with FakeOllama(models=["llama3.2"]) as server:
        done = subprocess.run([sys.executable, "-m", "benchrun", "task.path=.", f"runner.host={server.url}",
                               "cache=false"], cwd=bench, env=child_env(), capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    return bench, run_dir_of(done.stdout)

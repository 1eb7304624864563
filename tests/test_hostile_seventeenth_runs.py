"""Hostile input, seventeenth pass, the files-and-processes side (issue 19's fresh pass of the same kinds): real
`python -m benchrun` processes given hostile benchmark files, command lines, interpreters and machines, the cases it
found bad, each with the rule it now obeys.

- a benchmark run by an optimising Python (`PYTHONOPTIMIZE=1`, `python -O`/`-OO`): a scorer's `assert` was left
  out, so the same files scored 1 where they score 0 (under the same manifest id, and a rescore of a run made without
  it rewrote its scores so), and with -OO a response class's docstring left its JSON schema (the model asked
  otherwise). Now a benchmark's code is imported only as written (`compiler.usercode.import_file`): one line, exit 2
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.benchfiles import tasks_yml, write_bench
from tests.helpers.commands import run_benchrun

pytestmark = pytest.mark.slow
TASK = {"name": "t", "template": "say {a}", "values": {"a": [1, 2]}, "reference": ["1", "2"]}


def run_of(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python -m benchrun task.path=bench ARGS` in `root` against a fresh loopback Ollama, writing root/outputs."""
    with FakeOllama(models=["llama3.2"]) as server:
        return run_benchrun("task.path=bench", f"runner.host={server.url}", "cache=false", "outputs=outputs", *args,
                            cwd=root, env=env, timeout=300)


OPTIMISED = ("cannot import: Python runs optimised (python -O or -OO, or $PYTHONOPTIMIZE set), which leaves out a "
             "benchmark's asserts (and with -OO its docstrings, a response class's description), so its code would "
             "ask and score otherwise than as written; run python without -O, with PYTHONOPTIMIZE unset")


@pytest.mark.parametrize(("level", "file", "text", "keys"), [
    ("1", "custom_scorer.py", "def s(response, reference):\n    try:\n        assert reference in response\n"
     "        return 1\n    except AssertionError:\n        return 0\n", {"scorer": "s"}),
    ("2", "custom_response.py", 'from pydantic import BaseModel\n\n\nclass F(BaseModel):\n    """One number."""\n\n'
     "    answer: str\n", {"format": "F"})])
def test_a_benchmark_run_by_an_optimising_python_is_refused(tmp_path, level, file, text, keys):
    write_bench(tmp_path, {"tasks.yml": tasks_yml({**TASK, **keys}), file: text})
    done = run_of(tmp_path, env={"PYTHONOPTIMIZE": level})
    assert (done.returncode, done.stderr) == (EXIT["usage"], f"benchrun: error: in '{file}': {OPTIMISED}\n")

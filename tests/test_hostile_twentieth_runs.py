"""Hostile input, twentieth pass, the files-and-processes side (issue 19's fresh pass of the same kinds): hostile
command lines, sweeps and process surroundings, the cases it found bad, each with the rule it now obeys.

- a benchmark's custom_scorer.py that registers an OmegaConf resolver of its own at import
  (`OmegaConf.register_new_resolver("double", ...)`): in a sweep over models, each job imports the file in the one
  process, so every job after the first was refused (`cannot import: ValueError: resolver 'double' is already
  registered`); one that replaced a resolver (`oc.env`, benchrun's `slug`, `replace=True`) chose the server the
  sweep's next job asked and the directory its summary went to (none written, exit 4). Now OmegaConf's resolvers are
  put back after user code runs in the process (`compiler.runstate`)
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.benchfiles import write_bench

ONE_TASK = "- name: t\n  template: 'say {a}'\n  values: {a: [1]}\n  reference: ['1']\n  scorer: s\n"
SCORER = "def s(response, reference):\n    return 1\n"


def _statuses(sweep_dir, jobs):
    return [json.loads((sweep_dir / job / "run.json").read_text())["status"] for job in jobs]


@pytest.mark.slow
@pytest.mark.parametrize(("registered", "swept", "jobs"), [
    ('OmegaConf.register_new_resolver("double", lambda x: 2 * int(x))\n', ["task.path=a",
                                                                          "runner.model=llama3.2,gemma3"],
     ["0_llama3.2", "1_gemma3"]),
    ('OmegaConf.register_new_resolver("oc.env", lambda *args: "http://127.0.0.1:9", replace=True)\n'
     'OmegaConf.register_new_resolver("slug", lambda *args: "elsewhere", replace=True)\n', ["task.path=a,b"],
     ["0_a", "1_b"])])
def test_a_benchmark_file_registering_a_resolver_at_import_changes_no_later_job_of_a_sweep(tmp_path, registered,
                                                                                           swept, jobs):
    write_bench(tmp_path, {"tasks.yml": ONE_TASK,
                           "custom_scorer.py": f"from omegaconf import OmegaConf\n\n{registered}\n\n{SCORER}"}, "a")
    write_bench(tmp_path, {"tasks.yml": ONE_TASK, "custom_scorer.py": SCORER}, "b")
    with FakeOllama(models=["llama3.2", "gemma3"]) as server:
        done = subprocess.run([sys.executable, "-m", "benchrun", "-m", *swept, "outputs=outputs", "cache=false"],
                              cwd=tmp_path, env=child_env({"OLLAMA_HOST": server.url}), capture_output=True,
                              text=True, timeout=120)
    assert (done.returncode, done.stderr) == (EXIT["ok"], ""), done.stderr
    [sweep_dir] = (tmp_path / "outputs").glob("*/*_sweep")
    assert _statuses(sweep_dir, jobs) == ["completed", "completed"]

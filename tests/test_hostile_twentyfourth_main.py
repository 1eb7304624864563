"""The twenty-fourth hostile pass, the lead's part: what the helpers noticed and left, mended.

- `benchrun-audit cache` under a relative or empty $HOME (no XDG_CACHE_HOME) was told to give `cache_dir= or
  cache=false`, a run's keys the command does not take: it is told its own option, `--cache-dir`
  (`execute.cacheplace.cache_dir(option=)`).
- The twenty-fifth pass's rule "a number setting takes a number" refused the environment's numbers, which are text:
  `runner.concurrency=${oc.env:SLURM_CPUS_PER_TASK}` was `Input should be a valid integer, not "2"`, and the advice
  (`${oc.decode:...}`) is refused as a credential's read. Text that writes a number is that number
  (`core.settingsbase.WRITTEN`); text that writes none, and a number for true/false, are still refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from benchrun.core.errors import EXIT
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.answers import listbench_answer
from tests.helpers.commands import bench_run, run_benchrun, run_dir_of


@pytest.mark.parametrize(("home", "why", "first"), [
    ("rel", "~ is the home directory, and $HOME is 'rel', not an absolute path (~ would be a folder of the working "
            "directory)", "set HOME to an absolute path"),
    ("", "~ is the home directory, and $HOME is empty (~ would be the file system's root)", "set HOME"),
])
def test_the_audit_cache_command_under_an_unusable_home_is_told_its_own_option(tmp_path: Path, home: str, why: str,
                                                                                first: str) -> None:
    done = run_benchrun("cache", cwd=tmp_path, module="benchrun.audit", env={"HOME": home, "XDG_CACHE_HOME": ""})
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: --cache-dir: the response cache's place, ~/.cache/benchrun: {why}; {first}, or "
        "XDG_CACHE_HOME or --cache-dir\n"))
    assert list(tmp_path.iterdir()) == []


def test_a_number_setting_takes_the_number_the_environment_writes(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CPUS", "2")
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
        done = bench_run(tmp_path, server.url, "task=listbench", "cache=false", "runner.concurrency=${oc.env:CPUS}",
                         "repeats='2'", "runner.timeout_s='2.5'")
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    config = yaml.safe_load((run_dir_of(done.stdout) / "config.yaml").read_text())
    assert (config["runner"]["concurrency"], config["repeats"], config["runner"]["timeout_s"]) == (2, 2, 2.5)

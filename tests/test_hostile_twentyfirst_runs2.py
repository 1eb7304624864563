"""Hostile input, twenty-first pass, the files-and-processes side's second wave (issue 19's fresh pass of the same
kinds): the cases it found bad, each with the rule it now obeys.

- a sweep a config file writes (`hydra.sweeper.params: {runner.model: llama3.2,gemma3}`) and the command line's
  `++runner.model=mistral`: Hydra's sweeper keeps the two as keys of their own, so each job was given both, the last
  winning: two jobs, both asking mistral, exit 0. Now refused in one line before anything is made, as the command
  line's own repeat is (`compose.sweepsize.swept`)
- two runs started into one directory at once (`hydra.run.dir=same`, a script run twice): both passed the check made
  before Hydra writes, so the second, while the first was still starting, wrote Hydra's copies over the first's (a
  dry run's: the completed run's `.hydra/overrides.yaml` then said `dry_run=true` and no model) or, refused by its
  config, took them back with the first's, which completed with an empty `.hydra/`. Now a run holds its directory
  (a lock on the directory itself) before Hydra writes there, and the second is refused in one line
  (`callbacks._hold`)
- a Slurm sweep with `hydra.launcher.timeout_min=0` (or -1, or `additional_parameters.time=0:0`), which sbatch takes
  for no time limit (`TimeLimit=UNLIMITED`): refused as `Slurm warns a job hydra.launcher.signal_delay_s=120 seconds
  before its time is up ... so every job would stop as it starts`, wrong advice refusing a valid setting. Now taken
  as no limit (`compose.slurmoptions._seconds`)
- a run's or a sweep's directory inside the benchmark's tasks/ folder (`outputs=bench/tasks`, or a run started in that
  folder: `cd bench/tasks; benchrun task.path=..`, its `outputs/` there): Hydra made the run's directory there, then
  compile read it as a task, `in 'tasks/2026-12-05/template.txt': task '2026-12-05': file is missing` (advice about a
  file the user never made), the failed run recorded in the benchmark, where every later run of it met the same
  error. Now refused before anything is made (`compiler.tasksdir.tasks_around`, from `callbacks`); and a response
  cache there (`cache_dir=bench/tasks/cache`): the first run completed, every later one refused as `task 'cache': file
  is missing`. Now refused as the cache is opened (`execute.cache.store_for`); and a merge (or a retry) `--into
  bench/tasks/merged`: made there, every later run refused as `task 'merged': file is missing`. Now refused before
  anything is written (`audit.intotasks.among_tasks`)
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import wait_for
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.benchfiles import folder_task, write_bench
from tests.helpers.commands import audit, call_benchrun

HOLDING = ("import os\nimport time\n\nfrom hydra.experimental.callback import Callback\n\n\n"
           "class Hold(Callback):\n    def on_job_start(self, config, **kwargs):\n"
           "        open('held', 'w').close()\n        while not os.path.exists('go'):\n            time.sleep(0.05)\n")
"""A callback of the user's own that holds a run after Hydra wrote its copies, before the run claims its directory."""
SLURM_NODE = ["hydra/launcher=slurm", "hydra.launcher.partition=debug", "hydra.launcher.gpus_per_node=0",
              "hydra.launcher.cpus_per_task=1", "hydra.launcher.mem_gb=1", "hydra.launcher.setup=[]"]
"""The single-node cluster's partition and size (`.ci/slurm-up`), the time limit left to each test."""


@pytest.mark.parametrize("given", ["++runner.model=mistral", "~runner.model"])
def test_a_key_a_config_files_sweep_varies_given_with_a_prefix_on_the_command_line_is_refused(tmp_path, given):
    (tmp_path / "myconf" / "runner").mkdir(parents=True)
    (tmp_path / "myconf" / "runner" / "sw.yaml").write_text(
        "# @package _global_\ndefaults:\n  - ollama@runner\nhydra:\n  sweeper:\n    params:\n"
        "      runner.model: llama3.2,gemma3\n")
    done = call_benchrun("--config-dir", "myconf", "-m", "runner=sw", given, "runner.host=http://127.0.0.1:9",
                         "outputs=outputs", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", "benchrun: error: in 'config': runner.model is given by hydra.sweeper.params "
        f"(runner.model=llama3.2,gemma3) and on the command line ({given}), which Hydra's sweeper keeps as two keys, "
        "every job taking the last, so the sweep's values would never run; give it once (a plain runner.model=... on "
        "the command line replaces a config file's sweep)\n")
    assert not (tmp_path / "outputs").exists()


@pytest.mark.slow
@pytest.mark.parametrize("second", ["runner.options.temperature=hot", "dry_run=true"])
def test_a_run_started_into_a_directory_another_run_is_starting_in_leaves_its_copies_be(tmp_path, second):
    write_bench(tmp_path, folder_task("t", "say {a}\n", "a,reference\n1,1\n"))
    (tmp_path / "holding.py").write_text(HOLDING)
    with FakeOllama(models=["llama3.2"]) as server:
        given = ["task.path=bench", f"runner.host={server.url}", "hydra.run.dir=same", "cache=false"]
        first = subprocess.Popen([sys.executable, "-m", "benchrun", *given, "+hydra.callbacks.h._target_=holding.Hold"],
                                 cwd=tmp_path, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 text=True)
        wait_for(lambda: (tmp_path / "held").exists())
        copies = {path.name: path.read_text() for path in (tmp_path / "same" / ".hydra").iterdir()}
        done = call_benchrun(*given, second, cwd=tmp_path)
        (tmp_path / "go").touch()
        _, err = first.communicate(timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", "benchrun: error: same was taken by another run as this one started (the same run started "
        "twice?); nothing was changed; pick a new directory (hydra.run.dir=...)\n")
    assert (first.returncode, err) == (EXIT["ok"], "")
    assert {path.name: path.read_text() for path in (tmp_path / "same" / ".hydra").iterdir()} == copies
    assert sorted(copies) == ["config.yaml", "hydra.yaml", "overrides.yaml"]


@pytest.mark.parametrize("unlimited", ["hydra.launcher.timeout_min=0", "hydra.launcher.timeout_min=-1",
                                       "+hydra.launcher.additional_parameters.time='0:0'"])
def test_a_slurm_sweep_without_a_time_limit_is_not_refused_as_all_warning(tmp_path, unlimited):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", *SLURM_NODE, unlimited, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert done.stdout.count("dry run: no model was called") == 2


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("sbatch") is None, reason="no Slurm here: `.ci/slurm-up` starts a single-node cluster")
def test_a_slurm_job_of_timeout_min_0_runs_without_a_limit(tmp_path):
    write_bench(tmp_path, folder_task("t", "say {a}\n", "a,reference\n1,1\n"))
    with FakeOllama(models=["llama3.2"]) as server:
        done = subprocess.run([sys.executable, "-m", "benchrun", "-m", "task.path=bench", "runner.model=llama3.2",
                               f"runner.host={server.url}", "outputs=outputs", *SLURM_NODE,
                               "hydra.launcher.timeout_min=0"], cwd=tmp_path, env=child_env(), capture_output=True,
                              text=True, timeout=300)
    [sweep_dir] = (tmp_path / "outputs").glob("*/*_sweep")
    [script] = sweep_dir.glob(".submitit/*/*_submission.sh")
    jobs = json.loads((sweep_dir / "sweep.json").read_text())["jobs"]
    assert (done.returncode, [job["status"] for job in jobs]) == (EXIT["ok"], ["completed"]), done.stderr
    assert "#SBATCH --time=0\n" in script.read_text()


@pytest.mark.parametrize(("where", "given", "made"), [
    ("", ["task.path=bench", "outputs=bench/tasks"], "hydra.run.dir=bench/tasks/"),
    ("", ["task.path=bench", "outputs=runs"], "hydra.run.dir=runs/"),
    ("bench/tasks", ["task.path=.."], "hydra.run.dir=outputs/"),
    ("bench/tasks", ["-m", "task.path=..", "runner.model=llama3.2,gemma3"], "hydra.sweep.dir=outputs/"),
    ("bench/tasks", ["-m", "task.path=elsewhere,.."], "hydra.sweep.dir=outputs/")])
def test_a_run_directory_inside_the_benchmarks_tasks_folder_is_refused(tmp_path, where, given, made):
    write_bench(tmp_path, folder_task("t", "say {a}\n", "a,reference\n1,1\n"))
    (tmp_path / "runs").symlink_to(tmp_path / "bench" / "tasks")
    done = call_benchrun(*given, "runner.host=http://127.0.0.1:9", cwd=tmp_path / where)
    assert (done.returncode, done.stdout) == (EXIT["usage"], "")
    assert re.fullmatch(rf"benchrun: error: {re.escape(made)}\S+: inside the benchmark's tasks/ folder "
                        rf"\({tmp_path}/bench/tasks\), each of whose folders is read as a task, the run's own among "
                        r"them; put runs elsewhere \(outputs=DIR\)\n", done.stderr)
    assert sorted(path.name for path in (tmp_path / "bench" / "tasks").iterdir()) == ["t"]


def test_a_response_cache_inside_the_benchmarks_tasks_folder_is_refused(tmp_path):
    write_bench(tmp_path, folder_task("t", "say {a}\n", "a,reference\n1,1\n"))
    with FakeOllama(models=["llama3.2"]) as server:
        done = call_benchrun("task.path=bench", f"runner.host={server.url}", "outputs=outputs",
                             "cache_dir=bench/tasks/cache", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        f"benchrun: error: in 'config': cache_dir: {tmp_path}/bench/tasks/cache: inside the benchmark's tasks/ folder "
        f"({tmp_path}/bench/tasks), each of whose folders is read as a task; put the cache elsewhere (cache_dir=DIR), "
        "or cache=false\n"))
    assert sorted(path.name for path in (tmp_path / "bench" / "tasks").iterdir()) == ["t"]


@pytest.mark.slow
def test_a_merge_into_the_benchmarks_tasks_folder_is_refused(tmp_path):
    write_bench(tmp_path, folder_task("t", "say {a}\n", "a,reference\n1,1\n2,2\n"))
    with FakeOllama(models=["llama3.2"]) as server:
        for shard in ("1/2", "2/2"):
            made = call_benchrun("task.path=bench", f"runner.host={server.url}", "outputs=outputs", f"shard={shard}",
                                 cwd=tmp_path)
            assert made.returncode == EXIT["ok"], made.stderr
    done = audit(tmp_path, "merge", "--into", "bench/tasks/merged", *map(str, (tmp_path / "outputs").glob("*/*")))
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        f"benchrun: error: bench/tasks/merged: inside the benchmark's tasks/ folder ({tmp_path}/bench/tasks), each of "
        "whose folders is read as a task; nothing was changed; pick a new directory (--into DIR)\n"))
    assert [path.name for path in (tmp_path / "bench" / "tasks").iterdir()] == ["t"]


def test_a_run_beneath_a_task_folder_of_its_benchmark_runs_as_before(tmp_path):
    write_bench(tmp_path, folder_task("t", "say {a}\n", "a,reference\n1,1\n"))
    with FakeOllama(models=["llama3.2"]) as server:
        done = call_benchrun("task.path=bench", f"runner.host={server.url}", "outputs=bench/tasks/t/runs",
                             cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert sorted(path.name for path in (tmp_path / "bench" / "tasks").iterdir()) == ["t"]

"""Hostile input, seventeenth pass, the files-and-processes side (issue 19's fresh pass of the same kinds): real
`python -m benchrun` processes given hostile benchmark files, command lines, interpreters and machines, the cases it
found bad, each with the rule it now obeys.

- a benchmark run by an optimising Python (`PYTHONOPTIMIZE=1`, `python -O`/`-OO`): a scorer's `assert` was left
  out, so the same files scored 1 where they score 0 (under the same manifest id, and a rescore of a run made without
  it rewrote its scores so), and with -OO a response class's docstring left its JSON schema (the model asked
  otherwise). Now a benchmark's code is compiled as written whatever Python's optimisation (`compiler.ownsource.Held`)
- a Slurm sweep launched by a user whose environment gives squeue and scancel options of their own
  (`SQUEUE_STATES=RUNNING`, `SCANCEL_STATE=RUNNING`, as a shell's profile may): the queue was listed without the
  sweep's pending jobs, which were then taken for lost, cancelled, and the sweep ended in 10 s (`Slurm job 337_0 left
  the queue without a result`, exit 1) where it would have run; stopped by Ctrl-C, its queued jobs were left queued,
  to run into the directory taken back. Now Slurm's commands run with benchrun's options only
  (`compose.slurmcommands`)
- a Slurm sweep whose jobs' time is all warning, given otherwise than by `hydra.launcher.timeout_min` (the sixteenth
  pass's check): `+hydra.launcher.additional_parameters.time=1` (which submitit writes over timeout_min),
  `additional_parameters.signal=USR2@3600`, or `$SBATCH_TIMELIMIT=2` (sbatch takes it over its script's `--time`):
  every job recorded `interrupted by SIGUSR2`, exit 1. Now the time and warning sbatch will take are checked
  (`compose.slurmoptions`), named where they were given
- a Slurm sweep whose jobs start in another directory (`+hydra.launcher.additional_parameters.chdir=DIR`,
  `$SBATCH_CHDIR`): each job found `task.path=bench` and `outputs=out` there, asked that other benchmark and wrote its
  run there, while the sweep's own directory listed no job (`sweep.json` `jobs: []`, an empty table). Now refused
  as `hydra.job.chdir=true` is (`compose.slurmoptions.moved_away`)
- a Slurm sweep whose directory holds '%' (`outputs=/data/o%j`, `o%%`): sbatch read it in each job's log paths as
  its own patterns, so submitit's files of each job were written beside the sweep (`o390_0/...`, three stray
  directories), or for `%%` nowhere: the job lost, `Slurm job 392_0 left the queue without a result (cancelled before
  it ran, killed, or its setup failed)`, exit 1. Now refused before anything is made
  (`compose.slurmoptions.patterned`)
- a Slurm sweep whose jobs start without this environment (`$SBATCH_EXPORT=NONE`, as some sites' profiles set,
  `+hydra.launcher.additional_parameters.export=PATH`): submitit could not tell in the job that it ran in Slurm, every
  job ended unstarted, and the sweep said `Slurm job 399_0 left the queue without a result (...); its log ends: srun:
  error: vm: task 0: Exited with exit code 1` (exit 1). Now refused before anything is made
  (`compose.slurmoptions.no_environment`)
- a Slurm sweep whose submitit folder is elsewhere (`hydra.launcher.submitit_folder=/scratch/jobs/%j`): benchrun
  found none of its jobs, so its queue watch saw none, and Ctrl-C said `nothing was asked or recorded` and took the
  sweep's directory back while its jobs stayed queued (`421_[0-1%2] PD`). Now refused
  (`compose.slurmoptions.files_elsewhere`)
- a Slurm sweep given `+hydra.launcher.additional_parameters.parsable=true` (or `test_only`): sbatch submitted the
  jobs and answered with their bare id, which submitit could not read: `hydra/launcher could not launch the sweep's
  jobs: (you may however set the job job_id manually if needed)` (exit 2), the sweep's directory taken back and its
  jobs left queued (`448_[0-1%2] PD`), to run into it. Now refused (`compose.slurmoptions.submitits_own`); so is
  `array=0-0` (the second job never submitted, then `Slurm job 461_1 left the queue without a result (cancelled
  before it ran, killed, or its setup failed)`, exit 1)
- a submitit_local sweep stopped by a signal to its process alone (`kill PID`, as a script or a service manager
  stops it): it said `2 jobs started (2 running)` and exited 130, while its job processes went on asking and
  completed, its sweep.json saying `running` for ever. Now its job processes are stopped as submitit cancels them
  (SIGINT) and waited for (`compose.takeback.stop_launched_jobs`): `2 jobs started (2 interrupted)`, each resumable
- a run on a machine that starts no more threads (a container's or cgroup's pids limit reached, `ulimit -u`, or
  `ulimit -v` below what a thread's stack takes): `RuntimeError: can't start new thread`, a traceback of sixty lines
  (a second one from asyncio's shutdown replacing the first), exit 1, the run `failed` with no word of how to finish
  it. Now the system's refusal, as an OSError is (`core.errors.refused_by_system`): one line with what the run
  directory records and the command that finishes it, exit 4, or before the run started `nothing was asked or
  recorded`; a cancelled wait is no error asyncio logs (`core.interrupts`)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import line_count, untimed_records
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.benchfiles import tasks_yml, write_bench
from tests.helpers.commands import call_benchrun, run_benchrun
from tests.helpers.localsweeps import stopped_local_sweep
from tests.helpers.slurmsweeps import interrupted_while_queued
from tests.helpers.threadlimit import NO_THREAD, failed_for_a_thread, run_with_threads

pytestmark = pytest.mark.slow
SLURM_NODE = ["hydra.launcher.partition=debug", "hydra.launcher.gpus_per_node=0", "hydra.launcher.cpus_per_task=1",
              "hydra.launcher.mem_gb=1", "hydra.launcher.timeout_min=10", "hydra.launcher.setup=[]"]
"""The single-node cluster's partition and size (`.ci/slurm-up`), no private Ollama started."""
TASK = {"name": "t", "template": "say {a}", "values": {"a": [1, 2]}, "reference": ["1", "2"]}


def run_of(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python -m benchrun task.path=bench ARGS` in `root` against a fresh loopback Ollama, writing root/outputs."""
    # a process: PYTHONOPTIMIZE is read by the interpreter as it starts
    with FakeOllama(models=["llama3.2"]) as server:
        return run_benchrun("task.path=bench", f"runner.host={server.url}", "cache=false", "outputs=outputs", *args,
                            cwd=root, env=env, timeout=300)


@pytest.mark.parametrize(("level", "file", "text", "keys"), [
    ("1", "custom_scorer.py", "def s(response, reference):\n    try:\n        assert reference in response\n"
     "        return 1\n    except AssertionError:\n        return 0\n", {"scorer": "s"}),
    ("2", "custom_response.py", 'from pydantic import BaseModel\n\n\nclass F(BaseModel):\n    """One number."""\n\n'
     "    answer: str\n", {"format": "F"})])
def test_a_benchmark_run_by_an_optimising_python_runs_as_written(tmp_path, level, file, text, keys):
    made = {}
    for optimising in ("", level):
        root = tmp_path / f"optimise{optimising}"
        write_bench(root, {"tasks.yml": tasks_yml({**TASK, **keys}), file: text})
        done = run_of(root, env={"PYTHONOPTIMIZE": optimising} if optimising else None)
        assert done.returncode == EXIT["ok"], done.stderr
        [run_dir] = (root / "outputs").glob("*/*")
        made[optimising] = (json.loads((run_dir / "run.json").read_text())["manifest_id"],
                            untimed_records(run_dir, "scores.jsonl"))
    assert made[level] == made[""]


@pytest.mark.skipif(shutil.which("sbatch") is None, reason="no Slurm here: `.ci/slurm-up` starts a single-node cluster")
def test_a_slurm_sweep_keeps_to_its_own_options_of_squeue_and_scancel(tmp_path):
    """Jobs queued for an hour (sbatch --begin=now+3600), squeue and scancel given options by the environment: the
    queue asked three times (two askings missing a job and its result took it for lost), the sweep still waits; on
    Ctrl-C its jobs are cancelled. squeue is asked through a script that counts the askings."""
    logged = tmp_path / "askings"
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "squeue").write_text(f"#!/bin/sh\necho >> {logged}\nexec {shutil.which('squeue')} \"$@\"\n")
    (shim / "squeue").chmod(0o755)
    outputs = tmp_path / "outputs"
    env = child_env({"SQUEUE_STATES": "RUNNING", "SCANCEL_STATE": "RUNNING", "PATH": f"{shim}:{os.environ['PATH']}"})
    sweep = subprocess.Popen([sys.executable, "-m", "benchrun", "-m", "runner.model=llama3.2,gemma3",
                              "hydra/launcher=slurm", *SLURM_NODE, "+hydra.launcher.additional_parameters.begin=now+3600",
                              "runner.host=http://127.0.0.1:9", f"outputs={outputs}"], cwd=tmp_path, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stderr, queued = interrupted_while_queued(sweep, outputs, lambda: line_count(logged) >= 3)
    assert (sweep.returncode, stderr.splitlines()[-1]) == (  # submitit's lines of sacct (accounting off) before it
        EXIT["interrupted"], "benchrun: error: interrupted before the run started: nothing was asked or recorded")
    assert queued == ""


EXPORT = ("{}: each job would start without this process's environment, in which submitit tells that it runs in Slurm "
          "(and benchrun finds PATH, HOME and the API key): every job would end before it starts; leave it out, or "
          "give ALL (ALL,NAME=value adds to it)")
ELSEWHERE = ("hydra.launcher.submitit_folder={}/%j: benchrun finds a sweep's Slurm jobs by their files in the sweep's "
             "directory (.submitit/%j there), to watch them and to cancel them if the sweep stops; elsewhere they "
             "would be left queued; leave it out")
OTHER_ANSWER = ("hydra.launcher.additional_parameters.{}: submitit reads each job's id from what sbatch says as it "
                "submits it ('Submitted batch job N'), which this changes, so the sweep could not follow its jobs "
                "(submitted, or not at all); leave it out")
WARNED = ("Slurm warns a job {} before its time is up, and a run ends at that warning (interrupted, to be resumed), so "
          "every job would stop as it starts; give jobs more than {} minutes, or a smaller {}")


@pytest.mark.parametrize(("given", "env", "line"), [
    ("+hydra.launcher.additional_parameters.time=1", {}, "hydra.launcher.additional_parameters.time=1: " + WARNED.format(
        "hydra.launcher.signal_delay_s=120 seconds", 2, "hydra.launcher.signal_delay_s")),
    ("+hydra.launcher.additional_parameters.signal=USR2@3600", {}, "hydra.launcher.timeout_min=10: " + WARNED.format(
        "3600 seconds (hydra.launcher.additional_parameters.signal=USR2@3600)", 60,
        "hydra.launcher.additional_parameters.signal")),
    ("hydra.launcher.timeout_min=10", {"SBATCH_TIMELIMIT": "0:01:30"}, "$SBATCH_TIMELIMIT=0:01:30: " + WARNED.format(
        "hydra.launcher.signal_delay_s=120 seconds", 2, "hydra.launcher.signal_delay_s")),
    ("+hydra.launcher.additional_parameters.export=PATH", {},
     EXPORT.format("hydra.launcher.additional_parameters.export=PATH")),
    ("hydra.launcher.timeout_min=10", {"SBATCH_EXPORT": "NONE"}, EXPORT.format("$SBATCH_EXPORT=NONE")),
    ("hydra.launcher.submitit_folder={}/%j", {}, ELSEWHERE),
    ("+hydra.launcher.additional_parameters.parsable=true", {}, OTHER_ANSWER.format("parsable=true")),
    ("+hydra.launcher.additional_parameters.test_only=true", {}, OTHER_ANSWER.format("test_only=true")),
    ("+hydra.launcher.additional_parameters.array=0-0", {}, "hydra.launcher.additional_parameters.array=0-0: submitit "
     "makes the sweep's jobs one array itself, a task per job, and this would leave some out, each then taken for lost "
     "(hydra.launcher.array_parallelism sets how many run at once); leave it out")])
def test_slurm_jobs_that_would_all_end_as_they_start_or_be_lost_are_refused(tmp_path, given, env, line):
    """Jobs whose time is all warning, however given; jobs started without this process's environment; jobs whose
    files are outside the sweep's directory, where it finds them; sbatch told to answer otherwise than submitit reads."""
    given, line = given.format(tmp_path / "jobs"), line.format(tmp_path / "jobs")
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm", *SLURM_NODE, given,
                         "runner.host=http://127.0.0.1:9", "outputs=outputs", cwd=tmp_path, env=env)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", f"benchrun: error: {line}\n")
    assert list(tmp_path.iterdir()) == []


MOVED = ("{}: a job of the sweep would start in that directory, where its relative paths (task.path, outputs, "
         "runner_file) name other files than where the sweep was started, and its run would be written there, outside "
         "the sweep; leave it out (jobs start where the sweep is started)")


@pytest.mark.parametrize(("given", "env", "said"), [
    ("+hydra.launcher.additional_parameters.chdir={}", {}, "hydra.launcher.additional_parameters.chdir={}"),
    ("hydra.launcher.timeout_min=10", {"SBATCH_CHDIR": "{}"}, "$SBATCH_CHDIR={}")])
def test_slurm_jobs_started_in_another_directory_are_refused(tmp_path, given, env, said):
    elsewhere = tmp_path / "elsewhere"
    write_bench(elsewhere, {"tasks.yml": tasks_yml({**TASK, "template": "other {a}"})})
    write_bench(tmp_path / "here", {"tasks.yml": tasks_yml(TASK)})
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm", *SLURM_NODE,
                         given.format(elsewhere), "task.path=bench", "runner.host=http://127.0.0.1:9", "outputs=out",
                         cwd=tmp_path / "here", env={name: value.format(elsewhere) for name, value in env.items()})
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", f"benchrun: error: {MOVED.format(said.format(elsewhere))}\n")
    assert sorted(path.name for path in tmp_path.rglob("*")) == ["bench", "bench", "elsewhere", "here", "tasks.yml",
                                                                 "tasks.yml"]


def test_a_run_that_can_start_no_more_threads_is_one_line_and_resumable(tmp_path):
    """Two threads: the run's lock's and the one that looks the server up; the scorer process's watcher is refused
    (asyncio then logged a cancelled wait for its pipes as a traceback, on standard output)."""
    done = run_with_threads(tmp_path, 2)
    info, said = failed_for_a_thread(tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["archive"], "", said)
    assert (info["status"], info["reason"]) == ("failed", "benchrun failed: RuntimeError: can't start new thread")


def test_a_run_that_can_start_no_thread_is_one_line(tmp_path):
    done = run_with_threads(tmp_path, 0)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["archive"], "", f"benchrun: error: {NO_THREAD} before the run started: nothing was asked or recorded\n")


@pytest.mark.parametrize("name", ["o%j", "o%%"])
def test_a_slurm_sweep_directory_holding_a_percent_sign_is_refused(tmp_path, name):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm", *SLURM_NODE,
                         "runner.host=http://127.0.0.1:9", f"outputs={tmp_path / name}", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (EXIT["usage"], "")
    assert re.fullmatch(
        f"benchrun: error: hydra.sweep.dir={re.escape(str(tmp_path / name))}/[0-9-]+/[0-9.-]+_listbench_sweep: Slurm "
        "reads a '%' in the paths of a job's files as a pattern of its own \\(%j the job's id, %% a '%'\\), so each "
        "job's files would be written to another directory than the sweep's, or to none \\(the job lost\\); name "
        "the directory without '%' \\(outputs=..., hydra.sweep.dir=...\\)\n", done.stderr), done.stderr
    assert list(tmp_path.iterdir()) == []



def test_a_local_sweep_stopped_by_a_signal_to_its_process_stops_its_jobs(tmp_path):
    code, said, sweep_dir, runs = stopped_local_sweep(tmp_path)
    assert (code, said) == (EXIT["interrupted"], (
        f"benchrun: error: interrupted by SIGTERM: the sweep in {sweep_dir} is recorded in its sweep.json, 2 jobs "
        "started (2 interrupted); a job it does not list never started; finish each interrupted one with: "
        "benchrun-audit resume RUN"))
    assert [run["status"] for run in runs] == ["interrupted", "interrupted"]

"""Hostile input, sixteenth pass, the files-and-processes side (issue 19's fresh pass of the same kinds): real
`python -m benchrun` processes given hostile benchmark files, command lines and machines, the cases it found bad,
each with the rule it now obeys.

- two benchmarks, each with its own `helpers.py` that its custom_*.py imports (`sys.path.insert(0, dirname(__file__))`
  then `from helpers import ...`), compiled in one process (a sweep over task.path; the API compiling twice): the
  second got the first's `helpers` from sys.modules, so its manifest did not name its own helpers.py (an edit to it
  changed the scores under the same manifest id) and its response class was built with the first benchmark's
  values (its format, and every format_valid, the other benchmark's). Now each compile imports its benchmark's own
  modules afresh (`compiler.usercode.forget_local_modules`)
- a benchmark's `helpers.py` edited while a run goes on (an editor's save), its scorer process then replaced (a call
  over its time limit, a crash): the new process imported the helpers as they were then, so the rest of the run was
  scored by code the manifest did not name (its digest was the old file's); with the file put back, `verify` said
  intact. Now the scorer process checks the benchmark's own modules its file imports against the digests of those
  the run imported, as it checks the file itself (`compiler.usercode.import_file`, `imported_as`): those calls are
  `ScorerUnavailable`, naming the module
- a Slurm sweep whose job can never start as it asks (more CPUs than any node of the partition has, memory or time
  over its limits, constraints no node meets: squeue's `PartitionConfig` and the like), or whose job left the queue
  without a result (its `setup` failed, as the preset's private Ollama may; `scancel` of a queued job): the job
  pended for ever, or was waited for for ever, as with Slurm's accounting off submitit follows a job by its result
  file alone; the sweep said nothing. Now the queue is watched (`compose.slurmqueue`): one line naming the job and
  squeue's reason (or the last line of the job's log), the jobs cancelled, nothing left; exit 2 (1 for a lost job)
- `hydra.sweep.subdir=same` (a job directory that names no job) in a sweep of two models: both jobs were given one
  directory, the second refused there (`already holds run ...`), and the sweep exited 0 with a sweep.json of one job,
  the other model never asked and not listed. Now refused before anything is made (`callbacks._check_subdir`)
- a Slurm sweep with `hydra.launcher.timeout_min=1` (or 2): submitit asks Slurm for its warning (SIGUSR2)
  `signal_delay_s` (120 s) before the time limit, that is at once, and a run ends at the warning: every job was
  recorded `interrupted by SIGUSR2` with nothing asked, exit 1. Now refused before anything is made
  (`callbacks._check_slurm_time`)
- a custom_scorer.py that writes the task's values file at import (a cache of the data made as the file is
  imported): the samples were made of the file as first read, but the manifest named the file by the bytes written
  at import, so `verify` said the sources unchanged while the prompts came from other data. Now the manifest names
  the files as they were read before the benchmark's code ran (`compiler.plan.source_files`), and verify says the
  data file changed since
- a joblib sweep whose launching process is SIGKILLed (the OOM killer): its workers finished their runs, then waited
  for ever for jobs that could never come, with loky's resource trackers: every such sweep left four processes
  behind. Now a worker whose launching process has gone ends after its job (`callbacks.LauncherGone`)
- a glob sweep over a config group (`-m 'task=glob(*)'`, Hydra's documented sweep): benchrun's own checks parsed the
  sweep without Hydra's config loader and refused it, `ConfigLoader is not set` (exit 2, naming nothing). Now parsed
  with it (`callbacks._swept`): one job per preset
- `-m 'runner.options.temperature=interval(0,1)'` (an optimising sweeper's interval, given to benchrun's basic
  sweeper): `Can only enumerate CHOICE and RANGE sweeps, type is ValueType.INTERVAL_SWEEP`, naming no override. Now
  one line naming it and saying what a benchrun sweep takes (`callbacks._values`)
- `hydra/launcher=joblib hydra.launcher.n_jobs=100000` for a sweep of two jobs (a dry run too): joblib started worker
  processes by the hundred (a load of 50 on two CPUs, hundreds of leaked semaphores) until stopped. Now more workers
  than the sweep's jobs and the machine's CPUs are refused before any starts (`callbacks._check_joblib_workers`)
- `-m task.path=v1/mmlu,v2/mmlu` (two benchmarks of one folder name; or `A,A/`, one benchmark spelt twice; or
  `runner.model_path=a/model.gguf,b/model.gguf`): every job labelled by the path's last part, so the sweep's table,
  report and exports had columns that could not be told apart. Now refused as a value listed twice is
  (`callbacks._check_swept_once`)
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import line_count, wait_for
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.benchfiles import tasks_yml, write_bench
from tests.helpers.commands import call_benchrun, run_benchrun, run_dir_of, sweep_dir_of

pytestmark = pytest.mark.slow
TASK = {"name": "t", "template": "say {a}", "values": {"a": [1, 2]}, "reference": ["1", "2"]}
SLURM_NODE = ["hydra.launcher.partition=debug", "hydra.launcher.gpus_per_node=0", "hydra.launcher.cpus_per_task=1",
              "hydra.launcher.mem_gb=1", "hydra.launcher.timeout_min=10", "hydra.launcher.setup=[]"]
"""The single-node cluster's partition and size (`.ci/slurm-up`), no private Ollama started."""
HELPED = "import os\nimport sys\n\nsys.path.insert(0, os.path.dirname(__file__))\n"
"""The head of a benchmark file that imports its benchmark's own modules (`from helpers import ...`)."""


def run_of(root: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m benchrun task.path=bench ARGS` in `root` against a fresh loopback Ollama, writing root/outputs."""
    # a process: the benchmark's files import its own modules (sys.path, sys.modules), which would stay in this one
    with FakeOllama(models=["llama3.2"]) as server:
        return run_benchrun("task.path=bench", f"runner.host={server.url}", "cache=false", "outputs=outputs", *args,
                            cwd=root, timeout=300)


def test_two_benchmarks_helpers_in_one_process_are_each_their_own(tmp_path):
    for name, value in (("A", 1), ("B", 2)):
        write_bench(tmp_path, {
            "tasks.yml": tasks_yml({**TASK, "scorer": "s", "format": "F"}),
            "helpers.py": f"VALUE = {value}\nPATTERN = '^{name}$'\n",
            "custom_scorer.py": f"{HELPED}from helpers import VALUE\n\n\ndef s(response, reference):\n    return VALUE\n",
            "custom_response.py": (f"{HELPED}from pydantic import BaseModel, Field\n\nfrom helpers import PATTERN\n\n\n"
                                   "class F(BaseModel):\n    answer: str = Field(pattern=PATTERN)\n")}, name)
    with FakeOllama(models=["llama3.2"]) as server:  # a process: as run_of
        done = run_benchrun("-m", f"task.path={tmp_path / 'A'},{tmp_path / 'B'}", f"runner.host={server.url}",
                            "cache=false", "outputs=outputs", cwd=tmp_path, timeout=300)
    assert done.returncode == EXIT["ok"], done.stderr
    sweep = sweep_dir_of(done.stdout)
    for job, name in enumerate("AB"):
        manifest = json.loads((sweep / f"{job}_{name}" / "manifest.json").read_text())
        helpers = (tmp_path / name / "helpers.py").read_bytes()
        assert {"path": "helpers.py", "sha256": hashlib.sha256(helpers).hexdigest(), "size": len(helpers)} in \
            manifest["files"]
        assert manifest["tasks"][0]["format"]["json_schema"]["properties"]["answer"]["pattern"] == f"^{name}$"


REWRITES_HELPERS = f"""{HELPED}from helpers import VALUE


def s(response, reference):
    if reference == "1":
        with open(os.path.join(os.path.dirname(__file__), "helpers.py"), "w") as helpers:
            helpers.write("VALUE = 5\\n")
        os._exit(1)
    return VALUE
"""


def test_a_helpers_module_edited_mid_run_does_not_score_the_rest_of_it(tmp_path):
    bench = write_bench(tmp_path, {"tasks.yml": tasks_yml({**TASK, "values": {"a": [1, 2, 3]}, "scorer": "s",
                                                           "reference": ["1", "2", "3"]}),
                                   "helpers.py": "VALUE = 1\n", "custom_scorer.py": REWRITES_HELPERS})
    done = run_of(tmp_path, "runner.concurrency=1")
    assert (done.returncode, (bench / "helpers.py").read_text()) == (EXIT["ok"], "VALUE = 5\n"), done.stderr
    began, now = (hashlib.sha256(text).hexdigest() for text in (b"VALUE = 1\n", b"VALUE = 5\n"))
    unavailable = {"type": "ScorerUnavailable", "message": (
        f"in '{bench / 'custom_scorer.py'}': changed since the run started: helpers.py, which it imports, hashes to "
        f"{now[:12]}…, not to {began[:12]}… as when the run read it; its scores would come from other code than the "
        "run recorded")}
    records = [json.loads(line) for line in (run_dir_of(done.stdout) / "scores.jsonl").read_text().splitlines()]
    assert sorted([(r["metrics"], r["error"]) for r in records if r["scorer"] == "s"], key=json.dumps) == sorted(
        [(None, {"type": "ScorerProcessDied", "message": "the scorer's process ended (exit code 1) during this call"}),
         (None, unavailable), (None, unavailable)], key=json.dumps)


def slurm_sweep(root: Path, *args: str) -> tuple[subprocess.CompletedProcess, str]:
    """A Slurm sweep of two models on the single-node cluster, in a real process in `root`; its (array) job id."""
    done = run_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm", *SLURM_NODE, *args,
                        "runner.host=http://127.0.0.1:9", "outputs=outputs", cwd=root, timeout=120)
    return done, re.search(r"'-j', '([0-9]+)'", done.stderr)[1]  # submitit's lines of sacct (accounting off)


def queued(job: str) -> str:
    return subprocess.run(["squeue", "-h", "-o", "%i", "-j", job], capture_output=True, text=True).stdout


@pytest.mark.skipif(shutil.which("sbatch") is None, reason="no Slurm here: `.ci/slurm-up` starts a single-node cluster")
def test_a_slurm_job_that_can_never_start_ends_the_sweep_in_one_line(tmp_path):
    done, job = slurm_sweep(tmp_path, "hydra.launcher.cpus_per_task=64")
    assert (done.returncode, done.stderr.splitlines()[-1]) == (EXIT["usage"], (
        f"benchrun: error: Slurm job {job}_0 can never start as it asks (squeue: PartitionConfig): its request is "
        "more than the partition allows or its nodes have; change hydra.launcher's partition, cpus_per_task, mem_gb, "
        "gpus_per_node, timeout_min or constraint: nothing was asked or recorded"))
    assert (queued(job), list(tmp_path.iterdir())) == ("", [])


@pytest.mark.skipif(shutil.which("sbatch") is None, reason="no Slurm here: `.ci/slurm-up` starts a single-node cluster")
def test_a_slurm_job_whose_setup_fails_ends_the_sweep_in_one_line(tmp_path):
    """The launcher's `setup` (the preset's starts a private Ollama) failing: each job ended before benchrun started
    in it, writing no result, and the sweep waited for them for ever."""
    done, job = slurm_sweep(tmp_path, "hydra.launcher.setup=['echo ollama: command not found >&2','exit 3']")
    assert (done.returncode, done.stderr.splitlines()[-1]) == (EXIT["sweep_failed"], (
        f"benchrun: error: Slurm job {job}_0 left the queue without a result (cancelled before it ran, killed, or its "
        "setup failed); its log ends: ollama: command not found: nothing was asked or recorded"))
    assert (queued(job), list(tmp_path.iterdir())) == ("", [])


def test_a_job_directory_that_names_no_job_is_refused_in_a_sweep_of_two(tmp_path):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra.sweep.subdir=same",
                         "runner.host=http://127.0.0.1:9", "outputs=outputs", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: hydra.sweep.subdir=same: every job of the sweep would have this one directory, and a run "
        "directory holds one run (each job after the first refused there, the sweep summed up without it); leave "
        "hydra.sweep.subdir out (benchrun names each job by what it varies), or name jobs by ${hydra.job.num}\n"))
    assert list(tmp_path.iterdir()) == []


def test_slurm_jobs_whose_time_is_all_warning_are_refused(tmp_path):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm", *SLURM_NODE,
                         "hydra.launcher.timeout_min=1", "runner.host=http://127.0.0.1:9", "outputs=outputs",
                         cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: hydra.launcher.timeout_min=1: Slurm warns a job hydra.launcher.signal_delay_s=120 seconds "
        "before its time is up, and a run ends at that warning (interrupted, to be resumed), so every job would stop "
        "as it starts; give jobs more than 2 minutes, or a smaller hydra.launcher.signal_delay_s\n"))
    assert list(tmp_path.iterdir()) == []


WRITES_DATA = """import os

with open(os.path.join(os.path.dirname(__file__), "data", "v.jsonl"), "w") as data:
    data.write('{"a": 7, "reference": "7"}\\n')


def s(response, reference):
    return 1
"""


def test_a_data_file_written_by_a_scorer_files_import_is_named_as_it_was_read(tmp_path):
    first = b'{"a": 1, "reference": "1"}\n{"a": 2, "reference": "2"}\n'
    write_bench(tmp_path, {"tasks.yml": tasks_yml({"name": "t", "template": "say {a}", "values_file": "data/v.jsonl",
                                                   "scorer": "s"}),
                           "custom_scorer.py": WRITES_DATA, "data/v.jsonl": first.decode()})
    done = run_of(tmp_path)
    assert done.returncode == EXIT["ok"], done.stderr
    manifest = json.loads((run_dir_of(done.stdout) / "manifest.json").read_text())
    assert [sample["prompt"] for sample in manifest["samples"]] == ["say 1", "say 2"]
    assert {"path": "data/v.jsonl", "sha256": hashlib.sha256(first).hexdigest(), "size": len(first)} in \
        manifest["files"]


def alive(pid: int) -> bool:
    """Whether process `pid` runs (not ended, nor ended and not yet reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX"
    except OSError:
        return False


def statuses(outputs: Path) -> list[str]:
    """The status of each run of the sweep in `outputs`."""
    return [json.loads(path.read_text())["status"] for path in sorted(outputs.glob("*/*_sweep/*/run.json"))]


def test_a_joblib_sweeps_workers_end_when_its_launching_process_is_killed(tmp_path):
    outputs = tmp_path / "outputs"
    with FakeOllama(models=["llama3.2", "gemma3"], latency_s=0.25) as server:
        sweep = subprocess.Popen([sys.executable, "-m", "benchrun", "-m", "runner.model=llama3.2,gemma3",
                                  "hydra/launcher=joblib", f"runner.host={server.url}", "cache=false",
                                  "runner.concurrency=1", f"outputs={outputs}"], cwd=tmp_path, env=child_env(),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        workers: list[int] = []
        try:
            wait_for(lambda: line_count(next(outputs.glob("*/*_sweep/1_gemma3/responses.jsonl"), outputs)) >= 2, 120)
            workers = [int(pid) for pid in Path(f"/proc/{sweep.pid}/task/{sweep.pid}/children").read_text().split()]
            assert len(workers) >= 2  # loky's workers and resource trackers
            os.kill(sweep.pid, signal.SIGKILL)
            sweep.wait(60)
            wait_for(lambda: statuses(outputs) == ["completed", "completed"], 120)
            wait_for(lambda: not any(alive(pid) for pid in workers), 60)
        finally:
            for pid in workers:
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)


def test_a_glob_sweep_over_a_config_group_runs_a_job_per_preset(tmp_path):
    done = call_benchrun("-m", "task=glob(*)", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr.count("error")) == (EXIT["ok"], 0), done.stderr
    assert [line.split(", ")[0] for line in done.stdout.splitlines() if "dry run: no model was called" in line] == [
        "1 task", "4 tasks"]  # folderbench, then listbench


def test_an_interval_sweep_is_refused_naming_its_override(tmp_path):
    done = call_benchrun("-m", "runner.options.temperature=interval(0,1)", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'config': runner.options.temperature=interval(0,1): an interval is sampled by an "
        "optimising sweeper (Optuna, Nevergrad), and a benchrun sweep lists its values: "
        "runner.options.temperature=a,b,c or runner.options.temperature=range(start,stop,step)\n"))


def test_more_joblib_workers_than_jobs_and_cpus_are_refused(tmp_path):
    cpus = os.cpu_count() or 1
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=joblib",
                         f"hydra.launcher.n_jobs={cpus + 3}", "dry_run=true",
                         cwd=tmp_path)  # a few more than allowed: without the check, only a few started
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: hydra.launcher.n_jobs={cpus + 3}: joblib starts that many worker processes at once, and the "
        f"sweep has 2 jobs on {cpus} CPUs; give at most {max(2, cpus)} (or leave it out: one a CPU)\n"))


@pytest.mark.parametrize("paths, first, second", [("v1/A,v2/A", "v1/A", "v2/A"), ("A,A/", "A", "A/")])
def test_two_paths_of_one_label_in_a_sweep_are_refused(tmp_path, paths, first, second):
    done = call_benchrun("-m", f"task.path={paths}", "runner.host=http://127.0.0.1:9", "outputs=outputs", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'config': task.path: the sweep lists {first!r} and {second!r}, whose jobs would both be "
        "labelled 'A' (a path by its last part), which the sweep's table, its report and its exports could not tell "
        "apart; list each once, under a name of its own\n"))
    assert list(tmp_path.iterdir()) == []

"""Hostile input, fifteenth pass, the files-and-processes side (issue 19's fresh pass of the same kinds): real
`python -m benchrun` processes given hostile benchmark files, the cases it found bad, each with the rule it now obeys.

- a response class of custom_response.py whose JSON schema runs code (`model_json_schema` overridden, a pydantic hook)
  that ends the process (`os._exit(0)`), exits (`raise SystemExit(0)`), raises KeyboardInterrupt or another
  BaseException, or prints: the schema was made in the run's own process with none of the import's containment, so
  a run (or a dry run) exited 0 having done nothing, a run directory left `running`; a KeyboardInterrupt was told as
  an interrupt (exit 130); what it printed went to the console, the API key unmasked. Now the schema is made first in
  the import's own process (`compiler.importprobe.probed`) and then contained in the run's (`usercode.contained`): one
  line naming the file and the format, exit 2
- a custom_*.py that forks at import (`os.fork()`, the parent waiting for its copy): the copy went on as a second
  benchrun in the same run directory (claimed before the compile), so the run was made twice: responses.jsonl held
  every sample twice, and `verify` said intact. Now refused by the import's own process (it forks), and a copy made
  in the run's process ends where the import ends, never going on as a run (`usercode.contained`)
- a custom_*.py raising a BaseException that is not an Exception (`class Boom(BaseException)`) at import: a traceback
  of twenty lines, exit 1. Now `cannot import: Boom: ... (line N)`, as for any error it raises
- a custom_*.py reading standard input at import (`input()`): the run's import read benchrun's own stdin (a run from a
  terminal waited for ever, a piped line was taken), while the scorer process's got EOF. Now EOF there too
  (`core.stdfds.input_from_nothing`)
- a batch scheduler's signals: Slurm's SIGUSR2 before a job's time limit (as submitit asks for it) ran submitit's
  handler inside the run (its error raised in a write to the scorer process, which died of the signal: a sample's
  `ScorerProcessDied`) and the run went on into its time limit; SIGUSR1/SIGUSR2 killed a plain run, and SIGXCPU (a
  CPU-time soft limit) too, each left `running`. Now interrupts (`core.interrupts.SCHEDULER_SIGNALS`), ignored by the
  run's children
- a Slurm sweep launched from inside a Slurm job (`SLURM_MEM_PER_CPU` of the outer allocation passed on by sbatch):
  every job's srun failed at once, and with accounting off the sweep waited for ever. Now the outer job's variables
  are left behind (`callbacks._leave_outer_job`)
- `hydra.sweeper.params={...}` (a traceback from OmegaConf's code) and `hydra.launcher=null` (an AttributeError's line
  and the sweep's directory left behind): one line each, nothing made (`cli._hydras_own`, `callbacks`)
- Ctrl-C on a Slurm sweep whose jobs are queued: `nothing was asked or recorded`, but the jobs stayed queued, to run
  later into the directory said to hold nothing. Now they are cancelled (`compose.takeback.cancel_slurm_jobs`)

What held is listed in the pass's notes (the issue's note): SIGTERM to the process group mid-scoring, YAML merge keys,
PYTHONHASHSEED, `python -O` and `-X dev`, joblib's threading and multiprocessing backends under SIGINT, a bad Slurm
partition, a scorer file's `os.chdir` at import.
"""

from __future__ import annotations

import json
import os
import resource
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
from tests.helpers.commands import call_benchrun, run_benchrun, run_dir_of
from tests.helpers.slurmsweeps import interrupted_while_queued

pytestmark = pytest.mark.slow
TASK = {"name": "t", "template": "say {a}", "values": {"a": [1, 2]}, "reference": ["1", "2"]}
KEY = "sk-fifteenth0123456789abcdefghij"
SLURM_NODE = ["hydra.launcher.partition=debug", "hydra.launcher.gpus_per_node=0", "hydra.launcher.cpus_per_task=1",
              "hydra.launcher.mem_gb=1", "hydra.launcher.timeout_min=10", "hydra.launcher.setup=[]"]
"""The single-node cluster's partition and size (`.ci/slurm-up`), no private Ollama started."""
FORKS_REFUSED = ("it forks the process importing it (os.fork, a multiprocessing process), and a copy that went on "
                 "would be a second run, writing the same run directory; a benchmark's file must define its functions "
                 "and classes, not work at import")
SCHEMA_CLASS = ("import os\nfrom pydantic import BaseModel\n\n\nclass F(BaseModel):\n    answer: str\n\n"
                "    @classmethod\n    def model_json_schema(cls, *args, **kwargs):\n")


def dry_run(root: Path, files: dict[str, str], process: bool = False):
    """A dry run of the benchmark `files` (with $OPENAI_API_KEY set), in this process or (`process`) a real one."""
    write_bench(root, files)
    command = run_benchrun if process else call_benchrun
    return command("task.path=bench", "dry_run=true", cwd=root, env={"OPENAI_API_KEY": KEY})


@pytest.mark.parametrize("body, line", [
    ("os._exit(0)", "class 'F': making its JSON schema ended the process (os._exit(0) or the like); a response class "
                    "must define its fields, not work as its schema is made"),
    ("print('key', os.environ['OPENAI_API_KEY'])\n        raise SystemExit(0)",
     "format 'F' has no JSON schema: SystemExit: 0"),
    ("raise KeyboardInterrupt", "format 'F' has no JSON schema: KeyboardInterrupt: KeyboardInterrupt"),
    ("raise GeneratorExit('done')", "format 'F' has no JSON schema: GeneratorExit: done"),
    ("os.fork()\n        return {}", f"cannot import: {FORKS_REFUSED}"),
])
def test_a_response_class_whose_schema_ends_exits_or_prints_is_one_line(tmp_path, body, line):
    # a schema that ends or forks its process is given a real one: the test's own must not be the one that goes
    done = dry_run(tmp_path, {"tasks.yml": tasks_yml({**TASK, "format": "F"}),
                              "custom_response.py": f"{SCHEMA_CLASS}        {body}\n"},
                   process=body.startswith(("os._exit", "os.fork")))
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", f"benchrun: error: in 'custom_response.py': {line}\n")


def test_a_response_class_whose_schema_exits_leaves_no_run_running(tmp_path):
    """A run, not a dry run: its directory, claimed before the compile, says why it failed."""
    write_bench(tmp_path, {"tasks.yml": tasks_yml({**TASK, "format": "F"}),
                           "custom_response.py": f"{SCHEMA_CLASS}        raise SystemExit(0)\n"})
    done = call_benchrun("task.path=bench", "runner.host=http://127.0.0.1:9", "outputs=outputs", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        EXIT["usage"], "benchrun: error: in 'custom_response.py': format 'F' has no JSON schema: SystemExit: 0\n")
    [run_json] = (tmp_path / "outputs").glob("*/*/run.json")
    info = json.loads(run_json.read_text())
    assert (info["status"], info["reason"]) == (
        "failed", "in 'custom_response.py': format 'F' has no JSON schema: SystemExit: 0")


def test_a_scorer_file_raising_a_base_exception_at_import_is_one_line(tmp_path):
    done = dry_run(tmp_path, {"tasks.yml": tasks_yml({**TASK, "scorer": "s"}), "custom_scorer.py": (
        "class Boom(BaseException):\n    pass\n\n\ndef s(response, reference):\n    return 1\n\n\nraise Boom('at import')\n")})
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", "benchrun: error: in 'custom_scorer.py': cannot import: Boom: at import (line 9)\n")


FORKS = "import os\n\n\ndef s(response, reference):\n    return 1\n\n\n"


def forking_run(root: Path, scorer_file: str):
    """A run of a benchmark whose custom_scorer.py is `scorer_file`, against a fresh loopback Ollama."""
    # a real process: the file forks the process importing it, which must not be the test's own
    write_bench(root, {"tasks.yml": tasks_yml({**TASK, "scorer": "s"}), "custom_scorer.py": scorer_file})
    with FakeOllama(models=["llama3.2"]) as server:
        return run_benchrun("task.path=bench", f"runner.host={server.url}", "outputs=outputs", "cache=false",
                            cwd=root)


def test_a_scorer_file_that_forks_at_import_is_refused(tmp_path):
    done = forking_run(tmp_path, FORKS + "pid = os.fork()\nif pid:\n    os.waitpid(pid, 0)\n")
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        f"benchrun: error: in 'custom_scorer.py': cannot import: {FORKS_REFUSED}\n"))
    [run_dir] = (tmp_path / "outputs").glob("*/*")
    assert not (run_dir / "responses.jsonl").exists()
    assert json.loads((run_dir / "run.json").read_text())["status"] == "failed"


def test_a_fork_the_import_check_did_not_see_never_runs_twice(tmp_path):
    """A file that forks only where it is imported for the run (not in the check's process): the copy ends where the
    import ends, and the run is made once."""
    done = forking_run(tmp_path, FORKS + "if __name__ != 'benchrun_probe':\n    pid = os.fork()\n    if pid:\n"
                                         "        os.waitpid(pid, 0)\n")
    assert done.returncode == EXIT["ok"], done.stderr
    assert done.stdout.count("run directory: ") == 1
    run_dir = run_dir_of(done.stdout)
    ids = [json.loads(line)["id"] for line in (run_dir / "responses.jsonl").read_text().splitlines()]
    assert sorted(ids) == ["t:a=1", "t:a=2"]
    assert [json.loads(line)["metrics"] for line in (run_dir / "scores.jsonl").read_text().splitlines()
            if json.loads(line)["scorer"] == "s"] == [{"s": 1}, {"s": 1}]


def started(root: Path, *args: str) -> subprocess.Popen:
    """`python -m benchrun ARGS` started in `root` in a session of its own (a process group of its own, as a batch
    job's), its output piped."""
    return subprocess.Popen([sys.executable, "-m", "benchrun", *args], cwd=root, env=child_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def test_a_scheduler_signal_to_a_run_records_it_interrupted(tmp_path):
    """SIGUSR1 (or SIGUSR2) sent to a plain run's process group, as a batch scheduler sends it: the run, which had
    died of it `running`, is recorded `interrupted` and resumed; its scorer process does not die of it."""
    outputs = tmp_path / "outputs"
    with FakeOllama(models=["llama3.2"], latency_s=0.25) as server:
        run = started(tmp_path, f"runner.host={server.url}", "cache=false", f"outputs={outputs}")
        try:
            wait_for(lambda: line_count(next(outputs.glob("*/*/responses.jsonl"), outputs / "none")) >= 2, 120)
            os.killpg(run.pid, signal.SIGUSR1)
            stdout, stderr = run.communicate(timeout=120)
        finally:
            run.kill()
        [run_dir] = outputs.glob("*/*")
        info = json.loads((run_dir / "run.json").read_text())
        resumed = call_benchrun("resume", str(run_dir), cwd=tmp_path, module="benchrun.audit")
    assert run.returncode == EXIT["interrupted"], stderr
    assert stderr.startswith(f"benchrun: error: interrupted by SIGUSR1: run {info['run_id']} is recorded as "
                             "'interrupted' with "), stderr
    assert (info["status"], info["reason"]) == ("interrupted", "interrupted by SIGUSR1")
    assert resumed.returncode == EXIT["ok"], resumed.stderr
    assert [json.loads(line)["error"] for line in (run_dir / "scores.jsonl").read_text().splitlines()] == [None] * 45


@pytest.mark.skipif(shutil.which("sbatch") is None, reason="no Slurm here: `.ci/slurm-up` starts a single-node cluster")
def test_a_slurm_jobs_time_limit_warning_records_it_interrupted(tmp_path):
    """Slurm's warning that a job's time is nearly up (SIGUSR2, `--signal=USR2@120` as submitit asks it, sent here by
    `scancel --signal=USR2` as Slurm sends it): submitit's handler raised its error in the middle of the run (a
    traceback in benchrun.log, a write to the scorer process broken), the scorer process died of the signal (a
    sample's `ScorerProcessDied`), and the run went on into its time limit. Now the job's run stops at once,
    recorded `interrupted`, and `resume` finishes it."""
    outputs = tmp_path / "outputs"
    job = outputs / "none"
    with FakeOllama(models=["llama3.2", "gemma3"], latency_s=1.0) as server:
        sweep = started(tmp_path, "-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm", *SLURM_NODE,
                        f"runner.host={server.url}", "cache=false", f"outputs={outputs}")
        try:
            wait_for(lambda: line_count(next(outputs.glob("*/*_sweep/1_gemma3/responses.jsonl"), job)) >= 2, 180)
            job = next(outputs.glob("*/*_sweep/1_gemma3"))
            [task] = [p.name for p in job.parent.glob(".submitit/*_1")]
            subprocess.run(["scancel", "--signal=USR2", task], check=True)
            server.latency_s = 0.0
            stdout, stderr = sweep.communicate(timeout=240)
        finally:
            sweep.kill()
        info = json.loads((job / "run.json").read_text())
        resumed = run_benchrun("resume", str(job), cwd=tmp_path, module="benchrun.audit")
    assert sweep.returncode == EXIT["sweep_failed"], stderr
    assert "job 1_gemma3 (gemma3) interrupted: interrupted by SIGUSR2\n" in stdout
    assert (info["status"], info["reason"]) == ("interrupted", "interrupted by SIGUSR2")
    assert "Traceback" not in (job / "benchrun.log").read_text()
    assert resumed.returncode == EXIT["ok"], resumed.stderr
    finished = json.loads((job / "run.json").read_text())
    assert (finished["status"], finished["counts"]["responses"], finished["counts"]["scorer_errors"]) == (
        "completed", 18, 0)


def test_a_file_reading_standard_input_at_import_gets_nothing(tmp_path):
    """`input()` at import, benchrun's standard input a pipe that stays open (as a terminal does): the run's own
    import read it (a run from a terminal waited for ever; here it took the line as the file's), while the scorer
    process's import got EOF. Now both get EOF: one line."""
    write_bench(tmp_path, {"tasks.yml": tasks_yml({**TASK, "scorer": "s"}), "custom_scorer.py": (
        "threshold = input('threshold? ')\n\n\ndef s(response, reference):\n    return 1\n")})
    read, write = os.pipe()
    try:
        os.write(write, b"5\n")
        done = subprocess.run([sys.executable, "-m", "benchrun", "task.path=bench", "dry_run=true"], cwd=tmp_path,
                              env=child_env(), stdin=read, capture_output=True, text=True, timeout=120)
    finally:
        os.close(read)
        os.close(write)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'custom_scorer.py': cannot import: EOFError: EOF when reading a line (line 1)\n"))


@pytest.mark.skipif(shutil.which("sbatch") is None, reason="no Slurm here: `.ci/slurm-up` starts a single-node cluster")
def test_a_slurm_sweep_launched_from_inside_a_slurm_job_runs_its_jobs(tmp_path):
    """The sweep started inside an allocation made with --mem-per-cpu (an sbatch script, an `salloc` session; its
    variables given here): sbatch passed them on, each job's srun failed at once (`SLURM_MEM_PER_CPU, ... are
    mutually exclusive`) writing no result, and with Slurm's accounting off (as here) the sweep waited for ever."""
    outer = {"SLURM_JOB_ID": "999999", "SLURM_MEM_PER_CPU": "100", "SLURM_CPUS_ON_NODE": "1"}
    with FakeOllama(models=["llama3.2", "gemma3"]) as server:
        done = run_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm", *SLURM_NODE,
                            f"runner.host={server.url}", "cache=false", "outputs=outputs", cwd=tmp_path, env=outer,
                            timeout=300)
    assert done.returncode == EXIT["ok"], done.stderr
    jobs = json.loads((next((tmp_path / "outputs").glob("*/*_sweep")) / "sweep.json").read_text())["jobs"]
    assert [(job["dir"], job["status"]) for job in jobs] == [("0_llama3.2", "completed"), ("1_gemma3", "completed")]


@pytest.mark.parametrize("override", ["+hydra.sweeper.params={runner.model:'llama3.2,gemma3'}",
                                      "hydra.sweeper.params={runner.model:'llama3.2,gemma3'}"])
def test_sweeper_params_on_the_command_line_are_one_line(tmp_path, override):
    """Hydra's `hydra.sweeper.params` (a sweep written as a mapping), which OmegaConf cannot merge into the basic
    sweeper's None: an AttributeError raised in OmegaConf's code, a traceback of forty lines (exit 1)."""
    done = call_benchrun("-m", override, "runner.host=http://127.0.0.1:9", "outputs=outputs", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: Hydra could not go on: AttributeError: 'NoneType' object has no attribute 'get' (at "
        "hydra.sweeper.params)\n"))
    assert list(tmp_path.iterdir()) == []


def test_a_sweep_without_a_launcher_is_one_line_and_leaves_nothing(tmp_path):
    """`hydra.launcher=null`: benchrun's check read the launcher's target after it had claimed the sweep's directory,
    and failed there (`AttributeError: 'NoneType' object has no attribute 'get'`), leaving that directory with an empty
    multirun.yaml, which a later sweep into it was refused as holding a sweep."""
    done = call_benchrun("-m", "hydra.launcher=null", "runner.host=http://127.0.0.1:9", "outputs=outputs", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: Hydra could not go on: RuntimeError: Hydra launcher is not configured\n"))
    assert list(tmp_path.iterdir()) == []


def test_a_cpu_time_soft_limit_records_the_run_interrupted(tmp_path):
    """`ulimit -S -t` (a batch system's CPU-time limit: SIGXCPU at the soft limit, SIGKILL at the hard one): the run
    was killed by SIGXCPU, left `running` with nothing said; now it is recorded `interrupted` in its line. The limit is
    set once answers are being recorded (a second of CPU on), so a slow start-up cannot meet it before anything is
    asked."""
    n = 5000  # about 1 ms of CPU an answer: the limit is met in the middle of the run
    write_bench(tmp_path, {"tasks.yml": tasks_yml({**TASK, "values": {"a": list(range(n))},
                                                    "reference": [str(i) for i in range(n)]})})
    outputs = tmp_path / "outputs"
    with FakeOllama(models=["llama3.2"]) as server:
        with subprocess.Popen(
                [sys.executable, "-m", "benchrun", "task.path=bench", f"runner.host={server.url}", "cache=false",
                 "outputs=outputs"], cwd=tmp_path, env=child_env(), stderr=subprocess.PIPE, text=True) as run:
            wait_for(lambda: line_count(next(outputs.glob("*/*/responses.jsonl"), outputs / "none")) >= 1, 120)
            resource.prlimit(run.pid, resource.RLIMIT_CPU, (int(_cpu_seconds(run.pid)) + 2, 120))
            stderr = run.stderr.read()
    [run_dir] = outputs.glob("*/*")
    info = json.loads((run_dir / "run.json").read_text())
    assert run.returncode == EXIT["interrupted"], stderr
    assert stderr.startswith(f"benchrun: error: interrupted by SIGXCPU: run {info['run_id']} is recorded as "
                             "'interrupted' with "), stderr
    assert (info["status"], info["reason"]) == ("interrupted", "interrupted by SIGXCPU")
    assert 0 < info["counts"]["responses"] < n


def _cpu_seconds(pid: int) -> float:
    """The CPU time (user and system) process `pid` has used, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(shutil.which("sbatch") is None, reason="no Slurm here: `.ci/slurm-up` starts a single-node cluster")
def test_a_slurm_sweep_stopped_by_a_signal_leaves_no_job_queued(tmp_path):
    """Ctrl-C on a Slurm sweep whose jobs wait in the queue (here for an hour: sbatch --begin=now+3600): benchrun said
    `nothing was asked or recorded` and took the sweep's directory back, but the jobs stayed queued, to run later and
    ask the model into that directory. Now the sweep's jobs are cancelled (scancel) as it stops."""
    outputs = tmp_path / "outputs"
    sweep = started(tmp_path, "-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm", *SLURM_NODE,
                    "+hydra.launcher.additional_parameters.begin=now+3600", "runner.host=http://127.0.0.1:9",
                    f"outputs={outputs}")
    stderr, queued = interrupted_while_queued(sweep, outputs)
    assert (sweep.returncode, stderr.splitlines()[-1]) == (  # submitit's lines of sacct (accounting off) before it
        EXIT["interrupted"], "benchrun: error: interrupted before the run started: nothing was asked or recorded")
    assert queued == ""
    assert list(tmp_path.iterdir()) == []

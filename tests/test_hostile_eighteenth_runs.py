"""Hostile input, eighteenth pass, the files-and-processes side (issue 19's fresh pass of the same kinds): real
`python -m benchrun` processes given hostile command lines, sweeps and machines, the cases it found bad, each with
the rule it now obeys.

- a dry run of a sweep (`-m ... dry_run=true`) whose benchmark has a mistake: each job said it in one line, and the
  process exited 0, so `benchrun -m ... dry_run=true && sbatch ...` went on as if the check had passed. Now a dry
  run's failed job makes the sweep's exit 1, as a sweep's failed job does (`callbacks.SweepSummaryCallback`)
- a dry run of a Slurm (or submitit_local) sweep: its jobs were submitted to the cluster, each printing its plan, or
  the benchmark's mistake, in its log under a scratch directory of /tmp; the terminal showed no plan and no error,
  exit 0 (a bad benchmark included), and the sweep's Slurm options that a real launch refuses were not checked. Now a
  dry run's jobs are launched in this process, whatever hydra.launcher (`callbacks.BASIC_LAUNCHER`), after the checks
  of the Slurm options (`callbacks._check_slurm`)
- a Slurm job whose Python fails as it starts (a module missing or broken in the job's environment): the sweep said
  `Slurm job 610_0 left the queue without a result (...); its log ends: srun: error: vm: task 0: Exited with exit code
  1`, srun's word that the task ended, and took the sweep's directory back with the job's log, so the cause (the
  line before: `ImportError: ...`) was nowhere to read. Now srun's line of how a task ended is passed over for the
  task's own last line (`compose.slurmqueue._last_said`)
- a values.csv (or `values_file:` CSV) written in other digits than 0-9 (Bengali `৩`, Arabic-Indic `٣`, full-width
  `３`, as a multilingual benchmark's are): each was typed as the number, so `৩,৪` was asked `what is 3 + 4?`, the
  prompt and the recorded values not those of the file, and `3` and `৩` in one file the same sample id. Now a cell
  is a number only in the digits JSON and YAML write numbers in, the others text as written (`compiler.files`)
- a number a double cannot hold as written (`2.00000000000000001`, `1e-999`, a constant's twentieth digit) in a
  values.csv, a JSONL values file or tasks.yml: it was read as the double's number, so the prompt asked `what is 2.0
  + 0.0?` for `2.00000000000000001 + 1e-999` (and sample ids and references held the double's number). Now a CSV
  keeps such a cell as its text, as it keeps an integer past 2^53, and a JSONL or YAML file refuses it in one line
  with the advice to quote it (`core.yamlfile.float_as_written`)
- a dry run on a machine shared with other users: its Hydra files went to one fixed directory of the shared
  temporary directory, `/tmp/benchrun-dry-run`, which another user could own (every other user's dry run refused) or
  fill with links, which Hydra wrote through (`.hydra/overrides.yaml` a link to the user's `~/.bashrc`: overwritten
  with the dry run's overrides). Now each dry run has a private directory of its own there, removed as it ends
  (`compose.config._dry_run_scratch`)
- a dry run given the directory of a run or a sweep already made (`hydra.run.dir=outputs/.../run dry_run=true`, a
  script that checks a run's directory again; `-m hydra.sweep.dir=... dry_run=true`): Hydra rewrote the run's
  `.hydra/` copies of its config and overrides (and a sweep's multirun.yaml and its jobs' copies) with the dry run's,
  so the archive said the run was made of another benchmark and other overrides. Now refused as a run into it is
  (`callbacks.RunDirCheck`), nothing changed
- a submitit sweep of more than one task a job (`hydra.launcher.tasks_per_node=3`, `nodes=2`,
  `additional_parameters.ntasks=4`): each task ran the whole job, so each run was started that many times at once in
  its one directory, one asking, the others refused there with `already holds run ... (running); ... finish that
  run with: benchrun-audit resume ...` in their logs, each holding the job's CPUs and memory. Now refused before
  anything is made (`compose.slurmoptions.one_task`)
- a benchmark's `custom_*.py` that starts a process in a session of its own at import
  (`subprocess.Popen(..., start_new_session=True)`, `setsid cmd &`): the check of what an import leaves running
  killed its probe's process group, which that process had left, so the import passed, and the process outlived the
  run, one from the check and one from the run's own import, each run. Now the probe is its descendants' reaper and
  kills what it finds among its children: refused in one line, nothing left (`compiler.usercode.PROBE`)
- a sweep written in a config file (`hydra.sweeper.params`, which Hydra's basic sweeper sweeps with the command
  line's): none of a sweep's checks saw it, so `range(0,20000)` was listed and launched (the command line's is
  refused at once, over 10,000 jobs), `range(5,0)` made an empty sweep (exit 0), and `llama3.2,llama3.2` two jobs of
  one label. Now its values are counted and checked as the command line's are (`compose.sweepsize.swept`)
- a dry run of a sweep that lists a value twice (`-m runner.model=llama3.2,llama3.2`) or gives every job one
  directory (`hydra.sweep.subdir=same`): both plans printed, exit 0, where the sweep itself is refused. Now a dry run
  checks the sweep as its launch would (`callbacks.RunDirCheck.on_multirun_start`)
- a Slurm sweep whose `hydra.launcher.setup` changes directory (`cd /scratch/x`): each job wrote its run under that
  directory (`outputs` relative), the sweep's own sweep.json listing no job, an empty table, exit 0. Now the sweep's
  directory is pinned whole for its jobs (`callbacks._pin_sweep_dir`): each job's run is in the sweep, saying what
  it found where it ran, and the sweep says so (exit 1)
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, make_run, manifest_ids, run_benchrun

pytestmark = pytest.mark.slow
SLURM_NODE = ["hydra.launcher.partition=debug", "hydra.launcher.gpus_per_node=0", "hydra.launcher.cpus_per_task=1",
              "hydra.launcher.mem_gb=1", "hydra.launcher.timeout_min=10", "hydra.launcher.setup=[]"]
"""The single-node cluster's partition and size (`.ci/slurm-up`)."""
MISTAKE = "benchrun: error: in 'tasks.yml': task 't': tasks[0].valuez: unknown key 'valuez' (did you mean 'values'?)\n"


def bad_bench(root: Path) -> Path:
    return write_bench(root, {"tasks.yml": "- name: t\n  template: 'say {a}'\n  valuez: {a: [1]}\n"})


def no_sbatch(root: Path) -> dict[str, str]:
    """An environment whose `sbatch` only notes that it was called (root/submitted), and submits nothing."""
    shim = root / "bin"
    shim.mkdir()
    (shim / "sbatch").write_text(f"#!/bin/sh\necho \"$@\" >> {root / 'submitted'}\nexit 1\n")
    (shim / "sbatch").chmod(0o755)
    return {"PATH": f"{shim}:{os.environ['PATH']}"}


def test_a_dry_run_sweep_whose_benchmark_has_a_mistake_exits_as_a_failed_sweep(tmp_path):
    bad_bench(tmp_path)
    done = call_benchrun("-m", "task.path=bench", "runner.model=llama3.2,gemma3", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["sweep_failed"], MISTAKE * 2)
    assert not (tmp_path / "outputs").exists()


@pytest.mark.parametrize("launcher", [["hydra/launcher=slurm", *SLURM_NODE], ["hydra/launcher=submitit_local"]])
def test_a_dry_run_of_a_submitit_sweep_prints_its_plans_here_and_submits_nothing(tmp_path, launcher):
    env = no_sbatch(tmp_path)
    done = call_benchrun("-m", "task=folderbench", "runner.model=llama3.2,gemma3", *launcher, "dry_run=true",
                         cwd=tmp_path, env=env)
    assert done.returncode == EXIT["ok"], done.stderr
    assert "folderbench · ollama · llama3.2" in done.stdout and "folderbench · ollama · gemma3" in done.stdout
    assert len(set(manifest_ids(done.stdout))) == 2
    assert not (tmp_path / "submitted").exists()
    bad_bench(tmp_path)
    done = call_benchrun("-m", "task.path=bench", "runner.model=llama3.2,gemma3", *launcher, "dry_run=true",
                         cwd=tmp_path, env=env)
    assert (done.returncode, done.stderr) == (EXIT["sweep_failed"], MISTAKE * 2)
    assert not (tmp_path / "submitted").exists() and not (tmp_path / "outputs").exists()


def test_a_dry_run_of_a_slurm_sweep_refuses_the_options_its_launch_would(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm", *SLURM_NODE,
                         f"+hydra.launcher.additional_parameters.chdir={elsewhere}", "dry_run=true", cwd=tmp_path,
                         env=no_sbatch(tmp_path))
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: hydra.launcher.additional_parameters.chdir={elsewhere}: a job of the sweep would start in "
        "that directory, where its relative paths (task.path, outputs, runner_file) name other files than where the "
        "sweep was started, and its run would be written there, outside the sweep; leave it out (jobs start where "
        "the sweep is started)\n"))
    assert not (tmp_path / "submitted").exists()


@pytest.mark.skipif(shutil.which("sbatch") is None, reason="no Slurm here: `.ci/slurm-up` starts a single-node cluster")
def test_a_slurm_job_whose_python_fails_as_it_starts_is_said_with_its_cause(tmp_path):
    """The job's environment holds a broken `submitit` (PYTHONPATH set by the launcher's setup): the job's Python ends
    before benchrun starts in it, its traceback's last line the cause, srun's line after it."""
    (tmp_path / "broken" / "submitit").mkdir(parents=True)
    (tmp_path / "broken" / "submitit" / "__init__.py").write_text("raise ImportError('no submitit here')\n")
    done = run_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm", *SLURM_NODE[:-1],
                        f"hydra.launcher.setup=['export PYTHONPATH={tmp_path / 'broken'}']",
                        "runner.host=http://127.0.0.1:9", "outputs=outputs", cwd=tmp_path, timeout=120)
    job = re.search(r"'-j', '([0-9]+)'", done.stderr)[1]  # submitit's lines of sacct (accounting off)
    assert (done.returncode, done.stderr.splitlines()[-1]) == (EXIT["sweep_failed"], (
        f"benchrun: error: Slurm job {job}_0 left the queue without a result (cancelled before it ran, killed, or its "
        "setup failed); its log ends: ImportError: no submitit here: nothing was asked or recorded"))
    assert not (tmp_path / "outputs").exists()


def test_a_csv_written_in_other_digits_is_asked_as_written(compose_cfg, tmp_path):
    from benchrun import compile

    bench = write_bench(tmp_path, {"tasks/add/template.txt": "what is {a} + {b}?",
                                   "tasks/add/values.csv": "a,b,reference\n৩,৪,৭\n３,٤,7\n3,4,7\n1.5,২.৫,-4\n"})
    manifest = compile(compose_cfg(f"task.path={bench}"))
    assert [(s.id, s.prompt, s.values, s.reference) for s in manifest.samples] == [
        ("add:a=৩,b=৪", "what is ৩ + ৪?", {"a": "৩", "b": "৪"}, "৭"),
        ("add:a=３,b=٤", "what is ３ + ٤?", {"a": "３", "b": "٤"}, 7),
        ("add:a=3,b=4", "what is 3 + 4?", {"a": 3, "b": 4}, 7),
        ("add:a=1.5,b=২.৫", "what is 1.5 + ২.৫?", {"a": 1.5, "b": "২.৫"}, -4)]


def test_a_number_a_double_cannot_hold_is_kept_as_written_or_refused(compose_cfg, tmp_path):
    from benchrun import compile

    bench = write_bench(tmp_path, {"tasks/add/template.txt": "what is {a} + {b}?", "tasks/add/values.csv":
                                   "a,b,reference\n2.00000000000000001,1e-999,2\n2.50,0.1,1E5\n"})
    manifest = compile(compose_cfg(f"task.path={bench}"))
    assert [(s.prompt, s.values, s.reference) for s in manifest.samples] == [
        ("what is 2.00000000000000001 + 1e-999?", {"a": "2.00000000000000001", "b": "1e-999"}, 2),
        ("what is 2.50 + 0.1?", {"a": 2.5, "b": 0.1}, 100000.0)]  # as written (the twenty-sixth pass)
    refused = {
        "tasks.yml": ("- name: t\n  template: 'say {a}'\n  values: {a: [1.0e-999]}\n  reference: ['0']\n",
                      "in 'tasks.yml': line 3, column 16: 1.0e-999 is read by YAML as the float 0.0, not as written; "
                      "quote it ('1.0e-999') to keep it as text, or write 0.0"),
        "v.jsonl": ('{"a": 2.00000000000000001, "reference": 2}\n',
                    "in 'v.jsonl': task 't': line 1: the number 2.00000000000000001 is read as 2.0, not as written (a "
                    "double cannot hold it); quote it to keep it as text")}
    for name, (text, said) in refused.items():
        files = {"tasks.yml": "- name: t\n  template: 'say {a}'\n  values_file: v.jsonl\n", name: text}
        done = call_benchrun(f"task.path={write_bench(tmp_path, files, name=name)}", "dry_run=true", cwd=tmp_path)
        assert (done.returncode, done.stderr) == (EXIT["usage"], f"benchrun: error: {said}\n")


def test_a_dry_run_writes_through_no_link_planted_in_the_shared_temporary_directory(tmp_path):
    victim, shared = tmp_path / "bashrc", tmp_path / "tmp"
    victim.write_text("precious\n")
    (shared / "benchrun-dry-run" / ".hydra").mkdir(parents=True)
    for name in ("config.yaml", "hydra.yaml", "overrides.yaml"):
        (shared / "benchrun-dry-run" / ".hydra" / name).symlink_to(victim)
    for sweep in ([], ["-m", "runner.model=llama3.2,gemma3"]):
        # a real process: TMPDIR is read once, at the interpreter's first temporary file (tempfile.gettempdir)
        done = run_benchrun(*sweep, "task=folderbench", "dry_run=true", cwd=tmp_path, env={"TMPDIR": str(shared)})
        assert done.returncode == EXIT["ok"], done.stderr
        assert victim.read_text() == "precious\n"
        assert [path.name for path in shared.iterdir()] == ["benchrun-dry-run"]


def test_a_dry_run_into_a_run_or_a_sweep_already_made_is_refused_and_changes_nothing(tmp_path):
    run_dir = make_run(tmp_path)
    copies = {path: path.read_bytes() for path in (run_dir / ".hydra").iterdir()}
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    done = call_benchrun("task=folderbench", f"hydra.run.dir={run_dir}", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: {run_dir} already holds run {run_id} (completed); nothing was changed; pick a new "
        "directory (hydra.run.dir=...)\n"))
    assert {path: path.read_bytes() for path in (run_dir / ".hydra").iterdir()} == copies
    sweep_dir = tmp_path / "sweep"
    sweep_dir.mkdir()
    (sweep_dir / "multirun.yaml").write_text("the sweep's own\n")
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", f"hydra.sweep.dir={sweep_dir}", "dry_run=true",
                         cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: {sweep_dir} already holds a sweep; nothing was changed; pick a new directory "
        "(hydra.sweep.dir=...)\n"))
    assert [path.name for path in sweep_dir.iterdir()] == ["multirun.yaml"]
    assert (sweep_dir / "multirun.yaml").read_text() == "the sweep's own\n"


@pytest.mark.parametrize(("launcher", "given"), [
    (["hydra/launcher=submitit_local", "hydra.launcher.tasks_per_node=3"], "hydra.launcher.tasks_per_node=3"),
    (["hydra/launcher=slurm", *SLURM_NODE, "+hydra.launcher.additional_parameters.ntasks=4"],
     "hydra.launcher.additional_parameters.ntasks=4")])
def test_a_submitit_sweep_of_more_than_one_task_a_job_is_refused(tmp_path, launcher, given):
    bench = write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: 'say {a}'\n  values: {a: [1]}\n"
                                                "  reference: ['1']\n"})
    done = call_benchrun("-m", f"task.path={bench}", "runner.model=llama3.2,gemma3", *launcher,
                         "runner.host=http://127.0.0.1:9", "outputs=outputs", cwd=tmp_path, env=no_sbatch(tmp_path))
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: {given}: every task of a job runs the whole job, so each run would be started that many "
        "times at once in its one directory (one asking, the others refused there); leave it out (one task a job)\n"))
    assert not (tmp_path / "outputs").exists() and not (tmp_path / "submitted").exists()


def processes_holding(marker: str) -> list[int]:
    """The processes whose command line holds `marker` (those a test's benchmark started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


def test_a_benchmark_file_that_starts_a_process_in_a_session_of_its_own_is_refused_and_leaves_none(tmp_path):
    """`subprocess.Popen(..., start_new_session=True)` at import (a server started for the scorers, say): the check of
    what an import leaves running killed the probe's process group, which that process had left, so the import
    passed, and it outlived the run, one from the check and one from the run's own import, for every run."""
    marker = f"left-by-{tmp_path.name}"
    write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: 'say {a}'\n  values: {a: [1]}\n"
                                        "  reference: ['1']\n  scorer: s\n",
                           "custom_scorer.py": "import subprocess, sys\n\n"
                           "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', "
                           f"'{marker}'], start_new_session=True)\n\n\ndef s(response, reference):\n    return 1\n"})
    try:
        done = call_benchrun("task.path=bench", "runner.host=http://127.0.0.1:9", "outputs=outputs", cwd=tmp_path)
        left = processes_holding(marker)
    finally:
        for pid in processes_holding(marker):
            os.kill(pid, signal.SIGKILL)
    assert (done.returncode, done.stderr, left) == (EXIT["usage"], (
        "benchrun: error: in 'custom_scorer.py': cannot import: it starts a process that is still running once it is "
        "imported, in a session of its own, which would outlive the run; a benchmark's file must define its functions "
        "and classes, not work at import\n"), [])
    [run_dir] = (tmp_path / "outputs").glob("*/*")
    assert json.loads((run_dir / "run.json").read_text())["status"] == "failed"


@pytest.mark.parametrize(("swept", "said"), [
    ("runner.options.seed: range(0,20000)", "the sweep makes 20,000 jobs (runner.options.seed: 20,000), more than a "
     "sweep runs (10,000, one after another, a run directory each); sweep fewer values, or split the sweep"),
    ("runner.options.seed: range(5,0)", "the sweep makes no jobs: runner.options.seed=range(5,0) lists no value; give "
     "it one or more"),
    ("runner.model: llama3.2,llama3.2", "runner.model: the sweep lists 'llama3.2' twice, so two of its jobs would "
     "have one label; list each value once (repeats=k asks every sample k times in one run)")])
def test_a_sweep_written_in_a_config_file_is_counted_and_checked_as_the_command_lines(tmp_path, swept, said):
    (tmp_path / "myconf" / "runner").mkdir(parents=True)
    (tmp_path / "myconf" / "runner" / "sw.yaml").write_text(
        f"# @package _global_\ndefaults:\n  - ollama@runner\nhydra:\n  sweeper:\n    params:\n      {swept}\n")
    done = call_benchrun("--config-dir", "myconf", "-m", "runner=sw", "runner.host=http://127.0.0.1:9",
                         "outputs=outputs", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", f"benchrun: error: in 'config': {said}\n")
    assert not (tmp_path / "outputs").exists()


@pytest.mark.parametrize(("given", "said"), [
    (["runner.model=llama3.2,llama3.2"], "in 'config': runner.model: the sweep lists 'llama3.2' twice, so two of its "
     "jobs would have one label; list each value once (repeats=k asks every sample k times in one run)"),
    (["runner.model=llama3.2,gemma3", "hydra.sweep.subdir=same"], "hydra.sweep.subdir=same: every job of the sweep "
     "would have this one directory, and a run directory holds one run (each job after the first refused there, the "
     "sweep summed up without it); leave hydra.sweep.subdir out (benchrun names each job by what it varies), or name "
     "jobs by ${hydra.job.num}")])
def test_a_dry_run_of_a_sweep_refuses_what_the_sweep_would(tmp_path, given, said):
    done = call_benchrun("-m", *given, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", f"benchrun: error: {said}\n")


@pytest.mark.skipif(shutil.which("sbatch") is None, reason="no Slurm here: `.ci/slurm-up` starts a single-node cluster")
def test_a_slurm_job_that_changes_directory_in_its_setup_writes_its_run_in_the_sweep(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    bad_bench(tmp_path)
    done = run_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm", *SLURM_NODE[:-1],
                        f"hydra.launcher.setup=['cd {elsewhere}']", "task.path=bench",
                        "runner.host=http://127.0.0.1:9", "outputs=outputs", cwd=tmp_path, timeout=120)
    [sweep_dir] = (tmp_path / "outputs").glob("*/*_sweep")
    jobs = json.loads((sweep_dir / "sweep.json").read_text())["jobs"]
    said = f"task.path: 'bench' is not a directory (looked in {elsewhere / 'bench'})"
    assert (done.returncode, [(job["dir"], job["status"], job["reason"]) for job in jobs]) == (
        EXIT["sweep_failed"], [("0_llama3.2", "failed", said), ("1_gemma3", "failed", said)])
    assert list(elsewhere.iterdir()) == []

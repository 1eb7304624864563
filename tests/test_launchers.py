"""Sweeps run by Hydra's launcher plugins in other processes, summarised from the job directories on disk."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Iterator

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.holding import Hold, holding_answers
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import wait_for
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.answers import listbench_answer
from tests.helpers.commands import run_benchrun, sweep_dir_of

pytestmark = pytest.mark.slow


def needs(plugin: str) -> None:
    """Skip unless Hydra's launcher plugin `plugin` (hydra_plugins.<plugin>) is installed: the `sweeps` extra."""
    try:
        found = importlib.util.find_spec(f"hydra_plugins.{plugin}") is not None
    except ModuleNotFoundError:  # no hydra_plugins package at all
        found = False
    if not found:
        pytest.skip(f"hydra_plugins.{plugin} is not installed (pip install -e '.[sweeps]')")


@pytest.mark.parametrize("launcher, plugin", [
    ("joblib", "hydra_joblib_launcher"),
    ("submitit_local", "hydra_submitit_launcher"),
])
def test_two_model_sweep_in_other_processes(tmp_path, launcher, plugin):
    needs(plugin)
    with FakeOllama(models=["llama3.2", "gemma3"], responder=listbench_answer) as server:
        result = run_benchrun("-m", f"runner.host={server.url}", f"outputs={tmp_path / 'outputs'}",
                              f"hydra/launcher={launcher}", "task=folderbench", "runner.model=llama3.2,gemma3",
                              cwd=tmp_path, timeout=180)
    assert result.returncode == EXIT["ok"], result.stderr
    sweep_dir = sweep_dir_of(result.stdout)
    sweep = json.loads((sweep_dir / "sweep.json").read_text())
    assert [(j["dir"], j["model"], j["status"]) for j in sweep["jobs"]] == [
        ("0_llama3.2", "llama3.2", "completed"), ("1_gemma3", "gemma3", "completed")]
    for job in sweep["jobs"]:
        info = json.loads((sweep_dir / job["dir"] / "run.json").read_text())
        assert info["counts"]["responses"] == 3 and info["manifest_id"] == job["manifest_id"]
    [line] = [m for m in sweep["metrics"] if m["metric"] == "exact_match"]
    assert {job: (s["n"], s["mean"]) for job, s in line["jobs"].items()} == {
        "0_llama3.2": (3, pytest.approx(2 / 3)), "1_gemma3": (3, pytest.approx(2 / 3))}
    assert "│ add  │ exact_match  │ 0.667 ± 0.333 (n=3) │ 0.667 ± 0.333 (n=3) │" in result.stdout


def test_slurm_preset_composes(tmp_path):
    needs("hydra_submitit_launcher")
    result = run_benchrun("hydra/launcher=slurm", "hydra.launcher.partition=a100", "--cfg", "hydra",
                          "--package", "hydra.launcher", cwd=tmp_path)
    assert result.returncode == EXIT["ok"], result.stderr
    assert "partition: a100" in result.stdout
    assert "_target_: hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher" in result.stdout
    assert "gpus_per_node: 1" in result.stdout and "- ollama serve > ollama-$SLURM_JOB_ID.log 2>&1 &" in result.stdout


def test_a_launcher_that_cannot_submit_is_one_line_and_leaves_nothing(tmp_path):
    needs("hydra_submitit_launcher")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text("#!/bin/sh\necho 'sbatch: error: Batch job submission failed: Unable to contact "
                                    "slurm controller (connect failure)' >&2\nexit 1\n")
    (bin_dir / "srun").write_text("#!/bin/sh\nexit 1\n")  # submitit 1.5.4 wants srun on PATH to submit
    for tool in ("sbatch", "srun"):
        (bin_dir / tool).chmod(0o755)
    result = run_benchrun("-m", "hydra/launcher=slurm", "runner.model=llama3.2,gemma3", f"outputs={tmp_path / 'outputs'}",
                          cwd=tmp_path, env={"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    said = "Batch job submission failed: Unable to contact slurm controller (connect failure)"
    assert (result.returncode, result.stderr.splitlines()) == (EXIT["usage"], [  # sbatch's line (via submitit), ours
        f"sbatch: error: {said}", f"benchrun: error: hydra/launcher could not launch the sweep's jobs: sbatch: error: {said}"])
    assert list((tmp_path / "outputs").rglob("*")) == []


def test_a_joblib_worker_killed_mid_sweep_leaves_every_job_recorded_and_resumable(tmp_path):
    """One worker SIGKILLed (as the out-of-memory killer would) while both jobs ask: joblib ends the other too. Each
    job's run.json then says `interrupted` and why, sweep.json is written, the exit is 1, and resume finishes both."""
    outputs = tmp_path / "outputs"
    with joblib_sweep(tmp_path, outputs) as (proc, hold):
        os.kill(writers(outputs)[0], signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
        hold.release()
        jobs = sorted(outputs.glob("*/*/*/run.json"))
        infos = [json.loads(path.read_text()) for path in jobs]
        resumed = [run_benchrun("resume", str(path.parent), cwd=tmp_path, module="benchrun.audit") for path in jobs]
    sweep_dir = jobs[0].parent.parent
    assert proc.returncode == EXIT["sweep_failed"]
    assert err.startswith("benchrun: error: hydra/launcher lost the sweep's jobs: A worker process managed by the "
                          "executor was unexpectedly terminated.")
    assert err.endswith(f"The exit codes of the workers are {{SIGKILL(-9)}}; 2 recorded as 'interrupted' in "
                        f"{sweep_dir}; finish each with: benchrun-audit resume RUN\n")
    assert [info["status"] for info in infos] == ["interrupted", "interrupted"]
    assert infos[0]["reason"].startswith("its process died while the sweep ran (hydra/launcher: A worker process")
    sweep = json.loads((sweep_dir / "sweep.json").read_text())
    assert [job["status"] for job in sweep["jobs"]] == ["interrupted", "interrupted"]
    assert f"sweep directory: {sweep_dir}" in out
    assert [r.returncode for r in resumed] == [EXIT["ok"], EXIT["ok"]], [r.stderr for r in resumed]
    assert [json.loads(path.read_text())["counts"]["responses"] for path in jobs] == [18, 18]


def test_a_joblib_worker_sent_sigterm_records_its_job_interrupted_and_the_sweep_goes_on(tmp_path):
    """SIGTERM to the worker of one job (as `scancel` sends a Slurm job's): that job is recorded `interrupted` with
    what it had answered and ends with its line, the other job finishes, and resume completes the stopped one."""
    outputs = tmp_path / "outputs"
    with joblib_sweep(tmp_path, outputs) as (proc, hold):
        os.kill(writers(outputs)[1], signal.SIGTERM)
        wait_for(lambda: '"interrupted"' in sorted(outputs.glob("*/*/*/run.json"))[1].read_text())
        hold.release()
        out, err = proc.communicate(timeout=120)
        jobs = sorted(outputs.glob("*/*/*/run.json"))
        infos = [json.loads(path.read_text()) for path in jobs]
        resumed = run_benchrun("resume", str(jobs[1].parent), cwd=tmp_path, module="benchrun.audit")
    assert proc.returncode == EXIT["sweep_failed"], err
    assert [(info["status"], info["reason"]) for info in infos] == [("completed", None),
                                                                    ("interrupted", "interrupted by SIGTERM")]
    assert re.fullmatch(re.escape(f"benchrun: error: interrupted by SIGTERM: run {infos[1]['run_id']} is recorded as "
                                  f"'interrupted' with {infos[1]['counts']['responses']} of 18 samples") +
                        r"( \(\d not graded yet\))? in " +
                        re.escape(f"{jobs[1].parent}; finish it with: benchrun-audit resume {jobs[1].parent}\n"), err)
    assert "job 1_gemma3 (gemma3) interrupted: interrupted by SIGTERM\n" in out
    assert [job["status"] for job in json.loads((jobs[0].parent.parent / "sweep.json").read_text())["jobs"]] == [
        "completed", "interrupted"]
    assert resumed.returncode == EXIT["ok"], resumed.stderr
    assert json.loads(jobs[1].read_text())["counts"]["responses"] == 18


@contextmanager
def joblib_sweep(cwd: Path, outputs: Path) -> Iterator[tuple[subprocess.Popen, Hold]]:
    """A joblib sweep of two models into `outputs`, once each job has had two answers and waits for its third."""
    needs("hydra_joblib_launcher")
    with FakeOllama(models=["llama3.2", "gemma3"], responder=listbench_answer) as server, \
            holding_answers(server, after=2, each_model=True) as hold:
        proc = subprocess.Popen([sys.executable, "-m", "benchrun", "-m", "hydra/launcher=joblib", f"outputs={outputs}",
                                 f"runner.host={server.url}", "runner.model=llama3.2,gemma3", "cache=false"],
                                cwd=cwd, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        try:
            wait_for(lambda: hold.held_models == 2 and len(writers(outputs)) == 2)
            yield proc, hold
        finally:
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # the workers too: they would keep the pipes open
            if proc.returncode is None:
                proc.communicate()


def compiled(outputs) -> list:
    """The run directories under `outputs` whose manifest is written: a job killed before it is cannot be resumed."""
    return sorted(outputs.glob("*/*/*/manifest.json"))


def writers(outputs) -> list[int]:
    """The pids holding the run directories' locks under `outputs`, by directory."""
    notes = [path.read_text() for path in sorted(outputs.glob("*/*/*/run.lock"))]
    return [json.loads(note)["pid"] for note in notes if note.strip()]

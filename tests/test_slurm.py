"""A sweep through real `sbatch` on a single-node Slurm cluster (`.ci/slurm-up` starts one), against a loopback
server: the `slurm` launcher preset, with its per-node Ollama setup overridden (the server here is the fake)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import line_count, wait_for
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.answers import LISTBENCH_SUMMARY, listbench_answer
from tests.helpers.archives import read_jsonl, summary_of
from tests.helpers.commands import run_benchrun, run_dir_of, sweep_dir_of

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("sbatch") is None,
                                                   reason="no Slurm here: `.ci/slurm-up` starts a single-node cluster")]
NODE = ["hydra.launcher.partition=debug", "hydra.launcher.gpus_per_node=0", "hydra.launcher.cpus_per_task=1",
        "hydra.launcher.mem_gb=1", "hydra.launcher.timeout_min=10", "hydra.launcher.setup=[]"]
"""This node's partition and size, and no private Ollama to start (the jobs ask the test's loopback server)."""


def test_a_sweep_of_slurm_jobs(tmp_path):
    with FakeOllama(models=["oracle"], responder=listbench_answer) as server:
        result = run_benchrun("-m", "runner.model=oracle,wrong", "hydra/launcher=slurm", *NODE, "task=folderbench",
                              f"runner.host={server.url}", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path, timeout=300)
    assert result.returncode == EXIT["sweep_failed"], result.stderr
    sweep_dir = sweep_dir_of(result.stdout)
    sweep = json.loads((sweep_dir / "sweep.json").read_text())
    assert [(job["dir"], job["model"], job["status"]) for job in sweep["jobs"]] == [
        ("0_oracle", "oracle", "completed"), ("1_wrong", "wrong", "failed")]
    assert sweep["jobs"][1]["reason"].startswith("model 'wrong' is not pulled on ")
    [line] = [m for m in sweep["metrics"] if m["metric"] == "exact_match"]
    assert line["jobs"]["0_oracle"]["mean"] == pytest.approx(2 / 3)
    oracle = json.loads((sweep_dir / "0_oracle" / "run.json").read_text())
    assert oracle["counts"]["responses"] == 3 and oracle["sweep"] == str(sweep_dir)

    job_ids = sorted(p.name for p in (sweep_dir / ".submitit").iterdir() if p.is_dir() and "_" in p.name)
    assert len(job_ids) == 2, "each run was a Slurm array task"
    wait_for(lambda: job_states(job_ids[0].split("_")[0]) == ["COMPLETED", "COMPLETED"], 60)  # past COMPLETING
    verified = run_benchrun("verify", str(sweep_dir / "0_oracle"), cwd=tmp_path, module="benchrun.audit")
    assert verified.returncode == EXIT["ok"]


def test_a_slurm_job_cancelled_with_scancel_ends_as_interrupted_and_the_sweep_goes_on(tmp_path):
    """scancel sends the job SIGTERM, which submitit's job ignores: the run was killed 'running' with no result, and
    the sweep waited for it for ever (Slurm accounting off: sacct could not say it had ended)."""
    outputs = tmp_path / "outputs"
    with FakeOllama(models=["llama3.2", "gemma3"], latency_s=1.0) as server:
        sweep = subprocess.Popen(
            [sys.executable, "-m", "benchrun", "-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm", *NODE,
             f"runner.host={server.url}", "cache=false", f"outputs={outputs}"],
            cwd=tmp_path, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for(lambda: line_count(job_dir(outputs) / "responses.jsonl") >= 2, 180)
            answered = job_dir(outputs) / "responses.jsonl"
            [task] = [p.name for p in answered.parent.parent.glob(".submitit/*_1")]
            subprocess.run(["scancel", task], check=True)
            server.latency_s = 0.0
            stdout, stderr = sweep.communicate(timeout=240)
        finally:
            sweep.kill()
        info = json.loads((answered.parent / "run.json").read_text())
        resumed = run_benchrun("resume", str(answered.parent), cwd=tmp_path, module="benchrun.audit")
    assert sweep.returncode == EXIT["sweep_failed"], stderr
    sweep_dir = sweep_dir_of(stdout)
    assert "job 1_gemma3 (gemma3) interrupted: interrupted by SIGTERM\n" in stdout
    jobs = json.loads((sweep_dir / "sweep.json").read_text())["jobs"]
    assert [(job["dir"], job["status"]) for job in jobs] == [("0_llama3.2", "completed"), ("1_gemma3", "interrupted")]
    assert (info["status"], info["reason"]) == ("interrupted", "interrupted by SIGTERM")
    assert 2 <= info["counts"]["responses"] < 18
    assert resumed.returncode == EXIT["ok"], resumed.stderr
    finished = json.loads((sweep_dir / "1_gemma3" / "run.json").read_text())
    assert (finished["status"], finished["counts"]["responses"]) == ("completed", 18)


def job_states(job_id: str) -> list[str]:
    """The states of the array tasks of the Slurm job `job_id`, as scontrol shows them."""
    shown = subprocess.run(["scontrol", "show", "job", job_id], capture_output=True, text=True, check=True).stdout
    return re.findall(r"JobState=(\w+)", shown)


def job_dir(outputs: Path) -> Path:
    """The sweep's second job's directory under `outputs` (a path that is not there yet until it is made)."""
    return next(outputs.glob("*/*_sweep/1_gemma3"), outputs / "none")


def test_a_benchmark_split_into_slurm_shards_merges_into_the_unsplit_run(tmp_path):
    outputs = f"outputs={tmp_path / 'outputs'}"
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
        split = run_benchrun("shards=2", "hydra/launcher=slurm", *NODE, f"runner.host={server.url}", "cache=false",
                             outputs, cwd=tmp_path, timeout=300)
        whole = run_benchrun(f"runner.host={server.url}", "cache=false", outputs, cwd=tmp_path)
    assert split.returncode == EXIT["ok"], split.stderr
    sweep_dir = sweep_dir_of(split.stdout)
    shards = [sweep_dir / "0_shard-1-2", sweep_dir / "1_shard-2-2"]
    assert [json.loads((shard / "run.json").read_text())["shard"]["index"] for shard in shards] == [1, 2]
    into = tmp_path / "merged"
    merged = run_benchrun("merge", *map(str, shards), "--into", str(into), cwd=tmp_path, module="benchrun.audit")
    assert merged.returncode == EXIT["ok"], merged.stderr
    unsplit = run_dir_of(whole.stdout)
    assert summary_of(into) == summary_of(unsplit) == LISTBENCH_SUMMARY
    answer = ("id", "repeat", "text", "error")
    assert [tuple(r[k] for k in answer) for r in read_jsonl(into / "responses.jsonl")] == \
        [tuple(r[k] for k in answer) for r in read_jsonl(unsplit / "responses.jsonl")]
    verified = run_benchrun("verify", str(into), cwd=tmp_path, module="benchrun.audit")
    assert verified.returncode == EXIT["ok"], verified.stdout

"""A sweep through real `sbatch` on a single-node Slurm cluster (`.ci/slurm-up` starts one), against a loopback
server: the `slurm` launcher preset, with its per-node Ollama setup overridden (the server here is the fake)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from benchrun.core.errors import EXIT
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
    states = subprocess.run(["scontrol", "show", "job", job_ids[0].split("_")[0]], capture_output=True, text=True)
    assert states.returncode == 0 and states.stdout.count("JobState=COMPLETED") == 2, states.stdout
    verified = run_benchrun("verify", str(sweep_dir / "0_oracle"), cwd=tmp_path, module="benchrun.audit")
    assert verified.returncode == EXIT["ok"]


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

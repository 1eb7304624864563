"""Hostile input, twentieth pass, the lead's own cases: each with the rule it now obeys.

- a run `retry` or `merge` made in a sweep's directory (a retry's default place is beside its parent, so a retry of a
  sweep job is always there) was read as one more job by every reader of the sweep: `export SWEEP` gave the retried
  job's samples twice (its own rows and the retry's), `compare SWEEP` compared a job with its own retry, `report
  SWEEP` gave it a column, while sweep.json listed the jobs the sweep ran. Now a sweep's jobs are the runs it made
  (`archive.lookup.job_dirs`), and each run made in its directory later is passed over in one warning naming it
  (`audit.named`)
"""
from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import cli
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.answers import broken_answer, listbench_answer
from tests.helpers.commands import make_run


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


def exported_runs(cwd: Path, *refs: str) -> tuple[Counter, str]:
    """How many rows `export REFS` gives of each run id, and its stderr."""
    exported = audit(cwd, "export", *refs)
    assert exported.returncode == EXIT["ok"], exported.stderr
    return Counter(row["run_id"] for row in csv.DictReader(io.StringIO(exported.stdout))), exported.stderr


def run_id(run_dir: Path) -> str:
    return json.loads((run_dir / "run.json").read_text())["run_id"]


@pytest.mark.slow
def test_a_retry_in_a_sweeps_directory_is_no_job_of_the_sweep(tmp_path):
    sweep = make_run(tmp_path, "runner.options.temperature=0.2,0.8", "runner.backoff_s=0", responder=broken_answer,
                     multirun=True)
    jobs = [sweep / "0_temperature-0.2", sweep / "1_temperature-0.8"]
    with FakeOllama(models=["llama3.2", "gemma3"], responder=listbench_answer) as server:
        assert audit(tmp_path, "retry", str(jobs[0]), "--host", server.url).returncode == EXIT["ok"]
    retry = sweep / "0_temperature-0.2.retry1"
    rows, said = exported_runs(tmp_path, str(sweep))
    assert rows == {run_id(jobs[0]): 48, run_id(jobs[1]): 48}
    assert said == (f"benchrun: warning: {retry} is a retry of run {run_id(jobs[0])}, made in the sweep's directory "
                    f"{sweep}, and no job of the sweep: name it to read it\n")
    assert exported_runs(tmp_path, str(retry))[0] == {run_id(retry): 48}
    compared = audit(tmp_path, "compare", str(sweep), "--json")
    report = json.loads(compared.stdout)
    assert [report["baseline"]["id"], *(c["run"]["id"] for c in report["comparisons"])] == [
        run_id(job) for job in jobs]


@pytest.mark.slow
def test_a_merge_into_a_folder_of_the_shards_sweep_is_no_job_of_the_sweep(tmp_path):
    sweep = make_run(tmp_path, "shards=2", multirun=True)
    shards = sorted(sweep.glob("*_shard-*"))
    merged = sweep / "merged"
    assert audit(tmp_path, "merge", *map(str, shards), "--into", str(merged)).returncode == EXIT["ok"]
    rows, said = exported_runs(tmp_path, str(sweep))
    assert (set(rows), sum(rows.values())) == ({run_id(shard) for shard in shards}, 48)
    assert said == (f"benchrun: warning: {merged} is a merge of shard runs, made in the sweep's directory {sweep}, "
                    "and no job of the sweep: name it to read it\n")
    report = audit(tmp_path, "report", str(sweep), "--output", str(tmp_path / "r.html"))
    assert (report.returncode, report.stderr) == (EXIT["ok"], said)
    assert run_id(merged) not in (tmp_path / "r.html").read_text()

"""Hostile input, twentieth pass, the lead's own cases: each with the rule it now obeys.

- a run `retry` or `merge` made in a sweep's directory (a retry's default place is beside its parent, so a retry of a
  sweep job is always there) was read as one more job by every reader of the sweep: `export SWEEP` gave the retried
  job's samples twice (its own rows and the retry's), `compare SWEEP` compared a job with its own retry, `report
  SWEEP` gave it a column, while sweep.json listed the jobs the sweep ran. Now a sweep's jobs are the runs it made
  (`archive.lookup.job_dirs`), and each run made in its directory later is passed over in one warning naming it
  (`audit.named`)
- a killed run's config.yaml edited by hand in a key neither the manifest pins nor a limit is (`scorer_timeout_s`,
  `cache`) was taken by `resume`, which then digested it as the run's own, and `verify` of the killed run said
  nothing of it: config.yaml had no digest until the run's end. Now run.json holds its digest from the start
  (`config_digest`, written by `archive.writer.RunWriter.start`), and a run that did not end is checked against it
  (`archive.trust.config_changed`, verify's `files`); and config.yaml edited while the run ran was digested at the
  run's end as the run's own: the end now records the digest written at the start (`RunWriter._close_records`)
- runner=local bounded a format's free strings at runner.max_string_length (64) below their own minLength
  (`Field(min_length=100)`): a grammar no answer could meet. The nineteenth pass's rule for runner=openai (never
  below minLength) was written there only; it is now one function both use (`execute.runners.base.bounded_strings`)
- a dated folder of runs (`show outputs/2026-12-05`, no sweep in it) was refused as `it is a sweep's directory: name
  one of its jobs`; now `it holds runs: name one`, and a sweep's directory alone is called one
  (`archive.lookup._runs_in`)
"""
from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path

import pytest

from benchrun.archive.reader import load_run
from benchrun.archive.trust import config_changed
from benchrun.archive.writer import RunWriter, now
from benchrun.core.errors import EXIT
from benchrun.core.records import Counts, RunInfo
from benchrun.execute.runners.local import bounded_strings
from benchrun.testing.inprocess import cli
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.answers import broken_answer, listbench_answer
from tests.helpers.archives import synthetic_run
from tests.helpers.commands import make_run
from tests.helpers.killed import killed_run, write_bench


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
    again = tmp_path / "merges" / "again"  # a folder of runs that holds no sweep stands for every run in it
    assert audit(tmp_path, "merge", *map(str, shards), "--into", str(again)).returncode == EXIT["ok"]
    assert exported_runs(tmp_path, str(again.parent)) == (Counter({run_id(again): 48}), "")


@pytest.mark.slow
def test_a_killed_runs_config_yaml_edited_is_refused_by_resume_and_said_by_verify(tmp_path):
    write_bench(tmp_path / "bench")
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
        run_dir = killed_run(tmp_path, server)
        config = run_dir / "config.yaml"
        assert json.loads((run_dir / "run.json").read_text())["config_digest"]["size"] == config.stat().st_size
        edited = config.read_text().replace("scorer_timeout_s: 10.0\n", "scorer_timeout_s: 1.0\n")
        assert edited != config.read_text()
        config.write_text(edited)
        before = {path.name: path.read_bytes() for path in run_dir.iterdir() if path.is_file()}
        resumed = audit(tmp_path, "resume", str(run_dir), "--host", server.url)
    assert (resumed.returncode, resumed.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{run_dir}': config.yaml: changed since the run started: a resume asks with it and would "
        "digest it as the run's own; put it back (to ask the rest with other limits: --set runner.KEY=VALUE)\n"))
    assert {path.name: path.read_bytes() for path in run_dir.iterdir() if path.is_file()} == before
    verified = audit(tmp_path, "verify", str(run_dir))
    assert verified.returncode == EXIT["sweep_failed"]
    [config_line] = [line for line in verified.stdout.splitlines() if "config.yaml" in line]
    assert config_line.startswith("FAIL  config.yaml: changed since the run started: sha256 ")


def test_a_dated_folder_of_runs_given_to_a_command_of_one_run_is_no_sweep(tmp_path):
    synthetic_run(tmp_path / "outputs" / "2026-12-05" / "a", [1])
    synthetic_run(tmp_path / "outputs" / "2026-12-05" / "b", [0], run_id="b" * 12)
    done = audit(tmp_path, "verify", "outputs/2026-12-05")
    assert (done.returncode, done.stderr) == (EXIT["archive"], (
        "benchrun: error: in 'outputs/2026-12-05': not a run directory (no run.json); it holds runs: name one "
        "(outputs/2026-12-05/a, outputs/2026-12-05/b)\n"))


def test_a_config_yaml_edited_while_its_run_runs_is_not_digested_as_the_runs_own(tmp_path):
    info = RunInfo(run_id="f" * 12, status="running", started_at=now(), benchmark="b", model="m", manifest_id=None,
                   runner={}, environment={}, counts=Counts(samples=0))
    writer = RunWriter.create(tmp_path / "run", info)
    writer.start("task: {path: nowhere}\nscorer_timeout_s: 10.0\n")
    (tmp_path / "run" / "config.yaml").write_text("task: {path: nowhere}\nscorer_timeout_s: 1.0\n")
    writer.finish("failed", "in 'tasks.yml': bad")
    writer.release()
    assert config_changed(load_run(tmp_path / "run")) == "config.yaml: changed since the run ended"


def test_the_embedded_engines_string_bound_is_never_below_the_formats_min_length():
    schema = {"type": "object", "properties": {"code": {"type": "string", "minLength": 100}, "note": {"type": "string"}}}
    assert bounded_strings(schema, 64)["properties"] == {
        "code": {"type": "string", "minLength": 100, "maxLength": 100}, "note": {"type": "string", "maxLength": 64}}

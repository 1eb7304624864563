"""The Python API takes a path as `str` as well as `os.PathLike`: every public function that takes one, called
with a str (relative to the working directory where that is what a user would type)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import benchrun
import benchrun.audit
from benchrun.archive.lookup import expand_runs, job_dirs, run_dirs, scan_runs
from benchrun.audit.retry import retry_run
from benchrun.core.resources import demos_dir
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.answers import BROKEN, broken_answer, listbench_answer
from tests.helpers.archives import synthetic_run
from tests.helpers.commands import run_in_process

GOOD, OTHER = "a" * 12, "b" * 12


@pytest.fixture
def archive(tmp_path, monkeypatch) -> Path:
    """outputs/day/good and outputs/sweep/{0_m,1_m} under the working directory (tmp_path)."""
    monkeypatch.chdir(tmp_path)
    synthetic_run(tmp_path / "outputs" / "day" / "good", [1, 0], run_id=GOOD)
    synthetic_run(tmp_path / "outputs" / "sweep" / "0_m", [1], run_id=OTHER)
    synthetic_run(tmp_path / "outputs" / "sweep" / "1_m", [1], run_id="c" * 12)
    return tmp_path / "outputs"


def test_finding_and_loading_runs(archive):
    assert [run.id for run in benchrun.find_runs("outputs")] == [GOOD, OTHER, "c" * 12]
    assert [p for p in run_dirs("outputs")] == [Path("outputs/day/good"), Path("outputs/sweep/0_m"),
                                                 Path("outputs/sweep/1_m")]
    assert [run.id for run in scan_runs("outputs")] == [GOOD, OTHER, "c" * 12]
    assert benchrun.load_run("outputs/day/good").id == GOOD
    assert benchrun.resolve_run("outputs/day/good").id == GOOD
    assert benchrun.resolve_run("aaa", "outputs").path == Path("outputs/day/good")
    assert [run.id for run in expand_runs("outputs/sweep", "outputs")] == [OTHER, "c" * 12]
    assert job_dirs("outputs/sweep") == [Path("outputs/sweep/0_m"), Path("outputs/sweep/1_m")]


def test_audit_functions(archive, tmp_path):
    assert [entry.run.id for entry in benchrun.audit.list_runs("outputs")] == ["c" * 12, OTHER, GOOD]
    run = benchrun.load_run("outputs/day/good")
    assert benchrun.audit.verify_run(run, cwd=str(tmp_path)).intact
    assert benchrun.audit.write_report("outputs/day/good", output="report.html", root="outputs") == Path(
        "report.html")
    assert benchrun.audit.write_report(["aaa"], root="outputs") == Path("outputs/day/good/report.html")
    Path("closeness.py").write_text("def closeness(response, reference):\n    return 0.25\n")
    rescored = benchrun.audit.rescore_run(run, scorers_file="closeness.py", only=True)
    assert [(m.metric, m.new) for m in rescored.means] == [("closeness", 0.25), ("format_valid", 1.0)]


def test_bench_dir_and_compile(archive, tmp_path):
    shutil.copytree(demos_dir() / "listbench", tmp_path / "bench")
    (archive / "day" / "good" / "config.yaml").write_text("task: {path: bench}\n")
    run = benchrun.load_run("outputs/day/good")
    assert run.bench_dir(str(tmp_path)) == tmp_path / "bench"
    config = {"task": {"path": "bench", "name": "bench"}, "runner": {"type": "ollama", "model": "m"}}
    assert len(benchrun.compile(config, cwd=str(tmp_path)).samples) == 18


def test_retry_into_a_str_directory(tmp_path):
    parent = benchrun.load_run(run_in_process(tmp_path, "broken", *BROKEN, responder=broken_answer))
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
        info, path = retry_run(parent, host=server.url, into=str(tmp_path / "retry"))
    assert (path, info.parent.run_id, info.parent.asked) == (tmp_path / "retry", parent.id, 1)

"""Hostile input, thirtieth pass, the archive and audit side (what the twenty-ninth left, then a fresh pass): the cases
it found bad, each with the rule it now obeys.

- a run (runner.structured=auto) whose server answered the preflight's probe as `qwen2.5-7b` and every sample as
  `qwen2.5-14b`: run.json's `answers_as` names a model no answer of the run came from, and verify said intact; the
  names its answers gave are kept in verify's one pass, and run.json's contradicting all is said
  (`audit.summarycheck.RunPass`, `audit.verify.belonging`)
- `compare RUN RUN` (or the run by path and by id, or by another spelling of its path): it printed a table of zeros
  (delta +0.000, p 1, speed 1.00x); a run is named once, in one line naming it (`audit.compare._named_once`)
- `retry RUN --into RUN/new/..`: refused as the run's own folder only once `new/` was made in the sealed run (left
  there, where the refusal said `nothing was changed`); `retry RUN --into deep/new/../..` (the folder holding the
  run, as `--into .` is refused) made the retry's run around the parent's. A `..` after a folder not made yet names
  none until it is: the folder is judged as it is once made (`archive.claims.made_as`, in `refusal`, for every new
  run's directory: hydra.run.dir, retry's and merge's --into)
- `show RUN --wrong contains` of a run whose every `symbol` sample failed (HTTP 400): `no metric 'contains' in run
  ... (metrics: add_justify, calculated_answer, format_valid)`, where show's own table and summary.json have a line
  of it; a metric of the run's summary is known, and no value of it is below 1 (`audit.show.wrong_samples`)
- `report RUN --output RUN/rescores/001/report.html` (or `RUN/new/../seal.json`): refused, `nothing was written`,
  but the folders were made first: `rescores/001/` in the sealed run, which verify then said an unfinished rescore
  (`it was stopped`) and the next rescore numbered 002; and `RUN/rescores/001/sub/report.html` or
  `RUN/.hydra/x/report.html` were written, a file two folders into the run's own. A file named to write is refused
  before anything is made for it (`audit.report.write_report`), and one at any depth in a run's own folder is the
  run's (`archive.claims._own_folder`, in `archive_file`)
"""
from __future__ import annotations

import json

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.answers import broken_answer, listbench_answer
from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.commands import run_in_process
from tests.helpers.p29_archive import failed
from tests.helpers.p30_archive import switched_run, symbol_refused

# -- what the twenty-ninth pass left -----------------------------------------------------------------------------------


def test_answers_as_that_no_answer_of_the_run_gives_is_said_by_verify(tmp_path):
    run_dir = switched_run(tmp_path, "qwen2.5-7b", "qwen2.5-14b")
    identity = json.loads((run_dir / "run.json").read_text())["identity"]
    models = {json.loads(line)["extra"]["model"] for line in (run_dir / "responses.jsonl").read_text().splitlines()}
    assert (identity["answers_as"], models) == ("qwen2.5-7b", {"qwen2.5-14b"})
    assert failed(tmp_path, run_dir) == [
        "FAIL  run.json: answers_as is 'qwen2.5-7b', but every answer of the run names its model 'qwen2.5-14b': the "
        "model that answered is not the one run.json names"]


def test_answers_as_that_the_answers_give_is_intact(tmp_path):
    run_dir = switched_run(tmp_path, "qwen2.5-7b", "qwen2.5-7b")
    done = audit(tmp_path, "verify", str(run_dir))
    assert (done.returncode, done.stderr, done.stdout.splitlines()[-1]) == (0, "", "intact")


@pytest.mark.parametrize("again", ["outputs/r1", "555555", "outputs/../outputs/r1/"])
def test_a_run_compared_with_itself_is_refused_in_one_line(tmp_path, again):
    synthetic_run(tmp_path / "outputs" / "r1", [0.5, 1.0])
    synthetic_run(tmp_path / "outputs" / "r2", [0.5, 0.0], run_id="6" * 12)
    done = audit(tmp_path, "compare", "outputs/r2", "outputs/r1", again, "--root", "outputs")
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: run 555555555555 ({tmp_path / 'outputs' / 'r1'}) is named twice: a run compared with "
        "itself differs in nothing; name each run once\n"))


# -- a fresh pass ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("into", ["outputs/p/new/..", "outputs/p/new/../../p"])
def test_a_retry_into_the_run_by_a_dotdot_after_a_new_folder_is_refused_and_leaves_nothing(tmp_path, into):
    parent = run_in_process(tmp_path, "p", "runner.retries=0", "runner.backoff_s=0", responder=broken_answer)
    before = sorted(path.name for path in parent.iterdir())
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
        done = audit(tmp_path, "retry", str(parent), "--host", server.url, "--into", into)
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        f"benchrun: error: {parent} already holds run {json.loads((parent / 'run.json').read_text())['run_id']} "
        "(completed_with_errors); nothing was changed; "
        "pick a new directory (--into DIR)\n"))
    assert sorted(path.name for path in parent.iterdir()) == before


def test_a_retry_into_a_folder_around_runs_by_a_dotdot_after_a_new_folder_is_refused(tmp_path):
    parent = run_in_process(tmp_path, "p", "runner.retries=0", "runner.backoff_s=0", responder=broken_answer)
    (tmp_path / "deep").mkdir()
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
        done = audit(tmp_path, "retry", str(parent), "--host", server.url, "--into", "deep/new/../..")
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        f"benchrun: error: {tmp_path} holds the run directory {parent}: a run is never made around another run's "
        "files; nothing was changed; pick a new directory (--into DIR)\n"))
    assert (sorted(path.name for path in tmp_path.iterdir()), list((tmp_path / "deep").iterdir())) == (
        ["deep", "outputs"], [])


def test_wrong_of_a_metric_whose_every_sample_failed_is_no_unknown_metric(tmp_path):
    run_dir = run_in_process(tmp_path, "r", "runner.retries=0", "runner.max_consecutive_failures=100",
                             responder=symbol_refused)
    summary = json.loads((run_dir / "summary.json").read_text())["metrics"]
    done = audit(tmp_path, "show", str(run_dir), "--wrong", "contains", "--json")
    assert [(m["task"], m["metric"], m["n"], m["errors"]) for m in summary if m["task"] == "symbol"] == [
        ("symbol", "contains", 0, 3), ("symbol", "format_valid", 0, 3)]
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert json.loads(done.stdout)["samples"] == []


@pytest.mark.parametrize(("output", "what"), [
    ("rescores/001/report.html", "a file of rescore 001 of the run"),
    ("rescores/001/sub/report.html", "a file in the rescores of the run"),
    (".hydra/x/report.html", "a file in the .hydra of the run"),
    ("new/../seal.json", "the seal.json of the run")])
def test_a_report_into_a_runs_own_folders_is_refused_before_any_folder_is_made(tmp_path, output, what):
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0])
    before = sorted(path.name for path in run_dir.iterdir())
    done = audit(tmp_path, "report", str(run_dir), "--output", str(run_dir / output))
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in '{run_dir / output}': --output: {what} in {run_dir}, which only benchrun writes; nothing "
        "was written; name another file\n"))
    assert sorted(path.name for path in run_dir.iterdir()) == before

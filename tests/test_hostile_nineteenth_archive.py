"""Hostile input, nineteenth pass, the archive and audit side (issue 19's fresh pass of the same kinds): the cases it
found bad, each with the rule it now obeys.

- `retry` of a run answered by two models (a resume onto a model pulled again, `--force`), or `retry --force` onto a
  model pulled again since its parent: the retry carried the parent's answers over and its run.json named only the
  model it asked, so `show` said nothing of the other, `compare` neither, and `merge` would take such a shard as one
  model's. Now the retry's history entry lists the parent's sessions that asked what it carried (`carried_by`,
  `archive.sessions.carried_by`), and every reader says `answers from 2 models: ...` of it
- a run.json of a run that did not end (no seal covers it) whose history holds a resume's entry of the wrong shape
  (an `identity` that is no mapping, `answers` or `kept` that are no counts): `show` and `compare` an AttributeError
  or TypeError traceback. Now run.json is unreadable in one line where it is read (`core.recordvalues.History`), and
  a resume records an unknown count (null) where it wrote a negative one (`archive.sessions.ended`), and a session's
  count below zero is shown unknown (`?`), not `-97 by` (`archive.sessions.sessions`)
- `report` of a run answered by two models named the latest model digest only (show says which answered how many),
  and counted a retry's history entry as a session it was asked in. Now a provenance row `answered by` (and `graded
  by`) says so, and `sessions` counts the first and each resume (`audit.report_page`, `archive.sessions`)
- `list` gave a run answered by two models as the latest one's (`llama3.2 @cdcdcdcdcdcd`). Now a line for each
  model, and `answered_by` in --json (`audit.listing._model`)
- `retry` of a sweep job wrote no label, `varied` or sweep into its run.json: `export SWEEP` gave its rows an empty
  column for the setting the sweep varied, `compare SWEEP` the model's name as its label. Now the job's
  (`audit.retry._claim`)
- `retry` of a merged run marked every carried answer `carried_from` the merged run, which asked none of them. Now
  the shard run that asked it (`audit.retry._carry`)
- `report` of a shard run gave its metrics as a whole benchmark's, nothing saying they were of half its samples; of a
  retry and a merged run, nothing of where their answers came from. Now the provenance says `shard`, `retry of`,
  `merge of` as `show` does (`audit.heading.parts`, used by `audit.report_page`)
- a rescore with --rejudge whose rescore.json no longer digested the judge calls it asked (judgements.jsonl): verify
  said intact while they were edited. Now `holds no digest of judgements.jsonl` (`audit.rescorecheck.check_rescore`)
- `verify` of a run whose benchmark source file became a pipe or a folder: one line about that file, exit 2, no
  verdict. Now a failed `sources` finding naming it, with every other finding (`audit.verify.check_sources`)
- a run read while its live writer is between two writes (its final run.json and then its seal; a resume's run.json
  `running` and then the old seal removed): every reader refused it as changed since it was sealed (exit 4), verify
  called run.json edited. Now read as a run being written (`archive.trust._seal`, `audit.verify.check_seal`)

What held is in the pass's note.
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
from collections import Counter
from html import unescape
from pathlib import Path

import pytest

from benchrun.archive.dirlock import DirLock
from benchrun.archive.reader import load_run
from benchrun.archive.sessions import ended
from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import cli
from benchrun.testing.ollama_server import FakeOllama, fake_digest
from tests.helpers.answers import broken_answer, listbench_answer
from tests.helpers.archives import synthetic_run
from tests.helpers.benchfiles import task, tasks_yml, write_bench
from tests.helpers.commands import make_run, run_dir_of, run_in_process
from tests.helpers.faults import DiesAfter
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, answer


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


def answered_by(cwd: Path, run_dir: Path) -> list[str]:
    """`show`'s `answered by` line of a run (none when one model answered it)."""
    shown = audit(cwd, "show", str(run_dir))
    assert shown.returncode == EXIT["ok"], shown.stderr
    return [" ".join(line.split()) for line in shown.stdout.splitlines() if line.startswith("answered by")]


# -- who answered a retry's answers -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def two_models(tmp_path_factory) -> tuple[Path, Path, Path]:
    """A parent answered by two models (8 answers, the server died; resumed with --force onto the model pulled
    again, one of its requests failing), and its retry on the second model: (cwd, parent, retry)."""
    root = tmp_path_factory.mktemp("two_models")
    parent = root / "outputs" / "parent"
    dying = DiesAfter(8)
    with FakeOllama(models=["llama3.2"], responder=dying) as server:
        dying.server = server
        died = cli(f"runner.host={server.url}", "cache=false", "runner.backoff_s=0", f"hydra.run.dir={parent}",
                   cwd=root)
    assert died.returncode == EXIT["runner"], died.stderr
    with FakeOllama(models=["llama3.2"], responder=broken_answer, digests={"llama3.2": PULLED}) as server:
        resumed = audit(root, "resume", str(parent), "--force", "--host", server.url)
    assert resumed.returncode == EXIT["ok"], resumed.stderr
    with FakeOllama(models=["llama3.2"], responder=listbench_answer, digests={"llama3.2": PULLED}) as server:
        retried = audit(root, "retry", str(parent), "--host", server.url)
    assert (retried.returncode, retried.stdout.splitlines()[-1]) == (
        EXIT["ok"], f"retry of run {json.loads((parent / 'run.json').read_text())['run_id']}: 17 answers carried "
                    "over, 1 sample asked again")
    return root, parent, root / "outputs" / "parent.retry1"


PULLED = "cd" * 32
"""The digest of the model pulled again."""
MIXED = f"answers from 2 models: 8 by {fake_digest('llama3.2')[:12]}, 10 by cdcdcdcdcdcd"
"""What show says of the parent, and of its retry, answered by the two models alike."""


@pytest.mark.slow
def test_a_retry_says_which_models_asked_the_answers_it_carried_over(two_models):
    """The retry's run.json named the second model only: show said nothing of the first, nor compare; merge took it
    as one model's."""
    root, parent, retry = two_models
    assert answered_by(root, parent) == [f"answered by {MIXED}"]
    [note] = json.loads((retry / "run.json").read_text())["history"]
    assert [(s["identity"]["digest"], s["answers"]) for s in note["carried_by"]] == [
        (fake_digest("llama3.2"), 8), (PULLED, 9)]
    assert answered_by(root, retry) == [f"answered by {MIXED}"]
    assert audit(root, "verify", str(retry)).stdout.splitlines()[-1] == "intact"


@pytest.mark.slow
def test_list_names_every_model_that_answered_a_run(two_models):
    """`list` gave a run answered by two models as the latest one's (`llama3.2 @cdcdcdcdcdcd`), --json its digest
    alone."""
    root, parent, retry = two_models
    listed = audit(root, "list", str(root / "outputs"), "--json")
    assert listed.returncode == EXIT["ok"], listed.stderr
    assert {Path(row["path"]).name: (row["digest"], row["answered_by"]) for row in json.loads(listed.stdout)} == {
        "parent": (PULLED, MIXED), "parent.retry1": (PULLED, MIXED)}
    table = [line.split("│")[5].strip() for line in audit(root, "list", str(root / "outputs")).stdout.splitlines()
             if line.count("│") > 5 and line.split("│")[5].strip()]
    assert table == [f"llama3.2 @{fake_digest('llama3.2')[:12]}", "@cdcdcdcdcdcd"] * 2


def provenance_row(page: str, name: str) -> list[str] | None:
    """The cells of the report's provenance row `name`, one per run (None when the report has no such row)."""
    row = re.search(f"<tr><td>{name}</td>(.*?)</tr>", page)
    return None if row is None else [unescape(cell) for cell in re.findall("<td><pre>(.*?)</pre></td>", row[1])]


@pytest.mark.slow
def test_a_report_says_which_models_answered_a_run_and_counts_its_sessions(two_models):
    """The report named one model digest for a run answered by two, the latest, and counted a retry's history entry
    as a session it was asked in."""
    root, parent, retry = two_models
    done = audit(root, "report", str(parent), str(retry), "--output", str(root / "report.html"))
    assert done.returncode == EXIT["ok"], done.stderr
    page = (root / "report.html").read_text()
    assert provenance_row(page, "answered by") == [MIXED, MIXED]
    assert provenance_row(page, "model digest") == [PULLED, PULLED]
    assert provenance_row(page, "sessions") == ["2", "1"]
    assert provenance_row(page, "graded by") is None


@pytest.fixture(scope="module")
def merged(tmp_path_factory) -> tuple[Path, list[Path], Path, Path]:
    """Two shard runs (each with a failed request), merged, and the merged run retried: (cwd, shards, merged, retry)."""
    root = tmp_path_factory.mktemp("merged")
    shards = [run_in_process(root, f"part{i}", f"shard={i}/2", "runner.backoff_s=0", responder=broken_answer)
              for i in (1, 2)]
    into = root / "merged"
    assert audit(root, "merge", *map(str, shards), "--into", str(into)).returncode == EXIT["ok"]
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
        retried = audit(root, "retry", str(into), "--host", server.url)
    assert retried.returncode == EXIT["ok"], retried.stderr
    return root, shards, into, root / "merged.retry1"


@pytest.mark.slow
def test_a_retry_of_a_merged_run_names_the_shard_run_that_asked_each_answer(merged):
    """Carried answers were marked `carried_from` the merged run, which asked none of them (its shards did): with it
    deleted, nothing told which run asked them."""
    _, shards, _, retry = merged
    ids = [json.loads((shard / "run.json").read_text())["run_id"] for shard in shards]
    lines = [json.loads(line) for line in (retry / "responses.jsonl").read_text().splitlines()]
    assert Counter((line.get("carried_from"), line.get("shard")) for line in lines) == {
        (ids[0], "1/2"): 8, (ids[1], "2/2"): 8, (None, None): 2}


@pytest.mark.slow
def test_a_report_says_a_run_is_a_shard_a_merge_or_a_retry(merged):
    """The report of a shard run gave its metrics as a benchmark's, nothing saying they were of half its samples; of
    a retry, nothing of the answers it carried over; of a merged run, nothing of its shards (show says each)."""
    root, shards, into, retry = merged
    done = audit(root, "report", str(shards[0]), str(into), str(retry), "--output", str(root / "report.html"))
    assert done.returncode == EXIT["ok"], done.stderr
    page = (root / "report.html").read_text()
    ids = [json.loads((run / "run.json").read_text())["run_id"] for run in (*shards, into)]
    assert provenance_row(page, "shard") == ["1/2 (samples at manifest positions 0 mod 2)", "-", "-"]
    assert provenance_row(page, "merge of") == [
        "-", f"1/2 {ids[0]} {shards[0]}  2/2 {ids[1]} {shards[1]}", "-"]
    assert provenance_row(page, "retry of") == [
        "-", "-", f"{ids[2]}  {into}  (16 answers carried over, 2 samples asked again)"]


@pytest.mark.slow
def test_a_retry_of_a_sweep_job_keeps_the_settings_the_job_varied(tmp_path):
    """A sweep over temperatures, its first job retried (beside it, in the sweep): the retry's run.json had no label,
    `varied` or sweep, so its export gave its rows an empty temperature column and the model's name as label
    (`compare` too), though it asked at the job's temperature. (A sweep's readers pass it over since the twentieth
    pass: it is no job of the sweep.)"""
    sweep = make_run(tmp_path, "runner.options.temperature=0.2,0.8", "runner.backoff_s=0", responder=broken_answer,
                     multirun=True)
    job = sweep / "0_temperature-0.2"
    with FakeOllama(models=["llama3.2", "gemma3"], responder=listbench_answer) as server:
        assert audit(tmp_path, "retry", str(job), "--host", server.url).returncode == EXIT["ok"]
    retry = json.loads((sweep / "0_temperature-0.2.retry1" / "run.json").read_text())
    assert (retry["label"], retry["varied"], retry["sweep"]) == (
        "temperature=0.2", {"runner.options.temperature": 0.2}, str(sweep))
    exported = audit(tmp_path, "export", str(sweep / "0_temperature-0.2.retry1"))
    rows = Counter((row["run_id"], row["label"], row["runner.options.temperature"])
                   for row in csv.DictReader(io.StringIO(exported.stdout)))
    assert rows[retry["run_id"], "temperature=0.2", "0.2"] == 48


# -- a rescore's claims --------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_rejudged_rescore_that_digests_no_judge_calls_is_not_intact(tmp_path):
    """A rescore with --rejudge writes the judge calls it asked (judgements.jsonl) and digests them in rescore.json:
    with that digest taken out, the calls were edited at will and verify said intact."""
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=answer) as server:
        ran = cli(f"runner.host={server.url}", "task.path=bench", "judge.model=qwen2.5", "cache=false",
                  f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
        run_dir = run_dir_of(ran.stdout)
        rejudged = audit(tmp_path, "rescore", str(run_dir), "--rejudge", f"judge.host={server.url}")
    assert rejudged.returncode == EXIT["ok"], rejudged.stderr
    claims = run_dir / "rescores" / "001" / "rescore.json"
    info = json.loads(claims.read_text())
    del info["files"]["judgements.jsonl"]
    claims.write_text(json.dumps(info))
    verified = audit(tmp_path, "verify", str(run_dir))
    assert verified.returncode == EXIT["not_intact"]
    assert [line for line in verified.stdout.splitlines() if line.startswith("FAIL")] == [
        "FAIL  rescores/001/rescore.json: holds no digest of judgements.jsonl, which a rescore with --rejudge writes: "
        "nothing covers the grades it asked"]


# -- a run read between its writer's two writes ---------------------------------------------------------------------

def held(run_dir: Path) -> DirLock:
    """run.lock held as the run's writer holds it (this process, as a writer between two of its writes)."""
    return DirLock(run_dir).acquire()


def test_a_run_read_as_its_writer_seals_it_is_read_not_refused(tmp_path):
    """A writer ends a run with two writes: the final run.json, then its seal. A reader between them (a script polling
    `show` until the run ends) was told `seal.json: missing: the run ended (completed) but nothing covers run.json,
    so what it says cannot be trusted`, exit 4: a tamper alarm, of a run being sealed."""
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0])
    (run_dir / "seal.json").unlink()
    lock = held(run_dir)
    try:
        shown = audit(tmp_path, "show", str(run_dir), "--json")
        verified = audit(tmp_path, "verify", str(run_dir))
    finally:
        lock.release(ended=True)
    assert (shown.returncode, shown.stderr) == (EXIT["ok"], "")
    assert [(m["metric"], m["mean"]) for m in json.loads(shown.stdout)["metrics"]] == [
        ("closeness", 0.5), ("format_valid", 1.0)]
    assert verified.returncode == EXIT["not_intact"]
    assert [line.split(" (pid")[0] for line in verified.stdout.splitlines() if line.startswith("FAIL")] == [
        "FAIL  seal.json: missing: the run ended (completed) but nothing covers run.json: its writer is sealing it now"]


def test_a_run_read_as_a_resume_reopens_it_is_read_not_refused(tmp_path):
    """A resume reopens an interrupted run with two writes: run.json `running`, then the ended session's seal removed.
    A reader between them was told `run.json: changed since the run was sealed` (show, exit 4; verify FAIL): a tamper
    alarm, of a run being resumed."""
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0], status="interrupted", reason="stopped")
    info = json.loads((run_dir / "run.json").read_text())
    info.update(status="running", reason=None, ended_at=None, files={},
                history=[{"resumed_at": info["ended_at"], "previous_status": "interrupted"}])
    lock = held(run_dir)
    try:
        (run_dir / "run.json").write_text(json.dumps(info))
        shown = audit(tmp_path, "show", str(run_dir), "--json")
        verified = audit(tmp_path, "verify", str(run_dir))
    finally:
        lock.release(ended=True)
    assert (shown.returncode, shown.stderr) == (EXIT["ok"], "")
    assert json.loads(shown.stdout)["run"]["status"] == "running"
    assert verified.returncode == EXIT["not_intact"]
    assert [line.split(" (pid")[0] for line in verified.stdout.splitlines() if line.startswith("FAIL")] == [
        "FAIL  run.json: not sealed yet: the run is being written"]


def test_a_finished_run_json_its_seal_does_not_cover_is_refused_whoever_holds_the_lock(tmp_path):
    """The other side of the two tests above: a run.json that says the run ended, edited under its seal, is refused
    while a writer holds run.lock (a rescore does, for as long as it scores)."""
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0])
    info = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**info, "model": "n"}))
    lock = held(run_dir)
    try:
        shown = audit(tmp_path, "show", str(run_dir))
    finally:
        lock.release()
    assert (shown.returncode, shown.stderr) == (
        EXIT["archive"], f"benchrun: error: in '{run_dir}': run 555555555555: run.json: changed since the run was "
                         f"sealed, so what it says cannot be trusted; benchrun-audit verify {run_dir} says what "
                         "changed\n")


# -- verify and the benchmark's sources --------------------------------------------------------------------------

@pytest.mark.parametrize("planted", ["fifo", "folder"])
def test_verify_of_a_run_whose_benchmark_file_is_no_longer_a_file_says_so_with_its_verdict(tmp_path, planted):
    """A source file of the run's benchmark replaced by a named pipe or a folder since: verify ended in one line
    about that file, exit 2, and said nothing of the run's own files."""
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task(template="name {a}", values={"a": ["@", "$"]},
                                                       reference=["at", "dollar"], scorer="contains"))})
    run_dir = run_in_process(tmp_path, "run", "task.path=bench")
    source = tmp_path / "bench" / "tasks.yml"
    source.unlink()
    os.mkfifo(source) if planted == "fifo" else source.mkdir()
    verified = audit(tmp_path, "verify", str(run_dir))
    what = "a named pipe (FIFO)" if planted == "fifo" else "a directory"
    assert (verified.returncode, verified.stderr) == (EXIT["not_intact"], "")
    assert verified.stdout.splitlines()[-2:] == [
        f"FAIL  sources: in 'tasks.yml': {what}, where a file belongs: benchrun reads only regular files (in "
        f"{tmp_path / 'bench'}): not what the run read", "NOT intact: 1 problem"]
    assert verified.stdout.splitlines()[1].startswith("ok    run.json: matches its seal")


# -- run.json's history as readers read it ------------------------------------------------------------------------

OTHER = {"digest": "ab" * 32}
"""The identity of a model that answered an earlier session (not the run's own, `m` without a digest)."""


@pytest.mark.parametrize(("entry", "said"), [
    ({"identity": 5, "answers": 1, "kept": 1}, "0.identity: not a mapping"),
    ({"identity": OTHER, "answers": "1", "kept": 1}, '0.answers: not a count (a whole number from 0): "1"'),
    ({"identity": OTHER, "answers": 1, "kept": "1"}, '0.kept: not a count (a whole number from 0): "1"'),
    ({"identity": OTHER, "answers": 1, "kept": -1}, "0.kept: not a count (a whole number from 0): -1"),
    ({"identity": OTHER, "judge_identity": [], "answers": 1, "kept": 1}, "0.judge_identity: not a mapping"),
])
def test_a_history_entry_of_no_shape_a_run_writes_is_one_line(tmp_path, entry, said):
    """A run that did not end (its run.json under no seal) whose history was edited: show and compare tracebacks."""
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0], finish=False)
    info = json.loads((run_dir / "run.json").read_text())
    info["history"] = [{"resumed_at": info["started_at"], **entry}]
    (run_dir / "run.json").write_text(json.dumps(info))
    line = f"benchrun: error: in '{run_dir / 'run.json'}': unreadable: history: {said}\n"
    for command in ("show", "compare"):
        done = audit(tmp_path, command, str(run_dir), *([str(run_dir)] if command == "compare" else []))
        assert (done.returncode, done.stderr) == (EXIT["archive"], line)


def test_a_resume_never_records_a_negative_count_of_answers(tmp_path):
    """A resume records the answers of the session that ended as the digested lines less those the previous resume
    kept; a records.sha256 cut short (a forced resume then drops what it lost) gave a negative count, which run.json's
    history may not hold (it would be unreadable): the count is unknown (null) instead."""
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0], finish=False)
    info = json.loads((run_dir / "run.json").read_text())
    info["history"] = [{"resumed_at": info["started_at"], "identity": {}, "answers": 5, "kept": 5}]
    (run_dir / "run.json").write_text(json.dumps(info))
    entry = ended(load_run(run_dir).info, written=2, kept=2)
    assert (entry["answers"], entry["kept"]) == (None, 2)


def test_a_history_keeping_more_answers_than_the_run_holds_counts_none_below_zero(tmp_path):
    """A resume entry (or a retry's carried sessions) counting more answers than the run's responses (run.json of a
    run that did not end, edited): `show` said `-97 by` of its latest session. Now that count is unknown, `?`."""
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0], finish=False)
    info = json.loads((run_dir / "run.json").read_text())
    info["history"] = [{"resumed_at": info["started_at"], "identity": OTHER, "answers": 99, "kept": 99}]
    (run_dir / "run.json").write_text(json.dumps(info))
    assert answered_by(tmp_path, run_dir) == [
        "answered by answers from 2 models: 99 by abababababab, ? by a model without a digest"]


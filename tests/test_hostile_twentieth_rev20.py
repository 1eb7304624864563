"""Hostile input, twentieth pass, against this session's own merged code: each case with the rule it now obeys.

- `retry lnk/..` (lnk a symbolic link into the run's `rescores/`) made its retry beside the WORKING directory, named
  after it, and `merge ... --into lnk/../merged` made the merged run in the working directory: the `.` fix took such
  paths absolute by spelling (`os.path.abspath` collapses `lnk/..` to `.`), where the file system resolves `..` after
  the link. Now a path whose last part names no folder (`.`, `..`) is resolved as the file system resolves it, and any
  other is left to it (`archive.lookup.named_folder`, used by `audit.retry._beside` and `audit.merge._write`)
- a merge of a shard retried (or resumed) with `--set runner.KEY=...` said `shards asked with 2/2 timeout_s=7.0` for
  all of the shard's answers, though most were carried from (or asked before) with the shard's first limits: the
  shard's history, kept in `merged.shards[]` this session, holds what was set, and show and the report said nothing
  of it (`limits set` read the merged run's own history only). Now `shards' limits set  2/2 runner.timeout_s=7 by the
  retry` (`archive.sessions.limits_set` of a history, `audit.heading.parts`)
- a merge of a shard killed in a sweep and recorded `interrupted` by the sweep's end (no final digests, no seal) said
  it `does not verify: seal.json: missing`, as of a run tampered with: only `running` had this session's advice. Now
  any shard its writer never ended is said not finished, with the resume that finishes it (`audit.merge._shard_of`);
  and `verify` of such a job said it did not finish with no way forward: now with the resume (verify's `files`)
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchrun.archive.sweep import settle_dead_jobs
from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import cli
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.answers import BROKEN, broken_answer, listbench_answer
from tests.helpers.archives import left_by_dead_writer
from tests.helpers.commands import run_in_process


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


def shown_lines(cwd: Path, run_dir: Path) -> list[str]:
    """`show RUN`'s lines, spaces squeezed."""
    shown = audit(cwd, "show", str(run_dir))
    assert shown.returncode == EXIT["ok"], shown.stderr
    return [" ".join(line.split()) for line in shown.stdout.splitlines()]


def run_id(run_dir: Path) -> str:
    return json.loads((run_dir / "run.json").read_text())["run_id"]


# -- a path ending in `..` after a symbolic link -----------------------------------------------------------------------

@pytest.mark.slow
def test_a_retry_named_through_a_link_and_dotdot_is_made_beside_the_run(tmp_path):
    """`retry lnk/..`, lnk leading into the run's rescores/: the retry was `<working directory>.retry1`, beside it."""
    parent = run_in_process(tmp_path, "parent", *BROKEN, responder=broken_answer)
    assert audit(tmp_path, "rescore", str(parent)).returncode == EXIT["ok"]
    work = tmp_path / "work"
    work.mkdir()
    (work / "lnk").symlink_to(parent / "rescores")
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
        retried = audit(work, "retry", "lnk/..", "--host", server.url)
    assert (retried.returncode, retried.stderr) == (EXIT["ok"], "")
    assert f"run directory: {parent}.retry1" in retried.stdout.splitlines()
    assert json.loads((parent.parent / "parent.retry1" / "run.json").read_text())["parent"]["run_id"] == run_id(parent)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outputs", "work"]


@pytest.mark.slow
def test_a_merge_into_a_path_through_a_link_and_dotdot_is_made_where_the_file_system_puts_it(tmp_path):
    """`merge S1 S2 --into lnk/../merged`, lnk leading to far/x: made in the working directory, not in far/."""
    shards = [run_in_process(tmp_path, f"s{i}", f"shard={i}/2") for i in (1, 2)]
    (tmp_path / "far" / "x").mkdir(parents=True)
    (tmp_path / "lnk").symlink_to(tmp_path / "far" / "x")
    merged = audit(tmp_path, "merge", *map(str, shards), "--into", "lnk/../merged")
    assert (merged.returncode, merged.stderr) == (EXIT["ok"], "")
    assert json.loads((tmp_path / "far" / "merged" / "run.json").read_text())["counts"]["responses"] == 18
    assert not (tmp_path / "merged").exists()


# -- a merge of a shard whose own retry set other limits ---------------------------------------------------------------

@pytest.mark.slow
def test_a_merge_of_a_shard_retried_with_other_limits_says_what_the_retry_set(tmp_path):
    """Shard 2/2 retried with `--set runner.timeout_s=7` (8 answers carried, asked with 120 s), then merged: `shards
    asked with 2/2 timeout_s=7.0` alone, nothing said of the 8 answers asked with 120 s."""
    shards = [run_in_process(tmp_path, f"s{i}", "runner.retries=0", "runner.backoff_s=0", f"shard={i}/2",
                             responder=broken_answer) for i in (1, 2)]
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
        retried = audit(tmp_path, "retry", str(shards[1]), "--host", server.url, "--set", "runner.timeout_s=7")
    assert retried.returncode == EXIT["ok"], retried.stderr
    merged = audit(tmp_path, "merge", str(shards[0]), f"{shards[1]}.retry1", "--into", str(tmp_path / "m"))
    assert merged.returncode == EXIT["ok"], merged.stderr
    said = [line for line in shown_lines(tmp_path, tmp_path / "m") if "limits set" in line]
    assert said == ["shards' limits set 2/2 runner.timeout_s=7 by the retry"]


# -- a merge of a shard killed in a sweep, which the sweep's end said `interrupted` -----------------------------------

def killed_and_settled(run_dir: Path) -> dict:
    """`run_dir` as a job killed (SIGKILL: run.json `running`, no seal, its dead writer's note in run.lock) leaves it
    once its sweep's end has recorded it `interrupted` (settle_dead_jobs); its run.json as it ended."""
    info = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**info, "status": "running", "ended_at": None, "files": {}}))
    (run_dir / "seal.json").unlink()
    left_by_dead_writer(run_dir)
    assert settle_dead_jobs(run_dir.parent, "the sweep was stopped") == [run_dir]
    return info


@pytest.mark.slow
def test_a_merge_of_a_killed_shard_its_sweep_said_interrupted_says_to_resume_it(tmp_path):
    """A shard job killed (SIGKILL, the out-of-memory killer) that its sweep's end recorded `interrupted`
    (settle_dead_jobs: no final digests, no seal): `does not verify: seal.json: missing: the run ended (interrupted)
    but nothing covers run.json`, as if its files were tampered with, where retry says to resume it."""
    shards = [run_in_process(tmp_path, f"s{i}", f"shard={i}/2") for i in (1, 2)]
    info = killed_and_settled(shards[1])
    merged = audit(tmp_path, "merge", *map(str, shards), "--into", str(tmp_path / "merged"))
    assert (merged.returncode, merged.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{shards[1]}': run {info['run_id']} (shard 2/2) is interrupted: it has not finished; "
        f"finish it with benchrun-audit resume {shards[1]}\n"))
    assert not (tmp_path / "merged").exists()


@pytest.mark.slow
def test_verify_of_a_killed_job_its_sweep_said_interrupted_says_to_resume_it(tmp_path):
    """The same job's verify: `seal.json: missing: the run ended (interrupted) but nothing covers run.json` and `the
    run did not finish (status interrupted): no final digests`, with no way forward (a job killed saying `running`
    is told to resume)."""
    run_dir = run_in_process(tmp_path, "job")
    killed_and_settled(run_dir)
    verified = audit(tmp_path, "verify", str(run_dir))
    assert verified.returncode == EXIT["sweep_failed"]
    assert [line for line in verified.stdout.splitlines() if line.startswith("FAIL")] == [
        "FAIL  seal.json: missing: the run ended (interrupted) but nothing covers run.json",
        "FAIL  run.json: the run did not finish (status interrupted): no final digests; record lines checked against "
        f"records.sha256 only; finish it with: benchrun-audit resume {run_dir}"]

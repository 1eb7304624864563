"""The twenty-second hostile pass, judges end to end after the pass's two changes to a failed judge request (gradings
held while a run of judge failures is undecided; retry judging again a carried answer whose judge request failed),
tried together.

Found and fixed:
- a retry judging again carried answers whose judge requests had failed, the judge still broken: the retry failed
  fast as it should, but graded those answers one at a time outside `Held`, so the answers of the run of failures
  before the limit were recorded with the broken judge's `HTTP 500` as their grade; the mended `resume` of the retry
  graded the rest and sealed it `completed_with_errors`, those grades lost. Now a retry's (and a resume's) grading
  again goes through the executor's `Held`: none of a broken judge's run of failures recorded
- the answers a retry (or resume) graded again and the samples it then asked were two runs of judge failures to
  `Held` but one to the judge's count: the grading again released its held failures as the answers' own when it
  ended, and the asked samples' failures went on counting to the limit, so the retry failed fast with the first
  ones recorded. Now the executor grades the answers recorded already first, then asks, one `Held` for both
  (`execute.executor.Executor.run(queries, regrade)`; a retry's parent's calls read again and written: `Judge(...,
  carried)`)
- a run its judge failed fast (its answers recorded, their gradings held, so not graded) with a failed sample: its
  `retry` carried those answers over without a score and sealed itself `completed`, every metric short of them,
  verify intact. A retry grades them as it grades an answer whose judge request failed (`archive.rows.ungraded`)
- a shard run its judge failed fast was merged, exit 0, into a `completed` run without those answers' scores. Merge
  refuses it: `run ID (shard 2/2) is failed with 4 of its answers not graded; finish it with benchrun-audit resume
  SHARD` (audit.merge)

Tried and held: SIGKILL while gradings are held (resume grades each once); a retry of a retry with model repeats,
judge repeats and judge.concurrency 2; a retry whose judge is slower than judge.timeout_s, finished by the resume its
line gives; a shard resumed after its judge failed fast, then merged; rescore --rejudge, compare and show of a retry.
"""

from __future__ import annotations

import json

import pytest

from benchrun.core.errors import EXIT
from benchrun.core.text import counted
from benchrun.testing.ollama_server import ChatRequest, FakeOllama, Reply
from tests.helpers.archives import read_jsonl
from tests.helpers.commands import call_benchrun
from tests.helpers.judgedruns import Judging, judged_eight


def grades(run_dir) -> list[tuple[str, int | None, str | None]]:
    return sorted((c["id"], c["value"], c["error"] and c["error"]["message"])
                  for c in read_jsonl(run_dir / "judgements.jsonl"))


def retried_while_broken(tmp_path, server: FakeOllama, parent):
    """Retry `parent` while the judge fails every call, then resume the retry once it is mended: (retry, the retry's
    grades before the resume, resume, the retry's directory)."""
    server.responder = Judging(None)
    retried = call_benchrun("retry", str(parent), cwd=tmp_path, module="benchrun.audit")
    [child] = parent.parent.glob("*.retry1")
    left = grades(child)
    server.responder = Judging()
    return retried, left, call_benchrun("resume", str(child), cwd=tmp_path, module="benchrun.audit"), child


@pytest.mark.slow
def test_a_retry_whose_judge_fails_fast_leaves_its_run_of_failures_for_the_resume(tmp_path):
    """Before: the retry recorded `item:n=1`'s HTTP 500 before failing fast, and the mended resume sealed the retry
    `completed_with_errors` with it."""
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Judging((1, 3, 5, 7))) as server:
        ran, parent = judged_eight(tmp_path, server.url, "+judge.max_consecutive_failures=2", "runner.concurrency=1")
        retried, left, resumed, child = retried_while_broken(tmp_path, server, parent)
    assert [ran.returncode, retried.returncode, resumed.returncode] == [EXIT["ok"], EXIT["runner"], EXIT["ok"]]
    assert "(2 in a row)" in retried.stderr and f"finish it once the setup is mended with: benchrun-audit resume " \
                                               f"{child}\n" in retried.stderr
    assert left == [(f"item:n={n}", 1, None) for n in (2, 4, 6, 8)]
    assert grades(child) == [(f"item:n={n}", 1, None) for n in range(1, 9)]
    info = json.loads((child / "run.json").read_text())
    assert (info["status"], info["counts"]["scorer_errors"]) == ("completed", 0)
    assert call_benchrun("verify", str(child), cwd=tmp_path, module="benchrun.audit").returncode == EXIT["ok"]


class Mending(Judging):
    """`Judging`, and the model under test answers 500 for the items in `unanswered`."""

    def __init__(self, failing: tuple[int, ...] | None = (), unanswered: tuple[int, ...] = ()) -> None:
        super().__init__(failing)
        self.unanswered = unanswered

    def __call__(self, req: ChatRequest) -> Reply | str:
        if not req.model.startswith("qwen2.5") and int(req.prompt.rsplit(" ", 1)[1]) in self.unanswered:
            return Reply(status=500, error="down")
        return super().__call__(req)


@pytest.mark.slow
def test_a_retrys_judge_failures_of_answers_carried_and_asked_again_are_one_run_of_failures(tmp_path):
    """Before: the two carried answers judged again were recorded with the still-broken judge's HTTP 500 before the
    retry asked its two failed samples, whose judge failures made the third in a row; the mended resume left those two
    grades errors."""
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Mending((1, 3), (7, 8))) as server:
        ran, parent = judged_eight(tmp_path, server.url, "+judge.max_consecutive_failures=3", "runner.concurrency=1",
                                   "runner.retries=0")
        retried, left, resumed, child = retried_while_broken(tmp_path, server, parent)
    assert [ran.returncode, retried.returncode, resumed.returncode] == [EXIT["ok"], EXIT["runner"], EXIT["ok"]]
    assert "(3 in a row)" in retried.stderr
    assert left == [(f"item:n={n}", 1, None) for n in (2, 4, 5, 6)]
    assert grades(child) == [(f"item:n={n}", 1, None) for n in range(1, 9)]
    info = json.loads((child / "run.json").read_text())
    assert (info["status"], info["counts"]["scorer_errors"], info["counts"]["request_errors"]) == ("completed", 0, 0)


@pytest.mark.slow
def test_a_retry_of_a_run_its_judge_failed_grades_the_answers_it_left_ungraded(tmp_path):
    """Before: the retry carried the ungraded answers over without a score and sealed itself `completed`, 8/8, every
    metric short of them (n 4 of 8), verify intact, resume `nothing to resume`."""
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Mending(None, (1,))) as server:
        ran, parent = judged_eight(tmp_path, server.url, "+judge.max_consecutive_failures=3", "runner.concurrency=1",
                                   "runner.retries=0")
        server.responder = Judging()
        retried = call_benchrun("retry", str(parent), cwd=tmp_path, module="benchrun.audit")
    answered = len([r for r in read_jsonl(parent / "responses.jsonl") if r["error"] is None])
    assert (ran.returncode, f"({answered} not graded yet)" in ran.stderr) == (EXIT["runner"], True)
    assert retried.returncode == EXIT["ok"], retried.stderr
    parent_id = json.loads((parent / "run.json").read_text())["run_id"]
    assert retried.stdout.splitlines()[-1] == (f"retry of run {parent_id}: {counted(answered, 'answer')} carried over ({answered} "
                                               f"judged again), {counted(8 - answered, 'sample')} asked again")
    [child] = parent.parent.glob("*.retry1")
    assert grades(child) == [(f"item:n={n}", 1, None) for n in range(1, 9)]
    summary = json.loads((child / "summary.json").read_text())["metrics"]
    assert [(m["metric"], m["n"], m["errors"]) for m in summary] == [
        ("contains", 8, 0), ("format_valid", 8, 0), ("names", 8, 0)]


@pytest.mark.slow
def test_a_shard_its_judge_failed_is_not_merged_with_its_answers_ungraded(tmp_path):
    """Before (with shard 1/2, or --partial alone): merged, exit 0, into a run whose answers of shard 2/2 have no score,
    `completed` (or `interrupted`, resume then regrading the merged run, not the shard), verify intact."""
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Judging(None)) as server:
        ran, shard = judged_eight(tmp_path, server.url, "+judge.max_consecutive_failures=3", "runner.concurrency=1",
                                  "shard=2/2")
        merged = call_benchrun("merge", str(shard), "--partial", "--into", str(tmp_path / "merged"), cwd=tmp_path,
                               module="benchrun.audit")
    shard_id = json.loads((shard / "run.json").read_text())["run_id"]
    answered = len(read_jsonl(shard / "responses.jsonl"))
    assert (ran.returncode, f"({answered} not graded yet)" in ran.stderr) == (EXIT["runner"], True)
    assert (merged.returncode, merged.stdout, merged.stderr) == (EXIT["archive"], "", (
        f"benchrun: error: in '{shard}': run {shard_id} (shard 2/2) is failed with {answered} of its answers not graded; "
        f"finish it with benchrun-audit resume {shard}\n"))
    assert not (tmp_path / "merged").exists()


@pytest.mark.slow
def test_a_resumes_judge_failures_of_answers_regraded_and_asked_are_one_run_of_failures(tmp_path):
    """Before: the resume graded again the four answers the model's fail-fast left held, recorded their HTTP 500s as
    their own when that grading ended, and failed fast on the judge's next failure; the mended resume kept them."""
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Mending(None, (5, 6, 7, 8))) as server:
        ran, run_dir = judged_eight(tmp_path, server.url, "+judge.max_consecutive_failures=5", "runner.concurrency=1",
                                    "runner.retries=0", "runner.max_consecutive_failures=3")
        server.responder = Judging(None)
        still = call_benchrun("resume", str(run_dir), cwd=tmp_path, module="benchrun.audit")
        left = grades(run_dir)
        server.responder = Judging()
        mended = call_benchrun("resume", str(run_dir), cwd=tmp_path, module="benchrun.audit")
    assert [ran.returncode, still.returncode, mended.returncode] == [EXIT["runner"], EXIT["runner"], EXIT["ok"]]
    assert "3 samples in a row failed the same way" in ran.stderr and "(5 in a row)" in still.stderr
    assert left == []
    assert grades(run_dir) == [(f"item:n={n}", 1, None) for n in range(1, 9)]
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"

"""The twenty-second hostile pass, judges end to end after the pass's two changes to a failed judge request (gradings
held while a run of judge failures is undecided; retry judging again a carried answer whose judge request failed),
tried together.

Found and fixed:
- a retry judging again carried answers whose judge requests had failed, the judge still broken: the retry failed
  fast as it should, but graded those answers one at a time outside `Held`, so the answers of the run of failures
  before the limit were recorded with the broken judge's `HTTP 500` as their grade; the mended `resume` of the retry
  graded the rest and sealed it `completed_with_errors`, those grades lost. Now a retry's (and a resume's) grading
  again goes through `Held` (`execute.grading.Grader.grade_each`): none of a broken judge's run of failures recorded
"""

from __future__ import annotations

import json

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.ollama_server import ChatRequest, FakeOllama, Reply
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.judges import JUDGES, RESPONSE

TASKS = ("- name: item\n  template: 'item {n}'\n  values: {n: [1, 2, 3, 4, 5, 6, 7, 8]}\n"
         "  reference: [a, a, a, a, a, a, a, a]\n  scorer: contains\n  judge: names\n")
"""Eight answers `a`, each graded by contains and by the judge `names` (tests.helpers.judges)."""


class Judging:
    """The model under test answers `a`; the judge (qwen2.5) says right, but answers 500 for the items in `failing`
    (every item when it is None)."""

    def __init__(self, failing: tuple[int, ...] | None = ()) -> None:
        self.failing = failing

    def __call__(self, req: ChatRequest) -> Reply | str:
        if not req.model.startswith("qwen2.5"):
            return json.dumps({"answer": "a"})
        item = int(req.prompt.split("\n")[0].rsplit(" ", 1)[1])
        if self.failing is None or item in self.failing:
            return Reply(status=500, error="boom")
        return json.dumps({"verdict": "right"})


def judged_eight(tmp_path, url: str, *overrides: str):
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    result = call_benchrun(f"runner.host={url}", "task.path=bench", "judge.model=qwen2.5", "+judge.backoff_s=0",
                           "cache=false", f"outputs={tmp_path / 'outputs'}", *overrides, cwd=tmp_path)
    [run_dir] = [info.parent for info in (tmp_path / "outputs").glob("*/*/run.json")]
    return result, run_dir


def grades(run_dir) -> list[tuple[str, int | None, str | None]]:
    return sorted((c["id"], c["value"], c["error"] and c["error"]["message"])
                  for c in read_jsonl(run_dir / "judgements.jsonl"))


@pytest.mark.slow
def test_a_retry_whose_judge_fails_fast_leaves_its_run_of_failures_for_the_resume(tmp_path):
    """Before: the retry recorded `item:n=1`'s HTTP 500 before failing fast, and the mended resume sealed the retry
    `completed_with_errors` with it."""
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Judging((1, 3, 5, 7))) as server:
        ran, parent = judged_eight(tmp_path, server.url, "+judge.max_consecutive_failures=2", "runner.concurrency=1")
        server.responder = Judging(None)
        retried = call_benchrun("retry", str(parent), cwd=tmp_path, module="benchrun.audit")
        [child] = parent.parent.glob("*.retry1")
        left = grades(child)
        server.responder = Judging()
        resumed = call_benchrun("resume", str(child), cwd=tmp_path, module="benchrun.audit")
    assert [ran.returncode, retried.returncode, resumed.returncode] == [EXIT["ok"], EXIT["runner"], EXIT["ok"]]
    assert "(2 in a row)" in retried.stderr and f"finish it once the setup is mended with: benchrun-audit resume " \
                                               f"{child}\n" in retried.stderr
    assert left == [(f"item:n={n}", 1, None) for n in (2, 4, 6, 8)]
    assert grades(child) == [(f"item:n={n}", 1, None) for n in range(1, 9)]
    info = json.loads((child / "run.json").read_text())
    assert (info["status"], info["counts"]["scorer_errors"]) == ("completed", 0)
    assert call_benchrun("verify", str(child), cwd=tmp_path, module="benchrun.audit").returncode == EXIT["ok"]

"""The twenty-ninth hostile pass, the lead's part: the last review's findings, and what the lead's own pass found.

- verify read a run's responses.jsonl once more for each finished rescore (to check the rescore's numbers against
  the run's first answers it scored): k rescores cost k + 1 passes over the run. The run's one pass now keeps each
  rescore's books beside its own (`audit.summarycheck.RunPass`, `audit.rescorecheck`).
- A rejudge asking the judge more times an answer than the run did (`rescore --rejudge judge.repeats=2`) failed verify:
  its agreement was checked as over the run's judge repeats (1), making none. It is checked as the rescore graded,
  over rescore.json's `judge.repeats` (`audit.rescored.RescoreInfo.graded`), a value that is not a count unreadable.
- Errors read from the archive said pydantic's `Value error, ` before a validator's own words, and an Ollama answer
  of another shape was said in pydantic's three lines joined (`1 validation error for ChatResponse message.content
  Input should be a valid string [type=string_type, input_value=5, input_type=int]`): one problem is said in one line,
  `key: what` (`core.errors.problem_said`, `problem_line`; the expectations of the archive's and the fourth and third
  passes' tests say it).
- show's judges' agreement said `itself (1 repeats)` of a judge asked once an answer (`audit.judged.agreement_rows`).
- `rescore --scorers FILE.py --only` of a run whose tasks name scorers FILE.py does not define advised `give them with
  --scorers FILE.py`, as given (test_audit_rescore's test_missing_benchmark_or_scorer_suggests_scorers_file).
"""

from __future__ import annotations

import json

import pytest

from benchrun.archive.lookup import resolve_run
from benchrun.archive.reader import Run
from benchrun.audit.judged import agreement_rows
from benchrun.audit.verify import verify_run
from benchrun.core.errors import EXIT
from benchrun.core.judgeagreement import JudgeAgreement
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.auditcli import audit
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import bench_run, run_dir_of
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, answer
from tests.helpers.p28_archive import redigested, rescored


def _rescored_twice(tmp_path):
    run_dir = rescored(tmp_path)
    done = audit(tmp_path, "rescore", str(run_dir), "--scorers", "mine.py", "--only")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return run_dir


def test_verify_reads_a_runs_answers_once_however_many_rescores_it_has(tmp_path, monkeypatch):
    """Two rescores: verify read responses.jsonl three times; now once, and both rescores' numbers are checked."""
    run_dir = _rescored_twice(tmp_path)
    read, responses = [], Run.responses
    monkeypatch.setattr(Run, "responses", lambda self: read.append(self.path.name) or responses(self))
    verdict = verify_run(resolve_run(str(run_dir), None))
    assert (verdict.intact, read) == (True, [run_dir.name])
    assert [f.file for f in verdict.findings if f.file.startswith("rescores/")] == [
        "rescores/001/rescore.json", "rescores/001/scores.jsonl", "rescores/001/summary.json",
        "rescores/002/rescore.json", "rescores/002/scores.jsonl", "rescores/002/summary.json"]


def test_the_second_rescores_numbers_are_checked_from_the_runs_one_pass(tmp_path):
    """The second rescore's mean rewritten and its digest made to match: verify names it, the first intact."""
    run_dir = _rescored_twice(tmp_path)
    redigested(run_dir / "rescores" / "002", "summary.json",
               lambda summary: [line.update(mean=0.75) for line in summary["metrics"] if line["metric"] == "closeness"])
    done = audit(tmp_path, "verify", str(run_dir))
    assert [line for line in done.stdout.splitlines() if line.startswith("FAIL")] == [
        "FAIL  rescores/002/summary.json: t/closeness: summary.json's mean is 0.75, its score records make 1.0: not as "
        "the rescore wrote it, which tallied its records"]


def test_a_judge_asked_once_an_answer_agrees_with_itself_over_1_repeat():
    """show's agreement table said `itself (1 repeats)` of a judge asked once an answer."""
    once = JudgeAgreement(repeats=1, answers=3, self_agreement=None, kappa=None)
    assert agreement_rows({"names": once}) == [("names", "itself (1 repeat)", 3, None, None)]


def _rejudged_twice_an_answer(tmp_path):
    """A judged run (its judge asked once an answer), rescored with the judge asked twice an answer."""
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=answer) as server:
        run_dir = run_dir_of(bench_run(tmp_path, server.url, "task.path=bench", "cache=false",
                                       "judge.model=qwen2.5").stdout)
        done = audit(tmp_path, "rescore", str(run_dir), "--rejudge", "judge.repeats=2", f"judge.host={server.url}")
    assert done.returncode == EXIT["ok"], done.stderr
    return run_dir


@pytest.mark.parametrize("repeats", [0, "2", 2.0, True])
def test_a_rejudges_judge_repeats_that_is_not_a_count_is_unreadable(tmp_path, repeats):
    run_dir = _rejudged_twice_an_answer(tmp_path)
    path = run_dir / "rescores" / "001" / "rescore.json"
    info = json.loads(path.read_text())
    info["judge"]["repeats"] = repeats
    path.write_text(json.dumps(info, indent=2))
    failed = [line for line in audit(tmp_path, "verify", str(run_dir)).stdout.splitlines() if line.startswith("FAIL")]
    assert failed == [f"FAIL  rescores/001/rescore.json: unreadable: judge: judge.repeats is {json.dumps(repeats)}: a "
                      "judge is asked a whole number of times, 1 or more"]

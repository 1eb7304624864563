"""Hostile input, twenty-ninth pass, the archive and audit side (what the twenty-eighth left, then a fresh pass): the
cases it found bad, each with the rule it now obeys.

- a rejudged rescore's judge call of a judge the rescore did not ask, of an answer the run does not hold, of a repeat
  not asked, or made twice, its digest in rescore.json made to match: verify crashed (a KeyError of the judge's name)
  or blamed summary.json's agreement (or said intact, the agreement rewritten too); each line is vetted as a run's
  are (`archive.repair.JudgeCalls`, for `repair.check` and `audit.summarycheck.RescoreBooks`)
- `rescore --rejudge judge.repeats=2` of a run judged once, untouched: verify said it NOT intact (its agreement
  tallied as if each answer were judged once); a rescore's books are kept with the judge's repeats it asked
  (`audit.rescored.graded_with`)
"""
from __future__ import annotations

import pytest

from tests.helpers.auditcli import audit
from tests.helpers.p29_archive import calls_rewritten, failed, rejudged

# -- what the twenty-eighth pass left ----------------------------------------------------------------------------------


def _other_judge(calls: list[dict]) -> None:
    calls[0]["judge"] = "other"


def _unknown_answer(calls: list[dict]) -> None:
    calls[0]["id"] = "symbol:symb=%"


def _repeat_not_asked(calls: list[dict]) -> None:
    calls[0]["repeat"] = 3


def _made_twice(calls: list[dict]) -> None:
    calls.append(dict(calls[0]))


def _call_not_asked(calls: list[dict]) -> None:
    calls.append({**calls[0], "judge_repeat": 1})


@pytest.mark.slow
@pytest.mark.parametrize(("change", "said"), [
    (_other_judge, "line 1 is judge 'other''s call 0, not one of task 'symbol''s"),
    (_unknown_answer, "line 1 judges 'symbol:symb=%', which has no response"),
    (_repeat_not_asked, "line 1 judges 'symbol:symb=@ repeat 3', which has no response"),
    (_made_twice, "line 4 repeats judge 'names''s call 0 on 'symbol:symb=@' (line 1)"),
    (_call_not_asked, "line 4 is judge 'names''s call 1, not one of task 'symbol''s"),
])
def test_a_rejudged_rescores_judge_calls_belong_to_its_grading(tmp_path, change, said):
    """A rescore with --rejudge's judge calls, rewritten with their digest in rescore.json made to match: a judge the
    rescore did not ask (verify crashed, KeyError 'other'), an answer the run does not hold, a call made twice or one
    the judge's repeats do not make (verify blamed summary.json's agreement, which anyone may rewrite to match); each
    line is vetted as a run's judge calls are, and the first that does not belong is named."""
    run_dir = rejudged(tmp_path)
    calls_rewritten(run_dir / "rescores" / "001", change)
    assert failed(tmp_path, run_dir) == [f"FAIL  rescores/001/judgements.jsonl: {said}"]


@pytest.mark.slow
def test_a_rescore_rejudged_more_times_than_the_run_is_intact(tmp_path):
    """`rescore --rejudge judge.repeats=2` of a run judged once writes two calls an answer and their agreement: verify
    tallied them as one call an answer and said summary.json's agreement was not its records' (NOT intact)."""
    run_dir = rejudged(tmp_path, "judge.repeats=2")
    done = audit(tmp_path, "verify", str(run_dir))
    assert (done.returncode, done.stderr) == (0, ""), done.stdout
    assert "ok    rescores/001/judgements.jsonl: 6 lines as written" in done.stdout

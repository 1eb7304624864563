"""Hostile input, twenty-ninth pass, the archive and audit side (what the twenty-eighth left, then a fresh pass): the
cases it found bad, each with the rule it now obeys.

- a rejudged rescore's judge call of a judge the rescore did not ask, of an answer the run does not hold, of a repeat
  not asked, or made twice, its digest in rescore.json made to match: verify crashed (a KeyError of the judge's name)
  or blamed summary.json's agreement (or said intact, the agreement rewritten too); each line is vetted as a run's
  are (`archive.repair.JudgeCalls`, for `repair.check` and `audit.summarycheck.RescoreBooks`)
- `rescore --rejudge judge.repeats=2` of a run judged once, untouched: verify said it NOT intact (its agreement
  tallied as if each answer were judged once); a rescore's books are kept with the judge's repeats it asked
  (`audit.rescored.RescoreInfo.graded`)
- a judge's calls on two answers with their grades swapped (the judge's mean and agreement unchanged), in a finished
  run sealed over, or in a rejudged rescore its digest made to match: verify said intact, where the judge's score
  lines of those answers are not what their calls make; each is checked against its calls as verify reads them
  (`audit.judgegrades.JudgeGrades`, kept in `audit.summarycheck.RunPass` and `RescoreBooks`); so is one of an
  answer one of whose judge repeats' calls was taken out (the mean of those left, the agreement made to match)
- a summary.json giving a task's metric twice (a first line of it claiming `n: 10, mean: 0.9`), sealed over: verify
  said intact, show printed both lines and list's headline the first; a summary gives each task's metric once, or it
  is unreadable to every reader (`core.records.one_line_each`)
- a summary.json (sealed over) of a run of repeats whose pass@k and majority@k, `binary` (show then gave a t
  interval of -0.768 to 2.101 of a 0/1 mean), `samples`, or consistency are not what its records make: verify said
  intact (it checked n, errors, mean and stderr alone); every figure a summary says is checked where it says it
  (`audit.summarycheck._differs` and `_unmade`)
- a summary.json (sealed over) naming another model or manifest than its run.json's: verify said intact; a summary
  names the run's, as its writer wrote it (`audit.summarycheck._unmade`)
- a record line whose id, repeat, scorer or judge is a JSON array or object (`"id": ["t:a=0"]`), sealed over or in a
  killed run: verify and resume crashed (TypeError: unhashable type); such a line names nothing, a problem as any
  line that does not belong (`archive.repair._misnamed`, for committed lines and a killed writer's tail)
- run.json's digest of a file whose sha256 is the file's but whose size or line count is not (sealed over): verify
  said the file `changed since the run finished: sha256 ec05b148d197…, run.json has ec05b148d197…`; it names
  run.json's digest as the one at fault (`audit.digests.check_file`)
"""
from __future__ import annotations

import json

import pytest

from tests.helpers.archives import reseal, synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.commands import run_in_process
from tests.helpers.p24_archive import rewrite_line
from tests.helpers.p25_archive import sealed_over
from tests.helpers.p26_archive import sealed_line
from tests.helpers.p28_archive import redigested
from tests.helpers.p29_archive import calls_rewritten, failed, grades_swapped, rejudged, run_grades_swapped

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


# -- a fresh pass ------------------------------------------------------------------------------------------------------

MISGRADED = ("line {line} gives judge 'names''s score of 'symbol:symb={symbol}' as {said}, its 1 call makes {made}")


@pytest.mark.slow
def test_a_judges_score_lines_are_what_its_calls_make(tmp_path):
    """The judge's calls on `$` (right, 1) and `#` (wrong, 0) with their grades swapped, in the run (sealed over) and
    in its rejudged rescore (its digest made to match): the judge's mean (2/3) and its agreement with `contains` are
    what summary.json says, and verify said both intact, though the score lines give `$` 1 and `#` 0, which no call
    says now. The first score line its calls do not make is named, in each."""
    run_dir = rejudged(tmp_path)
    run_grades_swapped(run_dir)
    calls_rewritten(run_dir / "rescores" / "001", grades_swapped)
    assert failed(tmp_path, run_dir) == [
        f"FAIL  scores.jsonl: {MISGRADED.format(line=6, symbol='$', said=1, made=0)}",
        f"FAIL  rescores/001/scores.jsonl: {MISGRADED.format(line=6, symbol='$', said=1, made=0)}"]


@pytest.mark.slow
def test_a_judges_score_line_is_made_of_every_one_of_its_repeats(tmp_path):
    """A rescore rejudged twice an answer, one of the two calls on `@` taken out (the judge said right in both: the
    score line's 1 is the mean of the one left) and summary.json's agreement made what the calls left make, the
    digests made to match: verify said intact of a score of one call where the judge was asked two."""
    run_dir = rejudged(tmp_path, "judge.repeats=2")
    rescore = run_dir / "rescores" / "001"
    calls_rewritten(rescore, lambda calls: calls.pop(1))
    redigested(rescore, "summary.json", lambda summary: summary["judges"]["names"].update(
        answers=2, with_scorers={"contains": {"agreement": 0.5, "answers": 2, "kappa": 0.0}}))
    assert failed(tmp_path, run_dir) == [
        "FAIL  rescores/001/scores.jsonl: line 3 gives judge 'names''s score of 'symbol:symb=@' from 1 of its 2 calls"]


def test_a_summary_giving_a_tasks_metric_twice_is_unreadable(tmp_path):
    """summary.json with a second `t/closeness` line before its own (n 10, mean 0.9), sealed over: verify said intact,
    show printed both lines and list's headline `t/closeness=0.900`; every reader now refuses it in one line."""
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    summary = json.loads((run_dir / "summary.json").read_text())
    summary["metrics"].insert(0, {**summary["metrics"][0], "n": 10, "mean": 0.9})
    (run_dir / "summary.json").write_text(json.dumps(summary))
    reseal(run_dir, "summary.json")
    said = ("unreadable: metrics: t/closeness is given twice, where a summary gives each task's metric "
            "once")
    assert failed(tmp_path, run_dir) == [f"FAIL  summary.json: {said}"]
    shown = audit(tmp_path, "show", str(run_dir))
    assert (shown.returncode, shown.stdout, shown.stderr) == (4, "", f"benchrun: error: in '{run_dir}/summary.json': "
                                                                     f"{said}\n")


READ = "show, list and compare read it, export and report read the records"


@pytest.mark.slow
@pytest.mark.parametrize(("change", "said"), [
    ({"pass_at_k": 1.0}, "product/calculated_answer: summary.json's pass_at_k is 1.0, its score records make "
                         "0.6666666666666666"),
    ({"binary": False}, "product/calculated_answer: summary.json's binary is False, its score records make True"),
    ({"samples": 9}, "product/calculated_answer: summary.json's samples is 9, its score records make 3"),
    ({"consistency": {"product": 0.0}}, 'consistency: summary.json\'s is {"product": 0.0}, its records make '
                                        '{"product": 1.0}'),
])
def test_every_figure_a_summary_gives_is_what_its_records_make(tmp_path, change, said):
    """A run of 3 samples asked 3 times each (calculated_answer 1, 0, 1 per sample, each answer alike), its summary.json
    given another pass@k, `binary`, `samples` or consistency and sealed over: verify said intact, and show printed
    them (a t interval of -0.768 to 2.101 for `binary: false`)."""
    run_dir = run_in_process(tmp_path, "thrice", "task.only=[product]", "repeats=3")
    summary = json.loads((run_dir / "summary.json").read_text())
    (summary if "consistency" in change else summary["metrics"][0]).update(change)
    (run_dir / "summary.json").write_text(json.dumps(summary))
    reseal(run_dir, "summary.json")
    assert failed(tmp_path, run_dir) == [f"FAIL  summary.json: {said}: {READ}"]


@pytest.mark.parametrize(("field", "value", "own"), [
    ("model", "evil", "m"),
    ("manifest_id", "f" * 64, None),
])
def test_a_summary_names_its_runs_model_and_manifest(tmp_path, field, value, own):
    """summary.json's `model` (`manifest_id`) made another's, sealed over: verify said intact, though every writer
    names the run's own there; what other tools read of the run named another."""
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    summary = json.loads((run_dir / "summary.json").read_text())
    own = own or summary[field]
    (run_dir / "summary.json").write_text(json.dumps({**summary, field: value}))
    reseal(run_dir, "summary.json")
    assert failed(tmp_path, run_dir) == [f"FAIL  summary.json: {field} is {value!r}, where run.json's is {own!r}: a "
                                         "summary of another run's"]


def _named_by(key: str, value: object):
    return lambda line: json.dumps({**json.loads(line), key: value}).encode() + b"\n"


@pytest.mark.parametrize(("name", "number", "key", "value", "said"), [
    ("responses.jsonl", 1, "id", ["t:a=0"], "line 1 gives its id as a JSON array, which names nothing"),
    ("scores.jsonl", 2, "scorer", ["closeness"], "line 2 gives its scorer as a JSON array, which names nothing"),
    ("scores.jsonl", 3, "repeat", {"k": 0}, "line 3 gives its repeat as a JSON object, which names nothing"),
])
def test_a_record_line_naming_its_answer_by_an_array_is_a_problem_not_a_crash(tmp_path, name, number, key, value,
                                                                                said):
    """A finished run's record line whose id, scorer or repeat is a JSON array or object, sealed over: verify crashed
    (TypeError: unhashable type: 'list'); the line names nothing, the first problem verify says."""
    run_dir = sealed_line(synthetic_run(tmp_path / "r", [1, 0]), name, number, _named_by(key, value))
    assert failed(tmp_path, run_dir)[0] == f"FAIL  {name}: {said}"


def test_resume_of_a_killed_run_whose_line_names_its_answer_by_an_object_refuses_it(tmp_path):
    """A killed run's second response line given `"id": {"x": 1}` (records.sha256 made to match): resume crashed
    (TypeError: unhashable type: 'dict'); it refuses the records in one line, as any that do not belong."""
    run_dir = synthetic_run(tmp_path / "k", [1, 0], finish=False)
    rewrite_line(run_dir, "responses.jsonl", 2, _named_by("id", {"x": 1}))
    done = audit(tmp_path, "resume", str(run_dir))
    assert (done.returncode, done.stdout, done.stderr) == (4, "", (
        f"benchrun: error: in '{run_dir}/responses.jsonl': line 2 gives its id as a JSON object, which names nothing "
        "(2 more problems): the records are not what the run wrote; resume with --force to drop what does not belong "
        "(recorded in run.json)\n"))


def test_a_digest_whose_counts_are_not_its_files_is_run_jsons_fault(tmp_path):
    """run.json's digest of scores.jsonl saying 999 lines, its sha256 the file's, sealed over: verify said the file
    changed, giving two equal sha256s; the file is as written, and run.json's digest is what no run writes."""
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    info = json.loads((run_dir / "run.json").read_text())
    info["files"]["scores.jsonl"]["lines"] = 999
    sealed_over(run_dir, lambda text: json.dumps(info))
    size = (run_dir / "scores.jsonl").stat().st_size
    assert failed(tmp_path, run_dir) == [f"FAIL  run.json: files.scores.jsonl: {size} bytes and 999 lines, where the "
                                         f"file its sha256 is of has {size} bytes and 4 lines: a digest no run writes"]

"""Hostile input, thirty-fourth pass, the archive and audit side (what the thirty-third left, then a fresh pass): the
cases it found bad, each with the rule it now obeys.

1. an exported cell beginning with white space (a space, a tab after it, a line break, a no-break space) before
   `=`, `+`, `-` or `@`, or with a full-width `＝`, `＋`, `－`, `＠` (what an East Asian input method types): written
   as it was, where Excel, Sheets and Numbers skip the white space and an East Asian spreadsheet takes the full-width
   sign for a formula's; a cell whose first character past white space is a formula's sign in its compatibility form
   (NFKC) is written after a ' (`audit.export.formula_like`)
2. a run.json's (or summary.json's) count of answers of hundreds of digits (sealed over): `show` printed it whole in
   its counts line, verify's FAIL line whole; a record's token count of hundreds of digits was said whole by verify; a
   count of answers is at most 2^53 - 1 (what every JSON reader keeps exact, as a token count is), and a count out of
   bounds is said by its length (`core.metricvalue.MAX_COUNT`, `number_shown`); summary.json's `speed.n` and
   `speed.failed` (-1 was shown as `(2 answers, -1 failed)`) and a judge's agreement counts are counts of answers too
   (`Tally`)
3. a judge call's `seconds` (sealed over) far beyond the run's span (started_at to ended_at): verify said intact; a call
   asked in the run (not carried over, from the cache or by a shard) took at most that span, as a wall time does, a
   second's leeway for a stepped clock (`archive.lineagefields.Made._call_time`, `run_span`); and its `host` in a run
   whose judge asked one server in every session: verify said intact; only a call of a judge asking a list of servers
   names the one that answered (`audit.judgegrades.judge_listed`, `JudgeGrades.misread`)
4. a judge call (sealed over) whose grade is blanked to null, its number kept; or whose reply is edited to one its
   judge's format refuses (`{"verdict": "maybe"}`), its grade to match: verify said intact; a call giving a number
   gives its reply's grade field (null where the reply gives null), and a grade is given only of a reply in the
   judge's format, as every writer since the judge's replies were checked gives them
   (`audit.judgegrades.JudgeGrades._ungraded`)
5. a judge call's `messages` (sealed over) edited (`rate this as right`): verify said intact; a call's chat is its
   judge's rubric rendered for the answer it judges (`execute.judging.rubric_chat`), checked by a digest of it kept per
   answer and judge as the responses are read (`audit.judgegrades.JudgeGrades.response`)

A fresh pass:

6. a run whose system clock was stepped back while it ran (NTP, a VM's snapshot), so that its writer wrote an ended_at
   before its started_at: verify said `speed.wall_s: summary.json's is 0.1 s, where the run took -4384.8 s`, an
   honest run not intact; a span the clock went back in bounds no time (`archive.lineagefields.run_span`: None)
7. a finished run's `config_digest` (config.yaml as its start wrote it) edited to another file's (sealed over): verify
   said intact, while run.json said config.yaml was two files; config.yaml is written once, as the run starts, so its
   digest at the start is its digest at the end (`audit.digests.config_twice`)
8. `resume` of a killed run whose scores.jsonl is a FIFO, a socket or a directory: refused with `... in its place: the
   records are not what the run wrote; resume with --force to drop what does not belong`, and `--force` then refused
   with `a socket, where the run's own file belongs`: advice that led nowhere; a resume refuses a file it appends to
   that is not its own before it reads the records (`archive.dirlock.own_file` of each of `core.layout.APPENDED`)
9. a retry's run.json (sealed over) whose parent says -1 answers carried over and 3 asked again (of 2): verify said
   intact, show `-1 answers carried over`; one of 10**300 was shown whole over three lines; a merged run's shard of
   -1 responses likewise: a count of answers wherever run.json gives one is one (`core.lineage`: `Tally`)
"""
from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from benchrun.archive import writer
from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.p25_archive import sealed_over
from tests.helpers.p29_archive import failed
from tests.helpers.p31_archive import summary_rewritten
from tests.helpers.p32_archive import sealed_fields
from tests.helpers.p33_archive import judged_run
from tests.helpers.p34_archive import exported_references, judged_copy


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> Path:
    """One judged run (`judged_run`) for the module's tests, each of which edits a copy (`judged_copy`)."""
    return judged_run(tmp_path_factory.mktemp("judged"))


# -- what the thirty-third pass left -----------------------------------------------------------------------------------


@pytest.mark.parametrize("reference", [" =1+1", " \t@SUM(A1)", "\n=1+1", "\u00a0+1", "\u3000-1+2", "＝1+1", "＋1",
                                       "－1", "＠SUM(A1)", " ＝1+1", "﹦1+1"])
def test_an_exported_cell_a_spreadsheet_reads_as_a_formula_past_white_space_or_in_full_width_is_escaped(
        tmp_path, reference):
    synthetic_run(tmp_path / "r", [1], reference=reference)
    assert exported_references(tmp_path, "r") == ["'" + reference] * 2


@pytest.mark.parametrize("reference", ["a =1", " a", "x\n=1+1", "'=1", "1-2"])
def test_an_exported_cell_no_spreadsheet_reads_as_a_formula_is_written_as_it_is(tmp_path, reference):
    synthetic_run(tmp_path / "r", [1], reference=reference)
    assert exported_references(tmp_path, "r") == [reference] * 2


HUGE = 10**300
DIGITS = "an integer of 301 digits"
BOUND = "(0 to 2^53 - 1)"


def test_a_count_of_answers_of_hundreds_of_digits_is_said_by_its_length(tmp_path):
    sealed_over(synthetic_run(tmp_path / "r", [1, 0]), lambda text: text.replace('"samples": 2', f'"samples": {HUGE}'))
    said = f"unreadable: counts.samples: {DIGITS} is no number of answers (0 to 2^53 - 1)"
    for command in ("show", "verify"):
        done = audit(tmp_path, command, "r")
        assert (done.returncode, done.stdout, done.stderr) == (4, "", f"benchrun: error: in 'r/run.json': {said}\n")


@pytest.mark.parametrize(("change", "said"), [
    (lambda summary: summary["metrics"][0].update(n=HUGE), f"metrics.0.n: {DIGITS} is no number of answers {BOUND}"),
    (lambda summary: summary["speed"].update(n=HUGE), f"speed.n: {DIGITS} is no number of answers {BOUND}"),
    (lambda summary: summary["speed"].update(failed=-1), "speed.failed: -1 is no number of answers (0 or more)"),
])
def test_a_summary_count_of_hundreds_of_digits_or_below_0_is_unreadable(tmp_path, change, said):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    summary_rewritten(run_dir, change)
    assert failed(tmp_path, run_dir) == [f"FAIL  summary.json: unreadable: {said}"]


def test_a_token_count_of_hundreds_of_digits_is_said_by_its_length(tmp_path):
    run_dir = sealed_fields(synthetic_run(tmp_path / "r", [1, 0]), "responses.jsonl", 1, prompt_tokens=HUGE)
    assert failed(tmp_path, run_dir) == [
        f"FAIL  responses.jsonl: line 1: not a valid record: prompt_tokens: {DIGITS} is no count a server measures "
        "(0 to 2^53 - 1)"]


def test_a_judge_call_longer_than_its_run_is_said_by_verify(tmp_path, judged):
    run_dir = judged_copy(tmp_path, judged)
    info = json.loads((run_dir / "run.json").read_text())
    span = (datetime.fromisoformat(info["ended_at"]) - datetime.fromisoformat(info["started_at"])).total_seconds()
    sealed_fields(run_dir, "judgements.jsonl", 2, seconds=9999.5)
    assert failed(tmp_path, run_dir) == [
        f"FAIL  judgements.jsonl: line 2 gives seconds 9999.5, more than the {round(span, 6)} s from run.json's "
        "started_at to its ended_at, in which the run asked it"]
    sealed_fields(run_dir, "judgements.jsonl", 2, seconds=round(span + 0.5, 6))
    assert audit(tmp_path, "verify", str(run_dir)).stdout.splitlines()[-1] == "intact"


def test_a_judge_calls_host_in_a_run_of_one_judge_server_is_said_by_verify(tmp_path, judged):
    run_dir = sealed_fields(judged_copy(tmp_path, judged), "judgements.jsonl", 4, host="http://10.0.0.9:11434")
    assert failed(tmp_path, run_dir) == [
        "FAIL  judgements.jsonl: line 4 gives host 'http://10.0.0.9:11434', where the run's judge asked one server in "
        "every session (config.yaml's judge.host, run.json's judge, each resume's or retry's --judge-host): only a "
        "judge asking a list of servers names the one that answered"]


def test_a_judge_calls_host_in_a_run_whose_judge_asked_a_list_is_intact(tmp_path, judged):
    run_dir = sealed_fields(judged_copy(tmp_path, judged), "judgements.jsonl", 4, host="http://10.0.0.9:11434")

    def listed(text: str) -> str:
        info = json.loads(text)
        info["judge"]["runner"]["host"] = ["http://10.0.0.9:11434", "http://10.0.0.8:11434"]
        return json.dumps(info, indent=2)

    sealed_over(run_dir, listed)
    assert audit(tmp_path, "verify", str(run_dir)).stdout.splitlines()[-1] == "intact"


@pytest.mark.parametrize(("fields", "said"), [
    ({"grade": None}, 'gives grade null, where its reply gives "right" (\'verdict\')'),
    ({"reply": '{"verdict": "maybe"}', "grade": "maybe"},
     'gives grade "maybe" of a reply not in its judge\'s format Verdict: verdict: "maybe" is not one of ["right", '
     '"wrong"]'),
])
def test_a_judge_calls_grade_blanked_or_of_a_refused_reply_is_said_by_verify(tmp_path, judged, fields, said):
    run_dir = sealed_fields(judged_copy(tmp_path, judged), "judgements.jsonl", 1, **fields)
    assert failed(tmp_path, run_dir) == [f"FAIL  judgements.jsonl: line 1 {said}"]


def test_a_judge_calls_chat_edited_is_said_by_verify(tmp_path, judged):
    run_dir = sealed_fields(judged_copy(tmp_path, judged), "judgements.jsonl", 3,
                            messages=[{"role": "user", "content": "rate this as right"}])
    assert failed(tmp_path, run_dir) == [
        "FAIL  judgements.jsonl: line 3 gives messages other than its judge's rubric rendered for the answer it "
        "judges: not what the judge was asked"]


# -- a fresh pass ------------------------------------------------------------------------------------------------------


def test_a_run_whose_clock_was_stepped_back_is_intact(tmp_path, monkeypatch):
    monkeypatch.setattr(writer, "now", lambda: "2026-01-01T00:00:00+00:00")
    synthetic_run(tmp_path / "r", [1, 0])
    info = json.loads((tmp_path / "r" / "run.json").read_text())
    assert info["ended_at"] == "2026-01-01T00:00:00+00:00" < info["started_at"]
    assert audit(tmp_path, "verify", "r").stdout.splitlines()[-1] == "intact"


def test_a_config_digest_other_than_the_config_files_end_is_said_by_verify(tmp_path):
    def other(text: str) -> str:
        info = json.loads(text)
        info["config_digest"] = {"sha256": "f" * 64, "size": 5, "lines": 1}
        return json.dumps(info, indent=2)

    run_dir = sealed_over(synthetic_run(tmp_path / "r", [1, 0]), other)
    digest = json.loads((run_dir / "run.json").read_text())["files"]["config.yaml"]["sha256"]
    assert failed(tmp_path, run_dir) == [
        f"FAIL  run.json: config_digest gives config.yaml as its start wrote it, sha256 {'f' * 12}… (5 bytes), where "
        f"files gives it at the end as sha256 {digest[:12]}… (22 bytes): config.yaml is written once, as the run "
        "starts"]


@pytest.mark.parametrize(("make", "kind"), [(os.mkfifo, "a named pipe (FIFO)"), (os.mkdir, "a directory")])
def test_a_resume_of_a_run_whose_record_file_is_no_file_is_refused_as_force_would(tmp_path, make, kind):
    run_dir = synthetic_run(tmp_path / "r", [1, 0], finish=False)
    (run_dir / "scores.jsonl").unlink()
    make(run_dir / "scores.jsonl")
    done = audit(tmp_path, "resume", "r")
    assert (done.returncode, done.stdout, done.stderr) == (
        4, "", f"benchrun: error: in 'r/scores.jsonl': {kind}, where the run's own file belongs; benchrun writes only "
               "into its own files\n")


PARENT = {"run_id": "6" * 12, "path": "/x/p", "carried": 0, "asked": 2}


@pytest.mark.parametrize(("counts", "said"), [
    ('"carried": -1, "asked": 3', "parent.carried: -1 is no number of answers (0 or more)"),
    (f'"carried": {HUGE}, "asked": 2', f"parent.carried: {DIGITS} is no number of answers (0 to 2^53 - 1)"),
])
def test_a_retrys_count_of_answers_out_of_bounds_is_unreadable(tmp_path, counts, said):
    sealed_over(synthetic_run(tmp_path / "r", [1, 0], parent=PARENT),
                lambda text: text.replace('"carried": 0,\n    "asked": 2', counts))
    for command in ("show", "verify"):
        done = audit(tmp_path, command, "r")
        assert (done.returncode, done.stdout, done.stderr) == (
            4, "", f"benchrun: error: in 'r/run.json': unreadable: {said}\n")


def test_a_merged_runs_shard_of_a_negative_count_of_responses_is_unreadable(tmp_path):
    shards = [{"run_id": str(i) * 12, "path": str(tmp_path / f"s{i}"), "shard": f"{i}/2", "status": "completed",
               "responses": 1} for i in (1, 2)]
    sealed_over(synthetic_run(tmp_path / "r", [1, 0], merged={"shards": shards, "merged_at": writer.now()}),
                lambda text: text.replace('"responses": 1,', '"responses": -1,', 1))
    done = audit(tmp_path, "show", "r")
    assert (done.returncode, done.stdout, done.stderr) == (
        4, "", "benchrun: error: in 'r/run.json': unreadable: merged.shards.0.responses: -1 is no number of answers "
               "(0 or more)\n")

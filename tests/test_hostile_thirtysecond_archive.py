"""Hostile input, thirty-second pass, the archive and audit side (what the thirty-first left, then a fresh pass): the
cases it found bad, each with the rule it now obeys.

1. a record line (sealed over) given lineage fields no writer of its run gives: a response's `attempts` -1, 0, 2.0 or
   5 (its failed attempts and its answer make 1; one from the response cache makes 0), a `carried_from` in a run that
   is no retry, a `shard` in a run that is no merge, a merged run's line giving another shard than the one holding
   its sample, a score line another shard than its response: verify said intact; what run.json says the run was made
   from decides which lineage fields its lines give, and their bounds (`archive.lineagefields.Made`, in
   `archive.repair._vet`, for verify and resume)
2. a summary.json (sealed over) of a run of repeats with `at_k_samples` and `consistency_samples` deleted: read as an
   older benchrun's (which wrote neither), show and the report no longer said `over 1 of 2 samples`; and with its
   consistency then edited, verify said intact (it skipped a consistency without its samples, on the belief that an
   older benchrun counted otherwise: it has counted the same samples since repeats came, fcd0ace); the readers take
   those bases, and the consistency, from the records (`audit.lines.MetricLines`), verify checks every consistency
   (`audit.summarycheck.TASK_FIGURES`)
3. a summary.json (sealed over) whose speed says other figures for a server of a list (`speed.hosts`), a wall time
   past the run's span (a day of a run of a second), a samples/s not its requests over its wall time, or a wall time
   for a merged run (its shards ran apart: unknown): verify said intact; each server's figures are checked as the
   run's, and what bounds the clocks' (`audit.speedcheck`)

A fresh pass:

4. a run's rescores/001 holding a whole other run (copied in), or rescores/002 holding a nested rescores/ folder:
   verify said each `unfinished (no rescore.json: it was stopped): claims nothing` and the run intact; a folder holding
   what only a run writes is no rescore's (`audit.rescorecheck.RUN_ONLY`, in `_claims`)
5. a summary.json (sealed over) of a run of repeats without `repeats` (show: `6/6 samples`, no consistency), or
   without `consistency`: verify said intact; every benchrun since repeats came wrote both for a run of repeats, so a
   summary leaving one out is checked as one saying another (`audit.summarycheck.WITH_REPEATS`)
6. a record line (sealed over) giving its `repeat` (or `judge_repeat`) as `0.0` or `true`, which Python reads as
   repeat 0 or 1 and no writer writes: verify said intact; a repeat is a whole number as written
   (`archive.repair._misnamed`, with the other names of an answer)
7. a response (sealed over) whose failed attempts are numbered `[7]` or `[1, 1]`, or took 9.5 s of an answer of
   0.1 s, or giving a `host_seconds` (the time at the server of a list that answered) without a `host`, or more than
   its time: verify said intact; a response's tries fit in its time as its writer measured them
   (`archive.lineagefields._tries`)
8. a retry's carried answer (a merged parent's) marked as asked in the retry (its `carried_from` and `shard` taken
   out, the summary's speed made to match): verify said intact, show `5 answers carried over`; a retry that ended
   carried its first `parent.carried` answers, and asked the rest (`archive.lineagefields.Made._first`)
9. a judge call of a retry given a `carried_from` where the answer it judges was asked in the retry: verify said
   intact; only a carried answer's judge calls are carried over (`archive.lineagefields.Made._call_carried`)
10. a retry's run.json (sealed over) saying 3 answers asked again where it asked 1 (show: `5 answers carried over, 3
    samples asked again`): verify said intact; a retry asks again what it does not carry, so the two make its
    answers (`archive.lineagefields.parent_unmade`, in `audit.summarycheck.disagreement`)
"""
from __future__ import annotations

import json
import shutil
from datetime import datetime

import pytest

from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.p29_archive import failed
from tests.helpers.p31_archive import summary_rewritten
from tests.helpers.p32_archive import (
    bases_deleted,
    hosts_run,
    judged_retry,
    left_out_run,
    merged_run,
    retried,
    sealed_fields,
    speed_remade,
)

# -- what the thirty-first pass left -----------------------------------------------------------------------------------

READ = "show, list and compare read it, export and report read the records"
NO_PARENT = ("but run.json names no parent: only a retry carries answers over from another run (or a merged run, from "
             "its shards')")
NO_SHARDS = ("but run.json names no shards: only a merged run's lines name the shard run that made them (and a retry's "
             "carried over from one)")


@pytest.mark.parametrize(("name", "fields", "said"), [
    ("responses.jsonl", {"attempts": -1}, "gives attempts -1, which is no count of requests"),
    ("responses.jsonl", {"attempts": 2.0}, "gives attempts 2.0, which is no count of requests"),
    ("responses.jsonl", {"attempts": True}, "gives attempts true, which is no count of requests"),
    ("responses.jsonl", {"attempts": 0}, "gives attempts 0, where its failed attempts (0) and its answer make 1"),
    ("responses.jsonl", {"attempts": 5}, "gives attempts 5, where its failed attempts (0) and its answer make 1"),
    ("responses.jsonl", {"cached_from": "7" * 12},
     "gives attempts 1, where its failed attempts (0) and an answer from the response cache make 0"),
    ("responses.jsonl", {"carried_from": "7" * 12}, f"gives carried_from '777777777777', {NO_PARENT}"),
    ("responses.jsonl", {"shard": "1/2"}, f"gives shard '1/2', {NO_SHARDS}"),
    ("scores.jsonl", {"shard": "1/2"}, "gives shard '1/2', where the response it is of gives none"),
])
def test_a_lineage_field_no_writer_of_the_run_gives_is_said_by_verify(tmp_path, name, fields, said):
    run_dir = sealed_fields(synthetic_run(tmp_path / "r", [1, 0]), name, 1, **fields)
    assert failed(tmp_path, run_dir) == [f"FAIL  {name}: line 1 {said}"]


@pytest.mark.slow
def test_a_merged_runs_lines_give_the_shard_holding_their_sample_and_a_retry_of_it_keeps_them(tmp_path):
    run_dir = merged_run(tmp_path)
    again = retried(tmp_path, run_dir)
    carried = [json.loads(line) for line in (again / "responses.jsonl").read_text().splitlines()]
    assert [(line["shard"], line["carried_from"] is not None) for line in carried if "shard" in line] == [
        ("1/2", True), ("2/2", True), ("2/2", True), ("1/2", True), ("2/2", True)]
    assert [audit(tmp_path, "verify", str(run)).stdout.splitlines()[-1] for run in (run_dir, again)] == ["intact"] * 2
    timed = shutil.copytree(run_dir, tmp_path / "timed")
    summary_rewritten(timed, lambda summary: summary["speed"].update(wall_s=1.0, samples_per_s=6.0))
    assert failed(tmp_path, timed) == [
        "FAIL  summary.json: speed.wall_s: summary.json's is 1.0, where a merged run's is unknown (its shards ran "
        "apart): show, list and compare read it, export and report read the records"]
    asked = shutil.copytree(again, tmp_path / "asked")
    sealed_fields(asked, "responses.jsonl", 1, carried_from=None, shard=None)
    for number in (1, 2):
        sealed_fields(asked, "scores.jsonl", number, shard=None)
    speed_remade(asked)
    assert failed(tmp_path, asked) == ["FAIL  responses.jsonl: line 1 gives no carried_from, where run.json's parent "
                                       "says the retry carried over its first 5 answers"]
    sealed_fields(run_dir, "responses.jsonl", 1, shard="2/2")
    sealed_fields(again, "responses.jsonl", 6, shard="1/2")
    assert failed(tmp_path, run_dir) == [
        "FAIL  responses.jsonl: line 1 gives shard '2/2', but its sample 'product:a=2,b=3' (manifest position 0) is of "
        "shard 1/2",
        *(f"FAIL  scores.jsonl: line {n} gives shard '1/2', where the response it is of gives '2/2'" for n in (1, 2))]
    assert failed(tmp_path, again) == [f"FAIL  responses.jsonl: line 6 gives shard '1/2', {NO_SHARDS}"]


NOTES = ["pass@k and majority@k: over the samples whose every answer has a value only (a failed request or scorer "
         "error leaves a sample out):", "  t/exact_match over 1 of 2 samples", "  t/format_valid over 1 of 2 samples",
         "consistency: over the samples whose every request was answered only (a failed request leaves a sample out):",
         "  t over 1 of 2 samples"]


def test_a_summary_without_the_samples_its_figures_are_over_is_read_with_those_its_records_make(tmp_path):
    run_dir = left_out_run(tmp_path)
    summary_rewritten(run_dir, bases_deleted)
    assert audit(tmp_path, "verify", str(run_dir)).stdout.splitlines()[-1] == "intact"  # as an older benchrun wrote it
    shown = audit(tmp_path, "show", str(run_dir)).stdout.splitlines()
    assert shown[shown.index(NOTES[0]):shown.index(NOTES[0]) + 5] == NOTES
    as_json = json.loads(audit(tmp_path, "show", str(run_dir), "--json").stdout)
    assert ([line.get("at_k_samples") for line in as_json["metrics"]], as_json["consistency"],
            as_json["consistency_samples"]) == ([1, 1], {"t": 1.0}, {"t": [1, 2]})
    assert audit(tmp_path, "report", str(run_dir), "--output", str(tmp_path / "r.html")).returncode == 0
    page = (tmp_path / "r.html").read_text()
    assert ("<pre>t 1.000 (over 1 of 2 samples)</pre>" in page, page.count("(over 1 of 2 samples)</div>")) == (True, 2)


def test_a_summarys_consistency_without_the_samples_it_is_over_is_checked_by_verify(tmp_path):
    run_dir = left_out_run(tmp_path)
    summary_rewritten(run_dir, lambda summary: (bases_deleted(summary), summary.update(consistency={"t": 0.5})))
    assert failed(tmp_path, run_dir) == [
        f"FAIL  summary.json: consistency: summary.json's is {{\"t\": 0.5}}, its records make {{\"t\": 1.0}}: {READ}"]


def test_a_servers_speed_its_answers_do_not_make_is_said_by_verify(tmp_path):
    run_dir = hosts_run(tmp_path / "r")
    assert audit(tmp_path, "verify", "r").stdout.splitlines()[-1] == "intact"
    summary_rewritten(run_dir, lambda summary: summary["speed"]["hosts"]["http://a:1"].update(n=2))
    assert failed(tmp_path, run_dir) == [
        "FAIL  summary.json: speed.hosts.http://a:1.n: summary.json's is 2, its answers make 1: show, list and "
        "compare read it, export and report read the records"]


def test_a_summarys_wall_time_past_the_runs_span_or_a_rate_not_over_it_is_said_by_verify(tmp_path):
    runs = [synthetic_run(tmp_path / name, [1, 0]) for name in ("long", "fast")]
    summary_rewritten(runs[0], lambda summary: summary["speed"].update(wall_s=86400.0, samples_per_s=2 / 86400))
    summary_rewritten(runs[1], lambda summary: summary["speed"].update(wall_s=0.5, samples_per_s=99.0))
    info = json.loads((runs[0] / "run.json").read_text())
    took = (datetime.fromisoformat(info["ended_at"]) - datetime.fromisoformat(info["started_at"])).total_seconds()
    assert [failed(tmp_path, run_dir) for run_dir in runs] == [
        [f"FAIL  summary.json: speed.wall_s: summary.json's is 86400.0 s, where the run took {round(took, 6)} s: "
         f"{READ}"],
        [f"FAIL  summary.json: speed.samples_per_s: summary.json's is 99.0, its 2 requests over its wall time (0.5 s) "
         f"make 4.0: {READ}"]]


# -- a fresh pass ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("deleted", "said"), [
    (("repeats",), "repeats: summary.json's is null, its records make 3"),
    (("consistency", "consistency_samples"), "consistency: summary.json's is null, its records make {\"t\": 1.0}"),
])
def test_what_every_summary_of_a_run_of_repeats_says_deleted_is_said_by_verify(tmp_path, deleted, said):
    run_dir = left_out_run(tmp_path)
    summary_rewritten(run_dir, lambda summary: [summary.pop(field) for field in deleted])
    assert failed(tmp_path, run_dir) == [f"FAIL  summary.json: {said}: {READ}"]


def test_a_rescores_folder_holding_what_only_a_run_writes_is_said_by_verify(tmp_path):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    shutil.copytree(synthetic_run(tmp_path / "other", [0, 0], run_id="7" * 12), run_dir / "rescores" / "001")
    (run_dir / "rescores" / "002" / "rescores" / "001").mkdir(parents=True)
    assert failed(tmp_path, run_dir) == [
        f"FAIL  rescores/{number}: holds {name}, which a run writes and no rescore does: no rescore's folder (a run, "
        "or a copy of one, put there); nothing in it is checked as the run's"
        for number, name in (("001", "config.yaml"), ("002", "rescores"))]


FAILED = {"type": "ReadTimeout", "message": "no answer within 5 s"}


@pytest.mark.parametrize(("fields", "said"), [
    ({"attempts": 2, "failed_attempts": [{"number": 7, "error": FAILED, "seconds": 0.05}]},
     "numbers its failed attempts [7], where a writer numbers them from 1 in order"),
    ({"attempts": 2, "failed_attempts": [{"number": 1, "error": FAILED, "seconds": 9.5}]},
     "gives failed attempts of 9.5 s in all, more than its 0.1 s"),
    ({"host_seconds": 500.0}, "gives host_seconds 500.0 but no host: only an answer of a list of servers gives it"),
    ({"host": "http://a:1", "host_seconds": 500.0}, "gives host_seconds 500.0, more than its 0.1 s"),
])
def test_a_responses_tries_that_do_not_fit_in_its_time_are_said_by_verify(tmp_path, fields, said):
    run_dir = sealed_fields(synthetic_run(tmp_path / "r", [1, 0]), "responses.jsonl", 1, **fields)
    assert failed(tmp_path, run_dir) == [f"FAIL  responses.jsonl: line 1 {said}"]


def test_a_repeat_no_writer_writes_is_said_by_verify(tmp_path):
    run_dir = sealed_fields(synthetic_run(tmp_path / "r", [1, 0]), "scores.jsonl", 1, repeat=0.0)
    sealed_fields(run_dir, "responses.jsonl", 2, repeat=True)
    assert failed(tmp_path, run_dir) == [
        "FAIL  responses.jsonl: line 2 gives its repeat as true, where a writer gives a whole number",
        "FAIL  scores.jsonl: line 1 gives its repeat as 0.0, where a writer gives a whole number",
        "FAIL  scores.jsonl: line 3 scores 't:a=1', which has no response",
        "FAIL  scores.jsonl: line 4 scores 't:a=1', which has no response",
        "FAIL  scores.jsonl: line 2 starts the incomplete score lines of 't:a=0'"]


def test_a_judge_call_carried_over_of_an_answer_asked_in_the_run_is_said_by_verify(tmp_path):
    run_dir = judged_retry(tmp_path)
    assert audit(tmp_path, "verify", str(run_dir)).stdout.splitlines()[-1] == "intact"
    sealed_fields(run_dir, "judgements.jsonl", 1, carried_from="7" * 12)
    assert failed(tmp_path, run_dir) == [
        "FAIL  judgements.jsonl: line 1 gives carried_from '777777777777', where the response it judges was asked in "
        "this run: only a carried answer's judge calls are carried over"]


def test_a_retrys_answers_asked_and_carried_other_than_its_answers_are_said_by_verify(tmp_path):
    run_dir = judged_retry(tmp_path, asked=3)
    assert failed(tmp_path, run_dir) == [
        "FAIL  run.json: parent.asked is 3 and parent.carried 0, where a retry asks again what it does not carry of "
        f"its 8 answers: {READ}"]

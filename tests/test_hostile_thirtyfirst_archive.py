"""Hostile input, thirty-first pass, the archive and audit side (what the thirtieth left, then a fresh pass): the cases
it found bad, each with the rule it now obeys.

1. a run whose judge (runner=openai, structured=auto) answered the preflight's probe as `qwen2.5-7b` and every grade as
   `qwen2.5-14b`: run.json's `judge.identity.answers_as` names a model no judge call came from, and verify said
   intact; the names the judge calls gave are kept in verify's one pass as the answers' are, and one rule says either
   contradicted (`audit.answernames.AnswerNames`)
2. `compare RUN COPY` (a run and a copy of its folder, or a copy edited or resumed apart since): compared as two runs,
   a table of zeros for a copy; the table names runs by id, so one run id in two folders is refused, as show --wrong
   and export refuse it, saying whether their records are the same (`audit.named.one_each`, in
   `audit.compare._named_once`)
3. a summary.json (sealed over) of a run of repeats with a metric line's `samples` (or `majority_at_k`) deleted, its
   `binary` (`pass_at_k`) kept: verify said intact, and show read the line as one answer per sample (Wilson's
   interval); fields one benchrun wrote together are said together (`audit.summarycheck._left_out`)

A fresh pass:

4. `rescore --rejudge` against a judge server that answered the preflight's probe as `qwen2.5-7b` and every grade as
   `qwen2.5-14b`: rescore.json's `judge.identity.answers_as` names a model none of its calls came from, and verify
   said intact; a rescore's own judge calls are kept in verify's one pass and said by the same rule
   (`audit.answernames.AnswerNames.judge_contradiction`, in `audit.summarycheck.RescoreBooks`)
5. a record line (sealed over) holding an integer of 5,001 digits: verify (and resume) said `line 2 is not JSON:
   Exceeds the limit (4300 digits) for integer string conversion: ...; use sys.set_int_max_str_digits() to increase
   the limit`, advice to a Python programmer; the archive's JSON reader says it as every reader of benchrun does
   (`core.text.too_many_digits`, in `archive.jsononce.python_json`)
6. a finished run's summary.json deleted and dropped from run.json's final digests, its counts edited (`9/2 samples,
   5 request errors`), sealed over: verify said intact (with no summary it checked no count) and show printed the
   counts; a compiled run that ended wrote its summary before its final digests, so one they do not name was removed
   (`archive.headline.summary_dropped`, in `trust.strays` for verify and every reader, and in list's row)
7. `cache --cache-dir C` whose responses.sqlite3 is a symbolic link to itself: `0 entries, 0 B`, exit 0 (a run with
   cache_dir=C: `cannot be used (OperationalError: unable to open database file)`); a loop of links is said where a
   pipe or a folder in the database's place is (`execute.cacheplace.misplaced_store`)
8. a record line (sealed over) giving another task than its sample's (`"task": "zz"` for `t:a=0`): a response's was
   intact, a score line's blamed summary.json (`summary.json's n is 2, its score records make 1`), which resealed to
   match showed a task `zz`; a line of a sample is of its sample's task (`archive.repair._other_task`, in `_vet`, for
   verify and resume)
9. a summary.json (sealed over) whose speed says another latency (p50 0.001 s of answers of 0.1 s): verify said intact,
   show printed it; what a summary's speed says that the answers make (counts, latency, token rates, load) is checked
   (`audit.summarycheck._speed_unmade`)
10. a refusal of a run in a folder whose name is not UTF-8 (`nv\\xff`): `in 'nv\ufffd'`, a name not on the disk, where
    verify's heading and the tables say `nv\\xff`; where an error is, is shown with its bytes escaped
    (`core.errors._quote`, through `core.text.undecoded`)
"""
from __future__ import annotations

import json
import os
import shutil

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.commands import run_in_process
from tests.helpers.p26_archive import sealed_line
from tests.helpers.p29_archive import failed
from tests.helpers.p31_archive import summary_removed, summary_rewritten, switched_judge, switched_judge_run

# -- what the thirtieth pass left --------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(("later", "said"), [
    ("qwen2.5-14b", ["FAIL  run.json: judge.identity.answers_as is 'qwen2.5-7b', but every judge call of the run names "
                     "its model 'qwen2.5-14b': the judge model that answered is not the one run.json names"]),
    ("qwen2.5-7b", []),
])
def test_a_judges_answers_as_is_checked_against_its_calls_by_verify(tmp_path, later, said):
    run_dir = switched_judge_run(tmp_path, "qwen2.5-7b", later)
    judge = json.loads((run_dir / "run.json").read_text())["judge"]["identity"]
    models = {json.loads(line)["extra"]["model"] for line in (run_dir / "judgements.jsonl").read_text().splitlines()}
    done = audit(tmp_path, "verify", str(run_dir))
    assert (judge["answers_as"], models, done.returncode, done.stderr) == ("qwen2.5-7b", {later}, int(bool(said)), "")
    assert [line for line in done.stdout.splitlines() if line.startswith("FAIL")] == said


@pytest.mark.parametrize(("copied", "what"), [
    (True, "copies of one run: their records are the same"),
    (False, "a copy of a run, edited or resumed apart since: their records differ"),
])
def test_a_run_compared_with_its_copy_is_refused_as_one_run(tmp_path, copied, what):
    first = synthetic_run(tmp_path / "outputs" / "r1", [0.5, 1.0])
    copy = tmp_path / "copy"
    shutil.copytree(first, copy) if copied else synthetic_run(copy, [0.0, 1.0])
    done = audit(tmp_path, "compare", "outputs/r1", "copy")
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: outputs/r1 and copy hold one run id, 555555555555 ({what}): compare tells its runs apart by "
        "run id; name one of them\n"))


@pytest.mark.slow
@pytest.mark.parametrize(("deleted", "said"), [
    ("samples", "summary.json says binary but not samples, which its score records make (3) and the benchrun "
                "writing binary writes with it"),
    ("majority_at_k", "summary.json says pass_at_k but not majority_at_k, which its score records make "
                      "(0.6666666666666666) and the benchrun writing pass_at_k writes with it"),
])
def test_a_later_field_deleted_from_a_summary_line_is_said_by_verify(tmp_path, deleted, said):
    run_dir = run_in_process(tmp_path, "thrice", "task.only=[product]", "repeats=3")
    summary_rewritten(run_dir, lambda summary: summary["metrics"][0].pop(deleted))
    assert failed(tmp_path, run_dir) == [
        f"FAIL  summary.json: product/calculated_answer: {said}: show, list and compare read it, export and report "
        "read the records"]


# -- a fresh pass ------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_rejudges_answers_as_is_checked_against_its_calls_by_verify(tmp_path):
    run_dir = switched_judge_run(tmp_path, "qwen2.5-7b", "qwen2.5-7b")
    with switched_judge("qwen2.5-7b", "qwen2.5-14b") as judge:
        done = audit(tmp_path, "rescore", str(run_dir), "--rejudge", f"judge.base_url={judge.url}")
    assert (done.returncode, done.stderr) == (0, "")
    assert failed(tmp_path, run_dir) == [
        "FAIL  rescores/001/rescore.json: judge.identity.answers_as is 'qwen2.5-7b', but every judge call of the "
        "rescore names its model 'qwen2.5-14b': the judge model that answered is not the one rescore.json names"]


def test_a_record_line_holding_an_integer_longer_than_python_reads_is_said_in_the_archives_words(tmp_path):
    run_dir = sealed_line(synthetic_run(tmp_path / "r", [1, 0]), "scores.jsonl", 2,
                          lambda line: line.replace(b'"closeness":1', b'"closeness":1' + b"0" * 5000))
    assert failed(tmp_path, run_dir) == [
        "FAIL  scores.jsonl: line 2 is not JSON: an integer of more than 4,300 digits, more than Python reads",
        "FAIL  scores.jsonl: line 1 starts the incomplete score lines of 't:a=0'"]


def test_a_finished_runs_summary_removed_with_its_digest_is_said_by_verify_and_refused_by_readers(tmp_path):
    run_dir = summary_removed(synthetic_run(tmp_path / "r", [1, 0]), responses=9, request_errors=5)
    why = ("summary.json: missing: the run ended (completed), and its writer wrote summary.json before the final "
           "digests in run.json, which do not name it: it was removed, and run.json edited since")
    assert failed(tmp_path, run_dir) == [f"FAIL  {why}"]
    shown, listed = audit(tmp_path, "show", "r"), audit(tmp_path, "list", ".", "--json")
    line = (f"in 'r': run 555555555555: {why}, so what it says cannot be trusted; benchrun-audit verify r says what "
            "changed")
    assert (shown.returncode, shown.stdout, shown.stderr) == (EXIT["archive"], "", f"benchrun: error: {line}\n")
    assert json.loads(listed.stdout) == [{"path": "r", "status": "unreadable", "listed_as": "unreadable",
                                          "reason": line}]


def test_a_cache_database_that_is_a_loop_of_links_is_said_so(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "responses.sqlite3").symlink_to("responses.sqlite3")
    done = audit(tmp_path, "cache", "--cache-dir", "c")
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: --cache-dir: {tmp_path / 'c' / 'responses.sqlite3'} is a loop of symbolic links, where the "
        "response cache's database belongs\n"))


@pytest.mark.parametrize(("name", "number"), [("responses.jsonl", 1), ("scores.jsonl", 2)])
def test_a_record_line_giving_another_task_than_its_samples_is_said_by_verify(tmp_path, name, number):
    run_dir = sealed_line(synthetic_run(tmp_path / "r", [1, 0]), name, number,
                          lambda line: json.dumps({**json.loads(line), "task": "zz"}).encode() + b"\n")
    assert failed(tmp_path, run_dir) == [f"FAIL  {name}: line {number} gives task 'zz', where its sample 't:a=0' is of "
                                         "task 't'"]


def test_a_summarys_speed_its_answers_do_not_make_is_said_by_verify(tmp_path):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    summary_rewritten(run_dir, lambda summary: summary["speed"]["latency_s"].update(p50=0.001))
    assert failed(tmp_path, run_dir) == [
        "FAIL  summary.json: speed.latency_s: summary.json's is {\"max\": 0.1, \"p50\": 0.001, \"p95\": 0.1}, its "
        "answers make {\"max\": 0.1, \"p50\": 0.1, \"p95\": 0.1}: show, list and compare read it, export and report "
        "read the records"]


def test_a_refusal_names_a_folder_whose_name_is_not_utf8_by_its_escaped_bytes(tmp_path):
    run_dir = synthetic_run(tmp_path / os.fsdecode(b"nv\xff"), [1, 0])
    (run_dir / "seal.json").unlink()
    done = audit(tmp_path, "show", str(run_dir))
    assert (done.returncode, done.stdout) == (EXIT["archive"], "")
    assert done.stderr.startswith(f"benchrun: error: in '{tmp_path}/nv\\xff': run 555555555555: seal.json: missing")

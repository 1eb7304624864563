"""Hostile input, twenty-eighth pass, the archive and audit side (what the twenty-seventh left, then a fresh pass): the
cases it found bad, each with the rule it now obeys.

- a rescore's summary.json mean or rescore.json counts that its records do not make, their digests in rescore.json
  made to match: verify said intact; it tallies a rescore's records as it does a run's (`audit.summarycheck`)
- a rescore's score line of a sample the run never asked, or of an answer another line scores, its digest made to
  match: verify said intact; each must score an answer the run holds, once (`audit.summarycheck._stray_score`), and
  every answer it scored is graded
- `export`/`report --output FIFO` that no process reads: waited forever for a reader; refused in one line
  (`archive.atomic._read_pipe_opener`), a pipe that is read still written into; a socket named too
- `list --json` said `status: running` of a run whose writer was killed, which `list --status stopped` picks: each
  entry says `listed_as` beside run.json's status (`audit.listing`), and `show --json` too, with the reason
  (`audit.listing.read_as`)
- a run id (whole, or a prefix of it alone) that two copies of one run hold: `run id prefix '…' is ambiguous`, the id
  twice; they are named as copies (`archive.lookup.resolve_run`)
- a record line (sealed over) or a run.lock note of JSON nested deeper than Python's reader follows: verify (and list
  and show of a run that did not end) crashed with a RecursionError; such JSON is unreadable, as any that is no JSON
  (`archive.jsononce.python_json`), and verify names a record line that is not JSON as that (`archive.repair._once`)
- run.json's counts below 0 (`samples: -1`, sealed over): show printed `2/-1 samples`; each count is 0 or more, as
  summary.json's, or run.json (rescore.json) is unreadable in one line (`core.records.Counts`)
- `export`/`report --output` a loop of symbolic links: the link was replaced by a regular file, exit 0; refused in one
  line, the links kept (`archive.atomic._followed`)
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.p25_archive import sealed_over
from tests.helpers.p26_archive import sealed_line
from tests.helpers.p27_archive import killed_here
from tests.helpers.p28_archive import nested, redigested, rescored, scored_again, ungraded

FIFO = ("a named pipe (FIFO) that no process reads, which a write would wait on for one forever; nothing was written; "
        "start its reader first, or name a file")

# -- what the twenty-seventh pass left ---------------------------------------------------------------------------------

def _mean(summary: dict) -> None:
    summary["metrics"][0]["mean"] = 0.75


def _errors(info: dict) -> None:
    info["counts"]["scorer_errors"] = 1


@pytest.mark.parametrize(("name", "change", "said"), [
    ("summary.json", _mean, "FAIL  rescores/001/summary.json: t/closeness: summary.json's mean is 0.75, its score "
                            "records make 1.0: not as the rescore wrote it, which tallied its records"),
    ("rescore.json", _errors, "FAIL  rescores/001/rescore.json: counts.scorer_errors is 1, its records make 0: not as "
                              "the rescore wrote it, which tallied its records"),
])
def test_a_rescores_numbers_its_records_do_not_make_fail_verify(tmp_path, name, change, said):
    """A rescore's summary.json mean (or rescore.json's counts) rewritten, its digest in rescore.json made to match:
    verify said intact, as it said of a run's until the twenty-seventh pass."""
    run_dir = rescored(tmp_path)
    redigested(run_dir / "rescores" / "001", name, change)
    done = audit(tmp_path, "verify", str(run_dir))
    assert done.returncode == EXIT["not_intact"]
    assert [line for line in done.stdout.splitlines() if line.startswith("FAIL")] == [said]


@pytest.mark.parametrize(("fields", "said"), [
    ({"id": "nope"}, "line 1 scores 'nope', an answer the run does not hold: a grading scores the run's answers only"),
    ({"id": "t:a=0", "repeat": 1}, "line 1 scores 't:a=0 repeat 1', an answer the run does not hold: a grading scores "
                                   "the run's answers only"),
    ({"id": "t:a=1"}, "line 3 scores 't:a=1' with 'format_valid' again: a grading scores each answer once"),
])
def test_a_rescores_score_line_of_no_answer_or_given_twice_fails_verify(tmp_path, fields, said):
    """A rescore's score line rewritten to score a sample the run never asked (or an answer another line scores), its
    digest made to match: verify said intact (the run's own lines are vetted so, `repair.check`)."""
    run_dir = rescored(tmp_path)
    scored_again(run_dir / "rescores" / "001", 1, **fields)
    done = audit(tmp_path, "verify", str(run_dir))
    assert [line for line in done.stdout.splitlines() if line.startswith("FAIL")] == [
        f"FAIL  rescores/001/scores.jsonl: {said}"]


def test_a_rescore_that_grades_fewer_answers_than_it_scored_fails_verify(tmp_path):
    """A rescore's score lines of its last answer taken out, its summary.json and digests made to match (n 1): verify
    said intact of a rescore that graded one of the two answers rescore.json says it scored."""
    run_dir = rescored(tmp_path)
    ungraded(run_dir / "rescores" / "001")
    done = audit(tmp_path, "verify", str(run_dir))
    assert [line for line in done.stdout.splitlines() if line.startswith("FAIL")] == [
        "FAIL  rescores/001/scores.jsonl: grades 1 of the 2 answers the rescore scored, and a rescore grades every one"]


def test_a_rescore_as_written_is_intact(tmp_path):
    """The rule passes what a rescore writes."""
    run_dir = rescored(tmp_path)
    assert audit(tmp_path, "verify", str(run_dir)).stdout.splitlines()[-1] == "intact"


def _socket(path) -> None:
    with socket.socket(socket.AF_UNIX) as bound:
        bound.bind(str(path))


@pytest.mark.parametrize(("command", "plant", "said"), [
    ("export", os.mkfifo, FIFO),
    ("report", os.mkfifo, FIFO),
    ("export", _socket, "a socket, which is not opened to write into; nothing was written; name a file"),
])
def test_an_output_pipe_no_process_reads_is_refused(tmp_path, command, plant, said):
    """`--output` a named pipe nobody reads: the command waited for a reader forever (Ctrl-C alone ended it); a
    socket: `no such device or address writing rows` (exit 4)."""
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    plant(tmp_path / "rows")
    done = subprocess.run([sys.executable, "-m", "benchrun.audit", command, str(run_dir), "--output", "rows"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (EXIT["usage"], "")
    assert done.stderr == f"benchrun: error: in 'rows': --output: {said}\n"


def test_list_json_says_how_list_lists_a_run_whose_writer_was_killed(tmp_path):
    """A run left `running` by a killed writer: `list --status stopped` picked it, and its --json entry said only
    `status: running`; it says `listed_as: stopped` beside it, as the plain list says `running (writer stopped)`."""
    killed_here(tmp_path / "outputs" / "k")
    synthetic_run(tmp_path / "outputs" / "c", [1, 0], run_id="8" * 12)
    (tmp_path / "outputs" / "u").mkdir()
    (tmp_path / "outputs" / "u" / "run.json").write_text("{")
    listed = json.loads(audit(tmp_path, "list", "--json").stdout)
    assert [(run.get("run_id"), run["status"], run["listed_as"]) for run in listed] == [
        ("8" * 12, "completed", "completed"), ("7" * 12, "running", "stopped"), (None, "unreadable", "unreadable")]
    for status in ("stopped", "completed", "unreadable"):
        picked = json.loads(audit(tmp_path, "list", "--json", "--status", status).stdout)
        assert [run["listed_as"] for run in picked] == [status]


def test_show_json_says_how_list_lists_a_run_whose_writer_was_killed(tmp_path):
    """`show --json` of a run left `running` by a killed writer gave run.json alone (`status: running`, `reason:
    null`), where show says its writer stopped and how to finish it; it gives `listed_as` and the reason beside it."""
    killed_here(tmp_path / "outputs" / "k")
    shown = json.loads(audit(tmp_path, "show", "--json", "outputs/k").stdout)
    listed = json.loads(audit(tmp_path, "list", "--json").stdout)[0]
    assert (shown["listed_as"], shown["run"]["status"]) == ("stopped", "running")
    assert shown["reason"] == listed["reason"]
    assert shown["reason"].startswith("no live process holds run.lock: its writer (pid ")


# -- a fresh pass ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("ref", ["5555", "5" * 12])
def test_a_run_id_two_copies_of_a_run_hold_names_them_as_copies(tmp_path, ref):
    """`show 555555555555` (an id given whole) of a run copied beside itself: `run id prefix '555555555555' is
    ambiguous: 555555555555 (outputs/a), 555555555555 (outputs/b)`, a prefix it is not, the id twice."""
    synthetic_run(tmp_path / "outputs" / "a", [1, 0])
    synthetic_run(tmp_path / "outputs" / "b", [1, 0])
    done = audit(tmp_path, "show", ref)
    assert (done.returncode, done.stderr) == (EXIT["archive"], "benchrun: error: run id 555555555555 is the id of 2 "
                                                               "run directories (copies of one run?): outputs/a, "
                                                               "outputs/b; name the one meant by its path\n")


def test_a_sealed_record_line_nested_past_pythons_reader_is_named(tmp_path):
    """A finished run's score line whose `detail` is an array nested 100,000 deep, sealed over: verify crashed with a
    traceback (RecursionError in the check of what each line belongs to)."""
    run_dir = sealed_line(synthetic_run(tmp_path / "r", [1, 0]), "scores.jsonl", 2,
                          lambda line: line.replace(b'"detail":null', b'"detail":' + nested(100_000)))
    done = audit(tmp_path, "verify", str(run_dir))
    assert (done.returncode, done.stderr) == (EXIT["not_intact"], "")
    assert [line for line in done.stdout.splitlines() if line.startswith("FAIL")] == [
        "FAIL  scores.jsonl: line 2 is not JSON: nested deeper than Python can follow",
        "FAIL  scores.jsonl: line 1 starts the incomplete score lines of 't:a=0'"]


@pytest.mark.parametrize("finish", [True, False])
def test_a_run_lock_note_nested_past_pythons_reader_is_read_as_unreadable(tmp_path, finish):
    """run.lock (anyone's to write, in a shared archive) holding an array nested 3,000 deep: verify (and list and show
    of a run that did not end) crashed with a traceback (RecursionError reading the writer's note)."""
    run_dir = synthetic_run(tmp_path / "outputs" / "k", [1, 0], finish=finish)
    (run_dir / "run.lock").write_bytes(nested(3_000))
    done = [audit(tmp_path, command, *args) for command, *args in (("verify", str(run_dir)), ("show", str(run_dir)),
                                                                   ("list", "--json"))]
    assert [(run.returncode, run.stderr) for run in done] == [(EXIT["ok"] if finish else EXIT["not_intact"], ""),
                                                              (EXIT["ok"], ""), (EXIT["ok"], "")]
    assert json.loads(done[2].stdout)[0]["listed_as"] == ("completed" if finish else "stopped")


@pytest.mark.parametrize("command", ["export", "report"])
def test_an_output_that_is_a_loop_of_links_is_refused_and_kept(tmp_path, command):
    """`--output rows` where rows -> other -> rows: the loop was replaced by a regular file (exit 0), where a link named
    is written through and kept."""
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    (tmp_path / "rows").symlink_to("other")
    (tmp_path / "other").symlink_to("rows")
    done = audit(tmp_path, command, str(run_dir), "--output", "rows")
    assert (done.returncode, done.stderr) == (EXIT["usage"], "benchrun: error: in 'rows': --output: a loop of symbolic "
                                                             "links, which names no file to write through; nothing was "
                                                             "written; name another file\n")
    assert [os.readlink(tmp_path / name) for name in ("rows", "other")] == ["other", "rows"]


def test_a_count_below_zero_in_run_json_is_refused_as_summary_jsons_are(tmp_path):
    """run.json's counts.samples -1, sealed over: show printed `counts 2/-1 samples` (exit 0); a count is 0 or more,
    as summary.json's are, or run.json is unreadable in one line."""
    run_dir = sealed_over(synthetic_run(tmp_path / "r", [1, 0]),
                          lambda text: text.replace('"samples": 2', '"samples": -1'))
    done = audit(tmp_path, "show", str(run_dir))
    assert (done.returncode, done.stderr) == (EXIT["archive"], f"benchrun: error: in '{run_dir / 'run.json'}': "
                                                               "unreadable: counts.samples: -1 is no "
                                                               "number of answers (0 or more)\n")


@pytest.mark.parametrize(("count", "said"), [
    (10**24, "FAIL  rescores/001/rescore.json: unreadable: counts.responses: 1000000000000000000000000 is no number of "
             "answers (0 to 2^53 - 1)"),
    (-1, "FAIL  rescores/001/rescore.json: unreadable: counts.responses: -1 is no number of answers (0 or "
         "more)"),
])
def test_a_rescores_count_of_answers_out_of_range_is_a_finding(tmp_path, count, said):
    """rescore.json's counts.responses 10**24 or -1 (rescore.json digests the rest, not itself): verify crashed in the
    tally of the answers it scored (`islice`: ValueError) as this pass first wrote it."""
    run_dir = rescored(tmp_path)
    redigested(run_dir / "rescores" / "001", "rescore.json", lambda info: info["counts"].update(responses=count))
    done = audit(tmp_path, "verify", str(run_dir))
    assert (done.returncode, done.stderr) == (EXIT["not_intact"], "")
    assert [line for line in done.stdout.splitlines() if line.startswith("FAIL")] == [said]

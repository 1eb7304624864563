"""Hostile input, thirty-ninth pass, the archive and audit side (what the thirty-eighth left, then a fresh pass): the
cases it found bad, each with the rule it now obeys.

What the thirty-eighth pass left:

1. a run folder whose run.json rsync (or Syncthing, or Resilio Sync) is still copying in (`.run.json.Xa9kQ2` in its
   place, no run.json yet): not listed by `list`, not said by a run id looked up under it, and a sweep's job so left
   out of the sweep's export; said as iCloud Drive's placeholder was, a row `unreadable` naming the tool copying it
   (`archive.lookup._walk`, `archive.lookup.own_run`). rsync (3.5.0, watched copying a run) copies a run's files in
   name order, run.json among the last, so for most of a copy the folder holds config.yaml, manifest.json,
   records.sha256 and `.responses.jsonl.WkfvDV`, no run.json: said too, by the first file of the run's it is bringing
   (`archive.arriving.run_arriving`); and `rsync --delay-updates` holds what it copied in `.~tmp~/` until the copy
   ends: `.~tmp~/run.json` is said to be rsync's (`core.filebytes.RSYNC_HELD`)

A fresh pass:

2. a run whose wall clock was stepped back a few seconds while it ran (NTP, a virtual machine restored), less than
   the run took: its span (started_at to ended_at) fell short of the wall time its monotonic clock measured, and
   verify said `speed.wall_s: summary.json's is 5.0 s, where the run took 2.0 s`, an honest run not intact (and so
   of a judge call longer than the span); its writer tells a step back by the monotonic clock beside the wall clock
   and notes how far in run.json's history (`clock_stepped_back_s`), which the span is read with: the run took 5.0 s
   (`archive.clockstep`, `archive.lineagefields.run_span`), and `show` says beside its start and end; a wall time
   past that is still said. A rescore's span likewise: rescore.json says how far its wall clock went back
   (`clock_stepped_back_s`), which a rejudged call's time is bounded with (`audit.summarycheck`)
3. an option of benchrun-audit taking one value given twice with other values (`list --model a --model b`, `export
   --output a.csv --output b.csv`, `compare --metric`, `rescore --rejudge judge.model=x --rejudge judge.host=y`): the
   last kept and the first dropped unsaid (a list of none of the runs of model a, one file of two written, one
   override of two); refused in one line naming the option and both values, exit 2, as a key given twice is; the
   same value given twice is that value (`audit.onceoptions`, every option of every command)
4. a run whose seal.json or summary.json rsync is still copying in (`.seal.json.Xa9kQ2` in its place): `list` said
   `seal.json: missing: the run ended (completed) but nothing covers run.json, so what it says cannot be trusted`
   (and `summary.json: missing`), show and verify the same of the seal, where the record files were said to be
   rsync's copy; and a killed run's records.sha256 so copied: `cannot locate changes: records.sha256 is missing`. A
   file of the run missing is said with where it is kept instead, wherever it is said (`core.filebytes.missing_because`,
   `archive.headline.seal_missing`, used by `headline`, `trust`, `audit.verify`, `audit.digests`). A real rsync
   copying a finished run: once run.json has come, while scores.jsonl is still coming (seal.json and summary.json
   after it), `list` said `seal.json: missing: the run ended (completed) but nothing covers run.json, so
   what it says cannot be trusted`, verify likewise; a missing seal is said with the copy still bringing the run in
   (`archive.headline.seal_missing`, `archive.arriving.file_arriving`)
5. a rescore whose rescore.json rsync is still copying in: verify said `ok rescores/001: unfinished (no rescore.json:
   it was stopped): claims nothing, not checked`, and the run intact; said to be rsync's copy, and not intact until it
   has come (`audit.rescorecheck._claims`)
6. `list` of runs being deleted (`rm -rf`) as it reads them: a run whose seal.json went before its run.json was
   listed `unreadable: seal.json: missing ... so what it says cannot be trusted`; a run whose run.json is gone by the
   time its row is checked is passed over, as a folder deleted while walked is (`audit.listing.listed_runs`)
"""
from __future__ import annotations

import json
import os
import shutil

import pytest

from benchrun.archive import clockstep
from benchrun.archive.reader import load_run
from benchrun.audit import listing, rescore_run
from benchrun.audit import rescore as rescoring
from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.p28_archive import ONE, redigested, rescored
from tests.helpers.p29_archive import calls_rewritten, failed, rejudged
from tests.helpers.p39_archive import arriving, clock_stepped, first_files_copied, rescore_span

RSYNC = ("rsync is copying it here (.run.json.Xa9kQ2 in its place, what it copied so far): let it finish (or copy it "
         "again, if it was stopped), then try again")

# -- what the thirty-eighth pass left ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("stand_in", "said"), [
    (".run.json.Xa9kQ2", RSYNC),
    (".syncthing.run.json.tmp", "Syncthing is copying it here now (.syncthing.run.json.tmp in its place): let it "
                                "finish, then try again")])
def test_a_run_whose_run_json_is_being_copied_in_is_listed_as_arriving(tmp_path, stand_in, said):
    run_dir = arriving(tmp_path / "r", stand_in)
    listed = json.loads(audit(tmp_path, "list", str(tmp_path), "--json").stdout)
    assert [(entry["path"], entry["status"], entry["reason"]) for entry in listed] == [
        (str(run_dir), "unreadable", f"in '{run_dir}': run.json: {said}")]


def test_a_run_whose_first_files_rsync_has_copied_is_listed_as_arriving(tmp_path):
    run_dir = first_files_copied(tmp_path / "r")
    said = ("no run.json yet, and responses.jsonl: rsync is copying it here (.responses.jsonl.WkfvDV in its place, "
            "what it copied so far): let it finish (or copy it again, if it was stopped), then try again")
    listed = json.loads(audit(tmp_path, "list", str(tmp_path), "--json").stdout)
    assert [(entry["path"], entry["reason"]) for entry in listed] == [(str(run_dir), f"in '{run_dir}': {said}")]
    done = audit(tmp_path, "verify", "r")
    assert (done.returncode, done.stderr) == (
        4, f"benchrun: error: in 'r': not a run directory (no run.json); {said}\n")


def test_a_run_json_rsync_holds_until_its_copy_ends_is_listed_as_arriving(tmp_path):
    run_dir = arriving(tmp_path / "r", ".~tmp~/run.json")
    listed = json.loads(audit(tmp_path, "list", str(tmp_path), "--json").stdout)
    assert [entry["reason"] for entry in listed] == [
        f"in '{run_dir}': run.json: rsync is copying it here (.~tmp~/run.json in its place, held there until the "
        "whole copy has come): let it finish (or copy it again, if it was stopped), then try again"]


def test_a_run_id_looked_up_beside_a_run_being_copied_in_says_it(tmp_path):
    run_dir = arriving(tmp_path / "r", ".run.json.Xa9kQ2")
    done = audit(tmp_path, "show", "5555", "--root", str(tmp_path))
    assert (done.returncode, done.stderr) == (
        4, f"benchrun: error: no run directory or run id '5555' under {tmp_path} that could be read; 1 place under it "
           f"could not be, the first: in '{run_dir}': run.json: {RSYNC}\n")


def test_a_sweeps_job_whose_run_json_is_being_copied_in_is_said_not_left_out(tmp_path):
    sweep = tmp_path / "sw"
    arriving(sweep / "0_j0", ".run.json.Xa9kQ2")
    synthetic_run(sweep / "1_j1", [0, 0], run_id="b" * 12, label="j1")
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    done = audit(tmp_path, "export", str(sweep))
    assert (done.returncode, done.stdout, done.stderr) == (
        4, "", f"benchrun: error: in '{sweep / '0_j0'}': run.json: {RSYNC}\n")


# -- a fresh pass ------------------------------------------------------------------------------------------------------


def test_a_run_whose_clock_was_stepped_back_a_little_is_intact_and_says_so(tmp_path, monkeypatch):
    run_dir = clock_stepped(tmp_path / "r", monkeypatch, 3.0)
    info = json.loads((run_dir / "run.json").read_text())
    assert (info["started_at"], info["ended_at"], info["history"]) == (
        "2026-12-07T12:00:00.000000+00:00", "2026-12-07T12:00:02.000000+00:00", [{"clock_stepped_back_s": 3.0}])
    assert audit(tmp_path, "verify", "r").stdout.splitlines()[-1] == "intact"
    assert audit(tmp_path, "show", "r").stdout.splitlines()[3].rstrip() == (
        "started      2026-12-07T12:00:00.000000+00:00  ended 2026-12-07T12:00:02.000000+00:00  (the clock went back 3 "
        "s while it ran: it took that much longer)")


@pytest.mark.parametrize(("measured_s", "history", "took"), [(0.5, [], "2.0"),
                                                              (1.5, [{"clock_stepped_back_s": 1.5}], "3.5")])
def test_a_wall_time_past_the_span_and_the_clocks_step_is_still_said(tmp_path, monkeypatch, measured_s, history, took):
    run_dir = clock_stepped(tmp_path / "r", monkeypatch, measured_s)
    assert json.loads((run_dir / "run.json").read_text())["history"] == history
    said = [line for line in audit(tmp_path, "verify", "r").stdout.splitlines() if line.startswith("FAIL")]
    assert said == [f"FAIL  summary.json: speed.wall_s: summary.json's is 5.0 s, where the run took {took} s: show, "
                    "list and compare read it, export and report read the records"]


def test_a_rescore_whose_clock_was_stepped_back_says_so(tmp_path, monkeypatch):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    (tmp_path / "mine.py").write_text(ONE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(rescoring, "now", lambda: "2026-12-07T12:00:00.000000+00:00")
    monkeypatch.setattr(clockstep, "monotonic", iter([100.0, 103.0]).__next__)
    rescore_run(load_run(run_dir), scorers_file="mine.py", only=True)
    info = json.loads((run_dir / "rescores" / "001" / "rescore.json").read_text())
    assert (info["started_at"], info["created_at"], info["clock_stepped_back_s"]) == (
        "2026-12-07T12:00:00.000000+00:00", "2026-12-07T12:00:00.000000+00:00", 3.0)


def test_a_rejudged_call_past_the_span_of_a_rescore_whose_clock_went_back_is_not_said(tmp_path):
    run_dir = rejudged(tmp_path)
    rescore_dir = run_dir / "rescores" / "001"
    took = rescore_span(rescore_dir)
    calls_rewritten(rescore_dir, lambda calls: calls[0].update(seconds=took + 2.5))  # said without a step (36th pass)
    redigested(rescore_dir, "rescore.json", lambda info: info.update(clock_stepped_back_s=2.0))
    assert audit(tmp_path, "verify", str(run_dir)).stdout.splitlines()[-1] == "intact"
    redigested(rescore_dir, "rescore.json", lambda info: info.update(clock_stepped_back_s=0.25))
    assert failed(tmp_path, run_dir) == [
        f"FAIL  rescores/001/judgements.jsonl: line 1 gives seconds {took + 2.5}, more than the "
        f"{round(took + 0.25, 6)} s from rescores/001/rescore.json's started_at to its created_at, in which the "
        "rescore asked it"]


@pytest.mark.parametrize(("args", "said"), [
    (["list", "--model", "m", "--model", "x"], "list: error: argument --model: given twice, as 'm' and 'x'"),
    (["export", "r", "--output", "a.csv", "--output", "b.csv"],
     "export: error: argument --output: given twice, as 'a.csv' and 'b.csv'"),
    (["rescore", "r", "--rejudge", "judge.model=x", "--rejudge", "judge.host=http://127.0.0.1:9"],
     "rescore: error: argument --rejudge: given twice, as 'judge.model=x' and 'judge.host=http://127.0.0.1:9'")])
def test_an_option_of_one_value_given_twice_is_refused(tmp_path, args, said):
    synthetic_run(tmp_path / "r", [1, 0])
    done = audit(tmp_path, *args)
    assert (done.returncode, done.stderr.splitlines()[-1]) == (
        2, f"benchrun-audit {said}: which one is meant? give it once")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["r"]


def test_an_option_given_twice_with_one_value_is_that_value(tmp_path):
    synthetic_run(tmp_path / "r", [1, 0])
    done = audit(tmp_path, "export", "r", "--format", "jsonl", "--format", "jsonl", "--output", "a.jsonl")
    assert (done.returncode, len((tmp_path / "a.jsonl").read_text().splitlines())) == (0, 4)


@pytest.mark.parametrize(("name", "said"), [
    ("seal.json", "seal.json: missing: the run ended (completed) but nothing covers run.json: "),
    ("summary.json", "summary.json: missing: ")])
def test_a_seal_or_summary_being_copied_in_is_said_to_be_by_list_and_verify(tmp_path, name, said):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    os.rename(run_dir / name, run_dir / f".{name}.Xa9kQ2")
    copying = RSYNC.replace("run.json", name)
    listed = json.loads(audit(tmp_path, "list", str(tmp_path), "--json").stdout)
    assert [entry["reason"] for entry in listed] == [
        f"in '{run_dir}': run 555555555555: {said}{copying}, so what it says cannot be trusted; benchrun-audit verify "
        f"{run_dir} says what changed"]
    failed_lines = [line for line in audit(tmp_path, "verify", "r").stdout.splitlines() if line.startswith("FAIL")]
    assert failed_lines[0].endswith(f": {copying}")


def test_a_run_whose_scores_rsync_is_still_copying_is_not_said_to_be_unsealed(tmp_path):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    for name in ("seal.json", "summary.json"):  # rsync copies them after scores.jsonl
        (run_dir / name).unlink()
    os.rename(run_dir / "scores.jsonl", run_dir / ".scores.jsonl.inFBte")
    said = ("seal.json: missing: the run ended (completed) but nothing covers run.json yet: a copy is still bringing "
            f"the run here (scores.jsonl: {RSYNC.replace('.run.json.Xa9kQ2', '.scores.jsonl.inFBte')})")
    listed = json.loads(audit(tmp_path, "list", str(tmp_path), "--json").stdout)
    assert [entry["reason"] for entry in listed] == [
        f"in '{run_dir}': run 555555555555: {said}, so what it says cannot be trusted; benchrun-audit verify {run_dir} "
        "says what changed"]
    assert f"FAIL  {said}" in audit(tmp_path, "verify", "r").stdout.splitlines()


def test_the_records_sha256_of_a_killed_run_being_copied_in_is_said_to_be_by_verify(tmp_path):
    run_dir = synthetic_run(tmp_path / "r", [1, 0], finish=False)
    os.rename(run_dir / "records.sha256", run_dir / ".records.sha256.Xa9kQ2")
    copying = RSYNC.replace("run.json", "records.sha256")
    said = [line for line in audit(tmp_path, "verify", "r").stdout.splitlines() if "records.sha256 is" in line]
    assert said == [f"FAIL  {name}: cannot locate changes: records.sha256 is missing: {copying}"
                    for name in ("responses.jsonl", "scores.jsonl")]


def test_a_rescore_json_being_copied_in_is_said_to_be_not_a_stopped_rescore(tmp_path):
    run_dir = rescored(tmp_path)
    os.rename(run_dir / "rescores" / "001" / "rescore.json", run_dir / "rescores" / "001" / ".rescore.json.Xa9kQ2")
    done = audit(tmp_path, "verify", str(run_dir))
    assert [line for line in done.stdout.splitlines() if "rescores/001" in line] == [
        f"FAIL  rescores/001/rescore.json: missing: {RSYNC.replace('run.json', 'rescore.json')}"]
    assert done.returncode == 1


def test_a_run_deleted_while_list_reads_it_is_passed_over(tmp_path, monkeypatch):
    synthetic_run(tmp_path / "a", [1, 0], run_id="a" * 12)
    synthetic_run(tmp_path / "b", [1, 0], run_id="b" * 12)
    checked = listing.listed

    def deleted_meanwhile(run):  # `rm -rf` reached the run between its run.json read and its row's check
        if run.id == "a" * 12:
            shutil.rmtree(run.path)
        return checked(run)

    monkeypatch.setattr(listing, "listed", deleted_meanwhile)
    assert [entry.to_json()["path"] for entry in listing.list_runs(tmp_path)] == [str(tmp_path / "b")]

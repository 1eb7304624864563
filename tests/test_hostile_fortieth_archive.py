"""Hostile input, fortieth pass, the archive and audit side (what the thirty-ninth left, then a fresh pass): the cases
it found bad, each with the rule it now obeys.

What the thirty-ninth pass left:

1. a run folder whose run.json rclone is still copying in (`run.json.Ab12Cd34.partial` in its place, its default
   `--partial-suffix`), the Nextcloud or ownCloud desktop client is downloading (`.run.json.~1f3a`) or Unison is
   (`.unison.run.json.6c1f0e2b9a.unison.tmp`), and a run whose run.json is a virtual file of Nextcloud's or
   ownCloud's (`run.json.nextcloud`, `run.json.owncloud`: kept on the server): not listed by `list` at all; said
   as rsync's and iCloud Drive's are, a row `unreadable` naming the tool, and so wherever a missing file of a run is
   said (a seal.json rclone is copying in) (`core.filebytes.kept_elsewhere`)
2. a run whose wall clock was stepped back in a session that was then killed (SIGKILL): its writer noted the step
   only as it ended, so nothing said it, and the run's span, read without it, bounds less time than its monotonic
   clock measured. The records give no wall clock reading to tell it by afterwards (resume and verify cannot); the
   writer now notes a step in run.json's history as soon as it records an answer after it, and only how much further
   the clock went at its end (`archive.clockstep.WallWatch.noted`, `archive.writer`)

A fresh pass:

3. a machine losing power just after a run ended: its seal, summary.json and run.json were written and synced to
   the disk, its record files never were (`ext4` and XFS keep appended data in memory for seconds), so a sealed run
   could come back with its records cut short or NUL bytes at their end: a run said complete whose answers are lost.
   A record file is synced to the disk as it is closed, before anything that covers it is written
   (`archive.writer.RecordFile.close`: a run's, a resume's, a retry's, a merge's and a rescore's); and a file
   renamed into place (summary.json, run.json, the seal) had its rename left unsynced, which a power cut may undo
   while it keeps a later one's (a seal over a run.json gone back to `running`): its folder is synced after the
   rename (`archive.atomic`)
4. a run folder compressed in place (`gzip -r runs/`, as a colleague saving space does; bzip2, xz, zstd alike):
   `list` passed it over unsaid, verify said `not a run directory (no run.json)`; one whose responses.jsonl alone was
   compressed, `responses.jsonl: missing (2 lines, 512 bytes when the run finished)`. A missing file of a run with
   its compressed copy in its place is said to be that, with the command that gives it back, wherever a missing file
   is said (`core.filebytes.kept_elsewhere`, COMPRESSED)
5. a run folder a sync tool keeps in step between machines, written on two at once (a resume on one, the run on
   the other): the tool keeps one version of a file and puts the other aside, a conflict copy beside it
   (`responses.sync-conflict-20261207-101010-ABCDEFG.jsonl`, Syncthing's; `run (gpu2's conflicted copy
   2026-12-07).json`, Dropbox's; `run_conflict-20261207-101010.json`, ownCloud's): verify said the run intact, and
   the other version, answers the run lacks among them, was left unsaid. Each conflict copy of a run's file (or a
   rescore's) is said; one holding other bytes than the file fails verify (`audit.conflictcopies`)
6. a record file cut short part way through a line (a copy stopped in it: `rsync -P`, whose `--partial` keeps what
   came under the file's own name; a `cp` onto a full disk): verify said `line 2 is not the line written`, as of a
   line changed by hand, where one cut at a line's end is said `truncated: 1 line of 2 written missing after line
   1`. A record file that ends part way through its last line, which alone differs, is said to be truncated there,
   with the lines missing after it (`archive.ledger.check_file`); one whose end is NUL bytes is still said to be
   what a crash leaves
7. a run folder a tool copied in part that names no file in the making as the known ones do (an rsync stopped with
   `--partial-dir=.rsync-partial`, run.json in that folder), or whose run.json was renamed (`run.json.orig`): `list`
   passed it over unsaid, though it held the run's records and seal. A folder holding no run.json but files only a
   run's folder holds (records.sha256, responses.jsonl, seal.json; a rescore's holds a summary.json too) is listed
   `unreadable`, saying so and naming a file there whose name begins with run.json (`archive.arriving.part_copied`)
8. a run file a browser is still downloading (`run.json.part`, Firefox's; `responses.jsonl.crdownload`, Chrome's):
   `list` passed the run over; show said `has no responses.jsonl: its records are gone`. Said as rsync's copy is,
   `a download is copying it here (...)` (`core.filebytes.COPYING`)
"""
from __future__ import annotations

import json
import os
import re

import pytest

from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.p28_archive import rescored
from tests.helpers.p40_archive import conflict_copy, fsynced, killed_after_a_step, stood_in

COPY = "let it finish (or copy it again, if it was stopped), then try again"
SERVER = "not on this disk: download it (open it, or make its folder 'Always available locally'), then try again"

# -- what the thirty-ninth pass left -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("stand_in", "said"), [
    ("run.json.Ab12Cd34.partial", f"rclone is copying it here (run.json.Ab12Cd34.partial in its place, what it copied "
                                  f"so far): {COPY}"),
    (".run.json.~1f3a", "Nextcloud (or ownCloud) is copying it here now (.run.json.~1f3a in its place): let it finish, "
                        "then try again"),
    (".unison.run.json.6c1f0e2b9a.unison.tmp", "Unison is copying it here now (.unison.run.json.6c1f0e2b9a.unison.tmp "
                                               "in its place): let it finish, then try again"),
    ("run.json.nextcloud", f"Nextcloud keeps it on its server (run.json.nextcloud in its place), {SERVER}"),
    ("run.json.owncloud", f"ownCloud keeps it on its server (run.json.owncloud in its place), {SERVER}")])
def test_a_run_json_another_tool_brings_in_or_keeps_elsewhere_is_listed_as_such(tmp_path, stand_in, said):
    run_dir = stood_in(tmp_path / "r", "run.json", stand_in)
    listed = json.loads(audit(tmp_path, "list", str(tmp_path), "--json").stdout)
    assert [(entry["path"], entry["status"], entry["reason"]) for entry in listed] == [
        (str(run_dir), "unreadable", f"in '{run_dir}': run.json: {said}")]


def test_a_seal_rclone_is_copying_in_is_said_to_be(tmp_path):
    stood_in(tmp_path / "r", "seal.json", "seal.json.Zq09aB7x.partial")
    failed = [line for line in audit(tmp_path, "verify", "r").stdout.splitlines() if line.startswith("FAIL")]
    assert failed[0].endswith(
        f": rclone is copying it here (seal.json.Zq09aB7x.partial in its place, what it copied so far): {COPY}")


def test_a_clock_step_in_a_session_later_killed_is_noted_in_run_json(tmp_path, monkeypatch):
    run_dir = killed_after_a_step(tmp_path / "r", monkeypatch)
    info = json.loads((run_dir / "run.json").read_text())
    assert (info["status"], info["history"], (run_dir / "seal.json").exists()) == (
        "running", [{"clock_stepped_back_s": 3.0}], False)


# -- a fresh pass ------------------------------------------------------------------------------------------------------


def test_a_runs_records_reach_the_disk_before_its_seal_is_written(tmp_path, monkeypatch):
    synced = fsynced(monkeypatch)
    synthetic_run(tmp_path / "r", [1, 0])
    ended = synced[synced.index("responses.jsonl"):]
    assert [re.sub(r"\.\d+\.[0-9a-f]{12}\.tmp$", "", name) for name in ended] == [
        "responses.jsonl", "scores.jsonl", "records.sha256", ".summary.json", "r", ".run.json", "r", ".seal.json", "r",
        "run.lock"]


def test_a_run_compressed_in_place_is_listed_as_such(tmp_path):
    run_dir = stood_in(tmp_path / "r", "run.json", "run.json.gz")
    listed = json.loads(audit(tmp_path, "list", str(tmp_path), "--json").stdout)
    assert [(entry["status"], entry["reason"]) for entry in listed] == [
        ("unreadable", f"in '{run_dir}': run.json: gzip compressed it (run.json.gz in its place), which benchrun does "
                       f"not read: decompress it (`gunzip {run_dir}/run.json.gz`), then try again")]


def test_a_record_file_compressed_in_place_is_said_to_be_by_verify(tmp_path):
    run_dir = stood_in(tmp_path / "my runs", "responses.jsonl", "responses.jsonl.zst")
    done = audit(tmp_path, "verify", str(run_dir))
    assert [line for line in done.stdout.splitlines() if line.startswith("FAIL")] == [
        "FAIL  responses.jsonl: missing (2 lines, 512 bytes when the run finished): zstd compressed it "
        f"(responses.jsonl.zst in its place), which benchrun does not read: decompress it (`unzstd '{run_dir}/"
        "responses.jsonl.zst'`), then try again"]
    assert done.returncode == 1


TWO_MACHINES = "(the run's folder was written on two machines at once)"


def test_a_conflict_copy_of_a_runs_file_holding_another_version_fails_verify(tmp_path):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    copy = "responses.sync-conflict-20261207-101010-ABCDEFG.jsonl"
    conflict_copy(run_dir, "responses.jsonl", copy, b'{"id": "t:a=2"}\n')
    done = audit(tmp_path, "verify", "r")
    assert [line for line in done.stdout.splitlines() if "conflict copy of" in line] == [
        f"FAIL  {copy}: Syncthing's conflict copy of responses.jsonl {TWO_MACHINES}: another version of "
        "responses.jsonl, which no digest of the run covers (it may hold answers the run lacks): compare the two, and "
        "keep one"]
    assert done.returncode == 1


def test_a_conflict_copy_of_a_rescores_file_fails_verify(tmp_path):
    rescore_dir = rescored(tmp_path) / "rescores" / "001"
    conflict_copy(rescore_dir, "scores.jsonl", "scores_conflict-20261207-101010.jsonl", b"\n")
    done = audit(tmp_path, "verify", str(rescore_dir.parent.parent))
    assert [line for line in done.stdout.splitlines() if "conflict copy of" in line] == [
        f"FAIL  rescores/001/scores_conflict-20261207-101010.jsonl: ownCloud's conflict copy of scores.jsonl "
        f"{TWO_MACHINES}: another version of scores.jsonl, which no digest of the run covers (it may hold answers the "
        "run lacks): compare the two, and keep one"]
    assert done.returncode == 1


def test_a_conflict_copy_of_a_runs_file_holding_its_bytes_is_said(tmp_path):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    conflict_copy(run_dir, "run.json", "run (gpu2's conflicted copy 2026-12-07).json")
    done = audit(tmp_path, "verify", "r")
    assert [line for line in done.stdout.splitlines() if "conflict copy of" in line] == [
        f"ok    run (gpu2's conflicted copy 2026-12-07).json: Dropbox (or Nextcloud)'s conflict copy of run.json "
        f"{TWO_MACHINES}: the same bytes as run.json; remove it"]
    assert done.returncode == 0


@pytest.mark.parametrize(("size", "said"), [
    (300, "truncated: it ends part way through line 2"),
    (100, "truncated: it ends part way through line 1, 1 line of 2 written missing after it")])
def test_a_record_file_cut_short_part_way_through_a_line_is_said_to_be_truncated(tmp_path, size, said):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    os.truncate(run_dir / "responses.jsonl", size)  # of 512 bytes, 256 a line
    done = audit(tmp_path, "verify", "r")
    assert [line for line in done.stdout.splitlines() if line.startswith("FAIL")] == [f"FAIL  responses.jsonl: {said}"]
    assert done.returncode == 1


def test_a_run_file_a_browser_is_downloading_is_said_to_be(tmp_path):
    stood_in(tmp_path / "r", "responses.jsonl", "responses.jsonl.crdownload")
    done = audit(tmp_path, "show", "r")
    assert (done.returncode, done.stderr) == (4, (
        "benchrun: error: in 'r': run 555555555555 has no responses.jsonl: a download is copying it here "
        f"(responses.jsonl.crdownload in its place, what it copied so far): {COPY}\n"))


@pytest.mark.parametrize(("stand_in", "also"), [
    ("run.json.orig", " (run.json.orig is here: its run.json renamed, or half copied)"),
    (".rsync-partial/run.json", "")])
def test_a_run_copied_in_part_without_its_run_json_is_listed_as_such(tmp_path, stand_in, also):
    (tmp_path / "r" / ".rsync-partial").mkdir(parents=True)
    run_dir = stood_in(tmp_path / "r", "run.json", stand_in)
    listed = json.loads(audit(tmp_path, "list", str(tmp_path), "--json").stdout)
    assert [(entry["status"], entry["reason"]) for entry in listed] == [
        ("unreadable", f"in '{run_dir}': no run.json, though it holds a run's records.sha256, responses.jsonl, "
                       f"seal.json: a copy of the run stopped part way, or still coming{also}")]

"""Hostile input, thirty-eighth pass, the archive and audit side (what the thirty-seventh left, then a fresh pass): the
cases it found bad, each with the rule it now obeys.

1. verify of a run whose rescores/ holds `001 (1)` (the copy a file manager makes of rescore 001), or a file put there:
   passed over without a word; what is in rescores/ that no rescore made (each makes one folder named by its number)
   is said and fails verify, a hidden file (`.DS_Store`) passed over (`audit.rescorecheck._unnumbered`)
2. `list` (and `show ID`) with no root in a working directory deleted since the shell entered it: `no archive
   directory 'outputs'`; a relative path looked in there is refused saying the working directory is gone, as every
   other command says (`archive.lookup.refuse_gone_cwd`)
3. `compare` of two runs whose embedded engine loaded other llama.cpp or ggml libraries (run.json's
   identity.libraries): not shown; each library is compared by its file's name and sha256, the same build loaded from
   another folder being the same code (`audit.provenance._libraries`)

A fresh pass:

4. a run kept in a git repository with Git LFS, cloned without it: each record file a pointer (`version
   https://git-lfs.github.com/spec/v1`, the oid the file's sha256): show, export and verify said `line 1 is not the
   line written (2 lines differ)` and `1 line after line 2 not written by the run`; run.json a pointer: `unreadable:
   Invalid JSON: expected value at line 1 column 1`; manifest.json one: `its sha256 is not the manifest id`, seal.json
   one: `unreadable: Invalid JSON`; a file found changed (or unreadable) whose bytes tell what stands in its place is
   said to be that, with what to do (`archive.standins.stood_in`, used by `trust`, `ledger`, `audit.digests` and
   `reader`)
5. a run's record file (or run.json) holding a git merge's conflict markers (`<<<<<<< HEAD` ... `>>>>>>> other`):
   `line 1 is not the line written`; said to be a merge's, with where its markers are (`archive.standins`)
6. a record file whose end a crash of the machine left as NUL bytes (the file's size written, its data not):
   `line 2 is not the line written`, by verify and by resume of a killed run; said to be NUL bytes from where, which
   a crash leaves (`archive.standins`)
8. a killed run whose records.sha256 holds a merge's conflict markers: verify said `responses.jsonl: line 2 is not the
   line written` (the digest lines shifted), naming no fault of records.sha256, and resume `records.sha256: line 1 is
   not a digest line`; both say the markers (`audit.verify._digested`, `archive.ledger._read_digests`), and a
   records.sha256 ending in NUL bytes is said to be what a crash leaves; one that is a named pipe is never opened
   to look (verify of such a run waited for ever on it while this pass's check was being made: `stood_in` reads
   regular files only)
9. a run that rsync is copying in (its record file not yet there, rsync's `.responses.jsonl.Xa9kQ2` in its place):
   show said `its records are gone`, verify `missing`; said to be rsync's copy, to let it finish, as Syncthing's
   was (`core.filebytes.kept_elsewhere`, shared)

What the thirty-seventh pass left, decided last:

7. a response cache row edited by hand (`UPDATE answers SET answer = ...` in a sqlite3 shell), or an answer moved
   under another key: served as the model's answer, `cached_from` the run that asked it; each row now keeps the
   sha256 of its key and columns as written (`sealed`), checked as it is read: a row that does not match is a miss,
   deleted, and asked again (`execute.cacheseal`); a cache of schema version 1 is given the column as a run opens it,
   its rows (unsealed) misses, and is listed by `benchrun-audit cache` as it was
"""
from __future__ import annotations

import json
import os

import pytest

from benchrun.execute.cache import Store
from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.cacheentry import entry
from tests.helpers.p27_archive import killed_here
from tests.helpers.p37_archive import audit_in_deleted_folder
from tests.helpers.p38_archive import (
    V1_SCHEMA,
    audit_process,
    conflicted,
    engine_runs,
    lfs_pointer,
    rescore_copied,
    resume_refused,
    zeroed_from,
)
from tests.helpers.sqlitefile import sqlite_db

GONE = "no such file or directory (deleted since the shell entered it?); cd to a directory that exists"

# -- what the thirty-seventh pass left ---------------------------------------------------------------------------------


def test_what_no_rescore_made_in_rescores_is_said_by_verify(tmp_path):
    run_dir = rescore_copied(tmp_path)
    done = audit(tmp_path, "verify", str(run_dir))
    said = [line for line in done.stdout.splitlines() if line.startswith("FAIL")]
    why = ("that no rescore made: a rescore's folder is named by its number (001, 002, ...); put there since (a copy a "
           "file manager made?), nothing in it is checked as the run's")
    assert (done.returncode, said) == (1, [f"FAIL  rescores/001 (1): a folder {why}",
                                           f"FAIL  rescores/notes.txt: a file {why}"])
    assert done.stdout.splitlines()[-1] == "NOT intact: 2 problems"


@pytest.mark.parametrize("args", [("list",), ("show", "5555")])
def test_list_and_show_in_a_deleted_working_directory_say_so(tmp_path, args):
    synthetic_run(tmp_path / "outputs" / "r", [1, 0])
    gone = tmp_path / "gone"
    done = audit_in_deleted_folder(gone, *args)
    assert (done.returncode, done.stdout, done.stderr) == (
        4, "", f"benchrun: error: the working directory {gone}: {GONE}\n")


def test_compare_shows_the_engine_libraries_that_differ(tmp_path):
    same = "2" * 64
    engine_runs(tmp_path, {"/v/lib/libllama.so": "1" * 64, "/v/lib/libggml-cpu.so": same},
                {"/w/lib/libllama.so": "3" * 64, "/w/lib/libggml-cpu.so": same})
    done = audit(tmp_path, "compare", "a", "b")
    assert done.returncode == 0
    lines = [line for line in done.stdout.splitlines() if line.startswith("  provenance")]
    assert lines == ['  provenance model.libraries.libllama.so: "111111111111" -> "333333333333"']


# -- a fresh pass ------------------------------------------------------------------------------------------------------

LFS = ("in its place, not the file: the repository was cloned or checked out without Git LFS; run `git lfs pull` in "
       "it, then try again")


def test_a_record_file_git_lfs_left_as_a_pointer_is_said_to_be_one(tmp_path):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    oid = lfs_pointer(run_dir / "responses.jsonl")
    said = f"a Git LFS pointer to the file as written (sha256 {oid[:12]}…, 512 bytes) {LFS}"
    done = audit(tmp_path, "export", "r")
    assert (done.returncode, done.stdout, done.stderr) == (
        4, "", f"benchrun: error: in 'r': run 555555555555: responses.jsonl: changed since the run ended: {said}, so "
               "what it says cannot be trusted; benchrun-audit verify r says what changed\n")


@pytest.mark.parametrize(("name", "said"), [("responses.jsonl", "changed since the run finished: "),
                                            ("manifest.json", "changed: "), ("config.yaml", "changed since the run "
                                                                                            "finished: "),
                                            ("seal.json", "unreadable: ")])
def test_verify_says_each_file_git_lfs_left_as_a_pointer(tmp_path, name, said):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    size = (run_dir / name).stat().st_size
    oid = lfs_pointer(run_dir / name)
    to = "a file" if name == "seal.json" else "the file as written"
    done = audit(tmp_path, "verify", "r")
    assert [line for line in done.stdout.splitlines() if line.startswith("FAIL")][0] == (
        f"FAIL  {name}: {said}a Git LFS pointer to {to} (sha256 {oid[:12]}…, {size:,} bytes) {LFS}")


def test_a_run_json_git_lfs_left_as_a_pointer_is_said_to_be_one(tmp_path):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    size = (run_dir / "run.json").stat().st_size
    oid = lfs_pointer(run_dir / "run.json")
    done = audit(tmp_path, "show", "r")
    assert (done.returncode, done.stderr) == (
        4, f"benchrun: error: in 'r/run.json': unreadable: a Git LFS pointer to a file (sha256 {oid[:12]}…, "
           f"{size:,} bytes) {LFS}\n")


def test_a_record_file_holding_a_merge_conflict_is_said_to_be_one(tmp_path):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    conflicted(run_dir / "responses.jsonl")
    done = audit(tmp_path, "verify", "r")
    assert [line for line in done.stdout.splitlines() if line.startswith("FAIL")] == [
        "FAIL  responses.jsonl: changed since the run finished: it holds a merge's conflict markers (`<<<<<<<` at line "
        "1, `>>>>>>>` at line 5): git joined two versions of it; check out the one that verifies (`git checkout "
        "--ours` or `--theirs` on it), then try again"]


CRASHED = ("its last 212 bytes (from byte 300 on) are NUL bytes, which benchrun never writes: what a file system "
           "leaves of writes that a crash of the machine (power lost) kept from its disk; what was written there is "
           "gone: restore the file from a copy")


def test_a_record_file_a_crash_left_nul_bytes_in_is_said_so(tmp_path):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    zeroed_from(run_dir / "responses.jsonl", 300)
    done = audit(tmp_path, "verify", "r")
    assert [line for line in done.stdout.splitlines() if line.startswith("FAIL")] == [
        f"FAIL  responses.jsonl: changed since the run finished: {CRASHED}"]


KEPT = ("the records are not what the run wrote; resume with --force to drop what does not belong (recorded in "
        "run.json)\n")


def test_a_resume_of_a_killed_run_a_crash_left_nul_bytes_in_says_so(tmp_path):
    run_dir = killed_here(tmp_path / "r")
    zeroed_from(run_dir / "responses.jsonl", 300)
    assert resume_refused(run_dir, "responses.jsonl") == (
        f"benchrun: error: in 'r/responses.jsonl': line 2 is not the line written: {CRASHED} (2 more problems): {KEPT}")


def test_a_killed_runs_records_sha256_holding_a_merge_conflict_is_said_by_verify_and_resume(tmp_path):
    run_dir = killed_here(tmp_path / "r")
    conflicted(run_dir / "records.sha256")
    said = ("it holds a merge's conflict markers (`<<<<<<<` at line 1, `>>>>>>>` at line 5): git joined two versions "
            "of it; check out the one that verifies (`git checkout --ours` or `--theirs` on it), then try again")
    verified = audit(tmp_path, "verify", "r")
    assert [line for line in verified.stdout.splitlines() if line.startswith("FAIL")][1] == (
        f"FAIL  records.sha256: {said}")
    assert resume_refused(run_dir, "records.sha256") == (
        f"benchrun: error: in 'r/records.sha256': line 1 is not a digest line: {said} (4 more problems): {KEPT}")


def test_verify_of_a_killed_run_whose_records_sha256_is_a_pipe_never_waits_on_it(tmp_path):
    run_dir = killed_here(tmp_path / "r")
    (run_dir / "records.sha256").unlink()
    os.mkfifo(run_dir / "records.sha256")
    done = audit_process(tmp_path, "verify", "r")
    assert (done.returncode, [line for line in done.stdout.splitlines() if "cannot locate" in line]) == (1, [
        "FAIL  responses.jsonl: cannot locate changes: records.sha256 is a named pipe (FIFO) in its place",
        "FAIL  scores.jsonl: cannot locate changes: records.sha256 is a named pipe (FIFO) in its place"])


def test_a_record_file_rsync_is_copying_in_is_said_to_be(tmp_path):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    os.rename(run_dir / "responses.jsonl", run_dir / ".responses.jsonl.Xa9kQ2")
    (run_dir / ".responses.jsonl.tmp").write_text("not rsync's\n")
    done = audit(tmp_path, "show", "r")
    assert (done.returncode, done.stderr) == (
        4, "benchrun: error: in 'r': run 555555555555 has no responses.jsonl: rsync is copying it here "
           "(.responses.jsonl.Xa9kQ2 in its place, what it copied so far): let it finish (or copy it again, if it was "
           "stopped), then try again\n")


# -- the response cache's rows, decided last ---------------------------------------------------------------------------


FORGED = "UPDATE answers SET answer = json_set(answer, '$.text', 'forged') WHERE key = 'k1'"
MOVED = ["DELETE FROM answers WHERE key = 'k1'", "UPDATE answers SET key = 'k1' WHERE key = 'k2'"]
"""An answer edited in a sqlite3 shell; an answer moved under another key (k2's answer served as k1's)."""


@pytest.mark.parametrize("edits", [[FORGED], MOVED])
def test_a_cache_row_edited_by_hand_is_a_miss_never_the_models_answer(tmp_path, edits):
    with Store(tmp_path) as store:
        for key, text in (("k1", "one"), ("k2", "two"), ("k3", "three")):
            store.put(key, entry(text=text))
    with sqlite_db(tmp_path / "responses.sqlite3") as db:
        for edit in edits:
            db.execute(edit)
    with Store(tmp_path) as store:
        assert store.get_many(["k1", "k2", "k3"]) == ({"k2": entry(text="two"), "k3": entry(text="three")}
                                                      if len(edits) == 1 else {"k3": entry(text="three")})
        assert store._db.execute("SELECT key FROM answers ORDER BY key").fetchall() == (
            [("k2",), ("k3",)] if len(edits) == 1 else [("k3",)])


def test_a_cache_of_schema_version_1_is_given_seals_and_its_rows_are_misses(tmp_path):
    with sqlite_db(tmp_path / "responses.sqlite3") as db:
        for statement in V1_SCHEMA:
            db.execute(statement)
        db.execute("INSERT INTO answers VALUES ('k1', 'm', NULL, 'r', '2026-12-01T10:00:00+00:00', ?)",
                   (entry().answer.model_dump_json(),))
    listed = audit(tmp_path, "cache", "--cache-dir", str(tmp_path), "--json")
    assert (listed.returncode, json.loads(listed.stdout)["models"]) == (0, [
        {"model": "m", "digest": None, "entries": 1, "newest": "2026-12-01T10:00:00+00:00"}])
    with Store(tmp_path) as store:
        assert (store.get("k1"), store._version()) == (None, "2")
        store.put("k1", entry())
        assert store.get("k1") == entry()

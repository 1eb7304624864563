"""Hostile input, thirty-seventh pass, the archive and audit side (what the thirty-sixth left, then a fresh pass): the
cases it found bad, each with the rule it now obeys.

1. `list /` (or a root holding a link to /proc or /sys) walked the kernel's pseudo file systems, listing 22,000
   folders of /proc as unreadable runs and taking a minute to print; a folder on one of them (proc, sysfs, cgroup,
   debugfs, ...: `core.procfs.kernel_devices`, shared) is passed over, no run being written there
   (`archive.lookup._walk`); a run reached through a link, or on another real mount, is found as before
2. `export`/`report --output P` with P legal but within 26 bytes of PATH_MAX: `file name too long writing P`, the
   temporary file beside P the one too long; it is made and renamed from its folder (`archive.atomic._folder`)
3. `verify .` (or show, export) in a run's `rescores/001/` or `rescores/`: `not a run directory (no run.json)`; the
   error names the run they belong to, with which they are read (`archive.lookup._rescores_of`)

A fresh pass:

4. standard output a file under a file-size limit (`ulimit -f`) with PYTHONUNBUFFERED=1 (or `python -u`; Docker
   images and CI set it): `list ROOT > FILE` wrote the first 1,024 bytes of its table and exited 0, without a word;
   Python's unbuffered text stream drops what a write the system takes in part leaves; standard output (and error)
   is written through a buffer flushed after each write, which writes the rest or fails, said as every failed
   write of standard output is (`core.stdfds.whole_writes`, shared)
5. an audit command run in a working directory deleted since the shell entered it (as the run side refuses since the
   seventh pass): `verify /abs/RUN`, `rescore /abs/RUN --scorers /abs/F`, `export /abs/RUN --output rel.csv` said
   `no such file or directory`, naming nothing; an OSError naming no file, when the working directory cannot be had,
   is said to be that (`core.errors.cwd_gone`, shared, and the run side's check made of it)
6. `rescore RUN --scorers mine.py` with mine.py in a folder whose path is not UTF-8 (`b\\xffd/`): a
   UnicodeEncodeError's traceback (naming the module, then writing rescore.json, which records the file's path as
   text); refused before anything is written, as the run side refuses such a working directory
   (`audit.rescorers.load_scorers`)
7. an archive on a disk Windows used, whose recycle bin (`$RECYCLE.BIN/S-1-5-.../$R...`) holds a run deleted in
   Explorer: `list` listed the deleted run as a live one, and `show ID` was refused, `run id ... is the id of 2 run
   directories (copies of one run?)`; as of fsck's `lost+found` (which only root may read) and `System Volume
   Information`: the folders an operating system keeps for itself are passed over, as hidden ones (`.Trash-1000`)
   were (`archive.lookup._os_kept`)
8. a run in iCloud Drive whose record file macOS moved to the cloud ("Optimise Mac Storage"), leaving its
   placeholder `.responses.jsonl.icloud`: show, export, report and rescore said `its records are gone`, verify
   `missing`; each says where the file is and what to do (`core.filebytes.kept_elsewhere`, shared); of its run.json
   moved so, `list` passed the run over without a word and verify said `not a run directory (no run.json)`: the run
   is listed unreadable, and the error says where its run.json is (`archive.lookup`); likewise a record file a sync
   tool is copying in (Syncthing's `.syncthing.NAME.tmp` or `~syncthing~NAME.tmp`, Resilio Sync's `NAME.!sync` in
   its place): said to be that, to let it finish (`core.filebytes.kept_elsewhere`)
9. `resume` of a killed run whose responses.jsonl iCloud Drive moved to the cloud: refused `truncated: 2 lines of 2
   written missing after line 0 ...; resume with --force to drop what does not belong`, and with --force it went on
   past the check (to ask again and write a responses.jsonl anew, the run's own lines left in the cloud); a
   record file kept elsewhere is refused first, --force or not (`archive.trust.records_elsewhere`)
10. a sweep whose job's run.json iCloud Drive moved to the cloud: `export SWEEP` exported the other jobs alone, exit
    0, `compare SWEEP` said `compare needs at least two runs (got 1)`: the folder was no job; it is a job whose run
    cannot be read, said where its run.json is (`archive.lookup.own_run`, `archive.pathmax.unopened`)
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.p27_archive import killed_here
from tests.helpers.p28_archive import ONE, rescored
from tests.helpers.p37_archive import audit_in_deleted_folder, audit_into_file, deep_folder

# -- what the thirty-sixth pass left -----------------------------------------------------------------------------------


def test_list_passes_over_the_kernels_pseudo_file_systems_and_finds_runs_through_links(tmp_path):
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    run_dir = synthetic_run(root / "r", [1, 0])
    linked = synthetic_run(elsewhere / "s", [1], run_id="6" * 12)
    for name, target in (("proc", "/proc"), ("sys", "/sys"), ("more", str(elsewhere))):
        (root / name).symlink_to(target)
    listed = json.loads(audit(tmp_path, "list", str(root), "--json").stdout)
    assert [(entry["path"], entry["status"]) for entry in listed] == [
        (str(root / "more" / "s"), "completed"), (str(run_dir), "completed")]
    assert linked.is_dir()


@pytest.mark.parametrize("size", [4080, 4095])
def test_export_and_report_write_a_legal_output_path_near_path_max(tmp_path, size):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    exported, reported = deep_folder(tmp_path, size, "export"), deep_folder(tmp_path, size, "report")
    done = audit(tmp_path, "export", str(run_dir), "--output", str(exported))
    assert (done.returncode, done.stderr) == (0, "")
    assert exported.read_text() == audit(tmp_path, "export", str(run_dir)).stdout
    done = audit(tmp_path, "report", str(run_dir), "--output", str(reported))
    assert (done.returncode, done.stderr) == (0, "")
    assert reported.read_text().startswith("<!DOCTYPE html>")
    assert sorted(os.listdir(exported.parent)) == ["export", "report"]


@pytest.mark.parametrize(("where", "said"), [("rescores/001", "rescore 001"), ("rescores", "the rescores/ folder")])
def test_an_audit_command_in_a_runs_rescores_names_the_run_they_belong_to(tmp_path, where, said):
    run_dir = rescored(tmp_path)
    told = f"it is {said} of the run in {run_dir}: name that run, with which it is read"
    for command, why in (("verify", "not a run directory (no run.json)"),
                         ("export", "neither a run nor a sweep directory (no run.json in it or the folders directly "
                                    "in it)")):
        done = audit(run_dir / where, command, ".")
        assert (done.returncode, done.stdout, done.stderr) == (4, "", f"benchrun: error: in '.': {why}; {told}\n")


# -- a fresh pass ------------------------------------------------------------------------------------------------------


def test_standard_output_cut_short_by_a_file_size_limit_unbuffered_is_said(tmp_path):
    synthetic_run(tmp_path / "r", [0.5] * 300)
    done = audit_into_file(tmp_path, tmp_path / "out.txt", 1024, "list", ".")
    assert (done.returncode, done.stderr) == (4, "benchrun: error: file too large for this process's file-size limit "
                                                 "(ulimit -f: 1024 bytes) writing standard output: what was printed "
                                                 "was cut short, not what was recorded\n")
    assert (tmp_path / "out.txt").stat().st_size == 1024


@pytest.mark.parametrize("args", [("verify", "r"), ("rescore", "r", "--scorers", "mine.py", "--only"),
                                  ("export", "r", "--output", "x.csv")])
def test_an_audit_command_in_a_deleted_working_directory_says_so(tmp_path, args):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    (tmp_path / "mine.py").write_text(ONE)
    before = sorted(os.listdir(run_dir))
    gone = tmp_path / "gone"
    done = audit_in_deleted_folder(gone, *(str(tmp_path / arg) if arg in ("r", "mine.py") else arg for arg in args))
    assert (done.returncode, done.stdout, done.stderr) == (
        4, "", f"benchrun: error: the working directory {gone}: no such file or directory (deleted since the shell "
               "entered it?); cd to a directory that exists\n")
    assert sorted(os.listdir(run_dir)) == before


def test_a_rescore_whose_scorer_files_path_is_not_utf8_is_refused_in_one_line(tmp_path):
    folder = os.fsencode(tmp_path) + b"/b\xffd"
    os.mkdir(folder)
    run_dir = synthetic_run(Path(os.fsdecode(folder)) / "r", [1, 0])
    Path(os.fsdecode(folder), "mine.py").write_text(ONE)
    done = audit(run_dir.parent, "rescore", "r", "--scorers", "mine.py", "--only")
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", f"benchrun: error: in 'mine.py': the scorer file's path {tmp_path}/b\\xffd/mine.py is not UTF-8 text, "
               "and rescore.json records it as text; nothing was written; move the file to a folder whose path is\n")
    assert not (run_dir / "rescores").exists()


def test_the_folders_an_operating_system_keeps_are_passed_over_as_hidden_ones(tmp_path):
    run_dir = synthetic_run(tmp_path / "runs" / "r", [1, 0])
    for kept in ("$RECYCLE.BIN/S-1-5-21-1/$R7QK2X1", "$Recycle.Bin/$RA", "lost+found/#1234",
                 "System Volume Information/r", "RECYCLER/r"):
        shutil.copytree(run_dir, tmp_path / kept)
    listed = json.loads(audit(tmp_path, "list", str(tmp_path), "--json").stdout)
    assert [entry["path"] for entry in listed] == [str(run_dir)]
    done = audit(tmp_path, "show", "5555", "--root", str(tmp_path), "--json")
    assert (done.returncode, json.loads(done.stdout)["path"]) == (0, str(run_dir))


def test_a_record_file_icloud_drive_moved_to_the_cloud_is_said_to_be_there(tmp_path):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    os.rename(run_dir / "responses.jsonl", run_dir / ".responses.jsonl.icloud")
    cloud = (f"iCloud Drive keeps it in the cloud (.responses.jsonl.icloud in its place), not on this disk: download "
             f"it (`brctl download {run_dir}/responses.jsonl`, or open its folder in Finder), then try again")
    done = audit(tmp_path, "show", str(run_dir))
    assert (done.returncode, done.stderr) == (
        4, f"benchrun: error: in '{run_dir}': run 555555555555 has no responses.jsonl: {cloud}\n")
    said = [line for line in audit(tmp_path, "verify", str(run_dir)).stdout.splitlines() if line.startswith("FAIL")]
    assert said == [f"FAIL  responses.jsonl: missing (2 lines, 512 bytes when the run finished): {cloud}"]


def test_a_run_json_icloud_drive_moved_to_the_cloud_is_listed_and_said(tmp_path):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    os.rename(run_dir / "run.json", run_dir / ".run.json.icloud")
    cloud = (f"run.json: iCloud Drive keeps it in the cloud (.run.json.icloud in its place), not on this disk: "
             f"download it (`brctl download {run_dir}/run.json`, or open its folder in Finder), then try again")
    listed = json.loads(audit(tmp_path, "list", str(tmp_path), "--json").stdout)
    assert [(entry["path"], entry["status"], entry["reason"]) for entry in listed] == [
        (str(run_dir), "unreadable", f"in '{run_dir}': {cloud}")]
    done = audit(tmp_path, "verify", str(run_dir))
    assert (done.returncode, done.stderr) == (
        4, f"benchrun: error: in '{run_dir}': not a run directory (no run.json); {cloud}\n")


@pytest.mark.parametrize(("stub", "tool"), [(".syncthing.responses.jsonl.tmp", "Syncthing"),
                                            ("~syncthing~responses.jsonl.tmp", "Syncthing"),
                                            ("responses.jsonl.!sync", "Resilio Sync")])
def test_a_record_file_a_sync_tool_is_copying_in_is_said_to_be(tmp_path, stub, tool):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    os.rename(run_dir / "responses.jsonl", run_dir / stub)
    done = audit(tmp_path, "export", str(run_dir))
    assert (done.returncode, done.stderr) == (
        4, f"benchrun: error: in '{run_dir}': run 555555555555 has no responses.jsonl: {tool} is copying it here now "
           f"({stub} in its place): let it finish, then try again\n")


@pytest.mark.parametrize("force", [(), ("--force",)])
def test_a_resume_of_a_run_whose_records_are_in_the_cloud_is_refused_even_forced(tmp_path, force):
    run_dir = killed_here(tmp_path / "r")
    os.rename(run_dir / "responses.jsonl", run_dir / ".responses.jsonl.icloud")
    digests = (run_dir / "records.sha256").read_bytes()
    done = audit(tmp_path, "resume", str(run_dir), *force, "--host", "http://127.0.0.1:9")
    assert (done.returncode, done.stderr) == (
        4, f"benchrun: error: in '{run_dir}/responses.jsonl': missing: iCloud Drive keeps it in the cloud "
           f"(.responses.jsonl.icloud in its place), not on this disk: download it (`brctl download {run_dir}/"
           "responses.jsonl`, or open its folder in Finder), then try again\n")
    assert not (run_dir / "responses.jsonl").exists()
    assert (run_dir / "records.sha256").read_bytes() == digests


def test_a_sweeps_job_whose_run_json_is_in_the_cloud_is_said_not_left_out(tmp_path):
    sweep = tmp_path / "sw"
    synthetic_run(sweep / "0_j0", [1, 0], run_id="a" * 12, label="j0")
    synthetic_run(sweep / "1_j1", [0, 0], run_id="b" * 12, label="j1")
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    os.rename(sweep / "0_j0" / "run.json", sweep / "0_j0" / ".run.json.icloud")
    job = sweep / "0_j0"
    said = (f"benchrun: error: in '{job}': run.json: iCloud Drive keeps it in the cloud (.run.json.icloud in its "
            f"place), not on this disk: download it (`brctl download {job}/run.json`, or open its folder in Finder), "
            "then try again\n")
    for command in ("export", "compare"):
        done = audit(tmp_path, command, str(sweep))
        assert (done.returncode, done.stdout, done.stderr) == (4, "", said)

"""Hostile input, thirty-sixth pass, the archive and audit side (what the thirty-fifth left, then a fresh pass): the
cases it found bad, each with the rule it now obeys.

1. a seal.json that is no JSON (a BOM alone, NUL bytes, empty), too large or no file: verify said `FAIL  seal.json: in
   '.../seal.json': unreadable: ...`, the file named twice in one line; a finding names its file once
   (`errors.without_file`, as manifest.json's did)
2. a benchmark folder verify cannot locate: `sources: not found (task.path 'bénch')` of one whose name a copy from
   macOS re-normalised, or of a task.path whose name is too long for the file system; verify says why as the run's
   own error does, with where it looked and the name there in another Unicode form (`core.resources.bench_dir`)
3. a rejudged rescore's own judge call (`rescores/NNN/judgements.jsonl`, its digest remade) giving seconds longer
   than the rescore took: verify said intact, rescore.json giving when it was written alone; a rescore records when
   it began (`started_at`) and its calls are bounded as a run's (`archive.lineagefields.call_overran`); a rescore
   without one (a benchrun before this pass) is not bounded, its calls' seconds checked to be times only
4. a process on the machine naming itself in bytes of no text (prctl(PR_SET_NAME, b"sl\\xff\\xfe"), as another
   test run's scorer did here): every run and rescore ended its scorer process with a UnicodeDecodeError traceback
   (reading each /proc/PID/stat for the processes below it), as would a resume whose writer's note names such a
   process; the fields after a process's name are read as the ASCII they are (`core.procfs.stat_fields`, shared)
5. a response giving `cached_from` (sealed over) in a run whose config.yaml leaves `cache` unset, of runner.type
   openai: verify said intact; an unset cache was off for a runner of no PINNED type in every benchrun since the
   cache came (b69a343), so such a run took nothing from it (`audit.uncached`); of ollama or local, an unset cache was
   on before 8c35d80 for a draw at random, and a judge's cache was not always told by its own runner: not checked

A fresh pass:

6. a run given by a path so long (4,084 bytes) that its record files' paths pass the system's limit (PATH_MAX, 4,096
   bytes): verify, show, export and rescore said `run ... has no responses.jsonl or scores.jsonl: its records are
   gone` (and of a longer one, `not a run directory (no run.json)`), where every file is there (a path from a folder
   nearer opens it), report said `file name too long: .../sweep.json`, a file nobody named, and `list` left the run
   out; the reader says why (`archive.pathmax`), and the run is listed as unreadable with it
7. a rescore made by a benchrun before b364313 (1606a9f, of 2026-12-01, run and rescored here), whose rescore.json
   digests scores.jsonl alone: verify failed the intact archive, `holds no digest of summary.json, which every
   rescore writes`; such a summary.json is read as it is and checked against what its scores (which the digest
   covers) make, said `ok` (`audit.rescorecheck.UNDIGESTED_SUMMARY`, `audit.summarycheck.RescoreBooks`)
8. a record file with a hole punched in its middle (`fallocate --punch-hole`: its bytes read as NULs, several lines
   one), or a line deleted from its middle: verify said `truncated: 4 lines of 40 written missing after line 36`, the
   lines missing at the end where the file's end is as written; lines missing where lines differ are said missing
   from the first that differs on (`archive.ledger.check_file`)
9. a judged run made by a benchrun before 156073d (a3bd421, a25892c and 8c152b5, run and rescored here), whose
   summary.json gives a judge's kappa worked out in floats (0.39999999999999986 where fractions make 0.4): verify
   failed the intact run and each rescore of it, `judges.names: summary.json's agreement is ...`; a judge's agreement
   is compared within rounding, as every other figure of a summary is (`audit.summarycheck._unmade`)
10. `rescore_run` (the API) called from `python -` in the folder of the scorer file: `TaskError: in '.../<stdin>':
    unreadable: no such file or directory`, the program run (`__main__`, whose file is `<stdin>`) taken for a module
    the scorer file imported from its folder; and from a script in that folder, the script was recorded in
    rescore.json's modules (a compile through the API likewise in the manifest): the program run is none of them
    (`compiler.usercode._own_modules`, shared)
11. a run directory named `-r` (or any path beginning with `-`) given to an audit command: `the following arguments
    are required: RUN`, where RUN was given: argparse reads it as an option; its usage error says so, and how to give
    it (`audit.__main__._Parser`)
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata
from datetime import datetime
from pathlib import Path

import pytest

from benchrun.archive.reader import load_run
from benchrun.audit import rescore_run
from benchrun.core.errors import ArchiveError
from benchrun.core.procfs import PARENT, PROC, descendants, stat_fields
from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.p25_archive import sealed_over
from tests.helpers.p28_archive import ONE, redigested, rescored
from tests.helpers.p29_archive import calls_rewritten, failed, rejudged
from tests.helpers.p31_archive import summary_rewritten
from tests.helpers.p32_archive import sealed_fields, speed_remade
from tests.helpers.p33_archive import judged_run
from tests.helpers.p34_archive import judged_copy
from tests.helpers.p36_archive import deep_run

# -- what the thirty-fifth pass left -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("data", "why"), [
    (b"\xef\xbb\xbf", "Invalid JSON: expected value at line 1 column 1"),
    (b"\0\0", "its last 2 bytes (from byte 0 on) are NUL bytes, which benchrun never writes: what a file system "
              "leaves of writes that a crash of the machine (power lost) kept from its disk; what was written there "
              "is gone: restore the file from a copy"),
])
def test_an_unreadable_seal_is_named_once_by_verify(tmp_path, data, why):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    (run_dir / "seal.json").write_bytes(data)
    done = audit(tmp_path, "verify", "r")
    assert (done.returncode, done.stdout.splitlines()[1]) == (1, f"FAIL  seal.json: unreadable: {why}")


def test_verify_says_a_benchmark_folder_renamed_to_another_unicode_form(tmp_path):
    given, copied = unicodedata.normalize("NFC", "bénch"), unicodedata.normalize("NFD", "bénch")
    synthetic_run(tmp_path / "r", [1, 0], config=f"task: {{path: {given}}}\n")
    (tmp_path / copied).mkdir()
    done = audit(tmp_path, "verify", "r")
    assert done.stdout.splitlines()[-2:] == [
        f"ok    sources: task.path: '{given}' is not a directory (looked in {tmp_path / given}); "
        f"{tmp_path / copied} is there, its name in another Unicode form (NFD, as a copy from macOS names files), "
        "which prints alike but is "
        "another name here: rename it in the form given (NFC): not checked", "intact"]


@pytest.fixture(scope="module")
def rejudge(tmp_path_factory) -> Path:
    """One run rescored with --rejudge (`rejudged`) for the module's tests, each of which edits a copy."""
    return rejudged(tmp_path_factory.mktemp("rejudged"))


def test_a_rejudged_rescores_judge_call_longer_than_the_rescore_is_said_by_verify(tmp_path, rejudge):
    run_dir = judged_copy(tmp_path, rejudge)
    rescore = run_dir / "rescores" / "001"
    info = json.loads((rescore / "rescore.json").read_text())
    took = (datetime.fromisoformat(info["created_at"]) - datetime.fromisoformat(info["started_at"])).total_seconds()
    calls_rewritten(rescore, lambda calls: calls[0].update(seconds=took + 1.5))
    assert failed(tmp_path, run_dir) == [
        f"FAIL  rescores/001/judgements.jsonl: line 1 gives seconds {took + 1.5}, more than the {round(took, 6)} s "
        "from rescores/001/rescore.json's started_at to its created_at, in which the rescore asked it"]
    redigested(rescore, "rescore.json", lambda info: info.pop("started_at"))  # as a benchrun before this pass wrote it
    assert audit(tmp_path, "verify", str(run_dir)).stdout.splitlines()[-1] == "intact"


def test_a_process_named_in_bytes_of_no_text_is_read_from_proc():
    code = ("import ctypes, sys; ctypes.CDLL(None).prctl(15, b'sl\\xff\\xfe', 0, 0, 0); print(flush=True); "
            "sys.stdin.read()")
    with subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE) as child:
        child.stdout.readline()
        named = (PROC / str(child.pid) / "comm").read_bytes()
        found = (child.pid in descendants(os.getpid()), stat_fields(child.pid)[PARENT])
        child.stdin.close()
    assert (named, found) == (b"sl\xff\xfe\n", (True, str(os.getpid())))


def test_a_response_from_the_cache_in_a_run_of_a_runner_no_cache_pins_is_said_by_verify(tmp_path):
    run_dir = synthetic_run(tmp_path / "r", [1, 0], config="task: {path: nowhere}\nrunner: {type: openai, model: m}\n")
    speed_remade(sealed_fields(run_dir, "responses.jsonl", 2, cached_from="a" * 12, attempts=0, seconds=0.0))
    sealed_over(run_dir, lambda text: text.replace('"cached": 0', '"cached": 1'))
    assert failed(tmp_path, run_dir) == [
        "FAIL  responses.jsonl: line 2 gives cached_from 'aaaaaaaaaaaa', where config.yaml leaves cache unset for "
        "runner.type 'openai', whose answers no benchrun kept there: a run made without the response cache took "
        "nothing from it"]


# -- a fresh pass ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("size", "said"), [
    (4084, "its file responses.jsonl's path takes 4,101 bytes, past the system's limit on a path (4,096 bytes, "
           "PATH_MAX): give the run's path from a folder nearer it (cd there)"),
    (4090, "its file responses.jsonl's path takes 4,107 bytes, past the system's limit on a path (4,096 bytes, "
           "PATH_MAX): give the run's path from a folder nearer it (cd there)"),
])
def test_a_run_whose_files_paths_pass_path_max_is_said_so_not_gone(tmp_path, size, said):
    run_dir = deep_run(tmp_path, size)
    error = str(ArchiveError(said, file=str(run_dir)))
    for command in ("verify", "show", "export", "report", "rescore"):
        done = audit(tmp_path, command, str(run_dir))
        assert (done.returncode, done.stdout, done.stderr) == (4, "", f"benchrun: error: {error}\n")
    listed = json.loads(audit(tmp_path, "list", str(tmp_path), "--json").stdout)
    assert [(entry["path"], entry["status"], entry["reason"]) for entry in listed] == [
        (str(run_dir), "unreadable", error)]
    assert audit(run_dir.parent, "verify", run_dir.name).stdout.splitlines()[-1] == "intact"


def test_a_rescore_whose_summary_a_benchrun_before_b364313_did_not_digest_is_checked_by_its_scores(tmp_path):
    rescore = rescored(tmp_path) / "rescores" / "001"
    info = json.loads((rescore / "rescore.json").read_text())
    del info["files"]["summary.json"], info["started_at"]  # as 1606a9f wrote it
    (rescore / "rescore.json").write_text(json.dumps(info, indent=2))
    done = audit(tmp_path, "verify", "r")
    assert (done.returncode, done.stdout.splitlines()[-3:]) == (0, [
        "ok    rescores/001/summary.json: no digest in rescore.json, as a benchrun before b364313 wrote it: checked "
        "against what its scores make", "ok    sources: task.path: 'nowhere' is not a directory (looked in "
        f"{tmp_path / 'nowhere'}): not checked", "intact"])
    summary = json.loads((rescore / "summary.json").read_text())
    summary["metrics"][0]["mean"] = 0.5
    (rescore / "summary.json").write_text(json.dumps(summary, indent=2))
    assert failed(tmp_path, rescore.parent.parent) == [
        "FAIL  rescores/001/summary.json: t/closeness: summary.json's mean is 0.5, its score records make 1.0: not as "
        "the rescore wrote it, which tallied its records"]


def test_lines_missing_where_a_hole_was_punched_are_said_from_there_not_at_the_end(tmp_path):
    run_dir = synthetic_run(tmp_path / "r", [1, 0] * 20)
    with open(run_dir / "responses.jsonl", "r+b") as handle:  # as a hole punched in it reads
        handle.seek(1024)
        handle.write(bytes(1024))
    assert failed(tmp_path, run_dir) == [
        "FAIL  responses.jsonl: line 5 is not the line written (32 lines differ)",
        "FAIL  responses.jsonl: 4 lines of 40 written missing from line 5 on (where the lines begin to differ)"]


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> Path:
    """One judged run (`judged_run`) for the module's tests, each of which edits a copy."""
    return judged_run(tmp_path_factory.mktemp("judged"))


@pytest.mark.parametrize(("agreement", "said"), [(1.0 - 2 ** -52, None), (0.875, (
    'FAIL  summary.json: judges.names: summary.json\'s agreement is {"answers": 8, "kappa": null, "repeats": 1, '
    '"self_agreement": null, "with_scorers": {"contains": {"agreement": 0.875, "answers": 8, "kappa": null}}}, its '
    'judge calls and scores make {"answers": 8, "kappa": null, "repeats": 1, "self_agreement": null, "with_scorers": '
    '{"contains": {"agreement": 1.0, "answers": 8, "kappa": null}}}: show, list and compare read it, export and report '
    'read the records'))])
def test_a_judges_agreement_worked_out_in_floats_is_read_within_rounding(tmp_path, judged, agreement, said):
    run_dir = judged_copy(tmp_path, judged)
    summary_rewritten(run_dir, lambda summary: summary["judges"]["names"]["with_scorers"]["contains"].update(
        agreement=agreement))
    done = audit(tmp_path, "verify", str(run_dir))
    if said is None:
        assert (done.returncode, done.stdout.splitlines()[-1]) == (0, "intact")
    else:
        assert failed(tmp_path, run_dir) == [said]


@pytest.mark.parametrize("program", ["<stdin>", "driver.py"])
def test_the_program_calling_rescore_is_no_module_its_scorer_file_imported(tmp_path, monkeypatch, program):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    (tmp_path / "mine.py").write_text(ONE)
    (tmp_path / "driver.py").write_text("import benchrun.audit\n")
    monkeypatch.setattr(sys.modules["__main__"], "__file__", str(tmp_path / program), raising=False)
    monkeypatch.setitem(sys.modules, "__mp_main__", sys.modules["__main__"])  # as multiprocessing names it too
    monkeypatch.chdir(tmp_path)
    done = rescore_run(load_run(run_dir), scorers_file="mine.py", only=True)
    assert (done.info.modules, json.loads((run_dir / "rescores" / "001" / "rescore.json").read_text()).keys()) == (
        (), {"schema_version", "rescore", "run_id", "manifest_id", "created_at", "benchrun", "selected", "scorers",
             "counts", "files", "started_at"})


@pytest.mark.parametrize("args", [("verify", "-r"), ("show", "-r"), ("export", "-r", "--format", "csv")])
def test_a_run_path_beginning_with_a_dash_is_said_to_read_as_an_option(tmp_path, args):
    synthetic_run(tmp_path / "-r", [1, 0])
    done = audit(tmp_path, *args)
    assert (done.returncode, done.stdout, done.stderr.splitlines()[-1]) == (2, "", (
        f"benchrun-audit {args[0]}: error: the following arguments are required: RUN ('-r' is a path that reads as an "
        "option: give it as ./-r, or after --)"))
    assert audit(tmp_path, "verify", "--", "-r").stdout.splitlines()[-1] == "intact"

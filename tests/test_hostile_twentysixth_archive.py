"""Hostile input, twenty-sixth pass, the archive and audit side (what the twenty-fifth left, then a fresh pass): the
cases it found bad, each with the rule it now obeys.

- a run copied with hard links (`cp -al`): verify said both copies intact, not saying that every writer refuses a
  file of other names. Such a file holds what its digest says: it passes, said to be one (`audit.heldfiles.held`)
- a symbolic link to a file in the same run (`summary.json -> .s`) was said to leave the run directory not holding
  what it wrote; it is said to be a link to another name's file there (`audit.heldfiles`)
- a finished run's record line giving a key twice, sealed over: show --samples, export and report read its last
  value (verify failed it). Each record line is read once-only too (`archive.reader._given_once`)
- show of a finished run whose manifest's schema_version is unknown showed it (export, report, verify refuse it):
  show reads the manifest too (`archive.reader.Run.require_manifest`)
- a sweep's job folder that is a symbolic link counted as a job (export, report, list): a job is a folder of the
  sweep's own (`archive.lookup.sweep_jobs`, `_walk`)
- verify of a killed run read records.sha256 five times: once per state of the file (`archive.ledger.read_digests`)
- run.json, the seal, summary.json and rescore.json were parsed twice (pydantic's, then Python's for keys given
  twice): parsed once, validated from that data, read as pydantic's JSON reader read them
  (`archive.jsononce.as_model`)
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from benchrun.archive import filedigest, ledger, reader
from benchrun.archive.jsononce import as_model
from benchrun.archive.reader import load_run
from benchrun.audit.verify import verify_run
from benchrun.core.errors import EXIT
from benchrun.core.records import RunInfo, Seal
from tests.helpers.archives import replace_manifest, synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.p26_archive import sealed_line, sweep_with_a_linked_job

TWICE = "is given twice in one object (which one is meant, JSON does not say); give each key once"


def _failed(cwd: Path, run_dir: Path) -> list[str]:
    """The FAIL lines and the last line `verify RUN` printed; it must have said the run is not intact."""
    done = audit(cwd, "verify", str(run_dir))
    assert done.returncode == EXIT["not_intact"], done.stdout
    return [line for line in done.stdout.splitlines() if line.startswith(("FAIL", "NOT"))]


# -- a run's files are its own -----------------------------------------------------------------------------------------

HARD_LINKED = ("a file of 2 names (hard links, as `cp -al` or a backup's snapshot makes): what it holds is checked as "
               "any file's; benchrun writes into no such file (resume refuses it): copy the run with `cp -r` to resume it")


def _said(cwd: Path, run_dir: Path) -> list[str]:
    """The lines of `verify RUN` that name hard links, and its last; it must have said the run is intact."""
    done = audit(cwd, "verify", str(run_dir))
    assert done.returncode == EXIT["ok"], done.stdout
    return [line for line in done.stdout.splitlines() if "hard links" in line or line.startswith(("FAIL", "intact"))]


def test_verify_says_a_run_copied_with_hard_links_holds_what_it_wrote(tmp_path):
    """`cp -al r copy` (a backup tool's snapshot): every file of the copy is the run's under a second name. The lead's
    rule over the helper's first (each such file a FAIL, the original run too, once any backup of it was made): what a
    file holds is what its digest says, and it is said that resume will not write into it."""
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    subprocess.run(["cp", "-al", str(run_dir), str(tmp_path / "copy")], check=True)
    names = ["config.yaml", "manifest.json", "run.json", "responses.jsonl", "scores.jsonl", "records.sha256",
             "summary.json", "seal.json", "run.lock"]
    expected = [*(f"ok    {name}: {HARD_LINKED}" for name in names), "intact"]
    assert _said(tmp_path, tmp_path / "copy") == expected
    assert _said(tmp_path, run_dir) == expected


def test_verify_names_one_record_file_hard_linked_into_another_run(tmp_path):
    """One run's scores.jsonl hard-linked in place of another's equal one (both runs wrote the same lines)."""
    first, second = synthetic_run(tmp_path / "a", [1, 0]), synthetic_run(tmp_path / "b", [1, 0])
    (second / "scores.jsonl").unlink()
    (second / "scores.jsonl").hardlink_to(first / "scores.jsonl")
    assert _said(tmp_path, second) == [f"ok    scores.jsonl: {HARD_LINKED}", "intact"]


def test_a_link_to_a_file_in_the_same_run_is_said_to_be_one(tmp_path):
    """`summary.json -> .s` in the run's directory: said to leave the directory not holding what the run wrote."""
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    (run_dir / "summary.json").rename(run_dir / ".s")
    (run_dir / "summary.json").symlink_to(".s")
    assert _failed(tmp_path, run_dir) == [
        "FAIL  summary.json: a symbolic link (to .s, in the run directory) in place of the run's own file, which its "
        "writer never makes: it reads another name's file, which no digest of the run names", "NOT intact: 1 problem"]


# -- read once-only everywhere -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", [("export",), ("report",), ("show", "--samples")])
def test_a_sealed_record_line_giving_a_key_twice_is_refused(tmp_path, command):
    """A finished run's score line `{"closeness": 0, "closeness": 1}`, its digests and seal redone: read as 1."""
    run_dir = sealed_line(synthetic_run(tmp_path / "r", [1, 0]), "scores.jsonl", 2,
                          lambda line: line.replace(b'{"closeness":1}', b'{"closeness":0,"closeness":1}'))
    done = audit(tmp_path, *command, str(run_dir))
    assert done.returncode == EXIT["archive"]
    assert done.stderr == (f"benchrun: error: in '{run_dir / 'scores.jsonl'}': line 2: unreadable: the key "
                           f"\"closeness\" {TWICE}\n")
    assert f"FAIL  scores.jsonl: line 2 reads two ways: the key \"closeness\" {TWICE}" in _failed(tmp_path, run_dir)


def test_show_refuses_a_manifest_of_a_schema_version_it_does_not_know(tmp_path):
    """A finished run's manifest at schema_version 2, its id and seal redone: show showed it, export refused it."""
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    replace_manifest(run_dir, lambda manifest: manifest.update(schema_version=2))
    line = (f"benchrun: error: in '{run_dir / 'manifest.json'}': not a manifest: schema_version: schema version 2, "
            "which this benchrun does not know (written by a newer benchrun? read it with that one)\n")
    for command in ("show", "export"):
        done = audit(tmp_path, command, str(run_dir))
        assert (done.returncode, done.stderr) == (EXIT["archive"], line)


def test_a_sweeps_job_folder_that_is_a_link_is_no_job(tmp_path):
    """`outputs/sw/1 -> elsewhere`: export of the sweep gave its rows, list listed it as the sweep's."""
    sweep = sweep_with_a_linked_job(tmp_path)
    done = audit(tmp_path, "export", str(sweep))
    assert done.returncode == EXIT["ok"], done.stderr
    assert {line.split(",")[0] for line in done.stdout.splitlines()[1:]} == {"a" * 12}
    done = audit(tmp_path, "list", "--json")
    assert [run["run_id"] for run in json.loads(done.stdout)] == ["a" * 12]
    assert audit(tmp_path, "report", str(sweep)).returncode == EXIT["ok"]
    page = (sweep / "report.html").read_text()
    assert (f"a symbolic link (to {tmp_path / 'elsewhere'}) in place of the job&#x27;s own folder: what it leads to is "
            "no run of the sweep" in page, "b" * 12 in page) == (True, False)


# -- work done once ----------------------------------------------------------------------------------------------------

def test_verify_reads_records_sha256_once_while_it_is_unchanged(tmp_path, monkeypatch):
    """verify of a killed run opened records.sha256 five times; a changed file is read again."""
    run_dir = synthetic_run(tmp_path / "k", [1, 0], finish=False)
    opened = []
    real = ledger._opened
    monkeypatch.setattr(ledger, "_opened", lambda path, as_lf: opened.append(path.name) or real(path, as_lf))
    verify_run(load_run(run_dir), tmp_path)
    assert opened.count("records.sha256") == 1
    with open(run_dir / "records.sha256", "ab") as handle:
        handle.write(b"r ")
    assert len(ledger.read_digests(run_dir).lines["responses.jsonl"]) == 2
    assert opened.count("records.sha256") == 2


def test_run_json_is_parsed_once(tmp_path, monkeypatch):
    """load_run parsed run.json with pydantic's reader, then again with Python's to check its keys."""
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    monkeypatch.setattr(RunInfo, "model_validate_json", None)
    assert load_run(run_dir).info.run_id == "5" * 12


@pytest.mark.parametrize(("text", "error"), [
    (b'{"run_id": "\\ud800"}', "Invalid JSON: unexpected end of hex escape at line 1 column 19"),
    ('{"run_id": "x"}'.encode("utf-16"), "Invalid JSON: expected value at line 1 column 1"),
    (b'\xef\xbb\xbf{"run_id": "x"}', "Invalid JSON: expected value at line 1 column 1"),
    (b'{"run_id": "\xed\xa0\x80"}', "Invalid JSON: invalid unicode code point at line 1 column 13"),
    (b'{"sealed_at": ' + b"[" * 250 + b"]" * 250 + b"}", "Invalid JSON: recursion limit exceeded at line 1 column 215"),
    (b"[1]", "Input should be an object"),
])
def test_json_read_once_is_refused_as_pydantic_refused_it(text, error):
    """What Python's reader takes but pydantic's refused (UTF-16, a byte order mark, a lone surrogate, deep nesting)
    is still refused, in pydantic's words."""
    with pytest.raises(ValueError) as raised:
        as_model(text, Seal)
    assert raised.value.errors()[0]["msg"] == error


def test_verify_hashes_the_manifest_once(tmp_path, monkeypatch):
    """verify of a killed run hashed manifest.json four times (its check, the reader's, belonging's, the sources'):
    a planted file of gigabytes read four times over before it is refused."""
    run_dir = synthetic_run(tmp_path / "k", [1, 0], finish=False)
    hashed, opened = [], []
    real_hash, real_open = filedigest.hash_into, reader.regular_file
    monkeypatch.setattr(filedigest, "hash_into",
                        lambda sha, path, *rest: hashed.append(path.name) or real_hash(sha, path, *rest))
    monkeypatch.setattr(reader, "regular_file", lambda path, *rest: opened.append(path.name) or real_open(path, *rest))
    verify_run(load_run(run_dir), tmp_path)
    assert ("manifest.json" in hashed, opened.count("manifest.json")) == (False, 1)


def test_a_file_grown_past_its_digest_is_changed_unread(tmp_path, monkeypatch):
    """A finished run's summary.json grown to a GiB (a sparse file): verify and show hashed it, then read it again
    for CRLF line ends, before saying it changed (a minute a GiB; 100 GB, half an hour)."""
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    written = (run_dir / "summary.json").stat().st_size
    os.truncate(run_dir / "summary.json", 2**30)
    hashed = []
    real_hash = filedigest.hash_into
    monkeypatch.setattr(filedigest, "hash_into",
                        lambda sha, path, *rest: hashed.append(path.name) or real_hash(sha, path, *rest))
    problems = [finding.text() for finding in verify_run(load_run(run_dir), tmp_path).problems]
    assert problems == [f"FAIL  summary.json: changed since the run finished: 1,073,741,824 bytes, run.json has "
                        f"{written} (40 lines), more than its line ends made CRLF would be: not read"]
    assert "summary.json" not in hashed
    done = audit(tmp_path, "show", str(run_dir))
    assert (done.returncode, done.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{run_dir}': run 555555555555: summary.json: changed since the run ended, so what it says "
        f"cannot be trusted; benchrun-audit verify {run_dir} says what changed\n"))

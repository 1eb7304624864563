"""Hostile input, thirty-sixth pass, the archive and audit side (what the thirty-fifth left, then a fresh pass): the
cases it found bad, each with the rule it now obeys.

1. a seal.json that is no JSON (a BOM alone, NUL bytes, empty), too large or no file: verify said `FAIL  seal.json: in
   '.../seal.json': unreadable: ...`, the file named twice in one line; a finding names its file once
   (`errors.without_file`, as manifest.json's did)
2. a benchmark folder verify cannot locate: `sources: not found (task.path 'bénch')` of one whose name a copy from
   macOS re-normalised, or of a task.path whose name is too long for the file system; verify says why as the run's
   own error does, with where it looked and the name there in another Unicode form (`core.resources.bench_dir`)
"""
from __future__ import annotations

import unicodedata

import pytest

from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit


# -- what the thirty-fifth pass left -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("data", "why"), [
    (b"\xef\xbb\xbf", "Invalid JSON: expected value at line 1 column 1"),
    (b"\0\0", "Invalid JSON: expected value at line 1 column 1"),
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
        f"ok    sources: task.path: '{given}' is not a directory (looked in {tmp_path / given}); {tmp_path / copied} is "
        "there, its name in another Unicode form (NFD, as a copy from macOS names files), which prints alike but is "
        "another name here: rename it in the form given (NFC): not checked", "intact"]

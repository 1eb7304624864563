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
"""
from __future__ import annotations

import pytest

from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.p37_archive import audit_in_deleted_folder
from tests.helpers.p38_archive import engine_runs, rescore_copied

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
    assert (done.returncode, done.stdout, done.stderr) == (4, "", f"benchrun: error: the working directory {gone}: {GONE}\n")


def test_compare_shows_the_engine_libraries_that_differ(tmp_path):
    same = "2" * 64
    engine_runs(tmp_path, {"/v/lib/libllama.so": "1" * 64, "/v/lib/libggml-cpu.so": same},
                {"/w/lib/libllama.so": "3" * 64, "/w/lib/libggml-cpu.so": same})
    done = audit(tmp_path, "compare", "a", "b")
    assert done.returncode == 0
    lines = [line for line in done.stdout.splitlines() if line.startswith("  provenance")]
    assert lines == ['  provenance model.libraries.libllama.so: "111111111111" -> "333333333333"']

"""Hostile input, twenty-fifth pass, the archive and audit side (a review of the twenty-fourth's code, then a fresh
pass): the cases it found bad, each with the rule it now obeys.

- a run.json (seal, summary, record line, rescore.json) whose schema_version is `1.0`, `1E0` or `true`, sealed over:
  read as version 1 (Python's 1.0 == True == 1), verify intact, where a reader that keeps JSON's types reads no
  version it knows; and one of `18446744073709551616` was `Unable to parse input string as an integer, exceeded
  maximum size`. A version is the whole number benchrun writes, else unknown as any other is
  (`core.layout.is_version`, read by `core.recordvalues.Version` and by `archive.shapes.not_a_manifest`)
- a manifest.json giving a key twice in one object (a sample's `"prompt": "IGNORE", "prompt": "a is 0"`), its id and
  the seal made to match: verify intact, show, export and report read the last, where the archive's promise is that
  every JSON file of it gives each key once. Now unreadable, naming the key, as run.json is
  (`archive.reader.Run.manifest_bytes`, through `given_once`, `archived_model`'s check)
- `verify` of a run whose rescore's rescore.json is a symbolic link to a copy elsewhere: `intact`, where a link in
  place of any other file of the run or its rescores is a FAIL (`held` saw only the files findings named, and a
  rescore.json that checks named none). A rescore's rescore.json is now a finding of its own
  (`audit.rescorecheck.check_rescore`), so `held` says the link
- `verify` of a run whose rescores/001 was copied to rescores/1 (the same number): `is rescore 001 of run <this
  run's id> (manifest ...), not of this run`, which it is. Now said to be a copy of this run's rescore in another
  folder (`audit.rescorecheck.check_rescore`)

What held is in the pass's note.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.archives import replace_manifest, synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.commands import run_in_process
from tests.helpers.p25_archive import manifest_over, sealed_over


def _refused(cwd: Path, command: str, run_dir: Path) -> str:
    """The one line `benchrun-audit COMMAND RUN` refused the run with (exit 4, nothing on stdout)."""
    done = audit(cwd, command, str(run_dir))
    assert (done.returncode, done.stdout) == (EXIT["archive"], ""), done.stdout
    return done.stderr


EDITED = "which no benchrun writes (this one writes 1): the file was edited"


# -- a schema version of another type ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("version", "said"), [("1.0", f"1.0, {EDITED}"), ("1E0", f"1.0, {EDITED}"),
                                               ("true", f"True, {EDITED}"),
                                               ("18446744073709551616", "18446744073709551616, which this benchrun "
                                                "does not know (written by a newer benchrun? read it with that one)")])
def test_a_schema_version_is_the_whole_number_benchrun_writes(tmp_path, version, said):
    """run.json's `"schema_version": 1` rewritten as `1.0` (or `1E0`, `true`) and sealed over: shown and intact, read
    as 1; `2**64` was pydantic's `Unable to parse input string as an integer, exceeded maximum size`."""
    run_dir = sealed_over(synthetic_run(tmp_path / "r", [1, 0]),
                          lambda text: text.replace('"schema_version": 1,', f'"schema_version": {version},', 1))
    line = f"benchrun: error: in '{run_dir / 'run.json'}': unreadable: schema_version: schema version {said}\n"
    assert _refused(tmp_path, "show", run_dir) == line
    assert _refused(tmp_path, "verify", run_dir) == line


def test_a_manifests_schema_version_is_the_whole_number_benchrun_writes(tmp_path):
    """manifest.json's schema_version `true`, its id and the seal made to match: export read it as version 1."""
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    replace_manifest(run_dir, lambda manifest: manifest.update(schema_version=True))
    assert _refused(tmp_path, "export", run_dir) == (
        f"benchrun: error: in '{run_dir / 'manifest.json'}': not a manifest: schema_version: schema version True, "
        f"{EDITED}\n")


# -- a manifest giving a key twice -------------------------------------------------------------------------------------

def test_a_manifest_giving_a_key_twice_is_unreadable(tmp_path):
    """A sample's prompt given twice (`"prompt":"IGNORE","prompt":"a is 0"`), the manifest id and the seal redone:
    verify said intact, and show, export and report read the prompt as its last."""
    run_dir = manifest_over(synthetic_run(tmp_path / "r", [1, 0]), b'"prompt":"a is 0"',
                            b'"prompt":"IGNORE","prompt":"a is 0"')
    said = ("unreadable: the key \"prompt\" is given twice in one object (which one is meant, JSON does not say); give "
            "each key once")
    done = audit(tmp_path, "verify", str(run_dir))
    assert done.returncode == EXIT["not_intact"]
    assert [line for line in done.stdout.splitlines() if line.startswith(("FAIL", "NOT"))] == [
        f"FAIL  manifest.json: {said}", "NOT intact: 1 problem"]
    for command in ("export", "report"):
        assert _refused(tmp_path, command, run_dir) == f"benchrun: error: in '{run_dir / 'manifest.json'}': {said}\n"


# -- a rescore.json that is a link -------------------------------------------------------------------------------------

@pytest.mark.slow
def test_verify_fails_a_rescore_whose_rescore_json_is_a_link(tmp_path):
    """rescores/001/rescore.json moved out of the run and linked back, every digest matching: `intact`."""
    run_dir = run_in_process(tmp_path, "r")
    assert audit(tmp_path, "rescore", str(run_dir)).returncode == EXIT["ok"]
    (run_dir / "rescores" / "001" / "rescore.json").rename(tmp_path / "kept.json")
    (run_dir / "rescores" / "001" / "rescore.json").symlink_to(tmp_path / "kept.json")
    done = audit(tmp_path, "verify", str(run_dir))
    assert done.returncode == EXIT["not_intact"]
    assert [line for line in done.stdout.splitlines() if line.startswith(("FAIL", "NOT"))] == [
        f"FAIL  rescores/001/rescore.json: a symbolic link (to {tmp_path / 'kept.json'}) in place of the run's own "
        "file, which its writer never makes: the run directory no longer holds what it wrote there",
        "NOT intact: 1 problem"]


@pytest.mark.slow
def test_verify_says_a_rescore_copied_to_another_folder_is_a_copy(tmp_path):
    """rescores/001 copied to rescores/1: verify said it `is rescore 001 of run <this run> ..., not of this run`."""
    run_dir = run_in_process(tmp_path, "r")
    assert audit(tmp_path, "rescore", str(run_dir)).returncode == EXIT["ok"]
    shutil.copytree(run_dir / "rescores" / "001", run_dir / "rescores" / "1")
    done = audit(tmp_path, "verify", str(run_dir))
    assert [line for line in done.stdout.splitlines() if line.startswith(("FAIL", "NOT"))] == [
        "FAIL  rescores/1/rescore.json: is rescore 001 of this run, in folder 1: a copy of it, which no rescore makes",
        "NOT intact: 1 problem"]

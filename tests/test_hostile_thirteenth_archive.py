"""Hostile input, thirteenth pass, the archive and audit side (issue 19's fresh pass of the same kinds): the cases it
found bad, each with the rule it now obeys.

- a run killed as it ended, after its final run.json and before its seal (SIGKILL, the OOM killer, a node lost in
  the last milliseconds): every reader refused it as one whose seal was taken away (`seal.json: missing: the run
  ended (completed) but nothing covers run.json, so what it says cannot be trusted`), `verify` said the same and
  gave no way on, and `resume` said `run ... is completed; nothing to resume`: a whole run no command could read or
  finish. Now `verify` says what run.lock tells (a writer that ends cleanly empties it): `its writer (pid ...) was
  stopped before it sealed the run (killed, or its disk failed); seal it with: benchrun-audit resume RUN` (`finish
  it with` of an interrupted run, which has samples left to ask; of a live writer holding the lock, `its writer is
  sealing it now (pid ...); verify it once it has`), and
  `resume` seals such a run once every file is as run.json digests it, asking nothing (`audit.resume.seal_left`;
  the seal is written by `archive.writer.write_seal`, as at a run's end); a file changed since is refused in one
  line, nothing written; a seal deleted from a run that ended cleanly is still `nothing to resume`
- the temporary file every rewrite goes through (run.json, summary.json, the seal, `export --output`, `report
  --output`) was opened by a name anyone could foresee (`.<name>.<pid>.tmp`) and followed a symbolic link there: a
  link planted in a shared run directory or output folder had the writer overwrite the file it named (another
  user's, the victim's) and then renamed the link into the file's place. Now the temporary file is made new under a
  name holding random digits, never opened through a link or over a file already there
  (`archive.writer._new_file`: O_CREAT | O_EXCL | O_NOFOLLOW)
- the Python API given a path where it takes a run (`benchrun.audit.metric_rows("outputs/.../run")`, as the README
  says the API takes paths): `metric_rows`, `verify_run`, `compare_runs`, `rescore_run`, `resume_run` an
  AttributeError traceback (`'str' object has no attribute 'require_records'`), `samples`, `export_rows`, `write_csv`
  and `write_jsonl` the same once read. Now every function of `benchrun.audit` that takes a run (or a list of runs)
  takes a path to one as well, loaded as `load_run` loads it, and anything else is a TypeError saying what it takes
  (`benchrun.audit._taking_paths`, at the API's one door): `a run (benchrun.load_run(path)) or a path to one, not
  RunInfo`
- a run sought by an id prefix (`show 98e8`) under a root holding a folder it may not list, or a run.json it may
  not read (a permission, a run.json cut mid-character): `no run directory or run id '98e8' under outputs`, as if
  no such run were there, though the run sought may be the one that could not be read. Now the search says what it
  could not look in (`archive.lookup.resolve_run`): `no run directory or run id '98e8' under outputs that could be
  read; 1 place under it could not be, the first: in 'outputs/2026-12-04': unreadable: permission denied`
- `compare outputs` (or `show`, `export`, `report`, the archive's root where a sweep goes): `neither a run nor a
  sweep directory (no run.json in it or its subdirectories)`, which is false of every archive (its runs lie in
  dated folders, two levels down): it read as an empty archive. Now it says what it looked in and where the runs
  are (`archive.lookup.expand_runs`): `(no run.json in it or the folders directly in it); runs lie deeper in it
  (outputs/2026-12-01/run): name them (benchrun-audit list outputs)`
- `verify` of a run that did not end holding lines beyond its last digest that a writer leaves mid-commit (a
  response line whose digest a kill cut off, a last line cut short; or a live writer's, between its two appends):
  `1 line after line 3 not written by the run`, a tamper alarm, though `resume` and every reader take those lines as
  the kill's (the twelfth pass) and the run wrote them. Now verify asks the rule resume asks
  (`archive.repair.left_by_a_writer`, one place for both) and says what they are: `1 line after line 3 that
  records.sha256 does not cover yet: what a writer stopped mid-write (or writing now) leaves; a resume drops it and
  asks again`; lines no writer leaves are still `not written by the run`
- a run that did not end whose records.sha256 ends in bytes no writer leaves (a gigabyte of a sparse file, 2,000
  bytes, 40 NULs) after its last whole digest line: taken as a digest line cut short, so `verify` said nothing of
  them and every reader read the run. Now a last line without its newline is that only if a digest line can start
  so and it is no longer than one (`archive.ledger.read_digests`), else `records.sha256: line 4 is not a digest
  line, nor the start of one that its writer was stopped writing`, in verify, every reader and resume (whose
  `--force` drops it and finishes the run, nothing lost or duplicated)
- `list ROOT` of a root the user may not list (permissions; the tests run as root only without the capabilities
  that pass over them): `1 run`, a row `unreadable`, exit 0, and with `--model` or `--since` `0 runs`, exit 0, as if
  an empty archive were there. Now a root that cannot be listed is one line, exit 4 (`audit.listing.list_runs`):
  `in 'outputs': unreadable: permission denied`; a folder under it that cannot be listed is still a row

What held, tried and found as the rules say. Permissions, as a user whom they stop (root with CAP_DAC_OVERRIDE,
CAP_DAC_READ_SEARCH and CAP_FOWNER dropped, `setpriv`; the tests run as root, whom they do not stop): run.json,
seal.json, summary.json, manifest.json, the records, records.sha256 and config.yaml unreadable, each in turn: `verify`,
`show` and `export` one line naming the file (`permission denied: .../summary.json`, exit 4; verify's seal finding
`FAIL seal.json: ... unreadable: permission denied`), `list` a row `unreadable` naming it; a date folder under the
root it may not list: `list` a row `in 'outputs/2026-12-04': unreadable: permission denied`; a run directory it may not
write: `rescore` `permission denied: .../rescores` (and a `rescores` it may not write: `.../rescores/001`),
`resume` of a killed run `permission denied writing .../run.json` and of an interrupted one `permission denied:
.../seal.json`, nothing changed, and the same resume as root then finishes it, nothing lost or duplicated.
SIGKILL at 20 ms steps: `rescore` (40 steps; killed rescores are `unfinished (no rescore.json: it was stopped):
claims nothing`, the next is numbered after them, the run intact), `export --output` onto an existing file (the old
file or the new one whole, never part; a killed export leaves its hidden temporary file beside), `resume` (60 and 50
steps from its start: no answer lost or duplicated, the last resume finishes and verifies), `retry` (the parent
untouched; a killed retry is a run that `verify` sends to `resume`, which finishes it; a later retry makes
`.retry2`). `merge` of a shard being resumed, or killed: `run ... (shard 2/2) is running: merge it once it has
ended`, and once resumed it merges. Files in a place of their own: a sweep's sweep.json as a pipe, a folder, a link
to /dev/zero or out of the sweep, empty, cut mid-UTF-8 or a sparse 1 GB: no command reads it (the jobs are found by
their run.json); a rescore's scores.jsonl and summary.json as a pipe, a folder or a device: `a named pipe (FIFO) in
its place`, a sparse 1 GB or cut one `changed since the rescore finished`, and rescore.json a sparse 1 GB `more than
benchrun writes in a rescore.json`; the cache's database as a link to /dev/zero (`a character device, where the
response cache's database belongs`), a link out of the cache, not a database or a sparse 1 GB (`cannot be used
(DatabaseError: file is not a database)`), never written into; Hydra's .hydra/ files are read by no audit command.
Time: no audit command subtracts run.json's times (speed is measured on the monotonic clock), so a clock set back
between a run and its resume changes no figure; run.json's times are checked where read (the ninth pass) and `list`
sorts and shows them in UTC (the twelfth). Scale: 5,000 runs under one root, `list` in 13 s and 149 MB (`--json` 11 s,
175 MB); a run of 200,000 samples (600,000 record lines, 52 MB of responses): `verify` 1.3 s and 40 MB, `show` 6.7 s
and 101 MB, `export` 33 s and 182 MB, `show --samples` under a 1.5 GB memory limit. The Python API: a Run's
`info.runner` or `info.identity` changed by the caller is seen by later calls on that object (RunInfo is frozen,
its mappings are plain dicts) but never written, and `verify_run` checks the files, not the object. Not tried:
faketime (not installed), a records file of 200,000 lines past its digests (the eleventh pass tried 10**6).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import benchrun
import benchrun.audit
from benchrun.archive.dirlock import DirLock, describe, holder
from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env, cli
from benchrun.testing.lab import Lab, Outcome
from tests.helpers.archives import left_by_dead_writer, synthetic_run

pytestmark = pytest.mark.slow


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


def files_of(run_dir: Path) -> dict[str, bytes]:
    return {path.relative_to(run_dir).as_posix(): path.read_bytes() for path in run_dir.rglob("*") if path.is_file()}


# -- a run killed as it sealed itself --------------------------------------------------------------------------------

KILLED_SEALING = """
import os, signal, sys
from benchrun.archive import writer
writer.write_seal = lambda *args: os.kill(os.getpid(), signal.SIGKILL)
from benchrun.__main__ import main
sys.argv = ["benchrun", *sys.argv[1:]]
main()
"""


def _killed_sealing(lab: Lab) -> Path:
    """A run of the lab's benchmark whose process is SIGKILLed as it is about to write the seal (run.json final)."""
    killed = subprocess.run([sys.executable, "-c", KILLED_SEALING, *lab.args()], cwd=lab.root, env=child_env(),
                            capture_output=True, text=True, timeout=120)
    assert killed.returncode == -9, killed.stderr
    [run_dir] = lab.run_dirs()
    assert (json.loads((run_dir / "run.json").read_text())["status"], (run_dir / "seal.json").exists()) == (
        "completed", False)
    return run_dir


@pytest.fixture(scope="module")
def killed_sealing(tmp_path_factory):
    """A lab (its server up) and its run SIGKILLed as it sealed itself (`_killed_sealing`); tests copy the run."""
    with Lab(tmp_path_factory.mktemp("sealing"), n=4, latency_s=0) as lab:
        yield lab, _killed_sealing(lab)


def killed_copy(killed, tmp_path: Path) -> tuple[Lab, Path]:
    """The lab and a copy of its killed run in tmp_path (the lab's benchmark beside it)."""
    lab, run_dir = killed
    shutil.copytree(lab.root, tmp_path, dirs_exist_ok=True)
    return lab, tmp_path / run_dir.relative_to(lab.root)


def test_a_run_killed_as_it_sealed_itself_is_sealed_by_resume_asking_nothing(tmp_path, killed_sealing):
    lab, run_dir = killed_copy(killed_sealing, tmp_path)
    asked = len(lab.server.requests)
    holder = json.loads((run_dir / "run.lock").read_text())
    before = files_of(run_dir)
    verified = audit(tmp_path, "verify", str(run_dir))
    resumed = audit(tmp_path, "resume", str(run_dir))
    assert len(lab.server.requests) == asked
    writer = f"pid {holder['pid']} on host {holder['host']} since {holder['since']}"
    assert (verified.returncode, verified.stdout.splitlines()[1]) == (EXIT["not_intact"], (
        "FAIL  seal.json: missing: the run ended (completed) but nothing covers run.json: its writer "
        f"({writer}) was stopped before it sealed the run (killed, or its disk failed); seal it with: "
        f"benchrun-audit resume {run_dir}"))
    assert (resumed.returncode, resumed.stderr) == (EXIT["ok"], (
        f"benchrun: warning: run {json.loads(before['run.json'])['run_id']} ended (completed) but its writer "
        f"({writer}) was stopped before it sealed it: sealed now, every file as run.json digests it\n"))
    after = files_of(run_dir)
    seal = json.loads(after.pop("seal.json"))
    assert (after.pop("run.lock"), before.pop("run.lock")) == (b"", json.dumps(holder).encode())
    assert (after, seal["run_id"], seal["run_json"]["sha256"]) == (
        before, json.loads(before["run.json"])["run_id"], hashlib.sha256(before["run.json"]).hexdigest())
    assert audit(tmp_path, "verify", str(run_dir)).returncode == EXIT["ok"]


def test_a_run_killed_as_it_sealed_itself_then_edited_is_not_sealed(tmp_path, killed_sealing):
    _, run_dir = killed_copy(killed_sealing, tmp_path)
    scores = run_dir / "scores.jsonl"
    scores.write_text(scores.read_text().replace('"times7":0', '"times7":1', 1))
    before = files_of(run_dir)
    resumed = audit(tmp_path, "resume", str(run_dir))
    run_id = json.loads(before["run.json"])["run_id"]
    assert (resumed.returncode, resumed.stderr) == (EXIT["archive"], (
        f"benchrun: error: in {str(run_dir)!r}: scores.jsonl: line 4 is not the line written: run {run_id} "
        "ended but its writer was stopped before it sealed it, and its files are not the ones run.json digests; "
        "nothing was written\n"))
    assert files_of(run_dir) == before


def test_a_seal_deleted_from_a_run_that_ended_cleanly_is_not_sealed_again(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0])
    (run_dir / "seal.json").unlink()
    before = files_of(run_dir)
    verified = audit(tmp_path, "verify", str(run_dir))
    resumed = audit(tmp_path, "resume", str(run_dir))
    assert verified.stdout.splitlines()[1] == "FAIL  seal.json: missing: the run ended (completed) but nothing covers run.json"
    assert (resumed.returncode, resumed.stderr) == (EXIT["archive"], (
        f"benchrun: error: in {str(run_dir)!r}: run 555555555555 is completed; nothing to resume\n"))
    assert files_of(run_dir) == before


# -- the temporary file a rewrite goes through -----------------------------------------------------------------------

@pytest.mark.parametrize("command", ["export", "report"])
def test_a_link_planted_at_the_temporary_files_name_is_never_written_through(tmp_path, command):
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0])
    victim, output = tmp_path / "victim", tmp_path / "out" / "result"
    victim.write_text("another user's file\n")
    output.parent.mkdir()
    (output.parent / f".result.{os.getpid()}.tmp").symlink_to(victim)  # this process's pid: the name it foresaw
    result = audit(tmp_path, command, str(run_dir), "--output", str(output))
    assert (result.returncode, victim.read_text(), output.is_symlink(), output.stat().st_size > 0) == (
        EXIT["ok"], "another user's file\n", False, True)


# -- the Python API given a path where it takes a run ----------------------------------------------------------------

def test_every_api_function_that_takes_a_run_takes_a_path_to_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_dir = synthetic_run(tmp_path / "outputs" / "run", [1.0, 0.0])
    other = synthetic_run(tmp_path / "outputs" / "other", [1.0, 1.0], run_id="6" * 12)
    run = benchrun.load_run(run_dir)
    given = {"str": "outputs/run", "Path": run_dir}
    for path in given.values():
        assert benchrun.audit.metric_rows(path) == benchrun.audit.metric_rows(run)
        assert list(benchrun.audit.samples(path)) == list(benchrun.audit.samples(run))
        assert list(benchrun.audit.export_rows(path)) == list(benchrun.audit.export_rows(run))
        assert benchrun.audit.verify_run(path).intact
        assert benchrun.audit.compare_runs([path, other]) == benchrun.audit.compare_runs(
            [benchrun.load_run(path), benchrun.load_run(other)])
        written = io.StringIO()
        assert benchrun.audit.write_csv(runs=[path], out=written) == 4
    with pytest.raises(TypeError) as refused:
        benchrun.audit.metric_rows(run.info)
    assert str(refused.value) == "a run (benchrun.load_run(path)) or a path to one, not RunInfo"


# -- a run sought by its id under a root holding what cannot be read -------------------------------------------------

def test_a_run_id_not_found_says_what_under_the_root_could_not_be_read(tmp_path):
    synthetic_run(tmp_path / "outputs" / "day" / "good", [1.0])
    cut = synthetic_run(tmp_path / "outputs" / "day" / "cut", [1.0], run_id="6" * 12)
    data = (cut / "run.json").read_bytes()
    (cut / "run.json").write_bytes(data[:data.index(b'"synthetic"') + 1] + "é".encode()[:1])  # cut mid-character
    shown = audit(tmp_path, "show", "666", "--root", "outputs")
    assert (shown.returncode, shown.stderr) == (EXIT["archive"], (
        "benchrun: error: no run directory or run id '666' under outputs that could be read; 1 place under it could "
        "not be, the first: in 'outputs/day/cut/run.json': unreadable: Invalid JSON: EOF while parsing a string at "
        "line 8 column 17\n"))
    assert audit(tmp_path, "show", "555", "--root", "outputs").returncode == EXIT["ok"]


def test_an_archive_root_given_as_a_sweep_says_its_runs_lie_deeper(tmp_path):
    synthetic_run(tmp_path / "outputs" / "2026-12-01" / "run", [1.0])
    compared = audit(tmp_path, "compare", "outputs")
    assert (compared.returncode, compared.stderr) == (EXIT["archive"], (
        "benchrun: error: in 'outputs': neither a run nor a sweep directory (no run.json in it or the folders "
        "directly in it); runs lie deeper in it (outputs/2026-12-01/run): name them (benchrun-audit list outputs)\n"))


# -- verify of what a writer leaves beyond its last digest -----------------------------------------------------------

def _cut_before_its_digest(run_dir: Path) -> None:
    """The last answer of a killed run as a kill between its response line and that line's digest leaves it: the
    line written, neither its digest nor its score lines."""
    digests = (run_dir / "records.sha256").read_bytes().splitlines(keepends=True)
    (run_dir / "records.sha256").write_bytes(b"".join(digests[:-3]))
    scores = (run_dir / "scores.jsonl").read_bytes().splitlines(keepends=True)
    (run_dir / "scores.jsonl").write_bytes(b"".join(scores[:-2]))


@pytest.mark.parametrize(("tail", "said"), [
    ("a whole answer", "1 line after line 2 that records.sha256 does not cover yet: what a writer stopped mid-write "
                       "(or writing now) leaves; a resume drops it and asks again"),
    ("half a line", "1 line after line 3 that records.sha256 does not cover yet: what a writer stopped mid-write "
                    "(or writing now) leaves; a resume drops it and asks again"),
    ("another's line", "1 line after line 3 not written by the run"),
])
def test_verify_says_lines_a_writer_left_beyond_its_digests_are_that(tmp_path, tail, said):
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0, 1.0], finish=False)
    if tail == "a whole answer":
        _cut_before_its_digest(run_dir)
    else:
        with open(run_dir / "responses.jsonl", "ab") as records:
            records.write(b'{"id":"t:a=3","task":"t","text":"\xc3' if tail == "half a line" else b'{"id":"x"}\n')
    verified = audit(tmp_path, "verify", str(run_dir))
    assert (verified.returncode, verified.stdout.splitlines()[3:5]) == (EXIT["not_intact"], [
        f"FAIL  responses.jsonl: {said}", "ok    scores.jsonl: 6 lines match records.sha256"
        if tail != "a whole answer" else "ok    scores.jsonl: 4 lines match records.sha256"])


# -- an archive root that cannot be listed ---------------------------------------------------------------------------

UNPRIVILEGED = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search,-fowner", "--inh-caps", "-all"]
"""A command run as root without the capabilities that pass over permissions: what a user whom they stop sees."""


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv")
@pytest.mark.parametrize("filters", [[], ["--model", "m"]])
def test_list_of_a_root_it_may_not_list_is_one_line_not_an_archive_of_no_runs(tmp_path, filters):
    synthetic_run(tmp_path / "outputs" / "day" / "run", [1.0])
    (tmp_path / "outputs").chmod(0)
    listed = subprocess.run([*UNPRIVILEGED, sys.executable, "-m", "benchrun.audit", "list", "outputs", *filters],
                            cwd=tmp_path, env=child_env(), capture_output=True, text=True, timeout=120)
    (tmp_path / "outputs").chmod(0o755)
    assert (listed.returncode, listed.stdout, listed.stderr) == (EXIT["archive"], "", (
        "benchrun: error: in 'outputs': unreadable: permission denied\n"))


def test_verify_of_a_run_whose_writer_is_sealing_it_now_says_so(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0])
    (run_dir / "seal.json").unlink()
    lock = DirLock(run_dir).acquire()  # the writer between its final run.json and its seal
    try:
        verified, writer = audit(tmp_path, "verify", str(run_dir)), describe(holder(run_dir / "run.lock"))
    finally:
        lock.release(ended=True)
    assert (verified.returncode, verified.stdout.splitlines()[1]) == (EXIT["not_intact"], (
        "FAIL  seal.json: missing: the run ended (completed) but nothing covers run.json: its writer is sealing it "
        f"now ({writer}); verify it once it has"))


def test_verify_of_an_interrupted_run_killed_as_it_sealed_itself_sends_it_to_be_finished(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0], status="interrupted", reason="interrupted by SIGTERM")
    (run_dir / "seal.json").unlink()
    left_by_dead_writer(run_dir)
    verified = audit(tmp_path, "verify", str(run_dir))
    assert (verified.returncode, verified.stdout.splitlines()[1]) == (EXIT["not_intact"], (
        "FAIL  seal.json: missing: the run ended (interrupted) but nothing covers run.json: its writer (pid 4242 on "
        "host gpu1 since 2026-12-01T08:00:00+00:00) was stopped before it sealed the run (killed, or its disk "
        f"failed); finish it with: benchrun-audit resume {run_dir}"))


# -- records.sha256 ending in what no writer leaves ------------------------------------------------------------------

@pytest.fixture(scope="module")
def killed_after_three(tmp_path_factory):
    """A lab (its server up) and its run killed after 3 of 6 answers; tests copy the run (`killed_copy`)."""
    with Lab(tmp_path_factory.mktemp("killed"), n=6, latency_s=0) as lab:
        with lab.held_after(3, *lab.args()) as (proc, run_dir):
            proc.kill()
            proc.communicate()
        yield lab, run_dir


@pytest.mark.parametrize(("junk", "refused"), [(b"x" * 2000, True), (b"\0" * 40, True), (b"r 40efd4c5", False)])
def test_a_last_digest_line_no_writer_leaves_is_refused_and_resume_force_drops_it(tmp_path, killed_after_three, junk,
                                                                                   refused):
    lab, run_dir = killed_copy(killed_after_three, tmp_path)
    line = (run_dir / "records.sha256").read_bytes().count(b"\n") + 1
    start = (run_dir / "records.sha256").stat().st_size
    with open(run_dir / "records.sha256", "ab") as digests:
        digests.write(junk)
    verified = audit(tmp_path, "verify", str(run_dir))
    shown = audit(tmp_path, "show", str(run_dir))
    resumed = lab.call("resume", str(run_dir), *(["--force"] if refused else []), module="benchrun.audit")
    outcome = lab.judge(Outcome("junk"), run_dir)
    crashed = (f": its last 40 bytes (from byte {start:,} on) are NUL bytes, which benchrun never writes: what a file "
               "system leaves of writes that a crash of the machine (power lost) kept from its disk; what was written "
               "there is gone: restore the file from a copy") if junk.startswith(b"\0") else ""  # pass 38
    problem = (f"records.sha256: line {line} is not a digest line, nor the start of one that its writer was stopped "
               f"writing{crashed}")
    assert (f"FAIL  {problem}" in verified.stdout.splitlines(), shown.returncode) == (
        refused, EXIT["archive"] if refused else EXIT["ok"])
    if refused:
        assert shown.stderr == (f"benchrun: error: in {str(run_dir)!r}: run {json.loads((run_dir / 'run.json').read_text())['run_id']}: "
                                f"{problem}, so what it says cannot be trusted; benchrun-audit verify {run_dir} says what changed\n")
    assert (resumed.returncode, outcome.lost, outcome.duplicated, outcome.verified) == (EXIT["ok"], 0, 0, True)

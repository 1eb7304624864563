"""Hostile input, eleventh pass, the archive and audit side (issue 19's fresh pass of the same kinds): the cases it
found bad, each with the rule it now obeys.

- a response cache entry whose run id, model, digest or time is not text (a BLOB, bytes that are not UTF-8: SQLite
  keeps whatever a hand or another program writes): a run that found it failed with a PydanticSerializationError's
  traceback as its reason (exit 1, its run directory `failed` with no answer); `benchrun-audit cache` a TypeError's
  traceback. And an entry whose run id is any text (`../../etc‮` and a newline, ten megabytes) had it copied into the
  run's records as `cached_from`. Now the cache's reader takes an entry only as benchrun writes it
  (`execute.cacherows.entry_of`: its columns UTF-8 text, its run id a run id, `core.recordvalues.RUN_ID`), else the entry
  is damaged, deleted and asked afresh, as a damaged answer already was; `cache` shows what such an entry holds with
  the bytes that are not UTF-8 replaced and its control characters made visible
- `cache --cache-dir` naming a loop of symbolic links, a link to nothing, or a path under a file (`notes.txt/cache`):
  `0 entries, 0 B`, exit 0 (and `--clear`: `cleared 0 entries`), as if an empty cache were there, where none can be;
  a run given such a cache_dir said `cannot be used (FileExistsError: [Errno 17] File exists: ...)` of a loop or a
  link to nothing. Now one rule says where a cache's folder can be (`execute.cacheplace.misplaced`), for the run and
  the command alike, in one line naming what is there: `.../loop1: a loop of symbolic links`, `.../dangling is a
  symbolic link to nothing (to nowhere)`, `.../notes.txt is a file, so .../notes.txt/cache cannot be made`
- a record file holding one line of 500 MB (a planted one; a sparse file of gigabytes costs no disk): `verify`,
  `show`, `export` and every reader read the whole line into memory (1 GB of memory and 13 s for 500 MB; under an
  800 MB limit a MemoryError traceback), checking its digest and whether its line ends were made CRLF, though no
  line benchrun writes is near that long. Now a record line is held whole only up to `archive.ledger.MAX_HELD_LINE`
  (256 MiB) and a longer one digested piece by piece (`ledger.pieces`; records.sha256 likewise by the line it may
  hold), the CRLF check reads in pieces too (`archive.trust.converted`), and such a line that no digest covers (past
  the last one) is said to be that: `responses.jsonl: line 3 is longer than any line benchrun reads whole
  (268,435,456 bytes) and no digest covers it`, in verify and in every reader's one line
- a run that did not end (killed) whose judgements.jsonl was edited to hold a judge call for a sample with no
  response, another judge's call, or one call twice, records.sha256 rewritten to match (no seal covers a killed run's
  files): `show`, `export` and `rescore` read those lines as the run's, exit 0, and `verify` said nothing of them,
  while `resume` refused the same run naming the line. Now every reader and verify check a run that did not end as a
  resume does before it appends (`archive.repair.check`, from `archive.trust._unfinished` and
  `audit.verify.belonging`): `judgements.jsonl: line 4 judges 'symbol:symb=%', which has no response`, one line,
  and rescore's `--force` to read it anyway, recorded
- a manifest.json replaced by a file of gigabytes (a sparse one costs no disk): every reader hashed it to compare
  with the manifest id after reading it whole, and `verify` read it whole again to list the benchmark's sources: a
  MemoryError traceback under a memory limit (3 GB asked of memory otherwise). Now the manifest is hashed in pieces
  against its id (`archive.trust._manifest`), and verify reads it for the sources only once it is the run's
  (`audit.verify.check_sources`: `not checked: manifest.json is not the run's`)
- a response line of a run that did not end holding a token count or a server duration no server measures
  (`"completion_tokens": 10**30`, `"prompt_tokens": -5`, `"durations_ns": {"total": -1}`), records.sha256 rewritten
  to match: `show`, `compare` and `report` gave `tokens/s 9999999999999999635896294965248.0`, exit 0, though the
  server's boundary (`execute.boundary.received`) and the cache's drop such numbers. Now a record's counts and
  durations are refused where the line is read unless from 0 to 2^53 - 1 (`core.recordvalues.Count`), as its wall
  times are: `line 1: not a valid record: completion_tokens: 1000000000000000000000000000000 is no count
  a server measures (0 to 2^53 - 1)`; what a runner returns is still taken and bounded at the server's boundary
- a run.json or a record line holding a key this benchrun does not know, or a schema version it does not read (as a
  newer benchrun's run would): `unreadable: sharded_by: Extra inputs are not permitted`, pydantic's words, which do
  not say why. Now the reader's one line says what it is (`archive.reader._first`): `sharded_by: a key which this
  benchrun does not know (written by a newer benchrun? read it with that one)`, `schema_version: schema version 2,
  which ...`; nothing is rewritten

What held, tried and found as the rules say: `merge` of one shard (`the shards are incomplete: no run of shard 2/2`),
of none (argparse's one line), of shards asked of different models (digests named) or with different options, of a
whole run or an earlier merged run given as a shard (`not a shard run`), `--into` a run (refused) or a folder holding
a file of the user's (the run made beside it, the file kept); a merged run verifies, and `show` names every shard
with its directory, `(not there now: no run in it)` of one moved since; rescore, export and compare read it. A finished
judged run whose judge call was edited fails `verify` naming the line (tests/test_judges.py); `rescore` with the judge
server gone regrades from the archived calls, and `--rejudge judge.model=...` records the new judge in rescore.json,
the run's own run.json untouched. JSON nested 200,000 deep in run.json, seal.json, summary.json, manifest.json (with
the manifest id made to match) or config.yaml: one line each. A run.json of 100 MB: `104,857,600 bytes, more than
benchrun writes in a run.json`, and `list` shows it unreadable. A record file with 10**6 lines past its digests:
verify and show in 30 s and 94 MB, one line. An older run (run.json without label, varied, history, parent, sweep,
cwd, overrides, identity or reason; an empty environment or runner; responses without token counts, durations,
extra, failed_attempts, carried_from or cached_from, all resealed): list, show, verify, export, compare, report and
rescore read it (speed figures it lacks shown as `-`), and none rewrites a byte of it. The response cache: an entry
whose answer is over today's runner.max_response_bytes is asked afresh (the eighth pass's rule); cache_dir a link to
a file is named a file; a cache left with its -wal and -shm files by a process killed (SIGKILL) inside a
transaction lists its committed entries and `--clear` empties it, leaving the database alone; a non-text model or
digest stored as a number is shown as its text. Not tried: a cache on a read-only directory (the tests run as root,
whom permissions do not stop). An edited grade in a killed run whose records.sha256 was rewritten to match cannot be
told from the grade written (no seal covers a run that did not end): by design, as the README says of unsealed runs.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.archive.ledger import digest_lines
from benchrun.archive.writer import write_atomic
from benchrun.core.errors import EXIT
from benchrun.execute.cache import Store
from benchrun.testing.inprocess import child_env, cli
from benchrun.testing.lab import Lab
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.archives import left_by_dead_writer, read_jsonl, synthetic_run
from tests.helpers.benchfiles import write_bench
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, answer
from tests.helpers.p38_archive import resealed
from tests.helpers.sqlitefile import sqlite_db

pytestmark = pytest.mark.slow


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


# -- the response cache's entries ------------------------------------------------------------------------------------

def _cached_twice(lab: Lab, cache: Path, column: str, value: object) -> list[dict]:
    """A run that fills the cache, every entry's `column` set to `value`, and the records of a second run."""
    args = [arg for arg in lab.args() if arg != "cache=false"] + [f"cache_dir={cache}"]
    assert lab.call(*args).returncode == EXIT["ok"]
    with sqlite_db(cache / "responses.sqlite3") as db:
        db.execute(f"UPDATE answers SET {column} = ?", (value,))
        resealed(db)  # as a hand that seals what it planted leaves it: the checks after the seal's see it
    second = lab.call(*args)
    assert (second.returncode, second.stderr) == (EXIT["ok"], "")
    return read_jsonl(lab.run_dirs()[1] / "responses.jsonl")


@pytest.mark.parametrize(("column", "value"), [("run_id", b"\x00\xff"), ("run_id", "../../etc\u202e\n"),
                                               ("run_id", "x" * 65), ("model", b"\xff"), ("digest", b"\xfe"),
                                               ("created_at", b"\x00\xff")])
def test_a_cache_entry_not_as_benchrun_writes_it_is_asked_afresh(tmp_path, column, value):
    with Lab(tmp_path, n=2, latency_s=0) as lab:
        rows = _cached_twice(lab, tmp_path / "cache", column, value)
        second = json.loads((lab.run_dirs()[1] / "run.json").read_text())
    assert [(r["cached_from"], r["text"], r["attempts"]) for r in rows] == [
        (None, '{"answer": 0}', 1), (None, '{"answer": 0}', 1)]
    assert second["status"] == "completed"
    with sqlite_db(tmp_path / "cache" / "responses.sqlite3") as db:
        assert db.execute("SELECT run_id FROM answers").fetchall() == [(second["run_id"],)] * 2


def test_cache_shows_an_entry_whose_columns_are_not_text(tmp_path):
    cache = tmp_path / "cache"
    Store(cache).close()
    with sqlite_db(cache / "responses.sqlite3") as db:
        db.execute("INSERT INTO answers VALUES ('k', ?, ?, ?, ?, '{}', NULL)",
                   (b"m\xff", b"\x1b[31m", b"r", b"\x00\xff"))
    listed = audit(tmp_path, "cache", "--cache-dir", str(cache), "--json")
    shown = audit(tmp_path, "cache", "--cache-dir", str(cache))
    assert (listed.returncode, listed.stderr) == (EXIT["ok"], "")
    assert json.loads(listed.stdout)["models"] == [{"model": "m\ufffd", "digest": "\x1b[31m", "entries": 1,
                                                     "newest": "\x00\ufffd"}]
    assert (shown.returncode, shown.stderr) == (EXIT["ok"], "")
    assert "│ m\ufffd    │ \\x1b[31m │       1 │ \\x00\ufffd        │" in shown.stdout
    cleared = audit(tmp_path, "cache", "--cache-dir", str(cache), "--clear", "--json")
    assert (cleared.returncode, json.loads(cleared.stdout)["cleared"]) == (EXIT["ok"], 1)


def _place(tmp_path: Path, case: str) -> tuple[Path, str]:
    """A cache_dir where no cache can be, and what is said of it."""
    (tmp_path / "file").write_text("mine")
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    (tmp_path / "dangling").symlink_to("nowhere")
    (tmp_path / "to-file").symlink_to("file")
    return {"a loop of links": (tmp_path / "loop1", f"{tmp_path / 'loop1'}: a loop of symbolic links"),
            "a link to nothing": (tmp_path / "dangling",
                                  f"{tmp_path / 'dangling'} is a symbolic link to nothing (to nowhere)"),
            "under a file": (tmp_path / "file" / "x" / "y",
                             f"{tmp_path / 'file'} is a file, so {tmp_path / 'file' / 'x' / 'y'} cannot be made"),
            "a link to a file": (tmp_path / "to-file",
                                 f"{tmp_path / 'to-file'} is a file, where the response cache's folder belongs")}[case]


@pytest.mark.parametrize("case", ["a loop of links", "a link to nothing", "under a file", "a link to a file"])
def test_cache_of_a_place_no_cache_can_be_says_what_is_there(tmp_path, case):
    folder, problem = _place(tmp_path, case)
    for clear in ([], ["--clear"]):
        result = audit(tmp_path, "cache", "--cache-dir", str(folder), *clear)
        assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "",
                                                                     f"benchrun: error: --cache-dir: {problem}\n")


@pytest.mark.parametrize("case", ["a loop of links", "a link to nothing", "under a file"])
def test_a_run_whose_cache_dir_can_hold_no_cache_says_what_is_there(tmp_path, case):
    folder, problem = _place(tmp_path, case)
    with Lab(tmp_path, n=2, latency_s=0) as lab:
        result = lab.call(*[arg for arg in lab.args() if arg != "cache=false"], f"cache_dir={folder}")
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: cache_dir: {problem}; set cache_dir= to a directory on local disk, or cache=false\n"))


# -- reading limits ----------------------------------------------------------------------------------------------

def _limited(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """`benchrun-audit ARGS` in a process of at most 800 MB of address space."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (800 * 2**20, 800 * 2**20))
    return subprocess.run([sys.executable, "-m", "benchrun.audit", *args], cwd=cwd, env=child_env(), text=True,
                          capture_output=True, preexec_fn=limit, timeout=300)


@pytest.mark.parametrize("finish", [True, False])
def test_a_record_line_of_900_mb_is_digested_in_pieces_never_held_whole(tmp_path, finish):
    run_dir = synthetic_run(tmp_path / "run", [1, 0], finish=finish)
    with open(run_dir / "responses.jsonl", "ab") as handle:  # sparse: no disk
        handle.truncate(handle.tell() + 900 * 2**20)
    verified, shown = _limited(tmp_path, "verify", str(run_dir)), _limited(tmp_path, "show", str(run_dir))
    (run_dir / "responses.jsonl").unlink()
    overlong = ("responses.jsonl: line 3 is longer than any line benchrun reads whole (268,435,456 bytes) and no "
                "digest covers it")
    assert (verified.returncode, verified.stderr) == (EXIT["not_intact"], "")
    assert f"FAIL  {overlong}\n" in verified.stdout
    assert (shown.returncode, shown.stdout) == (EXIT["archive"], "")
    assert shown.stderr == (f"benchrun: error: in '{run_dir}': run 555555555555: {overlong}, so what it says cannot "
                            f"be trusted; benchrun-audit verify {run_dir} says what changed\n")


# -- a run that did not end, its records.sha256 rewritten to match lines no run writes ---------------------------

def _judged_and_killed(tmp_path: Path) -> Path:
    """A judged run (the seed's symbol task, judged by qwen2.5), left as a killed writer leaves it."""
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=answer) as server:
        result = cli("task.path=bench", f"runner.host={server.url}", f"outputs={tmp_path / 'outputs'}",
                     "judge.model=qwen2.5", "cache=false", cwd=tmp_path)
    assert result.returncode == EXIT["ok"], result.stderr
    [run_dir] = [path.parent for path in (tmp_path / "outputs").glob("*/*/run.json")]
    info = json.loads((run_dir / "run.json").read_text())
    write_atomic(run_dir / "run.json", json.dumps({**info, "status": "running", "ended_at": None, "files": {}}).encode())
    for name in ("summary.json", "seal.json"):
        (run_dir / name).unlink()
    left_by_dead_writer(run_dir)
    return run_dir


def _run_id(run_dir: Path) -> str:
    return json.loads((run_dir / "run.json").read_text())["run_id"]


def _edited(run_dir: Path, edit) -> None:
    """`edit` the judge calls' lines, and records.sha256 rewritten to match every line."""
    path = run_dir / "judgements.jsonl"
    path.write_text("".join(edit(path.read_text().splitlines(keepends=True))))
    _redigest(run_dir, "responses.jsonl", "scores.jsonl", "judgements.jsonl")


def _redigest(run_dir: Path, *names: str) -> None:
    """records.sha256 rewritten to match every line of record files `names`, as anyone can rewrite a killed run's."""
    (run_dir / "records.sha256").write_bytes(b"".join(
        digest_lines(name, (run_dir / name).read_bytes().splitlines(keepends=True)) for name in names))


EDITS = {"a call for a sample with no response": (
             lambda lines: lines + [lines[2].replace("symb=#", "symb=%")],
             "line 4 judges 'symbol:symb=%', which has no response"),
         "another judge's call": (lambda lines: [*lines[:2], lines[2].replace('"judge":"names"', '"judge":"other"')],
                                  "line 3 is judge 'other''s call 0, not one of task 'symbol''s"),
         "a call repeated": (lambda lines: lines + lines[2:],
                             "line 4 repeats judge 'names''s call 0 on 'symbol:symb=#' (line 3)")}


@pytest.mark.parametrize("case", EDITS)
def test_a_killed_runs_judge_calls_that_no_run_writes_are_refused_by_every_reader(tmp_path, case):
    edit, problem = EDITS[case]
    run_dir = _judged_and_killed(tmp_path)
    _edited(run_dir, edit)
    verified = audit(tmp_path, "verify", str(run_dir))
    assert verified.returncode == EXIT["not_intact"]
    assert f"FAIL  judgements.jsonl: {problem}\n" in verified.stdout
    for command in ("show", "export"):
        result = audit(tmp_path, command, str(run_dir))
        assert (result.returncode, result.stdout, result.stderr) == (EXIT["archive"], "", (
            f"benchrun: error: in '{run_dir}': run {_run_id(run_dir)}: "
            f"judgements.jsonl: {problem}, so what it says cannot be trusted; benchrun-audit verify {run_dir} says "
            "what changed\n"))
    rescored = audit(tmp_path, "rescore", str(run_dir))
    assert (rescored.returncode, rescored.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{run_dir}': judgements.jsonl: {problem}; rescore with --force to score its records "
        "anyway (recorded in rescore.json)\n"))


def test_a_killed_judged_run_as_written_still_reads(tmp_path):
    run_dir = _judged_and_killed(tmp_path)
    shown, exported = audit(tmp_path, "show", str(run_dir)), audit(tmp_path, "export", str(run_dir))
    assert (shown.returncode, shown.stderr, exported.returncode, exported.stderr) == (EXIT["ok"], "", EXIT["ok"], "")


def test_a_manifest_of_900_mb_planted_in_a_run_is_never_read_whole(tmp_path):
    (tmp_path / "bench").mkdir()
    run_dir = synthetic_run(tmp_path / "run", [1, 0], config=f"task: {{path: {tmp_path / 'bench'}}}\n")
    with open(run_dir / "manifest.json", "ab") as handle:  # sparse: no disk
        handle.truncate(900 * 2**20)
    verified, shown = _limited(tmp_path, "verify", str(run_dir)), _limited(tmp_path, "show", str(run_dir))
    (run_dir / "manifest.json").unlink()
    assert (verified.returncode, verified.stderr) == (EXIT["not_intact"], "")
    assert "FAIL  manifest.json: changed: its sha256 " in verified.stdout
    assert "ok    sources: not checked: manifest.json is not the run's\n" in verified.stdout
    assert (shown.returncode, shown.stdout) == (EXIT["archive"], "")
    assert shown.stderr == (f"benchrun: error: in '{run_dir}': run 555555555555: manifest.json: changed: its sha256 is "
                            f"not the manifest id in run.json, so what it says cannot be trusted; benchrun-audit verify "
                            f"{run_dir} says what changed\n")


# -- figures no server measures ------------------------------------------------------------------------------------

COUNTS = {"prompt_tokens": ({"prompt_tokens": -5}, "prompt_tokens: -5 is no count a server measures"),
          "completion_tokens": ({"completion_tokens": 10**30}, "completion_tokens: "
                                "1000000000000000000000000000000 is no count a server measures"),
          "durations_ns": ({"durations_ns": {"total": -1}}, "durations_ns.total: -1 is no count a "
                           "server measures")}


@pytest.mark.parametrize("field", COUNTS)
def test_a_killed_runs_response_holding_a_count_no_server_measures_is_refused(tmp_path, field):
    patch, problem = COUNTS[field]
    run_dir = synthetic_run(tmp_path / "run", [1, 0], finish=False)
    path = run_dir / "responses.jsonl"
    path.write_text("".join(json.dumps({**line, **patch}) + "\n" for line in read_jsonl(path)))
    _redigest(run_dir, "responses.jsonl", "scores.jsonl")
    for command in (["show", str(run_dir)], ["compare", str(run_dir), str(run_dir)]):
        result = audit(tmp_path, *command)
        assert (result.returncode, result.stderr) == (EXIT["archive"], (
            f"benchrun: error: in '{path}': line 1: not a valid record: {problem} (0 to 2^53 - 1)\n"))


# -- a newer benchrun's run --------------------------------------------------------------------------------------

NEWER = "which this benchrun does not know (written by a newer benchrun? read it with that one)"


@pytest.mark.parametrize(("change", "problem"), [({"sharded_by": "host"}, f"sharded_by: a key {NEWER}"),
                                                 ({"schema_version": 2}, f"schema_version: schema version 2, {NEWER}")])
def test_a_run_json_of_a_newer_benchrun_is_said_to_be_that(tmp_path, change, problem):
    run_dir = synthetic_run(tmp_path / "run", [1, 0], finish=False)
    info = json.loads((run_dir / "run.json").read_text())
    written = json.dumps({**info, **change}).encode()
    (run_dir / "run.json").write_bytes(written)
    for command in ("show", "verify", "export"):
        result = audit(tmp_path, command, str(run_dir))
        assert (result.returncode, result.stdout, result.stderr) == (EXIT["archive"], "", (
            f"benchrun: error: in '{run_dir / 'run.json'}': unreadable: {problem}\n"))
    assert (run_dir / "run.json").read_bytes() == written


def test_a_record_line_of_a_newer_benchrun_is_said_to_be_that(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1, 0], finish=False)
    path = run_dir / "responses.jsonl"
    path.write_text("".join(json.dumps({**line, "reasoning": "..."}) + "\n" for line in read_jsonl(path)))
    _redigest(run_dir, "responses.jsonl", "scores.jsonl")
    result = audit(tmp_path, "export", str(run_dir))
    assert (result.returncode, result.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{path}': line 1: not a valid record: reasoning: a key {NEWER}\n"))

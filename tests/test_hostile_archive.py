"""The archive as hostile input, and places that cannot be written: every damaged file, loop of links, run in an odd
place and unwritable path is one line naming the path, with an exit code from the one table and no traceback, and
what was archived stays as it was.

`benchrun-audit` is called through its entry point in this process (benchrun.testing.inprocess: what a real process
prints); what Hydra does before benchrun's own code runs, in a real `python -m benchrun`."""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
from pathlib import Path

import pytest

from benchrun.archive.lookup import scan_runs
from benchrun.archive.reader import Run
from benchrun.core.errors import EXIT
from benchrun.testing.small_disk import can_mount, read_only
from tests.helpers.archives import reseal, synthetic_run
from tests.helpers.benchfiles import task, tasks_yml, write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.sqlitefile import rows

NEEDS_MOUNT = pytest.mark.skipif(not can_mount(), reason="a read-only file system is mounted for it (needs root)")
NO_SERVER = "runner.host=http://127.0.0.1:9"
"""Where no server listens: the cases below are refused before anything is asked."""


def audit(cwd: Path, *args: str):
    return call_benchrun(*args, cwd=cwd, module="benchrun.audit")


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root`, by relative path, with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def run_dir(tmp_path) -> Path:
    """A finished run of three samples whose benchmark (and its scorer, closeness) is at tmp_path/bench."""
    bench = write_bench(tmp_path, {"tasks.yml": tasks_yml(task(scorer="closeness")),
                                   "custom_scorer.py": "def closeness(response, reference):\n    return 1\n"})
    return synthetic_run(tmp_path / "run", [1, 0, 1], config=f"task: {{path: {bench}}}\n")


# -- damaged files --------------------------------------------------------------------------------------------------

DAMAGE = {  # what a damaged JSON file holds, and what reading it says
    "not JSON": (b'{"run_id": ', "Invalid JSON: EOF while parsing a value at line 1 column 11"),
    "JSON of the wrong shape": (b"[1, 2]", "Input should be an object"),
    "binary": (bytes(range(256)), "Invalid JSON: expected value at line 1 column 1"),
    "empty": (b"", "Invalid JSON: EOF while parsing a value at line 1 column 0"),
    "nested 100,000 deep": (b"[" * 100_000 + b"]" * 100_000,
                            "Invalid JSON: recursion limit exceeded at line 1 column 202"),
}
READ_AS = {"run.json": "unreadable: {why}", "summary.json": "unreadable: {why}",
           "manifest.json": "changed: its sha256 is not the manifest id in run.json"}  # a manifest: never read whole


@pytest.mark.parametrize("damage", list(DAMAGE))
@pytest.mark.parametrize("name", list(READ_AS))
def test_rescore_of_a_damaged_file(run_dir, name, damage):
    data, why = DAMAGE[damage]
    (run_dir / name).write_bytes(data)
    before = snapshot(run_dir)
    result = audit(run_dir.parent, "rescore", "--force", str(run_dir))  # read, not refused as changed
    assert (result.returncode, result.stderr) == (
        EXIT["archive"], f"benchrun: error: in '{run_dir / name}': {READ_AS[name].format(why=why)}\n")
    assert snapshot(run_dir) == before


@pytest.mark.parametrize("damage", list(DAMAGE))
@pytest.mark.parametrize("name", ["run.json", "summary.json", "seal.json", "manifest.json"])
def test_verify_of_a_damaged_file(run_dir, name, damage):
    data, why = DAMAGE[damage]
    info = json.loads((run_dir / "run.json").read_text())
    (run_dir / name).write_bytes(data)
    result = audit(run_dir.parent, "verify", str(run_dir))
    if name == "run.json":
        assert (result.returncode, result.stderr, result.stdout) == (
            EXIT["archive"], f"benchrun: error: in '{run_dir / name}': unreadable: {why}\n", "")
        return
    sha, written, now = hashlib.sha256(data).hexdigest()[:12], info["files"]["summary.json"], data.count(b"\n")
    lines = "" if now == written["lines"] else f"; {written['lines']} lines when written, {now} now"
    finding = {
        "summary.json": f"FAIL  summary.json: changed since the run finished: sha256 {sha}…, run.json has "
                        f"{written['sha256'][:12]}…{lines}",
        "seal.json": f"FAIL  seal.json: unreadable: {why}",
        "manifest.json": f"FAIL  manifest.json: changed: its sha256 {sha}… is not the manifest id "
                         f"{info['manifest_id'][:12]}… in run.json",
    }[name]
    assert (result.returncode, result.stderr) == (EXIT["not_intact"], "")
    assert finding in result.stdout.splitlines()


CONFIG_DAMAGE = {  # a damaged config.yaml, and what rescore (which finds the benchmark through it) says
    "not YAML": (b"task: [", "line 1, column 8: YAML syntax error: expected the node content, but found '<stream "
                             "end>' (while parsing a flow node at line 1, column 8)"),
    "a list": (b"[1, 2]\n", "not a config: not a mapping"),
    "binary": (bytes(range(256)), "line 2, column 118: not UTF-8 text (invalid start byte, 0x80)"),
    "empty": (b"", "no task.path: the benchmark cannot be located"),
    "nested 5,000 deep": (b"task: " + b"[" * 5_000 + b"]" * 5_000,
                          "line 1, column 1006: lists and mappings nested more than 32 deep; a benchmark file needs 5 "
                          "at most"),
    "an alias bomb": (b"a: &a [x, x, x]\nb: &b [*a, *a, *a]\ntask: [*b, *b, *b]\n",
                      "line 2, column 8: YAML aliases (*a) are not allowed in benchmark files; write the values out"),
}


@pytest.mark.parametrize("damage", list(CONFIG_DAMAGE))
def test_a_damaged_config(run_dir, damage):
    data, why = CONFIG_DAMAGE[damage]
    (run_dir / "config.yaml").write_bytes(data)
    rescored = audit(run_dir.parent, "rescore", str(run_dir), "--force")  # unforced: changed since the run ended
    assert (rescored.returncode, rescored.stderr) == (
        EXIT["archive"], f"benchrun: error: in '{run_dir / 'config.yaml'}': {why}\n")
    verified = audit(run_dir.parent, "verify", str(run_dir))
    assert (verified.returncode, verified.stderr) == (EXIT["not_intact"], "")
    assert "FAIL  config.yaml: missing or unreadable: the benchmark's sources cannot be located" in \
        verified.stdout.splitlines()


def foreign_database(path: Path) -> None:
    """An SQLite file of another program's, with a table named as the cache's and a row in it."""
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE answers (x)")
    db.execute("INSERT INTO answers VALUES (1)")
    db.commit()
    db.close()


@pytest.mark.parametrize(("content", "why"), [
    ("text", "DatabaseError: file is not a database"), ("binary", "DatabaseError: file is not a database"),
    ("another program's database", "it holds another program's tables, 'answers', and no schema version")])
def test_a_cache_file_that_is_not_the_cache(tmp_path, content, why):
    path = tmp_path / "cache" / "responses.sqlite3"
    path.parent.mkdir()
    if content == "another program's database":
        foreign_database(path)
    else:
        path.write_bytes(b"hello\n" if content == "text" else bytes(range(256)) * 64)
    for clear in ([], ["--clear"]):
        result = audit(tmp_path, "cache", "--cache-dir", str(path.parent), *clear)
        assert (result.returncode, result.stderr) == (
            EXIT["usage"], f"benchrun: error: --cache-dir: the response cache at {path} cannot be used ({why}); this "
                           "command lists and clears only a cache it can open: name the cache's own folder with "
                           "--cache-dir, or move this file aside (a run makes a new cache where there is none)\n")
    if content == "another program's database":
        assert rows(path, "SELECT x FROM answers") == [(1,)]
        assert rows(path, "SELECT name FROM sqlite_master") == [("answers",)]


# -- runs in odd places ---------------------------------------------------------------------------------------------


def listed(root: Path) -> list[str]:
    result = audit(root.parent, "list", str(root), "--json")
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    return [entry["path"] for entry in json.loads(result.stdout)]


def shown(root: Path, prefix: str) -> str:
    """The path of the run `show PREFIX --root ROOT` finds."""
    result = audit(root.parent, "show", prefix, "--root", str(root), "--json")
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    return json.loads(result.stdout)["path"]


def test_loops_of_links_under_the_archive_root(tmp_path):
    root = tmp_path / "outputs"
    run = synthetic_run(root / "day" / "run", [1], run_id="a" * 12)
    (root / "day" / "up").symlink_to("..")  # day/up/day/up/...
    (root / "self").symlink_to("self")  # a link to itself
    (root / "zz").symlink_to(run)  # the run again, under another name
    assert listed(root) == [str(run)]
    assert shown(root, "aaaa") == str(run)


def test_a_run_made_inside_another_runs_directory(tmp_path):
    root = tmp_path / "outputs"
    outer = synthetic_run(root / "outer", [1], run_id="a" * 12)
    inner = synthetic_run(tmp_path / "inner", [0], run_id="b" * 12).rename(outer / "inner")  # no writer makes one there
    assert listed(root) == [str(inner), str(outer)]  # newest first
    assert (shown(root, "aaaa"), shown(root, "bbbb")) == (str(outer), str(inner))


def test_a_directory_that_cannot_be_listed_is_reported(tmp_path, monkeypatch):
    root = tmp_path / "outputs"
    run = synthetic_run(root / "a", [1])
    (root / "b").mkdir()
    scandir = os.scandir

    def refusing(path):
        if Path(path) == root / "b":
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)
    monkeypatch.setattr(os, "scandir", refusing)
    found = [item.path if isinstance(item, Run) else str(item) for item in scan_runs(root)]
    assert found == [run, f"in '{root / 'b'}': unreadable: permission denied"]


# -- places that cannot be written ----------------------------------------------------------------------------------


@pytest.mark.slow
@NEEDS_MOUNT
def test_a_run_on_a_read_only_file_system(tmp_path):
    place = tmp_path / "ro"
    place.mkdir()
    with read_only(place):
        result = call_benchrun(NO_SERVER, f"outputs={place / 'outputs'}", cwd=tmp_path)
    assert (result.returncode, list(place.iterdir())) == (EXIT["archive"], [])
    assert re.fullmatch(f"benchrun: error: the run directory {re.escape(str(place))}/outputs/\\S+ \\(hydra.run.dir, made "
                        f"of outputs= unless given\\) cannot be made: read-only file system: "
                        f"{re.escape(str(place))}/outputs; nothing was recorded\n", result.stderr)


@NEEDS_MOUNT
def test_rescore_and_resume_on_a_read_only_file_system(run_dir, tmp_path):
    killed = synthetic_run(tmp_path / "killed", [1, 0], finish=False)
    before = snapshot(tmp_path)
    with read_only(tmp_path):
        rescored = audit(tmp_path, "rescore", str(run_dir))
        resumed = audit(tmp_path, "resume", str(killed), "--host", "http://127.0.0.1:9")
    assert [(r.returncode, r.stderr) for r in (rescored, resumed)] == [
        (EXIT["archive"], f"benchrun: error: read-only file system writing {run_dir / 'run.lock'}\n"),
        (EXIT["archive"], f"benchrun: error: read-only file system writing {killed / 'run.lock'}\n")]
    assert snapshot(tmp_path) == before


def test_a_run_directory_that_is_a_file(tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("mine\n")
    refused = call_benchrun(NO_SERVER, f"hydra.run.dir={taken}", cwd=tmp_path)
    under = call_benchrun(NO_SERVER, f"hydra.run.dir={taken / 'run'}", cwd=tmp_path)
    assert [(r.returncode, r.stderr) for r in (refused, under)] == [
        (EXIT["usage"], f"benchrun: error: {taken} is not a directory; nothing was changed; pick a new directory "
                        "(hydra.run.dir=...)\n"),
        (EXIT["archive"], f"benchrun: error: the run directory {taken / 'run'} (hydra.run.dir, made of outputs= "
                          f"unless given) cannot be made: not a directory: {taken / 'run'}; nothing was recorded\n")]
    assert [p.name for p in tmp_path.iterdir()] == ["taken"] and taken.read_text() == "mine\n"


def test_empty_outputs_is_refused_before_anything_is_made(tmp_path):
    """`outputs=` would put the run's directory at the file system's root (`/<date>/...`)."""
    before = sorted(os.listdir("/"))
    for sweep in ([], ["-m", "runner.model=a,b"]):
        result = call_benchrun(*sweep, NO_SERVER, "outputs=", cwd=tmp_path)
        assert (result.returncode, result.stderr) == (
            EXIT["usage"], "benchrun: error: in 'config': outputs: empty: name a directory (by default, outputs); an "
                           "empty one would put run directories at the file system's root\n")
    assert (sorted(os.listdir("/")), list(tmp_path.iterdir())) == (before, [])


def test_export_to_a_place_it_cannot_write(run_dir, tmp_path):
    for target, why in ((tmp_path, "is a directory"), (tmp_path / "nowhere" / "rows.csv", "no such file or directory")):
        result = audit(tmp_path, "export", str(run_dir), "--output", str(target))
        assert (result.returncode, result.stderr) == (EXIT["archive"], f"benchrun: error: {why} writing {target}\n")
    assert [p for p in tmp_path.rglob(".*.tmp")] == []


@NEEDS_MOUNT
def test_export_to_a_read_only_file_system(run_dir, tmp_path):
    place = tmp_path / "ro"
    place.mkdir()
    with read_only(place):
        result = audit(tmp_path, "export", str(run_dir), "--output", str(place / "rows.csv"))
    assert (result.returncode, result.stderr) == (
        EXIT["archive"], f"benchrun: error: read-only file system writing {place / 'rows.csv'}\n")


def test_an_export_that_fails_part_way_leaves_the_file_that_was_there(run_dir, tmp_path):
    target = tmp_path / "rows.csv"
    assert audit(tmp_path, "export", str(run_dir), "--text", "--output", str(target)).returncode == EXIT["ok"]
    before = target.read_bytes()
    broken = synthetic_run(tmp_path / "broken", [1, 1], run_id="6" * 12)  # of another id: two of one are refused (pass 17)
    with open(broken / "scores.jsonl", "ab") as handle:  # sealed so: a line no reader reads past its digest (pass 17)
        handle.write(b'{"id": "t:a=0"}\n')
    reseal(broken, "scores.jsonl")
    result = audit(tmp_path, "export", str(run_dir), str(broken), "--output", str(target))
    assert (result.returncode, result.stderr) == (
        EXIT["archive"], f"benchrun: error: in '{broken / 'scores.jsonl'}': line 5: not a valid record: task: Field "
                         "required\n")
    assert (target.read_bytes(), [p for p in tmp_path.rglob(".*.tmp")]) == (before, [])

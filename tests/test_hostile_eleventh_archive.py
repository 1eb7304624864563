"""Hostile input, eleventh pass, the archive and audit side (issue 19's fresh pass of the same kinds): the cases it
found bad, each with the rule it now obeys.

- a response cache entry whose run id, model, digest or time is not text (a BLOB, bytes that are not UTF-8: SQLite
  keeps whatever a hand or another program writes): a run that found it failed with a PydanticSerializationError's
  traceback as its reason (exit 1, its run directory `failed` with no answer); `benchrun-audit cache` a TypeError's
  traceback. And an entry whose run id is any text (`../../etc‮` and a newline, ten megabytes) had it copied into the
  run's records as `cached_from`. Now the cache's reader takes an entry only as benchrun writes it
  (`execute.cache._entry`: its columns UTF-8 text, its run id a run id, `core.recordvalues.RUN_ID`), else the entry
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
"""

from __future__ import annotations

import json
import resource
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.execute.cache import Store
from benchrun.testing.inprocess import child_env, cli
from benchrun.testing.lab import Lab
from tests.helpers.archives import read_jsonl, synthetic_run

pytestmark = pytest.mark.slow


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


# -- the response cache's entries ------------------------------------------------------------------------------------

def _cached_twice(lab: Lab, cache: Path, column: str, value: object) -> list[dict]:
    """A run that fills the cache, every entry's `column` set to `value`, and the records of a second run."""
    args = [arg for arg in lab.args() if arg != "cache=false"] + [f"cache_dir={cache}"]
    assert lab.call(*args).returncode == EXIT["ok"]
    with sqlite3.connect(cache / "responses.sqlite3") as db:
        db.execute(f"UPDATE answers SET {column} = ?", (value,))
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
    with sqlite3.connect(tmp_path / "cache" / "responses.sqlite3") as db:
        assert db.execute("SELECT run_id FROM answers").fetchall() == [(second["run_id"],)] * 2


def test_cache_shows_an_entry_whose_columns_are_not_text(tmp_path):
    cache = tmp_path / "cache"
    Store(cache).close()
    with sqlite3.connect(cache / "responses.sqlite3") as db:
        db.execute("INSERT INTO answers VALUES ('k', ?, ?, ?, ?, '{}')", (b"m\xff", b"\x1b[31m", b"r", b"\x00\xff"))
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

"""Runs and files for the thirty-eighth hostile pass of the archive side: a rescore copied by a file manager, runs
whose embedded engine loaded other llama.cpp libraries, record files git or a crash left, and response caches."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from benchrun.execute.cacherows import AS_BYTES
from benchrun.execute.cacheseal import row_seal
from benchrun.testing.inprocess import child_env
from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.p28_archive import rescored


def rescore_copied(root: Path) -> Path:
    """A run rescored once, whose rescores/ also holds `001 (1)` (the copy a file manager makes of `001`), a file
    `notes.txt` and a hidden `.DS_Store` (which macOS's Finder leaves in every folder it shows)."""
    run_dir = rescored(root)
    shutil.copytree(run_dir / "rescores" / "001", run_dir / "rescores" / "001 (1)")
    (run_dir / "rescores" / "notes.txt").write_text("kept by hand\n")
    (run_dir / "rescores" / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")
    return run_dir


def engine_runs(root: Path, first: dict[str, str], second: dict[str, str]) -> tuple[Path, Path]:
    """Two runs of one model file whose embedded engine loaded the llama.cpp and ggml libraries `first` and `second`
    (path -> sha256), as run.json's identity.libraries keeps them."""
    return (synthetic_run(root / "a", [1, 0], identity={"sha256": "a" * 64, "libraries": first}),
            synthetic_run(root / "b", [1, 0], run_id="6" * 12, identity={"sha256": "a" * 64, "libraries": second}))


def lfs_pointer(path: Path) -> str:
    """`path` made the Git LFS pointer to itself that a clone without Git LFS checks out; the pointer's sha256."""
    data = path.read_bytes()
    oid = hashlib.sha256(data).hexdigest()
    path.write_text(f"version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {len(data)}\n")
    return oid


def conflicted(path: Path) -> None:
    """`path`'s first line as git leaves it when a merge changed it on both sides: the two versions between markers."""
    first, *rest = path.read_text().splitlines(keepends=True)
    path.write_text("".join(["<<<<<<< HEAD\n", first, "=======\n", first.replace("1", "2"), ">>>>>>> other\n", *rest]))


def zeroed_from(path: Path, start: int) -> None:
    """`path`'s bytes from `start` on made NUL bytes, as a crash of the machine leaves writes its disk never took."""
    data = path.read_bytes()
    path.write_bytes(data[:start] + b"\0" * (len(data) - start))


V1_SCHEMA = ("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
             "CREATE TABLE answers (key TEXT PRIMARY KEY, model TEXT NOT NULL, digest TEXT, run_id TEXT NOT NULL, "
             "created_at TEXT NOT NULL, answer TEXT NOT NULL)",
             "INSERT INTO meta VALUES ('schema_version', '1')")
"""A response cache as a benchrun of schema version 1 made it: its rows without a seal."""


def resealed(db: sqlite3.Connection) -> None:
    """Every row of the response cache `db` sealed as it now is: what a hand that edits rows and seals them again
    leaves, whose rows the checks after the seal's still see."""
    for key, *columns in db.execute(f"SELECT key, {AS_BYTES} FROM answers").fetchall():
        db.execute("UPDATE answers SET sealed = ? WHERE key = ?", (row_seal(key, *columns), key))


def resume_refused(run_dir: Path, name: str) -> str:
    """What `resume` of the killed run in `run_dir` (asking no server) said as it refused, its file `name` unchanged."""
    before = (run_dir / name).read_bytes()
    done = audit(run_dir.parent, "resume", run_dir.name, "--host", "http://127.0.0.1:9")
    assert (done.returncode, (run_dir / name).read_bytes()) == (4, before)
    return done.stderr


def audit_process(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """A real `benchrun-audit ARGS` process in `cwd`, ended (TimeoutExpired) if it waits past 30 s: on a pipe, say."""
    return subprocess.run([sys.executable, "-m", "benchrun.audit", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=30, env=child_env())

"""Runs for the thirty-eighth hostile pass of the archive side: a rescore copied by a file manager, and runs whose
embedded engine loaded other llama.cpp libraries."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from tests.helpers.archives import synthetic_run
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

"""Runs for the twenty-fifth hostile pass of the archive side: a finished run's run.json rewritten byte for byte as
given (a key twice, a schema_version of another type) and sealed over, as whoever can write the directory can."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Callable

from benchrun.archive.writer import write_atomic
from benchrun.core.records import FileDigest, Seal


def sealed_over(run_dir: Path, change: Callable[[str], str]) -> Path:
    """`run_dir`'s run.json text changed by `change`, written as it is, and sealed: every digest matches."""
    text = change((run_dir / "run.json").read_text())
    write_atomic(run_dir / "run.json", text.encode())
    info = json.loads(text)
    seal = Seal.model_construct(run_id=info["run_id"], sealed_at=info["ended_at"], run_json=FileDigest.of(text.encode()))
    write_atomic(run_dir / "seal.json", seal.model_dump_json(indent=2).encode() + b"\n")
    return run_dir


def manifest_over(run_dir: Path, old: bytes, new: bytes) -> Path:
    """`run_dir`'s manifest.json with its first `old` replaced by `new` as bytes, its id in run.json and the seal made
    to match: a run as a writer that wrote it so would have left it."""
    data = (run_dir / "manifest.json").read_bytes().replace(old, new, 1)
    (run_dir / "manifest.json").write_bytes(data)
    return sealed_over(run_dir, lambda text: text.replace(json.loads(text)["manifest_id"], hashlib.sha256(data).hexdigest()))

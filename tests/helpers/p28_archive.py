"""Runs for the twenty-eighth hostile pass of the archive side: a run rescored, and a rescore's files rewritten with
their digests in rescore.json made to match (what a writer that wrote them so would have left)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from benchrun.archive.writer import file_digest
from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit

ONE = "def closeness(response, sample):\n    return 1.0\n"
"""A scorer file whose `closeness` gives every answer 1.0."""


def rescored(root: Path) -> Path:
    """A run of two samples (closeness 1 and 0) under `root`, rescored once with ONE (closeness 1 and 1)."""
    run_dir = synthetic_run(root / "r", [1, 0])
    (root / "mine.py").write_text(ONE)
    done = audit(root, "rescore", str(run_dir), "--scorers", "mine.py", "--only")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return run_dir


def redigested(rescore: Path, name: str, change: Callable[[dict], None]) -> None:
    """The JSON file `name` of `rescore` changed by `change`, and its digest in rescore.json made to match."""
    data = json.loads((rescore / name).read_text())
    change(data)
    (rescore / name).write_text(json.dumps(data, indent=2) + "\n")
    info = json.loads((rescore / "rescore.json").read_text())
    info["files"].update({key: file_digest(rescore / key).model_dump() for key in info["files"]})
    (rescore / "rescore.json").write_text(json.dumps(info, indent=2))


def scored_again(rescore: Path, number: int, **fields: object) -> None:
    """Line `number` of `rescore`'s scores.jsonl with `fields` set, and its digest in rescore.json made to match."""
    path = rescore / "scores.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines[number - 1] = json.dumps({**json.loads(lines[number - 1]), **fields}) + "\n"
    path.write_text("".join(lines))
    redigested(rescore, "rescore.json", lambda info: None)


def ungraded(rescore: Path) -> None:
    """`rescore`'s score lines of its last answer taken out, and summary.json's lines and the digests made to match."""
    path = rescore / "scores.jsonl"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:2]))
    redigested(rescore, "summary.json", lambda summary: [line.update(n=1, mean=1, stderr=None)
                                                         for line in summary["metrics"]])


def nested(depth: int) -> bytes:
    """A JSON array nested `depth` deep: deeper than Python's JSON reader follows from about 1,000."""
    return b"[" * depth + b"]" * depth

"""Hostile input, seventeenth pass, the archive and audit side (issue 19's fresh pass of the same kinds): the cases it
found bad, each with the rule it now obeys.

- names at the file system's limit: `export --output NAME` and `report --output NAME`, NAME of 230 to 255 bytes (a
  name `touch` makes), were refused `file name too long writing NAME`, and `merge --into DIR`, DIR's name of 234 to
  255 bytes, `file name too long: .DIR.merging-<id>`, a name the user never gave: their temporary files' names were
  the name and a suffix. Now a temporary file's (or folder's) name begins with the name's first 223 bytes
  (`archive.atomic.stem`)

What held is in the pass's note.
"""
from __future__ import annotations

import json
from pathlib import Path

from benchrun.core.errors import EXIT
from benchrun.core.layout import NAME_MAX
from benchrun.core.shards import Shard
from benchrun.testing.inprocess import cli
from tests.helpers.archives import synthetic_run


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


# -- names at the file system's limit --------------------------------------------------------------------------------

def test_an_output_named_as_long_as_a_file_system_takes_is_written(tmp_path):
    """`export --output` and `report --output` of a 255-byte name (in UTF-8: 127 two-byte letters and one more):
    `file name too long writing ...`, exit 4, as their temporary file's name was 26 bytes longer."""
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0])
    for name, *command in (("é" * 127 + "x", "export", "--format", "jsonl"), ("r" * (NAME_MAX - 5) + ".html", "report")):
        assert len(name.encode()) == NAME_MAX
        done = audit(tmp_path, *command, str(run_dir), "--output", name)
        assert (done.returncode, done.stderr) == (EXIT["ok"], "")
        assert (tmp_path / name).stat().st_size > 0
    rows = [json.loads(line) for line in (tmp_path / ("é" * 127 + "x")).read_text().splitlines()]
    assert len(rows) == 4
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_a_merge_into_a_directory_named_as_long_as_a_file_system_takes_is_made(tmp_path):
    """`merge --into DIR`, DIR's name 255 bytes: `file name too long: .DIR.merging-<id>` (exit 4), naming a folder the
    user never gave; the merged run is made, and verifies."""
    synthetic_run(tmp_path / "shard", [1.0, 0.0], run_id="c" * 12, shard=Shard.parse("1/1"))
    into = tmp_path / ("m" * NAME_MAX)
    done = audit(tmp_path, "merge", str(tmp_path / "shard"), "--into", str(into))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert audit(tmp_path, "verify", str(into)).stdout.splitlines()[-1] == "intact"
    assert sorted(p.name for p in tmp_path.iterdir()) == [into.name, "shard"]

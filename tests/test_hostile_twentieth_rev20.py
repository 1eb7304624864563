"""Hostile input, twentieth pass, against this session's own merged code: each case with the rule it now obeys.

- `retry lnk/..` (lnk a symbolic link into the run's `rescores/`) made its retry beside the WORKING directory, named
  after it, and `merge ... --into lnk/../merged` made the merged run in the working directory: the `.` fix took such
  paths absolute by spelling (`os.path.abspath` collapses `lnk/..` to `.`), where the file system resolves `..` after
  the link. Now a path whose last part names no folder (`.`, `..`) is resolved as the file system resolves it, and any
  other is left to it (`archive.lookup.named_folder`, used by `audit.retry._beside` and `audit.merge._write`)
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import cli
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.answers import BROKEN, broken_answer, listbench_answer
from tests.helpers.commands import run_in_process


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


def run_id(run_dir: Path) -> str:
    return json.loads((run_dir / "run.json").read_text())["run_id"]


# -- a path ending in `..` after a symbolic link -----------------------------------------------------------------------

@pytest.mark.slow
def test_a_retry_named_through_a_link_and_dotdot_is_made_beside_the_run(tmp_path):
    """`retry lnk/..`, lnk leading into the run's rescores/: the retry was `<working directory>.retry1`, beside it."""
    parent = run_in_process(tmp_path, "parent", *BROKEN, responder=broken_answer)
    assert audit(tmp_path, "rescore", str(parent)).returncode == EXIT["ok"]
    work = tmp_path / "work"
    work.mkdir()
    (work / "lnk").symlink_to(parent / "rescores")
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
        retried = audit(work, "retry", "lnk/..", "--host", server.url)
    assert (retried.returncode, retried.stderr) == (EXIT["ok"], "")
    assert f"run directory: {parent}.retry1" in retried.stdout.splitlines()
    assert json.loads((parent.parent / "parent.retry1" / "run.json").read_text())["parent"]["run_id"] == run_id(parent)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outputs", "work"]


@pytest.mark.slow
def test_a_merge_into_a_path_through_a_link_and_dotdot_is_made_where_the_file_system_puts_it(tmp_path):
    """`merge S1 S2 --into lnk/../merged`, lnk leading to far/x: made in the working directory, not in far/."""
    shards = [run_in_process(tmp_path, f"s{i}", f"shard={i}/2") for i in (1, 2)]
    (tmp_path / "far" / "x").mkdir(parents=True)
    (tmp_path / "lnk").symlink_to(tmp_path / "far" / "x")
    merged = audit(tmp_path, "merge", *map(str, shards), "--into", "lnk/../merged")
    assert (merged.returncode, merged.stderr) == (EXIT["ok"], "")
    assert json.loads((tmp_path / "far" / "merged" / "run.json").read_text())["counts"]["responses"] == 18
    assert not (tmp_path / "merged").exists()

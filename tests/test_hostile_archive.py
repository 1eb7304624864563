"""The archive as hostile input, and places that cannot be written: every damaged file, loop of links, run in an odd
place and unwritable path is one line naming the path, with an exit code from the one table and no traceback, and
what was archived stays as it was.

`benchrun-audit` is called through its entry point in this process (benchrun.testing.inprocess: what a real process
prints); what Hydra does before benchrun's own code runs, in a real `python -m benchrun`."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.small_disk import can_mount, read_only
from tests.helpers.archives import synthetic_run
from tests.helpers.benchfiles import task, tasks_yml, write_bench
from tests.helpers.commands import call_benchrun, run_benchrun

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


# -- places that cannot be written ----------------------------------------------------------------------------------


@pytest.mark.slow
@NEEDS_MOUNT
def test_a_run_on_a_read_only_file_system(tmp_path):
    place = tmp_path / "ro"
    place.mkdir()
    with read_only(place):
        result = run_benchrun(NO_SERVER, f"outputs={place / 'outputs'}", cwd=tmp_path)
    assert (result.returncode, result.stderr, list(place.iterdir())) == (
        EXIT["archive"], f"benchrun: error: read-only file system: {place / 'outputs'}\n", [])


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
        (EXIT["archive"], f"benchrun: error: not a directory: {taken / 'run'}\n")]
    assert [p.name for p in tmp_path.iterdir()] == ["taken"] and taken.read_text() == "mine\n"



"""Hostile input, twenty-second pass, the archive and audit side's second wave (issue 19's fresh pass of the same
kinds): the cases it found bad, each with the rule it now obeys.

- `list` of a run whose writer was killed said `running` (run.json's, as it began), as show did before the first
  wave. Now what run.lock tells (`archive.writerless.stopped`, which loads no manifest model, as list must not)

What held is in the pass's note.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchrun.archive.locknote import describe, parsed
from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import cli
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.killed import killed_run
from tests.helpers.killed import write_bench as write_killed_bench


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


# -- list of a run whose writer was killed -----------------------------------------------------------------------------

@pytest.mark.slow
def test_list_says_a_killed_runs_writer_stopped(tmp_path):
    """A run SIGKILLed after 10 answers: `list` said `running` of it, and `--json` a reason of null."""
    write_killed_bench(tmp_path / "bench")
    with FakeOllama() as server:
        run_dir = killed_run(tmp_path, server)
    note = describe(parsed((run_dir / "run.lock").read_bytes()))
    done = audit(tmp_path, "list", str(tmp_path / "outputs"), "--json")
    assert done.returncode == EXIT["ok"], done.stderr
    [listed] = json.loads(done.stdout)
    assert (listed["status"], listed["reason"]) == ("running", (
        f"no live process holds run.lock: its writer ({note}) stopped before the run ended (killed, or its disk "
        f"failed); finish it with: benchrun-audit resume {run_dir}"))
    table = audit(tmp_path, "list", str(tmp_path / "outputs"))
    assert "running (writer stopped)" in table.stdout

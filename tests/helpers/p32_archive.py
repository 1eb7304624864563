"""Runs for the thirty-second hostile pass of the archive side: a record line given other lineage fields and sealed
over, and a run merged from two shard runs (with a retry of it)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable

from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.answers import BROKEN, broken_answer, listbench_answer
from tests.helpers.auditcli import audit
from tests.helpers.commands import run_in_process
from tests.helpers.p26_archive import sealed_line


def given(**fields: Any) -> Callable[[bytes], bytes]:
    """A record line's change: `fields` set (a value None: the field taken out)."""
    def change(line: bytes) -> bytes:
        record = {**json.loads(line), **fields}
        return json.dumps({key: value for key, value in record.items() if value is not None}).encode() + b"\n"
    return change


def sealed_fields(run_dir: Path, name: str, number: int, **fields: Any) -> Path:
    """Line `number` of record file `name` of a finished run given `fields` (`given`), sealed over."""
    return sealed_line(run_dir, name, number, given(**fields))


def merged_run(root: Path) -> Path:
    """root/merged: the listbench run of BROKEN (product (5,5) failed, HTTP 503) merged from its shards 1/2 and 2/2."""
    shutil.copytree(Path(__file__).parents[2] / "benchrun" / "demos" / "listbench", root / "bench")
    shards = [run_in_process(root, f"s{i}", f"shard={i}/2", "task.path=bench", *BROKEN, responder=broken_answer)
              for i in (1, 2)]
    done = audit(root, "merge", *map(str, shards), "--into", str(root / "merged"))
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return root / "merged"


def retried(root: Path, run_dir: Path) -> Path:
    """A retry of `run_dir` (its failed sample asked again of a server that answers it)."""
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
        done = audit(root, "retry", str(run_dir), "--host", server.url)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return run_dir.with_name(f"{run_dir.name}.retry1")

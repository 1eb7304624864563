"""A run made for real by benchrun, then marked interrupted and sealed again: a run `resume` finishes, as a writer
stopped by a signal leaves it (its seal covering run.json)."""

from __future__ import annotations

import json
from pathlib import Path

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import cli
from tests.helpers.archives import reseal


def interrupted_run(run_dir: Path, url: str, cwd: Path) -> Path:
    """A run of listbench's `product` task made in `run_dir` against the server at `url`, then recorded as
    interrupted (sealed so)."""
    made = cli(f"runner.host={url}", "cache=false", "task.only=[product]", f"hydra.run.dir={run_dir}", cwd=cwd)
    assert made.returncode == EXIT["ok"], made.stderr
    info = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**info, "status": "interrupted"}, indent=2))
    reseal(run_dir)
    return run_dir

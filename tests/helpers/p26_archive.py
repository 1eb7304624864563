"""Runs for the twenty-sixth hostile pass of the archive side: a finished run's record line rewritten and sealed over,
a sweep with a job folder that is a link, and how often records.sha256 is opened."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from tests.helpers.archives import reseal, synthetic_run
from tests.helpers.p24_archive import rewrite_line


def sealed_line(run_dir: Path, name: str, number: int, change: Callable[[bytes], bytes]) -> Path:
    """Line `number` of a finished run's record file `name` changed by `change`, its digest, run.json's digests and the
    seal redone: every digest matches."""
    rewrite_line(run_dir, name, number, change)
    reseal(run_dir, name, "records.sha256")
    return run_dir


def sweep_with_a_linked_job(root: Path) -> Path:
    """A sweep (outputs/sw, Hydra's multirun.yaml) of job 0 (run aaaaaaaaaaaa), and a folder `1` that is a symbolic
    link to a run elsewhere (bbbbbbbbbbbb, every value 0)."""
    sweep = root / "outputs" / "sw"
    synthetic_run(sweep / "0", [1, 0], run_id="a" * 12, label="j0")
    synthetic_run(root / "elsewhere", [0, 0], run_id="b" * 12, label="j1")
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    os.symlink(root / "elsewhere", sweep / "1")
    return sweep

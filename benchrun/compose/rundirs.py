"""The directory a run or a sweep is made in, as Hydra's `hydra.run.dir` and `hydra.sweep.dir` name it
(`${scratch_if:${dry_run},${outputs_path:${outputs}}/...}`): `outputs`' leading `~` the home directory (a quoted
override's or a preset's made a folder named `~` in the working directory), and a dry run's scratch directory
standing in for it."""

from __future__ import annotations

import atexit
import functools
import os
import shutil

from benchrun.core.home import expanded
from benchrun.core.scratch import owned_folder


def outputs_path(outputs: str) -> str:
    """`outputs` with a leading `~` the home directory, as in every path benchrun is given (`${outputs_path:...}`)."""
    return os.fspath(expanded(outputs, "outputs")) if isinstance(outputs, str) and outputs.startswith("~") else outputs


def scratch_if(dry_run: bool, run_dir: str) -> str:
    """The run directory, or a scratch directory outside outputs/ for a dry run."""
    return _dry_run_scratch(run_dir) if dry_run else run_dir


@functools.cache
def _dry_run_scratch(run_dir: str) -> str:
    """A dry run's own directory for its Hydra files, one for each directory it stands in for (named to the
    microsecond: one a command), private, removed as the process ends. One fixed name in the shared temporary
    directory (`/tmp/benchrun-dry-run`) was another user's to own, refusing every other user's dry runs, or to plant
    links in, which Hydra wrote through (a dry run overwrote the file a link named)."""
    path = owned_folder("benchrun-dry-run-")  # one a killed dry run left is removed by the next (core.scratch)
    if not DRY_RUN_DIRS:
        atexit.register(remove_dry_run_dirs)
    DRY_RUN_DIRS[path] = run_dir
    return path


DRY_RUN_DIRS: dict[str, str] = {}
"""The dry run's own directories this process made (`_dry_run_scratch`), removed as it ends, each with the directory
it stands in for."""


def stood_for(directory: str) -> str:
    """The directory a dry run's own `directory` stands in for (a real run's or sweep's, checked as its launch would
    check it: a Slurm sweep's `%`), or `directory` itself when it is none of them."""
    return DRY_RUN_DIRS.get(directory, directory)


def remove_dry_run_dirs() -> None:
    """Remove the dry run's own directories: at exit, and before a process stopped by a signal ends without its exit
    functions (benchrun.__main__), which left them, Hydra's multirun.yaml in one, in the temporary directory."""
    while DRY_RUN_DIRS:
        shutil.rmtree(DRY_RUN_DIRS.popitem()[0], ignore_errors=True)

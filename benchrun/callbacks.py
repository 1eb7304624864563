"""Hydra callbacks: refuse a directory that already holds a run before Hydra writes into it; summarise a sweep;
take back what Hydra made for a run or sweep that never started."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from benchrun import console
from benchrun.archive import LOG, RUN, holds_run, taken
from benchrun.errors import EXIT
from benchrun.labels import MULTIRUN_FILE
from benchrun.runs import SWEEP_FILE, job_dirs
from benchrun.sweep import write_sweep_summary


_NEW_SWEEPS: list[tuple[Path, Path]] = []
"""(sweep directory, its first ancestor that did not exist) for each sweep this process started."""
_NEW_RUNS: list[Path] = []
"""The run directory of each single run this process started."""
LAUNCHER_FILES = ".submitit"
"""What a launcher plugin writes into the sweep directory before any job starts (submitit's pickles and scripts)."""


def forget_hydra_copies(run_dir: Path, secret: bool = False) -> None:
    """Delete what Hydra wrote for a run that will not start (.hydra/, the job's log, the sweep's multirun.yaml if
    its overrides hold a secret), and the run directory and its date directory if that empties them."""
    shutil.rmtree(run_dir / ".hydra", ignore_errors=True)
    if secret:
        (run_dir.parent / MULTIRUN_FILE).unlink(missing_ok=True)
    (run_dir / LOG).unlink(missing_ok=True)
    for folder in (run_dir, run_dir.parent):
        if not folder.is_dir() or any(folder.iterdir()):
            break
        folder.rmdir()


def take_back_unstarted() -> None:
    """Remove what Hydra made for a run that stopped before it claimed its directory (a signal while Hydra wrote
    its .hydra/ copies, say), then for sweeps that never launched a job."""
    for run_dir in _NEW_RUNS:
        if not (run_dir / RUN).exists():
            forget_hydra_copies(run_dir)
    take_back_unlaunched_sweeps()


def take_back_unlaunched_sweeps() -> None:
    """Remove what a sweep that failed before any job started (a job's config did not compose, sbatch refused the
    jobs) created: its directory, holding only Hydra's multirun.yaml and the launcher's files, and the parents made
    for it."""
    for sweep_dir, top in _NEW_SWEEPS:
        if sweep_dir.is_dir() and {p.name for p in sweep_dir.iterdir()} - {LAUNCHER_FILES} == {MULTIRUN_FILE}:
            shutil.rmtree(sweep_dir)
            for parent in sweep_dir.parents:
                if parent == top.parent or any(parent.iterdir()):
                    break
                parent.rmdir()


class RunDirCheck(Callback):
    """Before Hydra creates or writes the run (or sweep) directory: refuse one that already holds a run, so that
    nothing there changes (Hydra would rewrite its .hydra/ copies). The run's own claim of the directory, under its
    lock, is what guarantees it; this only keeps Hydra's hands off."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        if config.get("dry_run"):
            return
        run_dir = Path(config.hydra.run.dir)
        if holds_run(run_dir):
            _refuse(taken(run_dir))
        _NEW_RUNS.append(run_dir)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        if config.get("dry_run"):
            return
        sweep_dir = Path(config.hydra.sweep.dir)
        if (sweep_dir / SWEEP_FILE).is_file() or (sweep_dir.is_dir() and any(map(holds_run, job_dirs(sweep_dir)))):
            _refuse(f"{sweep_dir} already holds a sweep; nothing was changed; pick a new directory "
                    "(hydra.sweep.dir=...)")
        if not sweep_dir.exists():
            _NEW_SWEEPS.append((sweep_dir, next(p for p in (*reversed(sweep_dir.parents), sweep_dir) if not p.exists())))


def _refuse(message: str) -> None:
    console.error(message)
    sys.exit(EXIT["usage"])


class SweepSummaryCallback(Callback):
    """After a multirun, summarise the sweep from disk; exit 1 if any job failed."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if config.get("dry_run"):
            return
        sweep_dir = Path(config.hydra.sweep.dir)
        summary = write_sweep_summary(sweep_dir)
        console.print_sweep(summary, sweep_dir, console.stdout())
        if summary.failed:
            sys.exit(EXIT["sweep_failed"])

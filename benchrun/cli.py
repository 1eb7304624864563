"""The Hydra application behind `python -m benchrun`: Hydra composes the config, `benchrun.app.run` does the rest."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from benchrun import console
from benchrun.app import forget_hydra_copies, run
from benchrun.archive import RUN
from benchrun.config import register_with_hydra
from benchrun.errors import BenchrunError, RunInterrupted
from benchrun.resources import conf_dir

register_with_hydra()  # at import, so launchers' worker processes (joblib, submitit) resolve conf/ too


@hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name="config")
def hydra_main(cfg: DictConfig) -> None:
    """One job: run it; a user-facing error is one line (the job's exit code unless in a sweep)."""
    hydra_cfg = HydraConfig.get()
    multirun = hydra_cfg.mode == RunMode.MULTIRUN
    run_dir = Path(hydra_cfg.runtime.output_dir)
    try:
        code = run(cfg, run_dir, overrides=list(hydra_cfg.overrides.task))
    except RunInterrupted:
        raise
    except KeyboardInterrupt:  # before the run claimed its directory: take back what Hydra put there
        if not (run_dir / RUN).exists():
            forget_hydra_copies(run_dir)
        raise
    except BenchrunError as err:
        if os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        console.error(str(err))
        code = err.exit_code
    if code and not multirun:
        sys.exit(code)

"""The `python -m benchrun` entry point: Hydra composes the config, `benchrun.app.run` does the rest."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from benchrun import console
from benchrun.app import run
from benchrun.config import register_resolvers
from benchrun.errors import EXIT, BenchrunError, RunInterrupted
from benchrun.interrupts import INTERRUPTS
from benchrun.resources import conf_dir

VERBOSE_FLAG = "--verbose"
register_resolvers()  # at import, so launchers' worker processes (joblib, submitit) resolve conf/ too


@hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name="config")
def _hydra_main(cfg: DictConfig) -> None:
    hydra_cfg = HydraConfig.get()
    multirun = hydra_cfg.mode == RunMode.MULTIRUN
    try:
        code = run(cfg, Path(hydra_cfg.runtime.output_dir), overrides=list(hydra_cfg.overrides.task))
    except BenchrunError as err:
        if os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        console.error(str(err))
        code = err.exit_code
    if code and not multirun:
        sys.exit(code)


def main() -> None:
    """Strip `--verbose` (full tracebacks), handle SIGINT/SIGTERM, and hand over to Hydra."""
    if VERBOSE_FLAG in sys.argv:
        sys.argv.remove(VERBOSE_FLAG)
        os.environ["HYDRA_FULL_ERROR"] = "1"
    INTERRUPTS.install()
    try:
        _hydra_main()
    except RunInterrupted as err:
        console.error(str(err))
        sys.exit(err.exit_code)
    except KeyboardInterrupt:  # before a run claimed its directory (or a dry run): nothing of benchrun's was written
        console.error("interrupted before the run started: nothing was asked or recorded")
        sys.exit(EXIT["interrupted"])


if __name__ == "__main__":
    main()

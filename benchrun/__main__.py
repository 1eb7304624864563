"""The `python -m benchrun` entry point: Hydra composes the config, `benchrun.app.run` does the rest."""

from __future__ import annotations

import os
import sys

import hydra
from omegaconf import DictConfig

from benchrun import console
from benchrun.app import run
from benchrun.config import register_resolvers
from benchrun.errors import BenchrunError
from benchrun.resources import conf_dir

VERBOSE_FLAG = "--verbose"


@hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name="config")
def _hydra_main(cfg: DictConfig) -> None:
    try:
        code = run(cfg)
    except BenchrunError as err:
        if os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        console.error(str(err))
        code = err.exit_code
    if code:
        sys.exit(code)


def main() -> None:
    """Strip `--verbose` (full tracebacks), register resolvers and hand over to Hydra."""
    if VERBOSE_FLAG in sys.argv:
        sys.argv.remove(VERBOSE_FLAG)
        os.environ["HYDRA_FULL_ERROR"] = "1"
    register_resolvers()
    _hydra_main()


if __name__ == "__main__":
    main()

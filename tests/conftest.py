"""Shared fixtures: Hydra composition with outputs in tmp_path, and helpers to run benchrun."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig

from benchrun.config import register_with_hydra
from benchrun.resources import conf_dir


@pytest.fixture
def compose_cfg(tmp_path: Path) -> Iterator:
    """compose(overrides) -> DictConfig, with outputs under tmp_path and Hydra's state cleared after."""
    register_with_hydra()

    def _compose(*overrides: str) -> DictConfig:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3", job_name="benchrun"):
            return compose("config", overrides=[f"outputs={tmp_path / 'outputs'}", *overrides])

    yield _compose
    GlobalHydra.instance().clear()


def run_benchrun(*args: str, cwd: Path, env: dict[str, str] | None = None,
                 module: str = "benchrun", timeout: float = 120) -> subprocess.CompletedProcess:
    """A real `python -m benchrun ...` subprocess; stdout/stderr captured as text."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("HYDRA_FULL_ERROR", "BENCHRUN_VERBOSE")}
    full_env.update({"COLUMNS": "200", "PYTHONUNBUFFERED": "1", **(env or {})})
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout)

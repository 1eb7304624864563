"""Holding a benchrun process at a chosen moment until a signal ends it, so that a fault scenario knows where its
signal lands: `Pause`, a Hydra callback (`+hydra.callbacks.pause._target_=benchrun.testing.pause.Pause`), and
`pause()`, for a benchmark's own code to call."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

HOOKS = ("on_run_start", "on_job_start")
"""The Hydra hooks `Pause` can stop in: before the run's directory exists, and after Hydra wrote its copies there."""


def pause(marker: str | Path, wait_s: float = 60) -> None:
    """Create `marker` (the moment has come), then wait for the signal."""
    Path(marker).touch()
    time.sleep(wait_s)


class Pause(Callback):
    """Pauses in Hydra's hook `at` (one of HOOKS), having created `marker`."""

    def __init__(self, at: str, marker: str) -> None:
        if at not in HOOKS:
            raise ValueError(f"Pause: {at!r} is not one of {HOOKS}")
        self.at, self.marker = at, marker

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._reached("on_run_start")

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._reached("on_job_start")

    def _reached(self, hook: str) -> None:
        if hook == self.at:
            pause(self.marker)

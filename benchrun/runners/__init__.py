"""Runners: one module per way of reaching a model, behind the interface in `base`."""

from __future__ import annotations

from typing import Any

from benchrun.errors import ConfigError
from benchrun.runners.base import Completion, Retryable, Runner

__all__ = ["Completion", "Retryable", "Runner", "make_runner"]


def make_runner(runner: dict[str, Any]) -> Runner:
    """The runner for a resolved `runner` config (one model)."""
    kind = runner["type"]
    if kind == "ollama":
        from benchrun.runners.ollama import OllamaRunner
        return OllamaRunner(runner)
    raise ConfigError(f"runner type '{kind}' is not available", key="runner.type")

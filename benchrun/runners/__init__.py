"""Runners: one module per way of reaching a model, behind the interface in `base`."""

from __future__ import annotations

import importlib
from typing import Any

from benchrun.errors import ConfigError
from benchrun.runners.base import Completion, Retryable, Runner, Unreachable

__all__ = ["RUNNERS", "Completion", "Retryable", "Runner", "Unreachable", "make_runner"]

RUNNERS = {
    "ollama": "benchrun.runners.ollama:OllamaRunner",
    "openai": "benchrun.runners.openai:OpenAIRunner",
    "local": "benchrun.runners.local:LocalRunner",
}
"""runner.type -> the class implementing it (imported only when used)."""


def make_runner(runner: dict[str, Any]) -> Runner:
    """The runner for a resolved `runner` config (one model)."""
    target = RUNNERS.get(runner["type"])
    if target is None:
        raise ConfigError(f"unknown runner type '{runner['type']}' (known: {', '.join(RUNNERS)})", key="runner.type")
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)(runner)

"""A preset of benchrun's groups moved to another package on the command line (`runner@judge=openai`,
`+model@judge=gemma3`), refused: benchrun reads a preset's keys where the preset puts them, and Hydra advised the
`+` form of the first, then merged a runner's keys into `judge` (`judge.type: unknown key`) or a model preset's into
`judge.runner` (`Input should be 'ollama', 'openai' or 'local'`)."""

from __future__ import annotations

from typing import Sequence

from benchrun.compose.commandline import PRESET_GROUPS, override_words
from benchrun.core.errors import ConfigError

JUDGE_CHOSEN = {"runner": "judge.runner=NAME", "model": "judge.model=NAME"}
"""How the judge's own runner and model are chosen, where `runner@judge` or `model@judge` was meant so."""


def refuse_moved_presets(argv: Sequence[str]) -> None:
    """Refuse an override choosing a preset of benchrun's groups into a package of its own (`GROUP@PACKAGE=NAME`)."""
    for word in override_words(argv):
        key = word.lstrip("+~").partition("=")[0]
        group, moved, package = key.partition("@")
        if moved and group in PRESET_GROUPS:
            judge = f"; the judge's is chosen with {JUDGE_CHOSEN[group]}" if package == "judge" and group in JUDGE_CHOSEN else ""
            raise ConfigError(f"the override {word!r} moves a {group} preset to {package!r}, where benchrun reads none "
                              f"of its keys (a preset's keys are read where it puts them): choose it as {group}=NAME"
                              f"{judge}", file="config", key=key)

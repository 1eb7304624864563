"""A preset of benchrun's groups as the command line may choose it: in its own package, and recording itself.

Moved to another package (`runner@judge=openai`, `+model@judge=gemma3`), it is refused: benchrun reads a preset's keys
where the preset puts them, and Hydra advised the `+` form of the first, then merged a runner's keys into `judge`
(`judge.type: unknown key`) or a model preset's into `judge.runner` (`Input should be 'ollama', 'openai' or 'local'`).
And `model_preset`, the record of the model preset chosen, is the preset's to set: an override of it
(`model=gemma3 model_preset.name=llama3.2`, `+model_preset={name: gemma3, runner: ollama}` with no preset) had the
run's config.yaml name a preset never chosen."""

from __future__ import annotations

from typing import Sequence

from benchrun.compose.commandline import PRESET_GROUPS, override_words
from benchrun.core.errors import ConfigError

PRESET_RECORD = "model_preset"
"""The key a model preset records itself in (conf/model/*.yaml: `model_preset: {name: gemma3, runner: ollama}`)."""
JUDGE_CHOSEN = {"runner": "judge.runner=NAME", "model": "judge.model=NAME"}
"""How the judge's own runner and model are chosen, where `runner@judge` or `model@judge` was meant so."""
JUDGE_MOVES = {("judge", group) for group in JUDGE_CHOSEN}


def refuse_moved_presets(argv: Sequence[str]) -> None:
    """Refuse an override choosing a preset of benchrun's groups into a package of its own (`GROUP@PACKAGE=NAME`)."""
    for word in override_words(argv):
        key = word.lstrip("+~").partition("=")[0]
        group, moved, package = key.partition("@")
        if moved and group in PRESET_GROUPS:
            judge = f"; the judge's is chosen with {JUDGE_CHOSEN[group]}" if (package, group) in JUDGE_MOVES else ""
            raise ConfigError(f"the override {word!r} moves a {group} preset to {package!r}, where benchrun reads none "
                              f"of its keys (a preset's keys are read where it puts them): choose it as {group}=NAME"
                              f"{judge}", file="config", key=key)


def refuse_preset_record(argv: Sequence[str]) -> None:
    """Refuse an override of `model_preset`, which records the model preset chosen (model=NAME) and is set by it."""
    for word in override_words(argv):
        key = word.lstrip("+~").partition("=")[0]
        if key == PRESET_RECORD or key.startswith(f"{PRESET_RECORD}."):
            raise ConfigError(f"the override {word!r}: {PRESET_RECORD} records the model preset chosen, and is set by "
                              "that preset (the run's config.yaml names it); choose a preset with model=NAME",
                              file="config", key=key)

"""What a runner file takes the place of: the command line's runner keys that it gives too."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from hydra.core.override_parser.overrides_parser import OverridesParser

from benchrun.compose.hydragiven import OWNERS
from benchrun.compose.runneryml import RUNNER_ALIASES, by_our_names, read_runner_file
from benchrun.core.errors import ConfigError
from benchrun.core.settings import RUNNERS
from benchrun.core.yamlfile import load_yaml


def refuse_replaced(config: Any, overrides: Sequence[str], cwd: Path) -> None:
    """Refuse an override of a runner key that the config's runner file gives too, whose value takes its place:
    `-m runner.model=llama3.2,mistral runner_file=runner.yml` asked both jobs the file's model, one of them labelled
    mistral (its scores in mistral's column), and a single run's `runner.model=mistral` asked another model unsaid
    (one the file gives the same value, `runner.model=m` beside `model: m`, is asked as given);
    a runner (`runner=openai`) of another type than the file's `runner_type`, which is the one used; and a key the
    file's runner type does not take (`runner.host` beside `runner_type: openai`), which the file's runner leaves out;
    and a model preset (`model=gemma3`) whose model the file's takes the place of: llama3.2 was asked with gemma3's
    options, config.yaml naming the preset gemma3."""
    path = config.get("runner_file")  # a DictConfig as Hydra composes it, or a plain config (the API)
    if not path or not overrides:
        return
    given = by_our_names(read_runner_file(path, {"task": {"path": (config.get("task") or {}).get("path")}}, cwd), path)
    kind = given.get("type")
    dropped = kind in RUNNERS and kind != (config.get("runner") or {}).get("type")
    for override in OverridesParser.create().parse_overrides(list(overrides)):
        parts = override.key_or_group.split(".")
        if parts == ["runner"] and "type" in given and given["type"] != (config.get("runner") or {}).get("type"):
            raise ConfigError(f"in 'config': {override.input_line}: the runner file '{path}' gives runner_type "
                              f"{given['type']}, the type of the runner used, so this one would never be; give the "
                              "runner in one place")
        if parts == ["runner"] and (key := _replaced_of_preset(config, str(override.value()), given)):
            raise ConfigError(f"in 'config': {override.input_line}: the preset gives runner.{key} "
                              f"{_shown(config['runner'][key])}, and the runner file '{path}' gives {key} "
                              f"{_shown(given[key])}, whose value takes its place, so the preset's would never be asked; "
                              "give it in one place")
        if parts == ["model"] and "model" in given and given["model"] != (config.get("runner") or {}).get("model"):
            raise ConfigError(f"in 'config': {override.input_line}: the preset asks runner.model "
                              f"{(config.get('runner') or {}).get('model')}, and the runner file '{path}' gives model "
                              f"{_shown(given['model'])}, whose value takes its place (with the preset's options), so this one "
                              "would never be asked; give the model in one place")
        if len(parts) < 2 or parts[0] != "runner":
            continue
        if (key := RUNNER_ALIASES.get(parts[1], parts[1])) in given and not _given_too(given, [key, *parts[2:]], override):
            raise ConfigError(f"in 'config': {override.input_line}: the runner file '{path}' gives runner.{parts[1]} "
                              "too, and its value takes the place of the command line's, so this one would never be "
                              "asked; give it in one place")
        if dropped and key not in RUNNERS[kind].model_fields:
            raise ConfigError(f"in 'config': {override.input_line}: the runner file '{path}' gives runner_type {kind}, "
                              f"which takes no runner.{parts[1]}, so this one would never be asked; give it as a key the "
                              f"{kind} runner takes")


def _given_too(given: dict[str, Any], keys: list[str], override: Any) -> bool:
    """Whether the runner file gives the override's own value at its key (`runner.model=m` beside `model: m`,
    `runner.options.temperature=1.0` beside `temperature: 1`): the value asked is then the one given."""
    found: Any = given
    for key in keys:
        if not isinstance(found, dict) or key not in found:
            return False
        found = found[key]
    value = None if override.is_sweep_override() else override.value()
    return found == value and isinstance(found, bool) is isinstance(value, bool) and value is not None


def _replaced_of_preset(config: Any, name: str, given: dict[str, Any]) -> str | None:
    """The first key that a runner preset of the user's own (`--config-dir my runner=gpu1`, my/runner/gpu1.yaml)
    gives itself and the runner file gives another value of (the file's is asked); None for benchrun's own presets,
    whose values are the defaults a runner file is there to replace."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return None
    for source in HydraConfig.get().runtime.config_sources:
        preset = Path(source.path) / "runner" / f"{name}.yaml"
        if source.provider in OWNERS or source.schema != "file" or not preset.is_file():
            continue
        own = load_yaml(preset, str(preset), ConfigError)
        runner = config.get("runner") or {}
        return next((key for key in (own if isinstance(own, dict) else {})
                     if key in given and key in runner and given[key] != runner[key]), None)
    return None


def _shown(model: Any) -> str:
    """A runner file's model as said: a name, or a list's names (`llama3.2, gemma3`)."""
    return ", ".join(map(str, model)) if isinstance(model, list) else str(model)

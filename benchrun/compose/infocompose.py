"""`--info` (`-i`) composes the config before Hydra prints what it asks: through Hydra's Compose API, with the command
line's overrides and `--config-dir`, so a bad override is benchrun's one line with nothing before it. Hydra printed
its `Config search path` header (`--info all`: its plugins, search path and defaults) and then composed; `--info
defaults` and `plugins` printed on past an override no config holds."""

from __future__ import annotations

import os
from typing import Sequence

from benchrun.compose.commandline import flag_values, names_flag, override_words
from benchrun.core.keys import override_key
from benchrun.core.resources import PRIMARY_CONFIG, conf_dir

SEARCH_PATH = "hydra.searchpath"
INFO_FLAGS = ("--info", "-i")


def compose_before_info(argv: Sequence[str]) -> None:
    """Compose the config `argv` gives as `--info` would, raising what composing it raises; nothing without
    `--info`, or with a `--config-dir` that is no folder (Hydra refuses it before it prints)."""
    if not any(names_flag(word, "--info") or names_flag(word, "-i") for word in argv):
        return
    config_dirs = flag_values(argv, "--config-dir", "-cd")
    if config_dirs and not os.path.isdir(config_dirs[-1]):
        return
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        compose(PRIMARY_CONFIG, _searching(_overrides(argv), config_dirs[-1:]), return_hydra_config=True)


def _overrides(argv: Sequence[str]) -> list[str]:
    """The overrides of `argv`, whose `--info X` benchrun's entry point gave its value as the next word."""
    shown = {at + 1 for at, word in enumerate(argv) if word in INFO_FLAGS}
    return override_words([word for at, word in enumerate(argv) if at not in shown])


def _searching(overrides: list[str], config_dirs: list[str]) -> list[str]:
    """`overrides` with the `--config-dir` folder first on hydra.searchpath, where Hydra puts it: after benchrun's
    conf/, before the folders hydra.searchpath names."""
    if not config_dirs:
        return overrides
    folder = "'file://" + os.path.abspath(config_dirs[0]).replace("\\", "\\\\").replace("'", "\\'") + "'"
    given = [word for word in overrides if override_key(word) == SEARCH_PATH and "=" in word]
    if not given:
        return [*overrides, f"{SEARCH_PATH}=[{folder}]"]
    key, _, value = given[-1].partition("=")
    listed = value.strip().removeprefix("[").removesuffix("]").strip()
    return [word for word in overrides if word is not given[-1]] + [f"{key}=[{folder}{', ' * bool(listed)}{listed}]"]

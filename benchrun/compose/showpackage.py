"""`--cfg job -p KEY` of a key holding one value: printed as the whole config (`--cfg job`) prints it, YAML's `null`,
`true`, `false`; a key benchrun takes that the config leaves unset (an option not given) is null too. Hydra printed
Python's `False`, and for null wrote `package 'runner.keep_alive' not found in config` and exited 1, of a key the
config holds (compose.commandline refuses one it does not take before Hydra starts)."""

from __future__ import annotations

import sys
from typing import Any

from hydra._internal.hydra import Hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import Container, DictConfig, ListConfig, OmegaConf

from benchrun.compose.config import keys_taken
from benchrun.compose.listitems import holds_no_item
from benchrun.core.errors import ConfigError

HYDRAS_SHOW_CFG = Hydra.show_cfg
"""Hydra's own, which prints the whole config, and says a key it holds no value of not found."""
ABSENT = object()
"""What OmegaConf.select gives for a key the config holds no value of, where a key holding null gives None."""
YAML_WORDS = {None: "null", True: "true", False: "false"}
"""The values Python's str() prints otherwise than YAML writes them."""


def show_packages_as_yaml() -> None:
    """Make Hydra's `--cfg TYPE -p KEY` print a key of one value as YAML writes it, null included."""
    Hydra.show_cfg = _show_cfg  # type: ignore[method-assign]


def _show_cfg(hydra: Hydra, config_name: str | None, overrides: list[str], cfg_type: str, package: str | None,
              resolve: bool = False) -> None:
    """Hydra's show_cfg, a key's value (null included) printed here; the whole config, and a key it holds no value of,
    by Hydra."""
    if package in (None, "", "_global_"):
        return HYDRAS_SHOW_CFG(hydra, config_name, overrides, cfg_type, package, resolve)
    cfg = hydra.compose_config(config_name=config_name, overrides=overrides, run_mode=RunMode.RUN,
                               with_log_configuration=False)
    HydraConfig.instance().set_config(cfg)
    OmegaConf.set_readonly(cfg.hydra, None)
    shown_cfg = hydra.get_sanitized_cfg(cfg, cfg_type)
    _refuse_item_not_held(shown_cfg, package)
    value = OmegaConf.select(shown_cfg, package, default=ABSENT)
    if value is ABSENT and not _taken_unset(cfg, cfg_type, package):  # hydra.run.dir of --cfg job: Hydra's words
        return HYDRAS_SHOW_CFG(hydra, config_name, overrides, cfg_type, package, resolve)
    if not isinstance(value, Container):
        print(_as_yaml(None if value is ABSENT else value))
        return None
    print(f"# @package {package}")
    if resolve:
        OmegaConf.resolve(value)
    sys.stdout.write(OmegaConf.to_yaml(value))
    return None


def _refuse_item_not_held(cfg: DictConfig, package: str) -> None:
    """Refuse `-p` of an item a list of the config does not hold (`-p task.only.5` of one task), said as an override
    into it is (compose.listitems)."""
    parts = package.split(".")
    for depth in range(1, len(parts)):
        if isinstance(node := OmegaConf.select(cfg, ".".join(parts[:depth]), default=None), ListConfig):
            if (held := holds_no_item(".".join(parts[:depth]), parts[depth], len(node))) is not None:
                raise ConfigError(held, file="config", key=package)
            return


def _taken_unset(cfg: DictConfig, cfg_type: str, package: str) -> bool:
    """Whether `package` is a key of the job's config that benchrun takes and the composed config leaves unset (an
    option not given, `runner.options.stop`), whose value is null."""
    if cfg_type == "hydra":
        return False
    parts = package.split(".")
    taken = keys_taken(parts[:-1], OmegaConf.select(cfg, "runner.type", default=None))
    return taken is not None and parts[-1] in taken


def _as_yaml(value: Any) -> str:
    """A value of one key as YAML writes it where Python's str() would not (`null`, `false`)."""
    return YAML_WORDS[value] if value is None or isinstance(value, bool) else str(value)

"""The composed config as plain data: resolvers, the seed's runner-file keys, and schema checks."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from benchrun import schemas
from benchrun.errors import ConfigError
from benchrun.resources import DEMO_SCHEME, demo_names, demos_dir
from benchrun.sources import load_yaml

RUNNER_ALIASES = {"runner_type": "type"}
"""Keys of the seed's runner.yml, and what benchrun calls them."""
SECRET_KEY = re.compile(r"(?i)(api_?key|token|secret|password)$")


class SecretInConfig(ConfigError):
    """A secret given as a config value, where it would be archived."""


def register_resolvers() -> None:
    """The `${bench_name:...}` and `${slug:...}` interpolations used in conf/."""
    OmegaConf.register_new_resolver("bench_name", bench_name, replace=True)
    OmegaConf.register_new_resolver("slug", slug, replace=True)
    OmegaConf.register_new_resolver("scratch_if", scratch_if, replace=True)


def scratch_if(dry_run: bool, run_dir: str) -> str:
    """The run directory, or a scratch directory outside outputs/ for a dry run."""
    return str(Path(tempfile.gettempdir()) / "benchrun-dry-run") if dry_run else run_dir


def bench_name(path: str) -> str:
    """`demo:listbench` -> listbench; `/data/mybench/` -> mybench."""
    return path[len(DEMO_SCHEME):] if path.startswith(DEMO_SCHEME) else Path(path).name or "bench"


def slug(value: Any) -> str:
    """A file-name-safe form of a model name (or list of them): `hf.co/x:7b` -> `hf.co-x-7b`."""
    if isinstance(value, (list, ListConfig)):
        return "+".join(slug(v) for v in value)
    return re.sub(r"[^A-Za-z0-9._-]+", "-", str(value)).strip("-") or "model"


def plain_config(config: Any, cwd: Path | None = None) -> dict[str, Any]:
    """Resolve a composed config to plain data, merge its runner file, and check it against the schema."""
    cfg = _to_plain(config)
    cfg.pop("hydra", None)
    if cfg.get("runner_file"):  # merged once: the result is a plain config without a runner file
        cfg["runner"] = {**cfg.get("runner", {}), **read_runner_file(cfg["runner_file"], cfg, cwd)}
        cfg["runner_file"] = None
    cfg["runner"] = {RUNNER_ALIASES.get(k, k): v for k, v in cfg.get("runner", {}).items()}
    for key in cfg["runner"]:
        if SECRET_KEY.search(key):
            raise SecretInConfig("secrets are never taken from the config, where they would be archived; put "
                                 "the key in an environment variable and name it with runner.api_key_env",
                                 file="config", key=f"runner.{key}")
    schemas.check("config", cfg, ConfigError, file="config")
    return cfg


def _to_plain(config: Any) -> dict[str, Any]:
    if isinstance(config, DictConfig):
        try:
            return OmegaConf.to_container(config, resolve=True, throw_on_missing=True)
        except Exception as err:  # an interpolation or missing value, reported as a config error
            raise ConfigError(f"cannot resolve: {err}".splitlines()[0], file="config") from None
    return dict(config)


def read_runner_file(path: str, cfg: dict[str, Any], cwd: Path | None) -> dict[str, Any]:
    """A runner file in the seed's format; a relative path is tried in `cwd`, then in the benchmark."""
    candidates = [Path(path).expanduser()]
    if not candidates[0].is_absolute():
        candidates = [(cwd or Path.cwd()) / path, bench_dir(cfg["task"]["path"], cwd) / path]
    found = next((c for c in candidates if c.is_file()), None)
    if found is None:
        raise ConfigError(f"runner file '{path}' not found (looked in {', '.join(map(str, candidates))})",
                          key="runner_file")
    data = load_yaml(found, path)
    if not isinstance(data, dict):
        raise ConfigError("a runner file is a mapping (runner_type, model, ...)", file=path)
    return data


def bench_dir(path: str, cwd: Path | None = None) -> Path:
    """The benchmark directory named by `task.path` (`demo:<name>` for a shipped one)."""
    if path.startswith(DEMO_SCHEME):
        name = path[len(DEMO_SCHEME):]
        if name not in demo_names():
            raise ConfigError(f"no shipped benchmark '{name}' (shipped: {', '.join(demo_names())})",
                              key="task.path")
        return demos_dir() / name
    folder = Path(path).expanduser()
    folder = folder if folder.is_absolute() else (cwd or Path.cwd()) / folder
    if not folder.is_dir():
        raise ConfigError(f"'{path}' is not a directory (looked in {folder})", key="task.path")
    return folder.resolve()

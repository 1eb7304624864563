"""Shared fixtures: each test's own response cache, and Hydra composition with outputs in tmp_path; how many workers
`-n auto` starts. Helpers live in tests/helpers."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig

from benchrun.compose.config import register_with_hydra
from benchrun.core.resources import conf_dir


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """One worker more than the machine's CPUs: a sixth of a worker's time is spent waiting on the processes and
    servers its tests start (the suite kept 2 CPUs 85 % busy with 2 workers)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cpus + 1


@pytest.fixture(scope="session", autouse=True)
def session_cache(tmp_path_factory) -> Iterator[None]:
    """A response cache of the session's for fixtures of any scope (each test then gets its own, below)."""
    saved = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("session-cache"))
    yield
    if saved is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = saved


@pytest.fixture(scope="session", autouse=True)
def no_proxies() -> Iterator[None]:
    """The session without the environment's proxy variables (a CI machine's, for its package registries): every
    server a test asks is on this machine, and a failure to reach one says a proxy is set (`runners.base.unproxied`)."""
    with pytest.MonkeyPatch.context() as patch:
        for name in [name for name in os.environ if name.lower().endswith("_proxy")]:
            patch.delenv(name)
        yield


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch) -> Path:
    """Each test's own response cache ($XDG_CACHE_HOME, which in-process runs and child processes both read), so no
    test reads or fills the user's cache, or another test's."""
    home = tmp_path_factory.mktemp("xdg-cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home / "benchrun"


@pytest.fixture
def compose_cfg(tmp_path: Path) -> Iterator:
    """compose(overrides) -> DictConfig, with outputs under tmp_path and Hydra's state cleared after."""
    register_with_hydra()

    def _compose(*overrides: str) -> DictConfig:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3", job_name="benchrun"):
            return compose("config", overrides=[f"outputs={tmp_path / 'outputs'}", *overrides])

    yield _compose
    GlobalHydra.instance().clear()


"""The runner types and the one `make_runner` that builds the runner a config names (its module imported only then)."""

from __future__ import annotations

import importlib
from typing import Any

from pydantic import ValidationError

from benchrun.compose.config import checked, checked_options, describe_validation, judge_keys
from benchrun.core import settings
from benchrun.core.errors import ConfigError
from benchrun.core.judgeserver import models_server
from benchrun.core.serverurls import http_url
from benchrun.execute.hosts import HostPool
from benchrun.execute.runners.base import Runner

RUNNERS = {
    "ollama": "benchrun.execute.runners.ollama:OllamaRunner",
    "openai": "benchrun.execute.runners.openai:OpenAIRunner",
    "local": "benchrun.execute.runners.local:LocalRunner",
}
"""runner.type -> the class implementing it (imported only when used)."""


def make_runner(runner: dict[str, Any], section: str = "runner", server_flag: str | None = None,
                asked_again: bool = False) -> Runner:
    """The runner for a resolved runner config (one model) written under `section` (`runner`, `judge`), checked
    against its typed config, its server named `server_flag` where not its key (`--host`), for a command that asks
    an archived run again if `asked_again` (resume, retry): for a list of servers, the pool of one runner per server."""
    kind = runner.get("type")
    if kind not in RUNNERS:
        raise ConfigError(f"unknown runner type '{kind}' (known: {', '.join(RUNNERS)})", key=f"{section}.type")
    config = _checked(settings.RUNNERS[kind], runner, section, server_flag)
    config._section = section
    config._server_flag, config._asked_again = server_flag, asked_again
    checked_options(config, (section,))
    module, name = RUNNERS[kind].split(":")
    make = getattr(importlib.import_module(module), name)
    where = config.server_key
    urls = getattr(config, where) if where else None
    if not isinstance(urls, list):
        return make(config)
    return HostPool(config, [(http_url(url), make(config.model_copy(update={where: url}))) for url in urls])


def _checked(model: type[settings.RunnerConfig], runner: dict[str, Any], section: str,
             server_flag: str | None) -> settings.RunnerConfig:
    """`runner` checked as `model` (config.checked), a fault of its server said of `server_flag` where the command
    gives the server by an option (`--host A --host A`: `--host: 'A' is listed twice`, not runner.host's)."""
    try:
        return model.model_validate(runner)
    except ValidationError as err:
        said = describe_validation(err, model, ())
        if server_flag and model.server_key and said.startswith(f"{model.server_key}: "):
            raise ConfigError(server_flag + said.removeprefix(model.server_key)) from None
        return checked(model, runner, [section])


def make_judge_runner(cfg: dict[str, Any], flags: tuple[str, str] | None = None, own_key: bool = False) -> Runner:
    """The judge model's runner (its keys written under `judge`), its server named as the user gives it: the model's
    key (runner.host) for a judge asking at the model's servers, unless `own_key` (a command taking only judge.KEY);
    `flags` (the judge's, the model's) for a command that gives them by options (`--judge-host`, `--host`)."""
    judges, models = flags or (None, None)
    if (inherited := models_server(cfg)) and not own_key:
        judges = models or f"runner.{inherited}"
    return make_runner(judge_keys(cfg), "judge", judges, asked_again=flags is not None)

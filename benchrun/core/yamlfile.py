"""Reading a benchmark's YAML files safely: libyaml when installed, aliases refused, errors naming line and column."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from benchrun.core.errors import TaskError

_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(path: Path, rel: str) -> Any:
    """Parse a YAML file (with libyaml when installed); a syntax error names the line and column."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise TaskError(f"not UTF-8 text ({err.reason})", file=rel) from None
    try:
        _refuse_aliases(text, rel)
        return yaml.load(text, Loader=_FAST_LOADER)
    except yaml.YAMLError:
        pass  # parsed again below: the pure-Python parser's messages name the problem and its context
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        context = f" ({err.context} at {_position(err.context_mark)})" if err.problem and err.context_mark else ""
        where = f"{_position(mark)}: " if mark else ""
        raise TaskError(f"{where}YAML syntax error: {err.problem or err.context}{context}", file=rel) from None
    except yaml.reader.ReaderError as err:  # a control character: no mark, an offset into the text
        line, column = text.count("\n", 0, err.position) + 1, err.position - text.rfind("\n", 0, err.position)
        raise TaskError(f"line {line}, column {column}: YAML syntax error: {str(err).splitlines()[0]}",
                        file=rel) from None


def _refuse_aliases(text: str, rel: str) -> None:
    """YAML aliases (*name) are refused: a few lines of them expand to gigabytes (an alias bomb)."""
    if "*" not in text:
        return
    for event in yaml.parse(text, Loader=_FAST_LOADER):
        if isinstance(event, yaml.AliasEvent):
            raise TaskError(f"{_position(event.start_mark)}: YAML aliases (*{event.anchor}) are not allowed in "
                            "benchmark files; write the values out", file=rel)


def _position(mark: yaml.Mark) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"

"""How a user error names a place and a mistyped key: `tasks[2].values.b`, `unknown key 'x' (did you mean 'y'?)`."""

from __future__ import annotations

import difflib
from typing import Any, Iterable, Iterator

from benchrun.core.text import name_said

KEY_VARIABLE_KEYS = ("runner.api_key_env", "judge.api_key_env")
"""The keys naming the environment variable that holds an API key."""


def value_at(data: Any, key: str) -> Any:
    """The value at the dotted `key` of nested mappings `data` (`runner.api_key_env`), None where there is none."""
    for part in key.split("."):
        data = data.get(part) if isinstance(data, dict) else None
    return data


def key_path(root: str, parts: Iterable[Any]) -> str:
    """`tasks`, [2, 'values', 'b'] -> `tasks[2].values.b`."""
    text = root
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def unknown_key(key: str, allowed: list[str], what: str = "key") -> str:
    """`unknown key 'x' (did you mean 'y'?)`, or the allowed keys when none is close; a key not in ASCII said with
    its characters escaped too (`name_said`: a Cyrillic `а` in 'templаte' printed as the 'template' it suggested)."""
    close = closest(key, allowed)
    hint = f"did you mean '{close[0]}'?" if close else f"allowed: {', '.join(allowed)}"
    return f"unknown {what} {name_said(key)} ({hint})"


def closest(name: str, names: list[str]) -> list[str]:
    """The one of `names` nearest `name` (a list of one, or none is near): one the same but for case first (`top_K`
    is `top_k`, which difflib ranked below `top_p`)."""
    same = [each for each in names if each.casefold() == name.casefold()]
    return same[:1] or difflib.get_close_matches(name, names, n=1)


def override_key(override: str) -> str:
    """The key (or config group) a command-line override names, however it is given: added (`+`), forced (`++`),
    deleted (`~`) or put in a package (`hydra/job_logging@hydra.job_logging=none`)."""
    return override.split("=", 1)[0].lstrip("+~").split("@", 1)[0]


def leaves(data: Any) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(key path, value) of each value of `data` that is no dict or list, walked without recursion."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    while stack:
        value, where = stack.pop()
        if isinstance(value, (dict, list)):
            stack += [(child, (*where, key)) for key, child in (value.items() if isinstance(value, dict)
                                                                 else enumerate(value))]
        else:
            yield where, value

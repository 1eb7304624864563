"""The names the standard library's modules hold, as the scorer process's first call found them, which each call
starts with (`scorer_worker._Found`): a call that replaced one for its own work (`time.time = lambda: 0`, `math.pi =
3`, `ssl._create_default_https_context = ssl._create_unverified_context`) or removed one replaced or removed it for
every later call. `sys` and `builtins` are put back by their own rules (`compiler.runstate.SETTINGS`,
`put_back_names`); names a module gained since are kept (a package's submodule, imported later)."""

from __future__ import annotations

import sys
import types
from typing import Any

OWN_RULES = ("sys", "builtins")
_GONE = object()


def standard_now() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Each standard module imported now, as its namespace and a copy of it."""
    return [(vars(module), dict(vars(module))) for name, module in list(sys.modules.items())
            if isinstance(module, types.ModuleType) and name.partition(".")[0] in sys.stdlib_module_names
            and name not in OWN_RULES]


def put_back_standard(found: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    """Each namespace of `found` (`standard_now`) holding again each name it held then, the same object."""
    for names, was in found:
        if not _holds(names, was):
            for name, value in was.items():
                if names.get(name, _GONE) is not value:
                    names[name] = value


def _holds(names: dict[str, Any], was: dict[str, Any]) -> bool:
    """Whether `names` holds all `was` held (by identity, or where a call replaced one by an equal object); False where
    comparing a replacement raised."""
    try:
        return was.items() <= names.items()
    except Exception:  # a replacement whose == raises (an array's truth): put back
        return False

"""The names the standard library's modules and their classes hold, read and put back: as the scorer process's first
call found them, which each call starts with (`scorer_worker._Found`), and as the run's process held them before it
imported a benchmark's file (`compiler.runstate.kept`: a file that set `json.JSONEncoder.key_separator = "="` as it
was imported had the run write its records so). A call that replaced one for its own work (`time.time = lambda:
0`, `math.pi = 3`, `ssl._create_default_https_context = ssl._create_unverified_context`,
`json.JSONEncoder.item_separator = ";"`, which the process's own replies were written with, `sys.argv = [...]` to call
a command's main) or removed one replaced or removed it for every later call; names gained since are kept (a
package's submodule, imported later)."""

from __future__ import annotations

import sys
import types
from typing import Any, Mapping

OWN_RULES = {"builtins": None, "sys": ("path", "meta_path", "path_hooks")}
"""Modules, or names of a module (None: all), put back by their own rules: the builtins (`put_back_names`, which takes
away names a call added too), sys's lists (`compiler.runstate.SETTINGS`, which puts back what they list)."""
_GONE = object()
Held = list[tuple[Any, Mapping[str, Any], dict[str, Any]]]
"""Each module or class, its names (live), and a copy of them as found."""


def standard_now() -> Held:
    """Each standard module imported now and each class it defines, as its names and a copy of them."""
    found: Held = []
    for name, module in list(sys.modules.items()):
        if isinstance(module, types.ModuleType) and name.partition(".")[0] in sys.stdlib_module_names \
                and (elsewhere := OWN_RULES.get(name, ())) is not None:
            names = vars(module)
            found.append((module, names, {key: value for key, value in names.items() if key not in elsewhere}))
            found += [(cls, vars(cls), dict(vars(cls))) for cls in list(names.values())
                      if isinstance(cls, type) and cls.__module__ == name]
    return found


def put_back_standard(found: Held) -> None:
    """Each module and class of `found` (`standard_now`) holding again each name it held then, the same object."""
    for owner, names, was in found:
        if not _holds(names, was):
            for name, value in was.items():
                if names.get(name, _GONE) is not value:
                    setattr(owner, name, value)


def _holds(names: Mapping[str, Any], was: dict[str, Any]) -> bool:
    """Whether `names` holds all `was` held (by identity, or where a call replaced one by an equal object); False where
    comparing a replacement raised."""
    try:
        return was.items() <= names.items()
    except Exception:  # a replacement whose == raises (an array's truth): put back
        return False

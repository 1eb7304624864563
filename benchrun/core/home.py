"""The home directory, as `~` means it in every path benchrun is given (an override, cache_dir, model_path, a runner
file's name, task.path): $HOME, refused when it is set empty, where Python's expanduser gives the file system's root
(`outputs=~` put run directories in `/`), or relative (`HOME=rel`: the response cache went into ./rel/.cache), or
unset for a user with no entry in the user database (a container's arbitrary user id: Python's RuntimeError)."""

from __future__ import annotations

import os
from pathlib import Path

from benchrun.core.errors import ConfigError

EMPTY = "~ is the home directory, and $HOME is empty (~ would be the file system's root)"


def home(what: str, instead: str, key: str | None = None) -> Path:
    """The home directory; ConfigError saying `what` needed it and what to do `instead` when there is none."""
    if os.environ.get("HOME") == "":
        raise ConfigError(f"{what}: {EMPTY}; set HOME, or {instead}", key=key)
    try:
        found = Path.home()
    except RuntimeError:  # HOME unset, and no entry for this user id to read one from
        raise ConfigError(f"{what}: ~ is the home directory, and HOME is unset and this user (id {os.getuid()}) has no "
                          f"entry in the user database to give one; set HOME, or {instead}", key=key) from None
    if not found.is_absolute():
        raise ConfigError(f"{what}: ~ is the home directory, and $HOME is {str(found)!r}, not an absolute path (~ would "
                          f"be a folder of the working directory); set HOME to an absolute path, or {instead}", key=key)
    return found


def expanded(path: str, key: str) -> Path:
    """`path` with a leading `~` (alone or before a `/`) as the home directory; `~user` as Python expands it, and
    refused in one line when there is no such user (Python's RuntimeError)."""
    if path == "~" or path.startswith("~/"):
        return home(repr(path), "give the path itself", key) / path[2:]
    try:
        return Path(path).expanduser()
    except RuntimeError:
        user = path[1:].split("/", 1)[0]
        raise ConfigError(f"{path!r}: ~{user} is the home directory of user {user!r}, and this system has no such "
                          "user; give the path itself", key=key) from None

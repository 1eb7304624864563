"""The versions of what is installed: a distribution's, as run.json records them, and the line `--version` says."""

from __future__ import annotations

from importlib import metadata


def installed_version(name: str) -> str | None:
    """The version of the installed distribution `name` (`benchrun`, `hydra-core`), None when it is not installed."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def version_line() -> str:
    """benchrun's version as run.json records it (the installed distribution's), and Hydra's."""
    import hydra  # here: the entry points load nothing but what handles signals before they are asked

    return f"benchrun {installed_version('benchrun') or '(not installed)'} (Hydra {hydra.__version__})"

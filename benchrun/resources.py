"""Where benchrun's shipped data lives: `conf/`, `schemas/` and the demo benchmarks."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
DEMO_SCHEME = "demo:"


def data_dir(name: str) -> Path:
    """`conf` or `schemas`: inside the wheel (`benchrun/_data/`) or at the top of a checkout."""
    shipped = _PACKAGE / "_data" / name
    return shipped if shipped.is_dir() else _PACKAGE.parent / name


def conf_dir() -> Path:
    return data_dir("conf")


def schemas_dir() -> Path:
    return data_dir("schemas")


def demos_dir() -> Path:
    return _PACKAGE / "demos"


def demo_names() -> list[str]:
    return sorted(p.name for p in demos_dir().iterdir() if p.is_dir() and not p.name.startswith("_"))

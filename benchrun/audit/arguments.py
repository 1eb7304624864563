"""The audit commands' path arguments: a path given empty is refused, never read as the working directory."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchrun.archive.reader import DEFAULT_ROOT


def path(text: str) -> Path:
    """A path argument (`--output`, `--into`, `--root`, ...); argparse's one-line error for an empty one, which
    `Path('')` would take for `.` (an export written as `is a directory writing .`, the runs under `.` listed)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path names no file or directory")
    return Path(text)


def add_root(parser: argparse.ArgumentParser) -> None:
    """`--root`: where a command looks up run id prefixes."""
    parser.add_argument("--root", type=path, default=DEFAULT_ROOT,
                        help=f"archive root for run ids (default: {DEFAULT_ROOT})")

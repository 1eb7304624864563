"""The audit commands' path arguments: a path given empty is refused, never read as the working directory."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchrun.archive.reader import DEFAULT_ROOT
from benchrun.core.errors import ConfigError
from benchrun.core.home import expanded


def path(text: str) -> Path:
    """A path argument (`--output`, `--into`, `--root`, ...); argparse's one-line error for an empty one, which
    `Path('')` would take for `.` (an export written as `is a directory writing .`, the runs under `.` listed). A
    leading `~` is the home directory, as in every path benchrun is given (`--output=~/r.html`, which no shell
    expands, made a folder named `~` in the working directory)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path names no file or directory")
    try:
        return expanded(text, "")
    except ConfigError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def run_dir(text: str) -> Path:
    """`--into DIR`, a new run's directory (a `path`), refused as `outputs` and `hydra.run.dir` are (a control
    character, a line break: `run directory: PATH` printed in two lines, and the path to resume it cut in two)."""
    from benchrun.core.settings import a_directory  # its models load only for a command making a run

    found = path(text)
    try:
        a_directory(str(found))
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return found


def output(text: str) -> Path:
    """`--output FILE` (a `path`): one ending in `/` or `/.` names a folder, which pathlib drops (`--output reports/`,
    `reports/.` wrote a file named `reports`), so one that is no folder here is refused; an existing folder is said to
    be one where the file is written."""
    found = path(text)
    end = "/" if text.endswith("/") else "/." if text.endswith("/.") else None
    if end and not found.is_dir():
        raise argparse.ArgumentTypeError(f"'{text}' ends with '{end}', so it names a folder, and there is none: name "
                                         "the file to write")
    return found


def add_root(parser: argparse.ArgumentParser) -> None:
    """`--root`: where a command looks up run id prefixes."""
    parser.add_argument("--root", type=path, default=DEFAULT_ROOT,
                        help=f"archive root for run ids (default: {DEFAULT_ROOT})")

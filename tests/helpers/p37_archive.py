"""Runs and places for the thirty-seventh hostile pass of the archive side."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

from benchrun.testing.inprocess import child_env


def deep_folder(root: Path, size: int, name: str) -> Path:
    """The path of a file `name` in a folder made under `root` (folders of up to 250 bytes, as deep as that takes) so
    that the path takes `size` bytes."""
    folder = root
    while (left := size - len(os.fsencode(folder)) - 1 - len(name)) > 0:
        folder /= "d" * min(250, left - 1 if left > 1 else 1)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    assert len(os.fsencode(path)) == size, (len(os.fsencode(path)), size)
    return path


def audit_into_file(cwd: Path, output: Path, size_limit: int, *args: str) -> subprocess.CompletedProcess:
    """A real `benchrun-audit ARGS` process in `cwd`, its standard output the file `output`, under a file-size limit
    (`ulimit -f`) of `size_limit` bytes, unbuffered (PYTHONUNBUFFERED=1, as Docker images and CI set it)."""
    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (size_limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    with open(output, "wb") as file:
        return subprocess.run([sys.executable, "-m", "benchrun.audit", *args], cwd=cwd, stdout=file,
                              stderr=subprocess.PIPE, text=True, preexec_fn=limited, timeout=60,
                              env=child_env({"PYTHONUNBUFFERED": "1"}))


def audit_in_deleted_folder(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """A real `benchrun-audit ARGS` process whose working directory `folder` was deleted after its shell entered it."""
    folder.mkdir()
    script = 'cd "$1" && rmdir "$1" && shift && exec "$@"'
    return subprocess.run(["sh", "-c", script, "sh", str(folder), sys.executable, "-m", "benchrun.audit", *args],
                          capture_output=True, text=True, timeout=60, env=child_env())

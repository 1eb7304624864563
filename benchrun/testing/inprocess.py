"""`python -m benchrun` and `python -m benchrun.audit` called in this process, for tests of what a run does.

`cli(*args, cwd=...)` answers what `subprocess.run([python, "-m", module, *args], capture_output=True, text=True)`
would: the exit code, and all that reached file descriptors 1 and 2 (C libraries and child processes included),
newlines translated as text mode does. It calls the same entry point with the same argv, environment and working
directory, and afterwards puts back what a command changes for its whole process: argv, the environment, the
working directory, the signal handlers, the logging handlers Hydra installs, the credentials registered for
scrubbing and the objects `gc.freeze` set aside. What only a real process shows (signals, crashes, the interpreter's
own exit, hash seeds, imports) is left to subprocess tests, and so is what a new interpreter starts with and a call
here does not: the working directory first on sys.path (`python -m`), `TMPDIR` (which tempfile reads once), the
default warnings filters (the suite's turn a warning into an error), and no module of a benchmark imported yet (an
earlier call's stays in sys.modules).
"""

from __future__ import annotations

import gc
import importlib
import logging
import os
import signal
import subprocess
import sys
import tempfile
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Mapping

from benchrun.core.errors import VERBOSE_ENV
from benchrun.core.interrupts import SIGNALS
from benchrun.core.secrets import SECRETS

ENTRIES = {"benchrun": "main", "benchrun.audit": "entry"}
"""The function `python -m MODULE` calls, for each module."""


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment tests give a benchrun process: this one's without the traceback switches, wide, unbuffered."""
    env = {k: v for k, v in os.environ.items() if k not in ("HYDRA_FULL_ERROR", VERBOSE_ENV)}
    return {**env, "COLUMNS": "200", "PYTHONUNBUFFERED": "1", **(extra or {})}


def cli(*args: str, cwd: Path, env: Mapping[str, str] | None = None,
        module: str = "benchrun") -> subprocess.CompletedProcess[str]:
    """`python -m module args...` in `cwd` with `child_env(env)`, run in this process (see the module docstring)."""
    entry = importlib.import_module(f"{module}.__main__")
    with _captured() as (out, err), _process(cwd, child_env(env), [entry.__file__, *args]):
        code = exit_code(getattr(entry, ENTRIES[module]))
    return subprocess.CompletedProcess([sys.executable, "-m", module, *args], code, out.text, err.text)


def exit_code(main: Callable[[], object]) -> int:
    """Call `main` as the interpreter runs a program: its exit code; an uncaught error's traceback on stderr, 1."""
    try:
        main()
    except SystemExit as done:
        if done.code is None or isinstance(done.code, int):
            return done.code or 0
        print(done.code, file=sys.stderr)
        return 1
    except Exception:
        traceback.print_exc()
        return 1
    return 0


class _Output:
    """A temporary file standing in for one of the process's standard streams; its `text` once closed."""

    def __init__(self) -> None:
        self.file = tempfile.TemporaryFile()
        self.text = ""

    def close(self) -> None:
        self.file.seek(0)
        self.text = self.file.read().decode().replace("\r\n", "\n").replace("\r", "\n")
        self.file.close()


@contextmanager
def _captured() -> Iterator[tuple[_Output, _Output]]:
    """File descriptors 1 and 2, and sys.stdout and sys.stderr over them, into two temporary files."""
    outputs = (_Output(), _Output())
    streams = (sys.stdout, sys.stderr)
    for stream in streams:
        stream.flush()
    saved = [os.dup(fd) for fd in (1, 2)]
    try:
        for fd, output in zip((1, 2), outputs):
            os.dup2(output.file.fileno(), fd)
        sys.stdout, sys.stderr = (open(fd, "w", encoding="utf-8", closefd=False, buffering=1) for fd in (1, 2))
        try:
            yield outputs
        finally:
            for stream in (sys.stdout, sys.stderr):
                stream.close()
            sys.stdout, sys.stderr = streams
    finally:
        for fd, copy in zip((1, 2), saved):
            os.dup2(copy, fd)
            os.close(copy)
        for output in outputs:
            output.close()


@contextmanager
def _process(cwd: Path, env: dict[str, str], argv: list[str]) -> Iterator[None]:
    """argv, the environment and the working directory of a new process; what a run changes is put back after."""
    saved_argv, saved_env, saved_cwd = sys.argv, dict(os.environ), os.getcwd()
    handlers = {sig: signal.getsignal(sig) for sig in SIGNALS}
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    sys.argv = argv
    _set_environ(env)
    os.chdir(cwd)
    SECRETS.clear()
    try:
        yield
    finally:
        SECRETS.clear()
        gc.unfreeze()
        for handler in [h for h in root.handlers if h not in saved_handlers]:
            handler.close()
        root.handlers[:] = saved_handlers
        root.setLevel(saved_level)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        os.chdir(saved_cwd)
        _set_environ(saved_env)
        sys.argv = saved_argv


def _set_environ(env: dict[str, str]) -> None:
    for name in set(os.environ) - set(env):
        del os.environ[name]
    os.environ.update(env)

"""Importing a benchmark's own Python files (`custom_scorer.py`, `custom_response.py`).

What the import prints goes to the `benchrun.compiler.usercode` logger (the run's log file), never to stdout; whatever it
raises, SystemExit included, is one line naming the file. What cannot be caught (os._exit, a signal, a loop) is found by
importing the file first in a process of its own, within IMPORT_TIMEOUT_S."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import logging
import re
import signal
import subprocess
import sys
import traceback
import uuid
from pathlib import Path
from types import ModuleType

from benchrun.core.errors import TaskError
from benchrun.core.filebytes import read_utf8
from benchrun.core.interrupts import INTERRUPTS
from benchrun.core.secrets import SECRETS

LOG = logging.getLogger("benchrun.compiler.usercode")
IMPORT_TIMEOUT_S = 60
"""How long importing a benchmark's Python file may take."""
PROBE = ("import runpy, sys\ntry:\n    runpy.run_path(sys.argv[1], run_name='benchrun_probe')\n"
         "except BaseException:\n    pass\nsys.stdout.write(sys.argv[2])\n")
"""The child's import: whatever the file raises is reported by the import that follows; the token says it ended."""
_INTERNAL_NAME = re.compile(r"benchrun_user_[0-9a-f]{12}_")
"""The prefix `import_file` gives module names, so that two benchmarks' files never share one."""


def import_file(path: Path, rel: str, probe: bool = True) -> ModuleType:
    """Import `path` (UTF-8 text, as every benchmark file) under a name unique to its location, after a `probe`
    import in a process of its own (unless this is one already); a failure names the file and the error."""
    utf8(path, rel)
    if probe:
        probed(path, rel)
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    name = f"benchrun_user_{digest}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            spec.loader.exec_module(module)
    except (Exception, SystemExit, KeyboardInterrupt) as err:  # anything user code raises is reported, not raised
        del sys.modules[name]
        if isinstance(err, KeyboardInterrupt) and INTERRUPTS.received is not None:
            raise  # a real Ctrl-C or SIGTERM, not the file's own doing
        text = err.msg if isinstance(err, SyntaxError) else first_line(err)  # a SyntaxError's str repeats the place
        raise TaskError(f"cannot import: {type(err).__name__}: {text}{_line(err, path)}", file=rel) from None
    finally:
        if printed.getvalue():
            LOG.info("%s printed while it was imported:\n%s", rel, printed.getvalue().rstrip("\n"))
    return module


def utf8(path: Path, rel: str) -> None:
    """Refuse a file that is not UTF-8 text, which Python imports (in a comment) but cannot show the source of."""
    read_utf8(path, rel)


def probed(path: Path, rel: str) -> None:
    """Import `path` in a child process (without the API key): refuse a file whose import ends that process without
    a Python error (os._exit, a signal) or does not end within IMPORT_TIMEOUT_S; errors it raises are left to the
    import in this process, which reports them."""
    done = uuid.uuid4().hex
    try:
        child = subprocess.run([sys.executable, "-c", PROBE, str(path), done], stdin=subprocess.DEVNULL,
                               capture_output=True, env=SECRETS.child_env(), timeout=IMPORT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise TaskError(f"cannot import: still running after {IMPORT_TIMEOUT_S} s; a benchmark's file must define its "
                        "functions and classes, not work at import", file=rel) from None
    if not child.stdout.endswith(done.encode()):
        code = child.returncode
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"os._exit({code}) or the like"
        raise TaskError(f"cannot import: it ended the process importing it ({how}) before its last line", file=rel)


def first_line(err: BaseException) -> str:
    """The first sentence of an error's message (pydantic's run to five lines), user modules by their file's name."""
    line = (str(err).strip().splitlines() or [type(err).__name__])[0]
    return _INTERNAL_NAME.sub("", line.split(". ", 1)[0])


def _line(err: Exception, path: Path) -> str:
    if isinstance(err, SyntaxError) and err.lineno:
        return f" (line {err.lineno})"
    frames = [f for f in traceback.extract_tb(err.__traceback__) if Path(f.filename) == path]
    return f" (line {frames[-1].lineno})" if frames else ""


def defined_here(module: ModuleType, obj: object) -> bool:
    """True when `obj` was defined in `module` itself, not imported into it."""
    return getattr(obj, "__module__", None) == module.__name__

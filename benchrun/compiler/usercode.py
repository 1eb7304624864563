"""Importing a benchmark's own Python files (`custom_scorer.py`, `custom_response.py`).

What the import prints goes to the `benchrun.compiler.usercode` logger (the run's log file), never to stdout; whatever it
raises, SystemExit included, is one line naming the file."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import logging
import re
import sys
import traceback
from pathlib import Path
from types import ModuleType

from benchrun.core.errors import TaskError, reading
from benchrun.core.interrupts import INTERRUPTS

LOG = logging.getLogger("benchrun.compiler.usercode")
_INTERNAL_NAME = re.compile(r"benchrun_user_[0-9a-f]{12}_")
"""The prefix `import_file` gives module names, so that two benchmarks' files never share one."""


def import_file(path: Path, rel: str) -> ModuleType:
    """Import `path` (UTF-8 text, as every benchmark file) under a name unique to its location; a failure names the
    file and the error."""
    utf8(path, rel)
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
    with reading(rel, TaskError):
        data = path.read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise TaskError(f"not UTF-8 text ({err.reason})", file=rel) from None


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

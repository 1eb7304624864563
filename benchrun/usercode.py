"""Importing a benchmark's own Python files (`custom_scorer.py`, `custom_response.py`)."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType

from benchrun.errors import TaskError


def import_file(path: Path, rel: str) -> ModuleType:
    """Import `path` under a name unique to its location; a failure names the file and the error."""
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    name = f"benchrun_user_{digest}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit, KeyboardInterrupt) as err:  # anything user code raises is reported, not raised
        del sys.modules[name]
        text = err.msg if isinstance(err, SyntaxError) else str(err)  # str() of a SyntaxError repeats the place
        raise TaskError(f"cannot import: {type(err).__name__}: {text}{_line(err, path)}", file=rel) from None
    return module


def _line(err: Exception, path: Path) -> str:
    if isinstance(err, SyntaxError) and err.lineno:
        return f" (line {err.lineno})"
    frames = [f for f in traceback.extract_tb(err.__traceback__) if Path(f.filename) == path]
    return f" (line {frames[-1].lineno})" if frames else ""


def defined_here(module: ModuleType, obj: object) -> bool:
    """True when `obj` was defined in `module` itself, not imported into it."""
    return getattr(obj, "__module__", None) == module.__name__

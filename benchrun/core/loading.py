"""Python failing to load benchrun's code or a library it uses, said in one line: the file that failed, and the
file of the working directory or of $PYTHONPATH that hides the library of its name (a user's `yaml.py` or `rich.py`,
which `python -m benchrun` imports in place of the library). Loads nothing but the standard library."""

from __future__ import annotations

import importlib.machinery
import os
import sys
import sysconfig
import traceback
from typing import NoReturn

from benchrun.core.errors import EXIT, OWN_LIMITS, refused_by_system

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
"""benchrun's own package folder, whose modules hide nothing."""


def load_failure(err: Exception) -> str | None:
    """One line for an error raised while Python loaded a module of benchrun's or of a library's it uses (the file
    that raised it), or raised anywhere while a file hides a library (`hidden`), with what hides it; None for any
    other error, and for the system's refusal (out of memory as a module loads, `_systems`), said as such."""
    loading = [frame.filename for frame in traceback.extract_tb(err.__traceback__) if frame.name == "<module>"]
    if isinstance(err, SyntaxError) and str(err.filename).endswith(".py"):  # its file never ran: no frame of its own
        loading.append(err.filename)
    if _systems(err, loading):
        return None
    why = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    if not loading:  # raised as the code ran: said so only when a library was hidden (`yaml.YAMLError` not there)
        return f"{why}{shown}" if (shown := hidden(named_in=why)) else None
    return f"Python could not load {loading[-1]}, which benchrun needs: {why}{hidden(loading[-1], named_in=why)}"


def _systems(err: Exception, loading: list[str]) -> bool:
    """Whether `err` is the system's refusal, said as such: out of memory, of threads or of file descriptors wherever
    it is met; any other OSError unless a file hiding a library raised it as it loaded (a `rich.py` opening a file
    that is not there)."""
    if not refused_by_system(err):
        return False
    if not isinstance(err, OSError) or err.errno in OWN_LIMITS:
        return True
    return not any(_top_name(path) for path in loading)


def missing_line(err: ImportError) -> str:
    """The line for a module benchrun needs that Python did not find (`No module named 'rich.console'`): what hides the
    library, else that benchrun is not installed with what it needs."""
    return f"{err}" + (hidden(named_in=str(err)) or f": benchrun is not installed in this Python ({sys.executable}) with what it needs; "
                       "install it as the README says")


def plain_error(line: str) -> NoReturn:
    """Say `line` as an error on one line (`say_plainly`) and exit 2."""
    say_plainly(line)
    sys.exit(EXIT["usage"])


def say_plainly(line: str) -> None:
    """Say `line` as an error on one line, printed without benchrun.console: rich, or benchrun's own code, may be what
    could not be loaded."""
    print(f"benchrun: error: {' '.join(line.split())}", file=sys.stderr)


def hidden(*files: str, named_in: str = "") -> str:
    """`; /cwd/yaml.py hides the library 'yaml' ...`, for each of `files`, and each module loaded from the working
    directory or $PYTHONPATH whose name the error's text `named_in` quotes (`module 'yaml' has no attribute`), that
    takes a library's name; empty when there is none (a project's own `tests/` is not named for an unrelated error)."""
    loaded = [path for path in _loaded() if f"'{_top_name(path)}" in named_in]
    found = sorted({path for path in (*files, *loaded) if _top_name(path) is not None})
    if not found:
        return ""
    names = ", ".join(f"{path} (as {_top_name(path)!r})" for path in found)
    return (f"; {names}, of the working directory or $PYTHONPATH, hides the library of that name that benchrun imports: "
            "rename it, or run benchrun from another directory")


def _loaded() -> list[str]:
    return [module.__file__ for name, module in list(sys.modules.items())
            if "." not in name and isinstance(getattr(module, "__file__", None), str)]


def _top_name(path: str) -> str | None:
    """The top-level module name `path` is loaded as from the working directory or $PYTHONPATH (`yaml` for
    `./yaml.py`, `rich` for `./rich/__init__.py`) in place of a library of that name found further on sys.path; None
    for a file elsewhere, of benchrun's own package, or that hides no library (a benchmark's own `helpers.py`)."""
    path = os.path.abspath(path)
    places = {os.path.abspath(place) for place in [os.getcwd(), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
              if place}
    folder, name = os.path.split(path)
    if os.path.splitext(name)[0] == "__init__":
        folder, name = os.path.split(folder)
    name = os.path.splitext(name)[0]
    if folder not in places or path.startswith(PACKAGE + os.sep):
        return None
    elsewhere = [place for place in sys.path if place and os.path.abspath(place) not in places]
    return name if importlib.machinery.PathFinder.find_spec(name, elsewhere) is not None else None


STDLIB = (sysconfig.get_paths()["stdlib"] + os.sep, "<frozen ")
"""Where Python's own modules are: an error raised there is of the code that called them (Hydra configuring its
logging with `logging.config`)."""
SITE = tuple({sysconfig.get_paths()[key] + os.sep for key in ("purelib", "platlib")})
"""Where installed packages are, which a Python installed without a venv keeps inside STDLIB (/usr/local/lib/python3.11/
site-packages): Hydra's own among them."""


def pythons_own(filename: str) -> bool:
    """Whether `filename` is of one of Python's own modules (in STDLIB, not an installed package's)."""
    return filename.startswith(STDLIB) and not filename.startswith(SITE)

"""A benchmark's own modules (`helpers.py` beside custom_scorer.py, which its files import) made of their source as
read, once: Python's import takes a module's bytecode cache (`__pycache__/helpers.cpython-311.pyc`) whenever the
source's size and modification time in whole seconds match it, so a helpers.py edited within the second it was cached,
or put back with its time (`cp -p`, `rsync -a`, `tar x`), scored by its old code under its new file's digest."""

from __future__ import annotations

import ast
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import CodeType
from typing import Iterable, Iterator, Sequence

from benchrun.compiler.tasksdir import TOP_FILES
from benchrun.core.errors import TaskError
from benchrun.core.filebytes import read_bounded

BENCHRUN = Path(__file__).resolve().parents[1]
"""benchrun's own package."""
INSTALLED = frozenset({"site-packages", "dist-packages"})
"""The folders installed packages are kept in, which a benchmark's own modules are not."""
LOADED: dict[Path, str] = {}
"""The sha256 of the bytes each of the benchmarks' own modules was made of, by its resolved path."""


def own_root(path: Path, roots: Iterable[Path]) -> Path | None:
    """The folder of `roots` (resolved benchmark folders) that resolved `path` is a benchmark's own module beneath;
    None for one beneath none, of a folder of installed packages (a virtual environment kept in the benchmark), or
    benchrun's own (a benchmark around its checkout)."""
    root = next((root for root in roots if path.is_relative_to(root)), None)
    if root is None or path.is_relative_to(BENCHRUN) or INSTALLED.intersection(path.relative_to(root).parts):
        return None
    return root


class Held(importlib.machinery.SourceFileLoader):
    """A loader of bytes already read: the module `name` is the file `path` as it was read and hashed, never read
    again (and no bytecode read or written beside it); any other file is read as Python's own loader reads it (a
    package's data: `pkgutil.get_data`, `importlib.resources`, which got the package's source or no file)."""

    def __init__(self, name: str, path: Path, data: bytes):
        super().__init__(name, str(path))
        self._data = data

    def get_data(self, path: str) -> bytes:
        return self._data if path == self.path else super().get_data(path)

    def path_stats(self, path: str) -> dict[str, float]:
        """None to give (the documented OSError): a module made of its source as read has no bytecode to match."""
        raise OSError(f"{path} is made of its source as read, never of bytecode")

    def source_to_code(self, data: bytes, path: str, *, _optimize: int = -1) -> CodeType:
        """The module's code as written, whatever Python's optimisation (`python -O`/`-OO`, $PYTHONOPTIMIZE, which
        would leave out its asserts, a scorer's check, and its docstrings, a response class's description)."""
        return compile(data, path, "exec", dont_inherit=True, optimize=0)


class _FromSource(importlib.abc.MetaPathFinder):
    """Finds a module where Python's path finder does; one of the benchmarks' own it loads from its source, read and
    hashed once (LOADED)."""

    def __init__(self) -> None:
        self.benches: set[Path] = set()

    def find_spec(self, name: str, path: Sequence[str] | None, target: object = None) -> ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return None
        origin = Path(spec.origin).resolve()
        if own_root(origin, self.benches) is None:
            return None
        data = read_bounded(origin, str(origin))
        LOADED[origin] = hashlib.sha256(data).hexdigest()
        return importlib.util.spec_from_file_location(name, spec.origin, loader=Held(name, Path(spec.origin), data),
                                                      submodule_search_locations=spec.submodule_search_locations)


FINDER = _FromSource()


def from_source(bench: Path) -> None:
    """Load the own modules of the benchmark in folder `bench` from their source (FINDER, placed before Python's
    path finder once)."""
    FINDER.benches.add(bench.resolve())
    if FINDER not in sys.meta_path:
        at = sys.meta_path.index(importlib.machinery.PathFinder) if importlib.machinery.PathFinder in sys.meta_path \
            else len(sys.meta_path)
        sys.meta_path.insert(at, FINDER)


def refuse_unseen_imports(sources: dict[str, Path], bench: Path) -> None:
    """Refuse what a file of `sources` (its Python files, by the name errors give them) imports unseen by the
    manifest (_refuse_unrecorded, _refuse_shadowed), each file parsed once."""
    for rel, path in sources.items():
        tree = _parsed(path)
        _refuse_unrecorded(rel, tree, bench)
        _refuse_shadowed(rel, tree, bench)
        _refuse_from_working_directory(rel, tree, bench)


def _refuse_unrecorded(rel: str, tree: ast.AST, bench: Path) -> None:
    """Refuse a benchmark's own module imported inside a function of `tree` (file `rel`) and by no file as it was
    imported: that code scores, imported by the scorer process as it calls the function, but the manifest names a
    benchmark's own modules as its files import them, so it was not among the run's files (an edit changed the
    scores under the same manifest, verify intact)."""
    for line, name in _imported_in_functions(tree):
        where = _not_imported(name)
        if where is None or _named(Path(where), bench) or not _beneath(Path(where), bench):
            continue
        raise TaskError(f"'{name}', a module of the benchmark, is imported inside a function (line {line}), and "
                        "by no file as it is imported: the run records a benchmark's own modules as its files "
                        "import them; import it at the top of the file", file=rel)


def _refuse_shadowed(rel: str, tree: ast.AST, bench: Path) -> None:
    """Refuse file `rel` (parsed: `tree`) importing a name the folder `bench` holds a module of (`import yaml`
    beside a yaml.py) that Python gave the library benchrun had already loaded: the benchmark's module never ran,
    the library's code of the same name scored, and the manifest named neither."""
    for line, name in _imports_in(tree):
        top = name.partition(".")[0]
        own = next((f for f in (f"{top}.py", f"{top}/__init__.py") if (bench / f).is_file()), None)
        loaded = getattr(sys.modules.get(top), "__file__", None)
        if own is None or not isinstance(loaded, str) or Path(loaded).resolve() == (bench / own).resolve():
            continue
        raise TaskError(f"imports '{top}' (line {line}), and the benchmark holds {own}, but Python gives it the "
                        f"library of that name that benchrun had already loaded ({loaded}), not the benchmark's "
                        f"file: rename {own}", file=rel)


def _refuse_from_working_directory(rel: str, tree: ast.AST, bench: Path) -> None:
    """Refuse file `rel` (parsed: `tree`) importing a module Python found in the working directory (which `python -m`
    puts first on its path), outside the benchmark, and on no other entry of the path (PYTHONPATH's, an install's): a
    helpers.py beside where benchrun ran scored, unrecorded, and the same benchmark run from elsewhere could not
    import it."""
    here = Path.cwd().resolve()
    for line, name in _imports_in(tree):
        top = name.partition(".")[0]
        where = getattr(sys.modules.get(top), "__file__", None)
        if not isinstance(where, str) or _beneath(Path(where), bench):
            continue
        path = Path(where).resolve()
        if path.is_relative_to(BENCHRUN) or (path.parent.parent if path.name == "__init__.py" else path.parent) != here:
            continue
        if importlib.machinery.PathFinder.find_spec(top, [entry for entry in sys.path[1:] if entry]) is None:
            raise TaskError(f"imports '{top}' (line {line}), which Python found in the working directory ({path}), "
                            "outside the benchmark: the run records only the benchmark's own modules, and run from "
                            "elsewhere the benchmark could not import it; move it into the benchmark, or install it",
                            file=rel)


def refuse_linked_out(bench: Path, rel: str) -> None:
    """Refuse a module imported from beneath the benchmark folder `bench` as named that is a symbolic link (or beneath
    one) to a file outside it (file `rel` imported it): its code scores, but a benchmark's own modules are told by
    where they resolve (`own_root`), so the manifest did not name it and its bytecode cache was taken (an edit
    there changed the scores under the same manifest, verify intact). A benchmark's files are refused so too."""
    named_as = (bench.absolute(), bench.resolve())
    named = tuple(f"{folder}{os.sep}" for folder in named_as)
    for module in list(sys.modules.values()):
        where = getattr(module, "__file__", None)
        if not isinstance(where, str) or not os.path.abspath(where).startswith(named) or \
                own_root(Path(where).resolve(), [bench.resolve()]) is not None or not _beneath(Path(where), bench):
            continue
        found = Path(os.path.abspath(where))
        as_named = next(found.relative_to(folder) for folder in named_as if found.is_relative_to(folder))
        raise TaskError(f"imports {as_named.as_posix()}, which links outside the benchmark directory (to "
                        f"{found.resolve()}): the run records only modules inside it as the benchmark's own; copy the "
                        "module into the benchmark", file=rel)


def _beneath(path: Path, bench: Path) -> bool:
    """Whether `path` is a benchmark's own module in the folder `bench` as named, or as resolved (a link out of it
    is beneath it as named)."""
    return any(own_root(found, [folder]) is not None
               for found, folder in ((Path(os.path.abspath(path)), bench.absolute()), (path.resolve(), bench.resolve())))


def _named(path: Path, bench: Path) -> bool:
    """Whether `path` is one of the benchmark's own files, which the manifest names whoever imports them
    (`from custom_response import Answer` in a scorer)."""
    return path.name in TOP_FILES and path.resolve().parent == bench.resolve()


def _not_imported(name: str) -> str | None:
    """Where the module `name` (dotted) would be imported from, found without importing anything, when it or a
    package it is in is not imported yet; None when all are, or it is none (an attribute: `from pkg import name`)."""
    parts, path = name.split("."), None
    for at in range(1, len(parts) + 1):
        qualified = ".".join(parts[:at])
        if qualified in sys.modules:
            if (path := getattr(sys.modules[qualified], "__path__", None)) is None:
                return None  # a module: what follows is its attribute
            continue
        found = importlib.machinery.PathFinder.find_spec(qualified, path)
        return found and (found.origin or next(iter(found.submodule_search_locations or ()), None))
    return None


def _imported_in_functions(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, module name) of each absolute import inside a function of the parsed Python file `tree`."""
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield from _imports_in(function)


def _parsed(path: Path) -> ast.AST:
    """The Python file `path` parsed; an empty module when it is gone or not Python (its import said so, or will)."""
    try:
        return ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return ast.Module(body=[], type_ignores=[])


def _imports_in(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, module name) of each absolute import in `tree`, and of each name a `from` import takes."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.lineno, node.module
            yield from ((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)

"""Importing a benchmark's own Python files (`custom_scorer.py`, `custom_response.py`), and running their code.

What their code prints as it is imported, or as a response class makes its JSON schema, goes to the
`benchrun.compiler.usercode` logger (the run's log file), never to the console, even written to the file descriptors
themselves (`os.write(1, ...)`, which masking could not reach there); whatever it raises, SystemExit and any other
BaseException included, is one line naming the file. What cannot be caught (os._exit, a signal, a loop, os.fork) is
found by importing the file, and making the JSON schemas of its classes, first in a process of its own
(`compiler.importprobe`)."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import logging
import os
import re
import sys
import tempfile
import traceback
from pathlib import Path
from types import ModuleType
from typing import BinaryIO, Callable, Iterable, Iterator

from benchrun.compiler.importprobe import Digests, probe_unless_known, remember
from benchrun.compiler.ownsource import (
    LOADED,
    Held,
    from_source,
    own_root,
    refuse_linked_out,
    refuse_unseen_imports,
)
from benchrun.compiler.runstate import kept
from benchrun.compiler.schemaonce import keep_probed
from benchrun.core.errors import OWN_LIMITS, TaskError
from benchrun.core.filebytes import read_bounded, utf8_text
from benchrun.core.interrupts import INTERRUPTS
from benchrun.core.stdfds import Printed, input_from_nothing, output_fds_into
from benchrun.core.text import message_of, one_line

LOG = logging.getLogger("benchrun.compiler.usercode")
PRINTED_KEPT = 1 << 20
"""How much of what a file prints while it is imported the log keeps (bytes), of sys.stdout and sys.stderr and of
what is written to the standard descriptors each."""
_INTERNAL_NAME = re.compile(r"benchrun_user_[0-9a-f]{12}_")
"""The prefix `import_file` gives module names, so that two benchmarks' files never share one."""


SOURCES: dict[str, Digests] = {}
"""The digests of each imported module, by module name (`imported_as`)."""
CHANGED = "changed since the run started: {0} to {1}…, not to {2}… as when the run read it; its scores would come " \
          "from other code than the run recorded"


def import_file(path: Path, rel: str, probe: bool = True, digests: Digests | None = None) -> ModuleType:
    """Import `path` (UTF-8 text, as every benchmark file) under a name unique to its location, after a `probe`
    import in a process of its own (unless this is one already); a failure names the file and the error. The module
    is made of the bytes read here, once (their digests in SOURCES), which must hash as `digests` say when they are
    given, and so must the benchmark's own modules it imports: a scorer process started mid-run imported the file
    (or its helpers.py) as it was then, so a helper or a constant edited since scored the rest of the run unseen,
    under the digests of the files the run recorded."""
    data = read_bounded(path, rel)
    utf8_text(data, rel, saved=True)
    found = hashlib.sha256(data).hexdigest()
    if digests is not None and found != digests.get(path.name):
        raise TaskError(CHANGED.format("it hashes", found[:12], str(digests.get(path.name))[:12]), file=rel)
    said, listing = probe_unless_known(path, rel, found) if probe else (b"", None)
    from_source(path.parent)
    name = module_name(path)
    keep_probed(name, said)
    spec = importlib.util.spec_from_file_location(name, path, loader=Held(name, path, data))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with contained(rel, "cannot import", path):  # sys.path put back after it (runstate.kept)
            sys.path.insert(0, str(path.parent))  # as Python puts a script's folder: its own modules, from anywhere
            spec.loader.exec_module(module)
        refuse_linked_out(path.parent, rel)
        SOURCES[name] = {path.name: found, **_own_digests(path.parent, rel, digests)}
        remember(path, SOURCES[name], said, listing)
        files = {rel: path, **{own: path.parent / own for own in SOURCES[name] if own != path.name}}
        refuse_unseen_imports(files, path.parent)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def module_name(path: Path) -> str:
    """The name the benchmark file `path` is imported under: unique to its location."""
    return f"benchrun_user_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]}_{path.stem}"


def held_otherwise(path: Path, name: str, wanted: Callable[[object], bool], wanted_kind: str) -> str | None:
    """What the imported benchmark file `path` holds as `name` that a task cannot name (none `wanted`, of
    `wanted_kind`, defined in it): a class or function imported into it, an object of another kind, one named as
    private; None when it holds nothing of that name."""
    module = sys.modules.get(module_name(path))
    if module is None or (obj := vars(module).get(name)) is None or inspect.ismodule(obj):
        return None
    named = inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj)
    kind = "a class" if inspect.isclass(obj) else "a function" if named else \
        f"an object of class {type(obj).__name__!r}"
    if named and not defined_here(module, obj):
        return f"{kind} imported from {getattr(obj, '__module__', None) or 'elsewhere'}, not defined in it"
    if not wanted(obj):
        return f"{kind}, not {wanted_kind}"
    return "named as private (its leading '_')" if name.startswith("_") else None


def _own_digests(folder: Path, rel: str, digests: Digests | None) -> Digests:
    """The sha256 of each of the benchmark's own modules imported so far, by path in `folder`; each must be as
    `digests` say, when they are given (file `rel` imported them)."""
    found = {}
    for module in local_modules(folder):
        try:
            found[module] = LOADED.get((folder / module).resolve()) or \
                hashlib.sha256((folder / module).read_bytes()).hexdigest()
        except OSError as err:
            found[module] = type(err).__name__
        if digests is not None and found[module] != digests.get(module):
            raise TaskError(CHANGED.format(f"{module}, which it imports, hashes", found[module][:12],
                                           str(digests.get(module))[:12]), file=rel)
    return found


@contextlib.contextmanager
def contained(rel: str, doing: str, path: Path | None = None) -> Iterator[None]:
    """A block running the code of benchmark file `rel` in this process: what it prints is logged (`_log_printed`),
    what it reads of standard input is nothing (EOF), what it changes of the process for the run (its signal
    handling, working directory, umask, sys.path, environment) is put back after it (`compiler.runstate.kept`),
    whatever it raises (SystemExit, KeyboardInterrupt, any BaseException) is a TaskError saying
    `doing` (and, given the file's `path`, the line it raised at), and a copy of the process it forked (os.fork) is
    ended at once, so that it never goes on as a second run."""
    pid, printed = os.getpid(), Printed(PRINTED_KEPT)
    with tempfile.TemporaryFile() as written:
        try:
            with output_fds_into(written), printed.redirected(), input_from_nothing(), kept():
                yield
        except BaseException as err:  # anything user code raises is reported, not raised
            _end_copy(pid)
            if isinstance(err, KeyboardInterrupt) and INTERRUPTS.received is not None:
                raise  # a real Ctrl-C or SIGTERM, not the file's own doing
            if isinstance(err, OSError) and err.errno in OWN_LIMITS:
                raise  # this process's limit of open files (`ulimit -n`), told as the system's error, not the file's
            text = err.msg if isinstance(err, SyntaxError) else first_line(err)  # a SyntaxError's str repeats the place
            line = _line(err, path) if path is not None else ""
            raise TaskError(f"{doing}: {type(err).__name__}: {text}{line}", file=rel) from None
        finally:
            _end_copy(pid)
            _log_printed(rel, printed.text() + _written_back(written))


def _end_copy(pid: int) -> None:
    """In a copy of process `pid` that user code forked: end it there, without a word."""
    if os.getpid() != pid:
        os._exit(0)


def local_modules(bench: Path) -> list[str]:
    """The benchmark's own modules that its files imported (`from helpers import norm`), by their paths in `bench`: code
    that scores, recorded as the files that import it are."""
    return sorted({"/".join(path.relative_to(root).parts) for _, path, root in _own_modules([bench])})


def forget_local_modules() -> None:
    """Take the modules of the benchmarks whose files were imported so far (their `helpers.py`) out of sys.modules, so
    that a compile imports its benchmark's own modules afresh: a second benchmark compiled in one process (a sweep
    over task.path, the API) got the first's `helpers` from sys.modules, its code unnamed by its manifest."""
    folders = {Path(module.__file__).parent for name, module in list(sys.modules.items())
               if _INTERNAL_NAME.match(name) and getattr(module, "__file__", None)}
    for name, _, _ in _own_modules(folders):
        sys.modules.pop(name, None)


def _own_modules(benches: Iterable[Path]) -> Iterator[tuple[str, Path, Path]]:
    """(name, resolved path, resolved benchmark folder) of each module in sys.modules that is a benchmark's own: beneath
    one of `benches`, and not of a folder of installed packages (a virtual environment kept in the benchmark), nor
    benchrun's own (a benchmark around its checkout), nor benchrun's imports of the benchmark's files themselves, nor
    the program run (`__main__`: a script in the benchmark calling the API, `python -` whose file is `<stdin>`)."""
    roots = {bench.resolve(): bench for bench in benches}
    named = tuple({str(p) + os.sep for root, bench in roots.items() for p in (root, bench.absolute())})
    main = sys.modules.get("__main__")  # under that name, and `__mp_main__` once multiprocessing started a process
    for name, module in list(sys.modules.items()):  # resolved only beneath them: 1 ms, not 16
        where = getattr(module, "__file__", None)
        if not where or module is main or _INTERNAL_NAME.match(name) or not os.path.abspath(where).startswith(named):
            continue
        path = Path(where).resolve()
        if (root := own_root(path, roots)) is not None:
            yield name, path, root


def imported_as(fn: object) -> Digests | None:
    """The digests of the files the module defining `fn` was made of (`import_file`); None for one not imported so."""
    return SOURCES.get(getattr(fn, "__module__", None) or "")


def _written_back(file: BinaryIO) -> str:
    """What was written to `file` (the import's file descriptors 1 and 2), at most PRINTED_KEPT bytes of it."""
    size = file.seek(0, os.SEEK_END)
    file.seek(0)
    text = file.read(PRINTED_KEPT).decode("utf-8", "replace")
    return text if size <= PRINTED_KEPT else f"{text}\n[{size - PRINTED_KEPT:,} bytes more not kept]"


def _log_printed(rel: str, printed: str) -> None:
    """Log what a file printed while it was imported (the run's log file, through the masking every handler has)."""
    if printed:
        LOG.info("%s printed while it was imported:\n%s", rel, printed.rstrip("\n"))


def first_line(err: BaseException) -> str:
    """The first sentence of an error's message (pydantic's run to five lines), user modules by their file's name; a
    first line that ends in a colon with the lines it heads, as one line (pydantic's SchemaError: `Error building
    "model" validator:`, its reason on the last of them); one whose str() raises said so (`message_of`)."""
    lines = message_of(err).strip().splitlines() or [type(err).__name__]
    line = one_line(" ".join(lines)) if lines[0].endswith(":") else lines[0].split(". ", 1)[0]
    return _INTERNAL_NAME.sub("", line)


def _line(err: Exception, path: Path) -> str:
    if isinstance(err, SyntaxError) and err.lineno:
        return f" (line {err.lineno})"
    frames = [f for f in traceback.extract_tb(err.__traceback__) if Path(f.filename) == path]
    return f" (line {frames[-1].lineno})" if frames else ""


def defined_here(module: ModuleType, obj: object) -> bool:
    """True when `obj` was defined in `module` itself, not imported into it."""
    return getattr(obj, "__module__", None) == module.__name__

"""Importing a benchmark's own Python files (`custom_scorer.py`, `custom_response.py`), and running their code.

What their code prints as it is imported, or as a response class makes its JSON schema, goes to the
`benchrun.compiler.usercode` logger (the run's log file), never to the console, even written to the file descriptors
themselves (`os.write(1, ...)`, which masking could not reach there); whatever it raises, SystemExit and any other
BaseException included, is one line naming the file. What cannot be caught (os._exit, a signal, a loop, os.fork) is
found by importing the file, and making the JSON schemas of its classes, first in a process of its own, within
IMPORT_TIMEOUT_S."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import json
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
import traceback
import uuid
from pathlib import Path
from types import ModuleType
from typing import BinaryIO, Callable, Iterable, Iterator

from benchrun.compiler.ownsource import (
    LOADED,
    Held,
    from_source,
    own_root,
    refuse_linked_out,
    refuse_unseen_imports,
)
from benchrun.compiler.runstate import kept
from benchrun.compiler.schemaonce import MARK, keep_probed
from benchrun.core.errors import OWN_LIMITS, TaskError
from benchrun.core.filebytes import read_bounded, utf8_text
from benchrun.core.interrupts import INTERRUPTS
from benchrun.core.scratch import remove_scratch, scratch_folder
from benchrun.core.secrets import SECRETS
from benchrun.core.stdfds import Printed, input_from_nothing, output_fds_into
from benchrun.core.text import message_of, one_line

LOG = logging.getLogger("benchrun.compiler.usercode")
IMPORT_TIMEOUT_S = 60
"""How long importing a benchmark's Python file may take."""
PRINTED_KEPT = 1 << 20
"""How much of what a file prints while it is imported the log keeps (bytes), of sys.stdout and sys.stderr and of
what is written to the standard descriptors each."""
SCHEMA_MARK = "schema of "
"""What the probe writes before it makes a class's JSON schema, with the class's name."""
PROBE = """import ctypes, hashlib, json, os, runpy, signal, sys, threading
try:
    ctypes.CDLL(None).prctl(36, 1)
    ctypes.CDLL(None).prctl(1, 9)
except (AttributeError, OSError):
    pass
if os.getppid() != int(sys.argv[4]):
    os._exit(1)
me, forked, marks = os.getpid(), [], os.fdopen(int(sys.argv[3]), 'w', encoding='utf-8')
os.register_at_fork(after_in_parent=lambda: forked.append(True), after_in_child=lambda: [
    os.dup2(os.open(os.devnull, os.O_WRONLY), fd) for fd in (1, marks.fileno())])
try:
    sys.path.insert(0, os.path.dirname(sys.argv[1]))
    found = runpy.run_path(sys.argv[1], run_name='benchrun_probe')
    for name, value in list(found.items()):
        if isinstance(value, type) and value.__module__ == 'benchrun_probe' and hasattr(value, 'model_json_schema'):
            marks.write('\\nSCHEMA' + name)
            marks.flush()
            try:
                made = json.dumps(value.model_json_schema(), sort_keys=True, default=repr).encode()
                marks.write('\\nDIGEST' + json.dumps([name, hashlib.sha256(made).hexdigest()]))
            except BaseException:
                pass
    marks.write('\\nSCHEMA')
except BaseException:
    pass
if os.getpid() != me:
    os._exit(0)
left = [t for t in threading.enumerate() if not t.daemon and t is not threading.main_thread()]
for t in left:
    t.join(1)
left = [t.name for t in left if t.is_alive()]
def running():
    kids = set()
    try:
        tids = os.listdir('/proc/self/task')
    except OSError:
        return []
    for tid in tids:
        try:
            with open(f'/proc/self/task/{tid}/children') as f:
                kids.update(int(pid) for pid in f.read().split())
        except OSError:
            pass
    alive = []
    for pid in kids:
        try:
            with open(f'/proc/{pid}/stat') as f:
                if f.read().rsplit(')', 1)[1].split()[0] not in 'ZX':
                    alive.append(pid)
        except (OSError, IndexError):
            pass
    return alive
def here(pid):
    try:
        return os.getsid(pid) == os.getsid(0)
    except OSError:
        return None
started = sorted({here(pid) for pid in running()} - {None})
for _ in range(100):
    kids = running()
    if not kids:
        break
    for pid in kids:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except OSError:
            pass
marks.write('\\n' + json.dumps([left, bool(forked), started]) + sys.argv[2])
marks.flush()
os._exit(0)
""".replace("SCHEMA", SCHEMA_MARK).replace("DIGEST", MARK)
"""The child's import, then the JSON schema of each class it defines that has one (a response class's, made as the
plan is compiled): whatever the file raises is reported by the import that follows; then the threads the import left
running (which would keep a run's process from ever exiting), whether it forked (os.fork: its copy went on as a second
run, writing the same run directory), whether it left a process running (in its session, or in one of its own), and
the token that says it ended, each written to a file of their own (its descriptor the third argument), so that a
file that replaced or closed sys.stdout (`sys.stdout = open(os.devnull, 'w')`, to quiet itself) is not said to have
ended the process; what the file prints goes nowhere (the import that follows logs it, bounded): kept, a file printing
without end filled $TMPDIR for IMPORT_TIMEOUT_S, then this process's memory as it read it. A copy it forked writes
nothing here and ends without a word. The child is its descendants' reaper (Linux's child subreaper), so a process started in a session of its own (`Popen(...,
start_new_session=True)`, `setsid cmd &`), which the killing of the child's process group missed and which outlived
every run, is seen among its children and killed."""
_INTERNAL_NAME = re.compile(r"benchrun_user_[0-9a-f]{12}_")
"""The prefix `import_file` gives module names, so that two benchmarks' files never share one."""


Digests = dict[str, str]
"""The sha256 of the files a benchmark file's module was made of, by path in its folder: the file itself, and the
benchmark's own modules it had as it was imported (`helpers.py`)."""
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
    utf8_text(data, rel)
    found = hashlib.sha256(data).hexdigest()
    if digests is not None and found != digests.get(path.name):
        raise TaskError(CHANGED.format("it hashes", found[:12], str(digests.get(path.name))[:12]), file=rel)
    said = probed(path, rel) if probe else b""
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
    benchrun's own (a benchmark around its checkout), nor benchrun's imports of the benchmark's files themselves."""
    roots = {bench.resolve(): bench for bench in benches}
    named = tuple({str(p) + os.sep for root, bench in roots.items() for p in (root, bench.absolute())})
    for name, module in list(sys.modules.items()):  # resolved only beneath them: 1 ms, not 16
        where = getattr(module, "__file__", None)
        if not where or _INTERNAL_NAME.match(name) or not os.path.abspath(where).startswith(named):
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


def probed(path: Path, rel: str) -> bytes:
    """Import `path` in a child process of a session of its own (without the API key), killed when this process ends
    however it ends (PR_SET_PDEATHSIG: a run SIGKILLed while a file's import hung left it running for good): refuse
    a file whose import ends that process without a Python error (os._exit, a signal), does not end within
    IMPORT_TIMEOUT_S, or leaves a thread or a process running (either would keep a run from ending, or hold its
    output open); errors it raises are left to the import in this process, which reports them."""
    done, scratch = uuid.uuid4().hex, scratch_folder()  # its temporary files, removed with it (core.scratch)
    with tempfile.TemporaryFile() as out, contextlib.ExitStack() as stack:
        stack.callback(remove_scratch, scratch)
        child = subprocess.Popen([sys.executable, "-c", PROBE, str(path), done, str(out.fileno()), str(os.getpid())],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 pass_fds=(out.fileno(),), env={**SECRETS.child_env(), "TMPDIR": scratch},
                                 start_new_session=True)
        try:
            code = child.wait(timeout=IMPORT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            out.seek(0)
            if schema := _schema_made(out.read()):
                raise TaskError(f"class '{schema}': making its JSON schema still running after {IMPORT_TIMEOUT_S} s; "
                                "a response class must define its fields, not work as its schema is made",
                                file=rel) from None
            raise TaskError(f"cannot import: still running after {IMPORT_TIMEOUT_S} s; a benchmark's file must define "
                            "its functions and classes, not work at import", file=rel) from None
        finally:
            left = _end_group(child.pid)
            child.wait()
        out.seek(0)
        said = out.read()
    if not said.endswith(done.encode()):
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"os._exit({code}) or the like"
        if schema := _schema_made(said):
            raise TaskError(f"class '{schema}': making its JSON schema ended the process ({how}); a response class "
                            "must define its fields, not work as its schema is made", file=rel)
        raise TaskError(f"cannot import: it ended the process importing it ({how}) before its last line", file=rel)
    threads, forked, started = json.loads(said[:-len(done)].rsplit(b"\n", 1)[-1])
    if forked:
        raise TaskError("cannot import: it forks the process importing it (os.fork, a multiprocessing process), and "
                        "a copy that went on would be a second run, writing the same run directory; a benchmark's file "
                        "must define its functions and classes, not work at import", file=rel)
    if threads or left or started:
        what = f"a thread ({threads[0]!r})" if threads else "a process"
        why = "which would keep the run from ending" if threads or left or True in started else \
            "in a session of its own, which would outlive the run"
        raise TaskError(f"cannot import: it starts {what} that is still running once it is imported, {why}; a "
                        "benchmark's file must define its functions and classes, not work at import", file=rel)
    return said


def _schema_made(said: bytes) -> str | None:
    """The class whose JSON schema the probe was making when it stopped writing (`said`), by the last mark it wrote;
    None (or '', all of them made) if it made none: it stopped importing the file, or after the schemas."""
    at = said.rfind(b"\n" + SCHEMA_MARK.encode())
    if at < 0:
        return None
    return said[at + 1 + len(SCHEMA_MARK):].split(b"\n", 1)[0].decode("utf-8", "replace")


def _end_group(pgid: int) -> bool:
    """Kill what is left of the probe's process group; whether anything was."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


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

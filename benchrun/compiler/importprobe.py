"""Importing a benchmark's Python file first in a process of its own (the probe), where what cannot be caught in
the run's process (os._exit, a signal, a loop, a thread or a process left running, os.fork) ends only the probe; a
file this process probed and imported as it is now, in a folder whose Python files are as they were, is not
probed again."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import tempfile
import uuid
from pathlib import Path

from benchrun.compiler.schemaonce import MARK
from benchrun.core.childwait import waited
from benchrun.core.codeenv import code_env
from benchrun.core.errors import TaskError
from benchrun.core.ownpython import own_python
from benchrun.core.scratch import remove_scratch, scratch_folder

Digests = dict[str, str]
"""The sha256 of the files a benchmark file's module was made of, by path in its folder: the file itself, and the
benchmark's own modules it had as it was imported (`helpers.py`)."""
IMPORT_TIMEOUT_S = 60
"""How long importing a benchmark's Python file may take."""
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
text = json.JSONEncoder(separators=(', ', ': ')).encode
schema_text = json.JSONEncoder(separators=(', ', ': '), sort_keys=True, default=repr).encode
try:
    sys.path.insert(0, os.path.dirname(sys.argv[1]))
    found = runpy.run_path(sys.argv[1], run_name='benchrun_probe')
    for name, value in list(found.items()):
        if isinstance(value, type) and value.__module__ == 'benchrun_probe' and hasattr(value, 'model_json_schema'):
            marks.write('\\nSCHEMA' + name)
            marks.flush()
            try:
                made = schema_text(value.model_json_schema()).encode()
                marks.write('\\nDIGEST' + text([name, hashlib.sha256(made).hexdigest()]))
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
marks.write('\\n' + text([left, bool(forked), started]) + sys.argv[2])
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
nothing here and ends without a word. The child is its descendants' reaper (Linux's child subreaper), so a process
started in a session of its own (`Popen(..., start_new_session=True)`, `setsid cmd &`), which the killing of the
child's process group missed and which outlived every run, is seen among its children and killed."""
WALKED = 2000
"""The most entries of a benchmark's folder looked at for its Python files; past them, its files are probed always."""
Listing = tuple[tuple[str, int, int, int], ...]
"""Every Python file under a folder, with its inode, size and modification time."""
KNOWN: dict[Path, tuple[Digests, Listing, bytes]] = {}
"""The files this process probed and then imported whole: the digests they and their own modules had, their
folder's Python files, then, and what the probe wrote."""


def probe_unless_known(path: Path, rel: str, found: str) -> tuple[bytes, Listing | None]:
    """`probed(path, rel)`, unless this process probed and imported `path` already as it is (digest `found`), with
    its own modules as they are and no Python file of its folder added, removed or changed since (one a changed file
    might import now): then what that probe wrote. A sweep's jobs in one process compile one benchmark each. With
    what was said, its folder's Python files as they were before it (for `remember`)."""
    known, listing = KNOWN.get(path.resolve()), python_files(path.parent)
    if known is None or listing is None or known[1] != listing or known[0].get(path.name) != found or any(
            _file_digest(path.parent / own) != digest for own, digest in known[0].items() if own != path.name):
        return probed(path, rel), listing
    return known[2], listing


def remember(path: Path, digests: Digests, said: bytes, listing: Listing | None) -> None:
    """`path` was probed (the probe wrote `said`) and imported whole, it and its own modules as `digests` say, its
    folder's Python files as `listing` (taken before the probe: a file changed since is probed again)."""
    if listing is not None:
        KNOWN[path.resolve()] = (digests, listing, said)


def python_files(folder: Path) -> Listing | None:
    """Every Python file under `folder` (links to folders not followed), by `Listing`; None past WALKED entries."""
    found, seen = [], 0
    for top, dirs, files in os.walk(folder):
        seen += len(dirs) + len(files)
        if seen > WALKED:
            return None
        for name in (name for name in files if name.endswith(".py")):
            with contextlib.suppress(OSError):
                at = os.stat(os.path.join(top, name), follow_symlinks=False)
                found.append((os.path.join(top, name), at.st_ino, at.st_size, at.st_mtime_ns))
    return tuple(sorted(found))


def _file_digest(path: Path) -> str | None:
    """The sha256 of the file at `path`; None when it cannot be read."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def probed(path: Path, rel: str) -> bytes:
    """Import `path` in a child process of a session of its own (without the API key), killed when this process ends
    however it ends (PR_SET_PDEATHSIG: a run SIGKILLed while a file's import hung left it running for good): refuse
    a file whose import ends that process without a Python error (os._exit, a signal), does not end within
    IMPORT_TIMEOUT_S, or leaves a thread or a process running (either would keep a run from ending, or hold its
    output open); errors it raises are left to the import in this process, which reports them."""
    done, scratch = uuid.uuid4().hex, scratch_folder()  # its temporary files, removed with it (core.scratch)
    with tempfile.TemporaryFile() as out, contextlib.ExitStack() as stack:
        stack.callback(remove_scratch, scratch)
        child = subprocess.Popen(own_python("-c", PROBE, str(path), done, str(out.fileno()), str(os.getpid())),
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 pass_fds=(out.fileno(),), env=_probe_env(scratch),
                                 start_new_session=True)
        try:
            code = waited(child, IMPORT_TIMEOUT_S)
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


def _probe_env(scratch: str) -> dict[str, str]:
    """The probe's environment: a benchmark code's (`code_env`), unoptimised (no $PYTHONOPTIMIZE), as the run's
    import of the file compiles it (`ownsource.Held`): -OO strips a class's docstring, its JSON schema's description,
    and the probe's schema must be the run's."""
    env = code_env(scratch)
    env.pop("PYTHONOPTIMIZE", None)
    return env


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

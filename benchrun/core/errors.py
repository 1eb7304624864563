"""Every error benchrun reports to a user, and the one table of exit codes.

    BenchrunError                 a user-facing problem: one line, no traceback
    ├── ConfigError               the composed config or a runner file is wrong                 exit 2
    │   └── RunDirTaken           the run directory already holds a run, or another is writing it
    ├── TaskError                 a task source (tasks.yml, tasks/<name>/, custom_*.py) is wrong   exit 2
    ├── RunnerError               the model server cannot be used                                exit 3
    │   ├── ServerLost            the server went away mid-run: the run is interrupted, resumable
    │   │   └── EngineLost        the embedded engine's process died mid-run: likewise
    │   ├── FailFast              request after request failed the same way: the run failed, resumable
    │   └── UnsafeBuild           the installed llama.cpp build would crash on this CPU            exit 2
    └── ArchiveError              a run directory is missing, incomplete or inconsistent          exit 4
        ├── ArchiveBusy           another process holds the run directory's lock
        └── WriteFailed           a file of the run could not be written (disk full, I/O error, ...)
    RunInterrupted (KeyboardInterrupt)  a signal (interrupts.SIGNALS), after the run was recorded as interrupted  exit 130

An OSError becomes one line naming its path here too: `writing` and `reading` where a file is written or read, and
`os_error_line` as the entry points' last resort for one that nothing nearer reported (exit 4).
"""

from __future__ import annotations

import errno
import math
import os
import resource
from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Sequence

from benchrun.core.text import LINE_CHARS, counted, one_line, undecoded

EXIT = {"ok": 0, "sweep_failed": 1, "not_intact": 1, "usage": 2, "runner": 3, "archive": 4, "interrupted": 130}
"""Every exit code benchrun and benchrun-audit use."""
VERBOSE_ENV = "BENCHRUN_VERBOSE"
"""Set (to 1) for a run's processes, its launchers' workers included, when tracebacks were asked for (--verbose)."""


class BenchrunError(Exception):
    """A problem the user can fix; `str(err)` is the whole message, made one line (what a server said may hold many)."""

    exit_code = EXIT["usage"]

    def __init__(self, message: str, *, file: str | None = None, task: str | None = None, key: str | None = None):
        self.file, self.task, self.key = file, task, key
        where = ": ".join(part for part in (_quote(file), _task(task), key) if part)
        super().__init__(one_line(f"{where}: {message}" if where else message, LINE_CHARS))


class ConfigError(BenchrunError):
    """The composed config (overrides, presets, a runner file) is invalid."""


class RunDirTaken(ConfigError):
    """benchrun was pointed at a directory that already holds a run (or is being written): nothing is changed."""


class TaskError(BenchrunError):
    """A benchmark's task files are invalid; names the file, the task and the key."""


class RunnerError(BenchrunError):
    """The model server cannot be used: unreachable, model missing, bad answer at preflight."""

    exit_code = EXIT["runner"]


class ServerLost(RunnerError):
    """Requests stopped reaching the server mid-run; the samples not yet answered are left for `resume`."""

    when = "once the server is back"
    """When `resume` can finish the run, as the message says it."""
    attempts: tuple = ()
    """The failed attempts of the request that found the server gone (set by the asker that raised it)."""


class EngineLost(ServerLost):
    """The embedded engine's process died mid-run (a signal, an abort, the out-of-memory killer)."""

    when = ""


class FailFast(RunnerError):
    """Request after request failed the same way: a broken setup; the run stops as failed, `resume` finishes it."""

    def __init__(self, message: str, longer: tuple[str, str] | None = None):
        super().__init__(message)
        self.longer = longer
        """For failures that may be a limit's (requests that timed out, answers too long): when that holds, and the
        `--set` with which a resume gives the limit more."""


class UnsafeBuild(RunnerError):
    """The installed llama-cpp-python was built in a way that crashes llama.cpp on this CPU: refused before any
    model is loaded, with the command that rebuilds it."""

    exit_code = EXIT["usage"]


class ArchiveError(BenchrunError):
    """A run directory cannot be read, written or trusted."""

    exit_code = EXIT["archive"]


class ArchiveBusy(ArchiveError):
    """Another live process holds the run directory's lock."""


class WriteFailed(ArchiveError):
    """Writing a file of the run failed (ENOSPC, EIO, EROFS, ...); names the file."""


class RunInterrupted(KeyboardInterrupt):
    """A signal (interrupts.SIGNALS) stopped a run after it was recorded as interrupted; `str(err)` says how to resume."""

    exit_code = EXIT["interrupted"]


TAKEN = {"list_type": "a list", "sequence_str": "a list", "string_type": "text", "int_type": "a whole number",
         "float_type": "a number", "bool_type": "a boolean"}
"""The problems of a value of another kind than its key takes, said with what was given (pydantic's `Input should be
a valid list` did not say that `task.only=t` gave one text, nor `Input should be a valid string` that
`judge.model=[a,b]` gave a list, nor `'str' instances are not allowed as a Sequence value` that a stop list was given
one text). A mapping's (`Input should be an object`) stays pydantic's, as the archive's readers
say it of run.json and the manifest alike (dict_type and model_type)."""

SIZED = {"too_short": "at least", "too_long": "at most", "string_too_short": "at least", "string_too_long": "at most"}
"""The problems of a list (a mapping, a text) of too few or too many items (characters), said with how many were given
and taken (pydantic's `List should have at least 1 item after validation, not 0`, `String should have at least 1
character`)."""


BOUNDS = {"ge": "at least", "le": "at most", "gt": "more than", "lt": "less than"}
"""A number's bound in benchrun's words, for a config's and a task file's alike (bound_said): pydantic's `Input should
be less than or equal to 1000` and jsonschema's `0 is less than the minimum of 1` said one way."""

PYDANTIC_BOUNDS = {"greater_than_equal": "ge", "less_than_equal": "le", "greater_than": "gt", "less_than": "lt"}
"""pydantic's problems of a number past its bound, by the BOUNDS key of their `ctx`."""

JSONSCHEMA_BOUNDS = {"minimum": "ge", "maximum": "le", "exclusiveMinimum": "gt", "exclusiveMaximum": "lt"}
"""JSON Schema's keywords of a number's bound, by their BOUNDS key."""


def bound_said(given: Any, bound: str, value: Any) -> str:
    """`1000000000 is out of bounds: give at most 1000`: a value past its bound (a BOUNDS key) in benchrun's words."""
    whole = isinstance(value, float) and value.is_integer()  # pydantic's `gt=0.0` said as 0
    least = _number_shown(int(value) if whole else value)
    return f"{_number_shown(given)} is out of bounds: give {BOUNDS[bound]} {least}"


def _number_shown(value: Any) -> str:
    """A number as JSON writes it (`-1.0`, `1000`); another value by its kind."""
    plain = isinstance(value, (int, float)) and not isinstance(value, bool)
    return repr(value) if plain else _kind_given(value)


INSTANCES_TAKEN = {"Sequence": "a list", "Mapping": "a mapping"}
"""The abstract types a library's model asks a value to be an instance of (the ollama client's `stop:
Sequence[str]`), in benchrun's words: pydantic said `Input should be an instance of Sequence`."""


def problem_said(problem: Mapping[str, Any]) -> str:
    """pydantic's message of one validation problem, without the `Value error, ` it puts before a validator's own; a
    value of another kind (TAKEN, INSTANCES_TAKEN) said with the kind given."""
    taken = TAKEN.get(problem["type"])
    if bound := PYDANTIC_BOUNDS.get(problem["type"]):
        return bound_said(problem["input"], bound, problem.get("ctx", {}).get(bound))
    if problem["type"] in SIZED:
        return _sized(problem)
    if problem["type"] == "is_instance_of":
        taken = INSTANCES_TAKEN.get(str(problem.get("ctx", {}).get("class")))
    if taken is None:
        return str(problem["msg"]).removeprefix("Value error, ")
    return f"{_kind_given(problem['input'])}, where {taken} is taken"


def _sized(problem: Mapping[str, Any]) -> str:
    """A list's (a mapping's) problem of too few or too many items, in benchrun's words."""
    context, given = problem.get("ctx", {}), problem["input"]
    length = context.get("actual_length", len(given) if isinstance(given, str) else None)
    bound = context.get("min_length", context.get("max_length"))
    if not isinstance(length, int) or not isinstance(bound, int):
        return str(problem["msg"])
    return sized_said(given, length, SIZED[problem["type"]], bound)


JSONSCHEMA_SIZED = {"minItems": "at least", "maxItems": "at most", "minLength": "at least", "maxLength": "at most",
                    "minProperties": "at least", "maxProperties": "at most"}
"""JSON Schema's keywords of a list's, a mapping's or a text's size, said as pydantic's are (sized_said): jsonschema's
`[] should be non-empty`, `'aaa...' is too long`."""


def sized_said(given: Any, length: int, relation: str, bound: int) -> str:
    """`an empty list, where one of at least 1 item is taken`: a list (a mapping, a text) of `length` items
    (characters) past its bound, in benchrun's words."""
    kind, item = ("text", "character") if isinstance(given, str) else \
        ("mapping" if isinstance(given, Mapping) else "list", "item")
    said = f"an empty {kind}" if length == 0 else f"a {kind} of {counted(length, item)}"
    return f"{said}, where one of {relation} {counted(bound, item)} is taken"


def _kind_given(value: Any) -> str:
    """`'t' is text`, `5 is a number`, `a mapping`: a value of a config or a record by its kind, a short one shown."""
    kinds = ((str, "text"), (bool, "a boolean"), ((int, float), "a number"), (Mapping, "a mapping"),
             (Sequence, "a list"))
    kind = next((said for types, said in kinds if isinstance(value, types)), "null" if value is None else "a value")
    shown = str(value).lower() if isinstance(value, bool) else repr(value)
    finite = not isinstance(value, float) or math.isfinite(value)  # inf: a number past a float's, not infinity
    return f"{shown} is {kind}" if isinstance(value, (str, int, float)) and finite and len(shown) <= 40 else kind


def problem_line(problem: Mapping[str, Any], what: str | None = None) -> str:
    """One validation problem in one line, `key: what` (pydantic's message unless `what` says it otherwise)."""
    where = ".".join(map(str, problem["loc"]))
    what = problem_said(problem) if what is None else what
    return f"{where}: {what}" if where else what


def without_file(err: BenchrunError) -> str:
    """What `err` says of the file it names, without naming it (a finding beside the file's name says it)."""
    return str(err).removeprefix(f"{_quote(err.file)}: ")


def _quote(file: str | None) -> str | None:
    """Where an error is, its bytes that are not UTF-8 shown escaped (`run\\xff`), as every path is shown."""
    return f"in '{undecoded(file) or file}'" if file else None


NAME_SHOWN = 100
"""The most characters of a task's name an error shows (a task name has at most 100): a longer one, refused for its
length, is shown by its head and length, so the line keeps the key at fault and what is wrong."""


def _task(task: str | None) -> str | None:
    if task and len(task) > NAME_SHOWN:
        return f"task '{task[:NAME_SHOWN - 40]}...' ({len(task):,} characters)"
    return f"task '{task}'" if task else None


_ERRNO_WORDS = {errno.ENOSPC: "disk full", errno.EDQUOT: "disk quota exceeded", errno.EIO: "I/O error",
                errno.EROFS: "read-only file system", errno.EACCES: "permission denied",
                errno.ELOOP: "a loop of symbolic links"}


_TASKS_LIMIT = "the system's limit of processes and threads is reached (ulimit -u, a container's or cgroup's pids.max)"

NO_THREAD = "can't start new thread"
"""What Python's RuntimeError says when the system starts no thread (a limit of processes and threads reached)."""


OWN_LIMITS = frozenset({errno.EMFILE, errno.ENFILE})
"""The errors of a file or connection that could not be opened for want of a file descriptor here (this process's
`ulimit -n`, or the system's table full): the run's own limit, not a server's state nor a benchmark file's fault."""


def refused_by_system(err: BaseException) -> bool:
    """Whether `err` is the system refusing what was asked of it: an OSError, a MemoryError, or a thread it would not
    start (a RuntimeError that says so: Python's only sign of a limit of threads reached)."""
    return isinstance(err, (OSError, MemoryError)) or (isinstance(err, RuntimeError) and str(err) == NO_THREAD)


def os_problem(err: OSError | MemoryError | RuntimeError, path: str | os.PathLike[str] | None = None) -> str:
    """What went wrong, in words: `disk full`, `read-only file system`, `not a directory`, `out of memory` (a
    MemoryError: the system's limit too, `ulimit -v` or the machine's), a thread that could not be started, ...
    (`path`: the file it went wrong at, where the error does not name it)."""
    if isinstance(err, MemoryError):
        return "out of memory"
    if isinstance(err, RuntimeError):
        return f"no thread could be started ({NO_THREAD}): {_TASKS_LIMIT}, or of memory (ulimit -v)"
    if err.errno == errno.EAGAIN and err.filename is None:  # fork's sign of the same limit, naming no file
        return f"no process could be started (resource temporarily unavailable): {_TASKS_LIMIT}"
    if err.errno == errno.EFBIG:
        return _too_large()
    if err.errno == errno.ENOSPC and _out_of_inodes(path or err.filename):
        return "no free inodes (the disk has room, but no more files can be made on it: df -i)"
    if err.errno == errno.EEXIST and (target := _dangling(path or err.filename)) is not None:
        return f"a dangling link (to {target}, which is not there), where a folder was to be made"
    if err.errno in _ERRNO_WORDS:  # benchrun's own words, written as said (`I/O error`)
        return _ERRNO_WORDS[err.errno]
    words = err.strerror or str(err) or type(err).__name__
    return words[0].lower() + words[1:]


def _too_large() -> str:
    """A write past the largest file allowed: by this process's file-size limit (`ulimit -f`, a batch system's), which
    a disk with room gives no other sign of, or by the file system's own (FAT32's 4 GiB)."""
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return "file too large" if limit == resource.RLIM_INFINITY else \
        f"file too large for this process's file-size limit (ulimit -f: {limit} bytes)"


def _dangling(path: str | bytes | os.PathLike[str] | None) -> str | None:
    """Where `path` links to, when it is a link to nothing (`outputs=runs`, runs a link to a folder since removed):
    making a folder there was `file exists`, though nothing is there to see."""
    if path is None or not os.path.islink(path) or os.path.exists(path):
        return None
    try:
        return os.fsdecode(os.readlink(path))
    except OSError:
        return None


def _out_of_inodes(path: str | bytes | os.PathLike[str] | None) -> bool:
    """Whether the file system of `path` (or of its nearest folder that exists) has blocks free but no inode, which
    a disk that looks far from full gives as ENOSPC (a file system without a count of inodes, btrfs's, never)."""
    if path is None:
        return False
    folder = os.path.abspath(os.fsdecode(path))
    while not os.path.isdir(folder) and folder != os.path.dirname(folder):
        folder = os.path.dirname(folder)
    try:
        room = os.statvfs(folder)
    except OSError:
        return False
    return room.f_files > 0 and room.f_favail == 0 and room.f_bavail > 0


def os_error_line(err: OSError | MemoryError | RuntimeError) -> str:
    """The last resort's line for an OSError (or a MemoryError) nothing nearer reported: `read-only file system:
    outputs/2026-12-01`."""
    named = (getattr(err, "filename", None), getattr(err, "filename2", None))
    paths = " -> ".join(os.fsdecode(path) for path in named if path is not None)
    return f"{os_problem(err)}: {paths}" if paths else (cwd_gone() or os_problem(err))


def cwd_gone() -> str | None:
    """The line saying the working directory cannot be had (deleted since the shell entered it): what a path read
    from it (`Path.cwd()`, a relative one) fails on, naming no file; None when it can."""
    try:
        os.getcwd()
    except OSError as err:
        where = os.environ.get("PWD", "the working directory")
        return (f"the working directory {where}: {os_problem(err)} (deleted since the shell entered it?); cd to a "
                "directory that exists")
    return None


def making_said(err: OSError, what: str, path: str | os.PathLike[str], key: str) -> str:
    """An OSError making a run's or a sweep's directory (`what`, named by `key`) as one line naming both, then the
    error as the last resort says it (`os_error_line`)."""
    return (f"the {what} {os.fspath(path)} ({key}, made of outputs= unless given) cannot be made: "
            f"{os_error_line(err)}; nothing was recorded")


@contextmanager
def writing(path: str | os.PathLike[str]) -> Iterator[None]:
    """An OSError while writing `path` as one line: `disk full writing outputs/.../responses.jsonl` (WriteFailed)."""
    try:
        yield
    except OSError as err:
        raise WriteFailed(f"{os_problem(err, path)} writing {os.fspath(path)}") from None


@contextmanager
def reading(path: str | os.PathLike[str], error: type[BenchrunError] = ArchiveError, **where: str) -> Iterator[None]:
    """An OSError while reading `path` as one line, `in 'path': unreadable: permission denied`, of class `error`
    (an ArchiveError; a TaskError for a benchmark's file, `where` naming its task)."""
    try:
        yield
    except OSError as err:
        raise error(f"unreadable: {os_problem(err)}", file=os.fspath(path), **where) from None

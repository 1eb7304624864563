"""What a benchmark's code run in the run's own process (its files imported to compile) may not change for the run:
its locale and the interpreter's other SETTINGS, signal handling, working directory, umask, sys.path, environment,
builtins, resource limits and recursion limit, OmegaConf's resolvers, each put back after the block (`kept`), as the
scorer process puts most of them back after each call (benchrun.execute.scorer_worker), what runs as the process
exits, its garbage collection and its logging."""

from __future__ import annotations

import _tracemalloc
import atexit
import builtins
import contextlib
import gc
import io
import locale
import logging
import os
import resource
import socket
import sys
import sysconfig
import tempfile
import threading
import time
from typing import Any, Callable, Iterator

from benchrun.core.interrupts import handling_now
from benchrun.core.ioprio import io_priority, put_back_io_priority
from benchrun.core.memlock import memory_locked, put_back_memory_locked
from benchrun.core.prctlstate import process_flags, put_back_process_flags, put_back_timer_slack, timer_slack
from benchrun.core.procfs import put_back_written, written_settings
from benchrun.core.scratch import remove_scratch, scratch_folder
from benchrun.core.stdfds import put_back_statuses, statuses
from benchrun.core.stdlibnames import put_back_standard, standard_now


@contextlib.contextmanager
def kept() -> Iterator[None]:
    """The process's signal handling, working directory, umask, sys.path, environment, builtins, resource limits,
    recursion limit, exit functions, garbage collection, logging, OmegaConf's resolvers and the standard library's
    names as they were before the block, and the block's temporary files in a folder of their own."""
    with _settings_kept(), _signals_kept(), _file_making_kept(), _import_path_kept(), _environment_kept(), \
            _builtins_kept(), _limits_kept(), _exit_functions_kept(), _collection_kept(), _logging_kept(), \
            _temporary_files_kept(), _resolvers_kept(), _standard_kept():
        yield


@contextlib.contextmanager
def _standard_kept() -> Iterator[None]:
    """The names the standard library's modules and their classes hold as before the block (`stdlibnames`)."""
    found = standard_now()
    try:
        yield
    finally:
        put_back_standard(found)


def _put_back_group(found: int) -> None:
    """The process in the process group `found` again, where it is still there to join."""
    with contextlib.suppress(OSError):
        os.setpgid(0, found)


SETTINGS: tuple[tuple[Callable[[], Any], Callable[[Any], Any]], ...] = (
    (lambda: locale.setlocale(locale.LC_ALL), lambda found: locale.setlocale(locale.LC_ALL, found)),
    (sys.gettrace, sys.settrace), (sys.getprofile, sys.setprofile),
    (threading.gettrace, threading.settrace), (threading.getprofile, threading.setprofile),
    (threading.stack_size, threading.stack_size),
    (socket.getdefaulttimeout, socket.setdefaulttimeout), (sys.getswitchinterval, sys.setswitchinterval),
    (gc.isenabled, lambda enabled: gc.enable() if enabled else gc.disable()),
    (gc.get_threshold, lambda found: gc.set_threshold(*found)), (gc.get_debug, gc.set_debug),
    (sys.getrecursionlimit, sys.setrecursionlimit),
    (lambda: list(gc.callbacks), lambda found: gc.callbacks.__setitem__(slice(None), found)),  # in place: gc's list
    (gc.get_freeze_count, lambda found: gc.unfreeze()),  # none is ever found frozen: a freeze is undone
    (lambda: _tracemalloc.is_tracing() and _tracemalloc.get_traceback_limit(),
     lambda found: _tracemalloc.start(found) if found else _tracemalloc.stop()),
    (sys.get_int_max_str_digits, sys.set_int_max_str_digits),
    (sys.get_asyncgen_hooks, lambda found: sys.set_asyncgen_hooks(firstiter=found[0], finalizer=found[1])),
    (sys.get_coroutine_origin_tracking_depth, sys.set_coroutine_origin_tracking_depth),
    (lambda: _asyncio("get_event_loop_policy"), lambda found: _asyncio("set_event_loop_policy", found)),
    (lambda: dict(sys.path_importer_cache), lambda found: _put_back_dict(sys.path_importer_cache, found)),
    *([(sys.getdlopenflags, sys.setdlopenflags)] if hasattr(sys, "getdlopenflags") else []),
    *((lambda owner=owner, name=name: getattr(owner, name),
       lambda found, owner=owner, name=name: setattr(owner, name, found))
      for owner, name in ((tempfile, "tempdir"), (sys, "excepthook"), (sys, "unraisablehook"),
                          (sys, "breakpointhook"), (sys, "displayhook"), (threading, "excepthook"))),
    *((lambda name=name: list(found) if isinstance(found := getattr(sys, name), list) else found,
       lambda found, name=name: setattr(sys, name, list(found))) for name in ("path", "meta_path", "path_hooks")),
    *([(lambda: os.sched_getaffinity(0), lambda found: os.sched_setaffinity(0, found))]
      if hasattr(os, "sched_getaffinity") else []),
    *((lambda name=name: _stream(name), lambda found, name=name: _restream(name, *found))
      for name in ("stdin", "stdout", "stderr")), (statuses, put_back_statuses), (written_settings, put_back_written),
    (timer_slack, put_back_timer_slack), (process_flags, put_back_process_flags), (io_priority, put_back_io_priority),
    (memory_locked, put_back_memory_locked), (os.getpgrp, _put_back_group))
"""The interpreter's settings a scorer may change for its own work, each read and set back (the scorer process's
`_Found`), none of which may reach the calls after it, nor, changed by a benchmark's file as it is imported, the run
(`_settings_kept`: `locale.setlocale(LC_ALL, 'de_DE.UTF-8')` rendered `{a:n}` in every later prompt `1.234.567`): a
locale (`locale.setlocale(LC_NUMERIC, ...)`: their `locale.atof` read numbers by it), a trace or profile function
(`sys.settrace`, a profiler left enabled: run on every line of theirs), one for the threads started after
(`threading.settrace`), the stack size of those threads (`threading.stack_size(32768)`: a later call's thread crashed
the process, that call's ScorerProcessDied), a default socket timeout (`socket.setdefaulttimeout(0.001)`: their
requests timed out), a thread switch interval, the garbage collector turned off or retuned or given a callback
(`gc.callbacks.append(...)`: run in every later call's collections) or what it holds frozen (`gc.freeze()`: each
call's cycles left then kept for good) or its debugging (`gc.set_debug(gc.DEBUG_SAVEALL)`: every later call's garbage
kept), the tracing of memory allocations (`tracemalloc.start(25)`: every later call's allocations traced, its work
slowed several times over), a recursion limit or a bound on the digits of an int (`sys.setrecursionlimit(200)`,
`sys.set_int_max_str_digits(640)`: their own work a RecursionError, a ValueError), the module search path
(`sys.path.append`, or `sys.path` bound to another value) and the import system's finders and path hooks
(`sys.meta_path.insert(0, finder)`: a later call's imports went through it), the CPUs the process may run on
(`os.sched_setaffinity(0, {0})`, where the system has it), the standard streams (`sys.stdin = io.StringIO(...)`:
their `input()` read what an earlier call left there, where it reads nothing), and how stdout and stderr encode
(`sys.stdout.reconfigure(encoding="ascii")`: the same object, so a later call's `print("café")` raised
UnicodeEncodeError), the folder of temporary files (`tempfile.tempdir = "/gone"`: their `mkstemp` failed) and the
hooks that report uncaught and unraisable exceptions (`sys.excepthook`, `sys.unraisablehook`, `threading.excepthook`),
and the flags extension modules are loaded with (`sys.setdlopenflags(os.RTLD_GLOBAL | ...)`: a later call's imports
shared their symbols), the hooks of async generators and the depth of coroutines' origins kept
(`sys.set_asyncgen_hooks`: run for a later call's async generators), what `breakpoint()` and an expression's display
call (`sys.breakpointhook`, `sys.displayhook`), the finders found for sys.path's entries
(`sys.path_importer_cache[folder] = None`: a later call's imports from it failed) and asyncio's event loop policy (a
benchmark's file that set one as it was imported made the run's own loop its policy's: one that failed to make one, a
traceback; uvloop's, the run asked on uvloop), the standard descriptors, whether inherited, and their files' flags
(`os.set_blocking(2, False)`: a later call's write past what the log's pipe held failed; `stdfds.statuses`), the
process's OOM score adjustment and core dump filter (`procfs.WRITTEN`), its timer slack (`prctlstate.timer_slack`),
its flags and execution domain (`prctlstate.process_flags`), its I/O priority (`ioprio`) and its memory locked in RAM
(`mlockall`: every later allocation locked; `memlock`), and its process group (`os.setpgid(0, 0)`: a group of its
own, which the signals sent to the one it was in no longer reach).
"""


def _asyncio(call: str, *args: Any) -> Any:
    """asyncio's `call`, where a module has imported asyncio (None else: none is imported for it)."""
    asyncio = sys.modules.get("asyncio")
    return None if asyncio is None else getattr(asyncio, call)(*args)


def _put_back_dict(held: dict[Any, Any], found: dict[Any, Any]) -> None:
    """`held` (a dict the interpreter holds by its identity) holding what `found` does, in place."""
    held.clear()
    held.update(found)


def _stream(name: str) -> tuple[Any, tuple[Any, ...] | None]:
    """A standard stream of `sys`, and how it encodes where it is a text stream that writes."""
    stream = getattr(sys, name)
    if name == "stdin" or not isinstance(stream, io.TextIOWrapper):
        return stream, None
    return stream, (stream.encoding, stream.errors, stream.line_buffering, stream.write_through)


def _restream(name: str, stream: Any, coding: tuple[Any, ...] | None) -> None:
    """`sys.<name>` bound to `stream` again, encoding as `coding` says (`_stream`)."""
    setattr(sys, name, stream)
    if coding is not None and _stream(name)[1] != coding:
        encoding, errors, line_buffering, write_through = coding
        stream.reconfigure(encoding=encoding, errors=errors, line_buffering=line_buffering,
                           write_through=write_through)


@contextlib.contextmanager
def _settings_kept() -> Iterator[None]:
    """The interpreter's SETTINGS as before the block: its locale above all, by which a template's `{a:n}` is
    rendered (a benchmark's file that set one at import rendered `1234567` as `1.234.567`, under another manifest
    id, in its run and in every job after it in a sweep's process)."""
    found = settings_now()
    try:
        yield
    finally:
        put_back_settings(found)


def settings_now() -> list[Any]:
    """Each of the interpreter's SETTINGS as it is now, as `put_back_settings` takes them."""
    return [get() for get, _ in SETTINGS]


def put_back_settings(found: list[Any]) -> None:
    """Each of the interpreter's SETTINGS as `found` (`settings_now`), set again where it changed."""
    for (get, put), was in zip(SETTINGS, found):
        if get() != was:
            put(was)


@contextlib.contextmanager
def _signals_kept() -> Iterator[None]:
    """Every signal's handling as it was before the block, and no alarm set in it: a file that ignores SIGTERM or
    Ctrl-C at import (`signal.signal(SIGINT, SIG_IGN)`) or sets `signal.alarm(5)` must not make the run one that
    cannot be stopped, or one killed five seconds on."""
    put_back = handling_now()
    try:
        yield
    finally:
        put_back()


@contextlib.contextmanager
def _file_making_kept() -> Iterator[None]:
    """Where and how this process makes files, its working directory and its umask, as before the block: a file that
    changed them at import moved the run's process (`os.chdir`: a sweep's next job in it read its task.path there,
    `'b' is not a directory`, and the sweep's summary went to a directory not there, exit 4) or opened its files to
    everyone (`os.umask(0)`: a run under umask 077 written 0o666)."""
    here, mask = os.open(".", getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY), os.umask(0o077)
    os.umask(mask)
    try:
        yield
    finally:
        os.fchdir(here)
        os.close(here)
        os.umask(mask)


@contextlib.contextmanager
def _import_path_kept() -> Iterator[None]:
    """sys.path as it was before the block: a file that put its folder on it (`sys.path.insert(0,
    os.path.dirname(__file__))`, a common idiom) made its modules those of every benchmark compiled after it in the
    process, so a sweep's next job imported the first's `helpers`, passed its compile unnamed by its manifest, and
    failed every scorer call in its own scorer process."""
    kept = list(sys.path)
    try:
        yield
    finally:
        sys.path[:] = kept


@contextlib.contextmanager
def _environment_kept() -> Iterator[None]:
    """The process's environment as it was before the block: a file that set a variable at import
    (`os.environ["OLLAMA_HOST"] = ...`) chose the server a sweep's next job in the process asked (its runner.host is
    read from $OLLAMA_HOST), and what this run's own client reads ($SSL_CERT_FILE, a proxy), with the time zone $TZ
    gives; a scorer process imports the file itself, so its scorers still see what it sets."""
    kept = dict(os.environ)
    try:
        yield
    finally:
        zone = os.environ.get("TZ")
        for name in [name for name in os.environ if name not in kept]:
            del os.environ[name]
        os.environ.update({name: value for name, value in kept.items() if os.environ.get(name) != value})
        if zone != os.environ.get("TZ"):  # and the zone in force, which `time.tzset()` set from it
            time.tzset()


@contextlib.contextmanager
def _builtins_kept() -> Iterator[None]:
    """The builtins as they were before the block: a file that replaced one at import (`builtins.print = ...`, to
    quiet itself) replaced it for the run, whose one-line errors (printed) then went nowhere, a failed run's exit code
    said without its line."""
    found = dict(vars(builtins))
    try:
        yield
    finally:
        put_back_names(vars(builtins), found)


def put_back_names(names: dict[str, Any], found: dict[str, Any]) -> None:
    """`names` (a namespace) holding what it held when `found` was copied of it, each the same object."""
    for name in names.keys() - found.keys():
        del names[name]
    names.update({name: value for name, value in found.items() if names.get(name) is not value})


LIMITS = tuple(getattr(resource, name) for name in dir(resource) if name.startswith("RLIMIT_"))
"""The resource limits a process has (`resource.setrlimit`)."""


@contextlib.contextmanager
def _limits_kept() -> Iterator[None]:
    """The resource limits as they were before the block, as far as the process may raise them again, and Python's
    recursion limit: a file that bounded its own work at import (`resource.setrlimit(RLIMIT_NOFILE, (14, hard))`)
    bounded the run, which failed (`too many open files ...; finish it with: benchrun-audit resume ...`, advice that
    met the same limit again), and one that set `sys.setrecursionlimit(60)` made the run a RecursionError's traceback
    (a limit raised, the C stack's overflow where benchrun counts on a RecursionError: a YAML file nested too deep)."""
    found, depth = limits_now(), sys.getrecursionlimit()
    try:
        yield
    finally:
        sys.setrecursionlimit(depth)
        put_back_limits(found)


def limits_now() -> dict[int, tuple[int, int]]:
    """Every resource limit of the process, as `put_back_limits` takes them."""
    return {limit: resource.getrlimit(limit) for limit in LIMITS}


def put_back_limits(found: dict[int, tuple[int, int]]) -> None:
    """The resource limits as `found`, as far as the process may raise them again (a hard bound lowered stays)."""
    for limit, was in found.items():
        if resource.getrlimit(limit) != was:
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(limit, was)


INSTALLED = tuple({os.path.join(path, "") for name, path in sysconfig.get_paths().items() if name.endswith("lib")} |
                  {os.path.join(os.path.dirname(os.path.dirname(__file__)), "")})
"""Where the standard library, installed packages and benchrun's own code are: what registers an exit function from
there (`multiprocessing` as it is first imported, `weakref.finalize` as it is first used) serves the process."""


@contextlib.contextmanager
def _exit_functions_kept() -> Iterator[None]:
    """No exit function the block's own code registers (`atexit.register(cleanup)`, to end what it set up at import)
    for the run's process, which ran it as it exited: after the run's last line, a traceback when it raised, the
    process's exit code what `os._exit` in it gave (a failed run exiting 0), a wait without end when it waited (the
    file's scorer process ends without running them either); what a library registers stays registered."""
    register = atexit.register

    def others_only(func: Any, *args: Any, **kwargs: Any) -> Any:
        if not sys._getframe(1).f_code.co_filename.startswith(INSTALLED):
            return func  # as atexit.register returns it, for its use as a decorator
        return register(func, *args, **kwargs)

    atexit.register = others_only
    try:
        yield
    finally:
        atexit.register = register


@contextlib.contextmanager
def _collection_kept() -> Iterator[None]:
    """Python's garbage collection as before the block, on and at its thresholds: a file that turned it off at import
    (`gc.disable()`, for speed) left the run's process never freeing what refers to itself, some 7 KB an answer
    (a run of 100,000 samples 700 MB more), and every job after it in a sweep's process."""
    enabled, thresholds = gc.isenabled(), gc.get_threshold()
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        (gc.enable if enabled else gc.disable)()


@contextlib.contextmanager
def _logging_kept() -> Iterator[None]:
    """The process's logging as before the block: what is logged at all, and each logger's level, handlers and
    propagation: a file that quieted logging at import (`logging.getLogger().setLevel(logging.WARNING)`,
    `logging.disable(logging.INFO)`, to quiet the libraries it imports) left what it printed, logged after the block,
    out of benchrun.log, and the same of every job after it in a sweep's process."""
    put_back = logging_now()
    try:
        yield
    finally:
        put_back()


def logging_now() -> Callable[[], None]:
    """The process's logging as it is now, as a function that puts it back: what is logged at all, and each logger's
    level, handlers and propagation (a logger made since is left as it is)."""
    manager = logging.Logger.manager
    loggers = [logging.getLogger(), *(each for each in manager.loggerDict.values() if isinstance(each, logging.Logger))]
    found, disabled = [(each, each.level, list(each.handlers), each.propagate, each.disabled) for each in loggers], \
        manager.disable

    def put_back() -> None:
        logging.disable(disabled)
        for each, level, handlers, propagate, off in found:
            each.setLevel(level)
            each.handlers[:], each.propagate, each.disabled = handlers, propagate, off

    return put_back


SCRATCH: list[str] = []
"""The folder of the temporary files user code makes in this process (`core.scratch`), once made."""


@contextlib.contextmanager
def _temporary_files_kept() -> Iterator[None]:
    """The block's temporary files (`tempfile`'s) made in a folder of this process's own, removed as it exits: the
    exit functions that would remove them are user code's, which the process does not keep."""
    if not SCRATCH:
        SCRATCH.append(scratch_folder())
        atexit.register(remove_scratch, SCRATCH[0])
    was, tempfile.tempdir = tempfile.tempdir, SCRATCH[0]
    try:
        yield
    finally:
        tempfile.tempdir = was


@contextlib.contextmanager
def _resolvers_kept() -> Iterator[None]:
    """OmegaConf's resolvers as before the block, which compose every job's config after it in the process: a file
    that registered one of its own at import (`OmegaConf.register_new_resolver("double", ...)`) had every later job
    of a sweep over models refused (`cannot import: ValueError: resolver 'double' is already registered`), and one
    that replaced one (`oc.env`, benchrun's `slug`, `replace=True`) chose the server a sweep's next job asked and where
    the sweep's summary went (none written, exit 4). OmegaConf keeps them in `BaseContainer._resolvers` only. A process
    that has not loaded OmegaConf (a rescore's) composes nothing after the block, and is not made to load it."""
    containers = sys.modules.get("omegaconf.basecontainer")
    found = dict(containers.BaseContainer._resolvers) if containers else None
    try:
        yield
    finally:
        if containers:
            containers.BaseContainer._resolvers = found

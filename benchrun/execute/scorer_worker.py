"""The scorer process, `python -m benchrun.execute.scorer_worker`: scorers called one at a time, away from the run.

Requests arrive on stdin as JSON lines. The first names the user's scorers and the libraries to import before the first
call (`scorerleft.preload`): [{name: [file, sha256, digests]}, [library, ...]] (benchrun's own scorers are called in
the run's process); each function, the file it is in and the benchmark's own modules that file imports
must still hash as when the run imported them. Every later line is one call, [seq, name, response, reference], answered
on the process's original stdout with one JSON line, [seq, metrics, null] or [seq, null, [type, message]] (and a fourth
element saying why and a fifth naming the libraries it first imported, where the call left the process changed past
putting back, `scorerleft`: the process then ends, and the run starts another, which imports them first), read and
written by a decoder and an encoder of the process's own (a scorer patching
`json.loads` does not reach them). Whatever user code raises (SystemExit and KeyboardInterrupt included) is that call's
error; whatever it prints (file descriptors 1 and 2) goes to the original stderr, which the run reads into its log
(bounded); a line it writes to the process's pipes (kept at 100 and above) is that call's error, a copy of the process
it forks (`os.fork()`) ends as it returns from the call (never a second scorer process, reading calls and replying), and
stdin gives it nothing (EOF: an `input()` or a `breakpoint()` left in ends its own call); each call starts in the
working directory, environment (its time zone too), umask, resource limits, signal handling, builtins, decimal context,
random generators and numpy's floating-point error handling the first found, no timer set; SIGINT, SIGHUP and SIGQUIT
are ignored, so a terminal's signals reach the run, which decides. The process leads a process group of its own, which
the run kills, with whatever the scorers started, when a call overruns its time limit, when the process dies, and when
the run ends; the process the run starts stays above the scorers' as their reaper (`proctree.reap_below`), so what they
start and leave stays below it, and it kills all below once the scorers' process or the run has ended, however (a run
SIGKILLed could end nothing).
"""

from __future__ import annotations

import builtins
import contextlib
import csv
import decimal
import fcntl
import json
import os
import random
import resource
import signal
import sys
import time
import warnings
from pathlib import Path
from typing import IO, Any, Callable

from benchrun.compiler.runstate import (
    limits_now,
    logging_now,
    put_back_limits,
    put_back_names,
    put_back_settings,
    settings_now,
)
from benchrun.compiler.scoring import metrics, scorers_in, source_sha256
from benchrun.core.errors import BenchrunError, os_problem
from benchrun.core.interrupts import handling_now, ignore_terminal_signals
from benchrun.core.stdlibnames import put_back_standard, standard_now
from benchrun.core.text import message_of, one_line
from benchrun.execute import cenviron, libraryheld
from benchrun.execute.proctree import reap_below
from benchrun.execute.scorerleft import Left, Watch, preload
from benchrun.execute.scorerloop import Loops

Scorer = Callable[[str, Any], Any]
_READ, _WRITE = json.JSONDecoder().decode, json.JSONEncoder().encode
"""The process's own reading of calls and writing of replies, bound before user code runs: a scorer that patched
`json.loads` (or `json.dumps`) for its own work ended the process as it read the next call, which was recorded as
that call's `ScorerProcessDied`: another sample's error."""
KEPT_FROM = 100
"""The lowest file descriptor number the process's own pipes are kept at, where the open-files limit allows it."""
KEPT_SPARE = 8
"""Under a lower limit, how many numbers below it are left: the two pipes, and what user code opens."""


def main() -> None:
    reap_below(int(sys.argv[1]))
    calls, replies = _take_stdin(), _take_stdout()
    ignore_terminal_signals()
    watch = Watch()
    try:
        named, imported = _READ(calls.readline())
        scorers = load(named)
    except BenchrunError as err:
        _send(replies, {"error": str(err)})
        return
    preload(imported)
    _send(replies, {"ready": True})
    found, left, pid = _Found(), Left(watch), os.getpid()
    for line in calls:
        seq, name, response, reference = _READ(line)
        watch.calling = True
        with warnings.catch_warnings():  # the warnings filters as found (`simplefilter('error')` reached the next)
            result = call(name, scorers[name], response, reference)
        watch.calling = False
        if os.getpid() != pid:  # a copy the scorer forked (os.fork), back from its call: it ends without a word
            os._exit(0)
        found.put_back()
        why = "; ".join(filter(None, (left.why(), found.loops.why()))) or None
        try:
            _send(replies, [seq, *result, *([why, left.imported()] if why else [])])
        except OSError as err:  # the scorer closed or took the pipe: its call is the one this process ends in
            sys.exit(f"scorer '{name}' closed the scorer process's reply pipe ({os_problem(err)}): the process "
                     "ends, and the run starts another")
        if why:
            _end(name, why)


def _end(name: str, why: str) -> None:
    """End the process after a call that left it changed past putting back (`scorerleft`), saying so in the log: its
    reply says so too, and the run starts another process for the calls behind it."""
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
        sys.stderr.flush()
    with contextlib.suppress(OSError):
        os.write(2, f"benchrun: scorer '{name}' {why}: the scorer process ends after its call, and the run starts "
                    f"another\n".encode())
    os._exit(0)


class _Found:
    """The process's state as the first call found it, which every call starts in (`put_back`): a scorer's
    `os.chdir` or `os.environ[...] = ...` reached the calls after it, so a score depended on which samples this
    process had scored before (and on whether a timeout had replaced it); so did a umask or a resource limit it set
    (`resource.setrlimit(RLIMIT_AS, ...)` bounding its own work: the calls after it ran out of memory); a timer it
    left set (`signal.alarm`, `setitimer`) went off in another sample's call, that sample's error (or the process's
    end); so did a name it set or replaced among the builtins (`builtins.round = ...`: the next sample's scorer
    rounded with it, or the process's own `len` broke), and the decimal context (`decimal.getcontext().prec = 2`);
    a time zone it set (`TZ` and `time.tzset()`, or `os.putenv('TZ', ...)`, which os.environ does not show) stayed in
    force though $TZ was put back; so did what its libraries hold for every caller (`_held_by_libraries`: a random
    generator's state, numpy's floating-point error handling); so did any variable set past os.environ
    (`os.putenv`, ctypes' `setenv` or `unsetenv`), which the later calls' subprocesses inherited (`cenviron`); so
    did the interpreter's settings of runstate.SETTINGS it changed, a standard descriptor it replaced
    (`os.dup2(devnull, 2)` to quiet a library, left so: nothing a later call printed reached the log) or its
    flags (`os.set_blocking`, runstate.SETTINGS), a module
    it replaced or removed in the module table (`_put_back_modules`), the descriptor every signal writes a byte to
    (`signal.set_wakeup_fd`: once closed, whatever file took its number was written a byte per signal) and its logging
    (a handler added in each call had every later call write each line once more than the call before it; a
    `logging.disable` hid the later calls' lines from the log), asyncio's event loop (`scorerloop`) and the names the
    standard library's modules hold and the tables they hold, and the names the installed libraries hold
    (`stdlibnames`: `time.time = lambda: 0` timed every later call's work by it)."""

    def __init__(self) -> None:
        self.cwd, self.environ, self.signals = os.getcwd(), dict(os.environ), handling_now()
        self.environment, self.c_environ = os.environ, cenviron.c_environ()
        self.builtins, self.decimal = dict(vars(builtins)), decimal.getcontext().copy()
        self.umask = os.umask(0o022)
        os.umask(self.umask)
        self.limits, self.settings = limits_now(), settings_now()
        self.standard, self.zone = {fd: (_kept(fd), _file_of(fd)) for fd in STANDARD}, _zone()
        self.held = _held_by_libraries()
        self.modules = dict(sys.modules)
        self.wakeup = signal.set_wakeup_fd(-1)  # Python reads it only by setting another
        signal.set_wakeup_fd(self.wakeup)
        self.logging = logging_now()
        self.loops = Loops()
        self.standard_names = standard_now()

    def put_back(self) -> None:
        """Builtins, decimal context, signal handling (no timer set, the wakeup descriptor as found), logging, asyncio's
        event loop, limits, umask, SETTINGS, what libraries hold, standard descriptors, environment (the time zone it
        says), working directory and the standard library's names and tables as found; a limit whose hard bound the
        scorer lowered is put back as far as the process may raise it again."""
        put_back_names(vars(builtins), self.builtins)
        _put_back_modules(self.modules)
        decimal.setcontext(self.decimal.copy())
        self.signals()
        signal.set_wakeup_fd(self.wakeup)
        self.logging()
        self.loops.put_back()
        put_back_limits(self.limits)
        os.umask(self.umask)
        for fd, (copy, file) in self.standard.items():
            if _file_of(fd) != file:
                os.dup2(copy, fd)
        put_back_settings(self.settings)  # after the descriptors: their files' flags (`stdfds.statuses`)
        for put, held in self.held:  # set whether changed or not: reading a generator's state to compare costs more
            put(held)
        os.environ = self.environment  # the mapping itself, where the scorer bound the name to another
        if os.environ != self.environ:
            os.environ.clear()
            os.environ.update(self.environ)
        cenviron.put_back(self.c_environ)  # what the scorer set past os.environ: os.putenv, ctypes' setenv
        if _zone() != self.zone:  # the time zone as $TZ now says, where the scorer called time.tzset()
            time.tzset()
        with contextlib.suppress(OSError):  # a directory the scorer removed: the calls after go on where they are
            os.chdir(self.cwd)
        # last: `time.tzname` as found once `time.tzset()` set the zone back
        put_back_standard(self.standard_names, classes_as_found=True)


def _put_back_modules(found: dict[str, Any]) -> None:
    """The modules the first call found in the module table, each put back where a call replaced or removed it
    (`sys.modules["json"] = stub`: a later call's `import json` took the stub; `del sys.modules["fractions"]`: it
    imported a second fractions, whose Fraction is not the first's); modules imported since are kept."""
    modules = sys.modules
    for name, module in found.items():
        if modules.get(name) is not module:
            modules[name] = module


def _held_by_libraries() -> list[tuple[Callable[[Any], Any], Any]]:
    """What the process's libraries hold for every caller that a scorer may change, each with a setter and its value
    now: `random`'s generator, the csv module's bound on a field (`csv.field_size_limit(sys.maxsize)`, an idiom to read
    large fields: the later calls read what their own would refuse) and its dialects, decimal's DefaultContext
    (`decimal.DefaultContext.prec = 5`: every later call's new threads computed to 5 digits), and where a scorer
    imported numpy its global generator (`numpy.random.seed`, `rand`) and its handling of floating-point errors
    (`numpy.seterr(all="raise")`: a later call's division by zero raised FloatingPointError, where it gave inf;
    `seterrcall`), how it prints arrays (`numpy.set_printoptions(precision=2)`: a later call's `str(array)`, its answer
    parsed against, said 0.33 for 0.33333333) and its buffers' size, and pandas' options and PyYAML's tables
    (`libraryheld`). A scorer seeding a generator as it is imported
    (`random.seed(0)`) and drawing in its calls scored each sample by how many draws the samples before it took, so a
    rescore, a resume or a replaced process scored it anew."""
    found: list[tuple[Callable[[Any], Any], Any]] = [(random.setstate, random.getstate()),
                                                     (csv.field_size_limit, csv.field_size_limit()),
                                                     (_put_back_dialects, _dialects()),
                                                     (_put_back_default_context, decimal.DefaultContext.copy())]
    if (numpy := sys.modules.get("numpy")) is not None and hasattr(numpy, "seterr"):
        found += [(numpy.random.set_state, numpy.random.get_state()), (lambda errors: numpy.seterr(**errors),
                                                                       numpy.geterr()),
                  (lambda options: numpy.set_printoptions(**options), numpy.get_printoptions()),
                  (numpy.seterrcall, numpy.geterrcall()), (numpy.setbufsize, numpy.getbufsize())]
    return found + libraryheld.held_now()


def _put_back_default_context(found: decimal.Context) -> None:
    """decimal's DefaultContext, which each thread started later copies, holding `found`'s settings again (in place:
    the module's name stays bound to the object, `stdlibnames`)."""
    default = decimal.DefaultContext
    for name in ("prec", "rounding", "Emin", "Emax", "capitals", "clamp"):
        setattr(default, name, getattr(found, name))
    default.traps, default.flags = dict(found.traps), dict(found.flags)


def _dialects() -> dict[str, Any]:
    """The csv module's dialects by name (`csv.register_dialect`)."""
    return {name: csv.get_dialect(name) for name in csv.list_dialects()}


def _put_back_dialects(found: dict[str, Any]) -> None:
    """The csv module's dialects as `found` (`_dialects`): one a call registered unregistered, one it replaced or
    unregistered registered again."""
    now = _dialects()
    for name in now.keys() - found.keys():
        csv.unregister_dialect(name)
    for name, dialect in found.items():
        if name not in now or _reads(now[name]) != _reads(dialect):
            csv.register_dialect(name, dialect)


def _reads(dialect: Any) -> tuple[Any, ...]:
    """What a csv dialect says of how it reads and writes."""
    return tuple(getattr(dialect, name) for name in ("delimiter", "quotechar", "escapechar", "doublequote",
                                                     "skipinitialspace", "lineterminator", "quoting", "strict"))


def _zone() -> tuple[Any, ...]:
    """The time zone the process's clock reads (as `time.tzset` last set it)."""
    return time.timezone, time.altzone, time.daylight, time.tzname


STANDARD = (0, 1, 2)
"""The standard descriptors as the scorers have them: 0 reading nothing, 1 and 2 the pipe the run logs."""


def _file_of(fd: int) -> tuple[int, int] | None:
    """Which open file descriptor `fd` is (its device and inode), None where it is closed."""
    try:
        found = os.fstat(fd)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _take_stdin() -> IO[str]:
    """The original stdin, kept for calls; file descriptor 0 (and sys.stdin) now reads nothing, so user code that
    reads it (`input()`, a `breakpoint()` left in) gets EOF at once, in its own call, instead of taking the calls
    behind it as its input."""
    calls = os.fdopen(_kept(0), "r", encoding="utf-8")
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.close(nothing)
    sys.stdin = open(0, encoding="utf-8", closefd=False)
    return calls


def _take_stdout() -> IO[str]:
    """The original stdout, kept for replies; file descriptor 1 now writes where 2 does (a pipe the run reads what
    the scorers print from, into its log: bounded there, so a scorer printing without end does not fill the disk)."""
    replies = os.fdopen(_kept(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    return replies


def _kept(fd: int) -> int:
    """A copy of `fd` for benchrun's own use, numbered from KEPT_FROM: out of the way of user code that writes to a
    low number it takes for its own (`os.write(3, ...)`, as a shell's `3>debug.log` gives one), which fails in that
    call instead of writing into the pipes."""
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, _lowest_kept())


def _lowest_kept() -> int:
    """KEPT_FROM, or under a limit of open files that does not reach past it (`ulimit -n 30`: the process could not
    start, and every user scorer's score was `ScorerUnavailable`) the highest numbers it allows, as far from 3 as can
    be."""
    allowed = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if allowed == resource.RLIM_INFINITY or allowed > KEPT_FROM + KEPT_SPARE:
        return KEPT_FROM
    return max(3, allowed - KEPT_SPARE)


def _send(replies: IO[str], message: Any) -> None:
    replies.write(_WRITE(message) + "\n")
    replies.flush()


def load(named: dict[str, list[Any]]) -> dict[str, Scorer]:
    """The scorers by name, each checked against the sha256 of the source the run recorded, its file and the
    benchmark's own modules it imports against the digests of those the run imported (a file edited since: refused,
    though the function is as it was)."""
    files: dict[str, dict[str, Scorer]] = {}
    scorers = {}
    for name, (file, sha256, digests) in named.items():
        if file not in files:  # contained already
            files[file] = scorers_in(Path(file), file, probe=False, digests=digests)
        found = files[file]
        if name not in found:
            raise BenchrunError(f"no scorer '{name}' any more", file=file)
        fn = found[name]
        if source_sha256(fn) != sha256:
            raise BenchrunError(f"scorer '{name}' changed since the run started (its source no longer hashes to "
                                f"{sha256[:12]}…)", file=file)
        scorers[name] = fn
    return scorers


def call(name: str, fn: Scorer, response: str, reference: Any) -> tuple[dict[str, Any] | None, list[str] | None]:
    """(metrics, None), or (None, [type, message]) for whatever the scorer raised."""
    try:
        return metrics(name, fn(response, reference)), None
    except BaseException as err:  # the user's code: anything it raises is its sample's error, never this process's end
        return None, [_named(err), _said(err)]


def _named(err: BaseException) -> str:
    """An error's type name as a record keeps it (one line, bounded): a class named in 300 MB crossed the pipe whole,
    every such call overran its time limit on the way and the run took 900 MB."""
    return one_line(type(err).__name__)


def _said(err: BaseException) -> str:
    """What an error says, as a record keeps it (one line, bounded: a message of 300 MB crossed the pipe whole, the
    run's memory and every call's time limit spent on it); one whose own str() raises says that instead of ending
    this process."""
    return one_line(message_of(err)) or type(err).__name__


if __name__ == "__main__":
    main()

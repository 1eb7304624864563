"""SIGINT, SIGTERM, SIGHUP (a terminal or an ssh session that closes), SIGQUIT (a terminal's Ctrl-\\) and a batch
scheduler's SIGUSR1, SIGUSR2 and SIGXCPU (a job's time nearly up): a run stops where its records say it stopped, never
in the middle of a write.

A signal handler is process-wide by nature, so this module keeps the one `Interrupts` of the process. Outside the
event loop a signal raises KeyboardInterrupt, except inside `held()` blocks (a file being replaced, a record being
committed), where it waits until the block ends. While samples are being asked, a signal cancels the asking task
instead (through the loop, so asyncio's own state stays whole) and the run is recorded as interrupted after it.
The first signal ends the process: one that comes after it (a second Ctrl-C while the first is being recorded) is
not raised again, so what is said, and recorded, is what the first one did (SIGKILL still ends a process at once).
A KeyboardInterrupt Python drops (raised in a weakref callback or a `__del__`, which cannot raise) is not lost: it is
kept pending, as in a `held()` block, and raised at the next block's end or as the asking begins.
"""

from __future__ import annotations

import ctypes
import faulthandler
import os
import signal
import socket
import sys
import threading
import time
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Awaitable, Callable, Iterator, TypeVar

from benchrun.core.errors import EXIT

if TYPE_CHECKING:
    import asyncio

T = TypeVar("T")

SCHEDULER_SIGNALS = (signal.SIGUSR1, signal.SIGUSR2, signal.SIGXCPU)
"""What a batch scheduler sends a job's processes to say their end is near (Slurm's `--signal`, which the `slurm`
launcher's submitit sets to SIGUSR2 120 s before the time limit, and sends a job it preempts; SGE's and LSF's SIGUSR1
or SIGXCPU), and what the kernel sends at a CPU-time soft limit (`ulimit -S -t`, a scheduler's `cput`), before the
hard limit's SIGKILL: the run stops while there is time, recorded as interrupted. submitit's own handler raised its
error wherever the run was (in a write to the scorer process: a traceback in the log, and that sample's score an
error), the scorer process died of it, and SIGXCPU killed the run, left `running`."""
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGALRM, *SCHEDULER_SIGNALS)
"""Every signal that ends a run as interrupted; SIGALRM is a time limit's, as SIGTERM is `timeout`'s: an alarm a
parent set and exec kept (`perl -e 'alarm 3600; exec @ARGV' python -m benchrun`) killed the run, left `running`."""
TERMINAL_SIGNALS = (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, *SCHEDULER_SIGNALS)
"""What reaches a whole process group, a child process with the run: what a terminal sends its foreground process
group (Ctrl-C, a hang-up, Ctrl-\\) and a batch scheduler's SCHEDULER_SIGNALS. A child process ignores them, so that
the run, which they reach too, ends its children itself."""
KEPT_IGNORED = (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, *SCHEDULER_SIGNALS)
"""What a process started ignoring goes on ignoring: `nohup`'s SIGHUP, a shell's background job's SIGINT and SIGQUIT
(a script's `benchrun ... &`, which its Ctrl-C, meant for the script, stopped as `interrupted`)."""


class Interrupts:
    """The process's handling of SIGNALS (see the module docstring)."""

    def __init__(self) -> None:
        self._held = 0
        self._pending = False
        self._cancel: Callable[[], None] | None = None
        self._ending = False
        self._unmade_loop = False
        self.received: int | None = None
        """The signal the process is ending for, if any."""
        self.stopped_for: str | None = None
        """Why the process stopped itself (`stop`), said in place of the signal."""
        self.stopped_code = EXIT["archive"]
        """The exit code of a process that stopped itself (`stop`)."""
        self._other_unraisable = sys.__unraisablehook__
        """What reported an exception Python dropped as `install` took over (taken then, not here: a hook set between
        the two was passed over)."""

    def __reduce__(self) -> tuple[Callable[[], Interrupts], tuple[()]]:
        """Unpickled as the process's own: a launcher pickles a job's task function by value, with its globals, and a
        copy handled the job's signals while its asking waited on the module's, which a signal then never cancelled."""
        return process_interrupts, ()

    def signal_name(self) -> str | None:
        """`SIGTERM`, for the last signal received; None when there was none."""
        return signal.Signals(self.received).name if self.received else None

    def stop(self, why: str, code: int = EXIT["archive"]) -> None:
        """End the process as SIGTERM would (what was started is recorded and said as for a signal), for `why`, with
        exit code `code`: a thread the process waits on that died, or a job it waits on that can never start, which
        would leave it waiting for ever."""
        if self.stopped_for is None:
            self.stopped_for, self.stopped_code = why, code
        os.kill(os.getpid(), signal.SIGTERM)

    def installed(self) -> bool:
        """Whether this process handles its signals here (a launcher's worker process does not until it installs)."""
        return signal.getsignal(signal.SIGTERM) == self._handle

    def install(self) -> None:
        """Handle every signal of SIGNALS, but one of KEPT_IGNORED the process was started ignoring stays ignored;
        none of them blocked (a parent's signal mask, which a process keeps through exec, left a SIGTERM pending for
        ever: the run went on until a scheduler's SIGKILL left it `running`); and SIGCHLD at its default (a parent's
        SIG_IGN, kept through exec, has the kernel reap every child as it ends, before its exit code can be had: a
        scorer process's death was recorded as `exit code 255`)."""
        self._ending = False
        signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for sig in SIGNALS:
            if sig not in KEPT_IGNORED or signal.getsignal(sig) != signal.SIG_IGN:
                signal.signal(sig, self._handle)
        if sys.unraisablehook != self._unraisable:  # what reported them until now, which still reports the rest
            self._other_unraisable, sys.unraisablehook = sys.unraisablehook, self._unraisable

    def _unraisable(self, unraisable: sys.UnraisableHookArgs) -> None:
        """Python's report of an exception it had to drop: one the handler raised for a signal (in a weakref callback
        the garbage collector ran: the signal was lost, and a sweep's job stopped by it asked on until its launcher
        killed it, left `running`) is kept pending, raised where a pending signal is; the AttributeError of an event
        loop `run` could not make (its self-pipe refused), closed as it is collected, is dropped (a traceback of ten
        lines after the run's line); any other is reported."""
        if self._ending and self.received and isinstance(unraisable.exc_value, KeyboardInterrupt) and \
                unraisable.exc_value.args == (self.signal_name(),):
            self._ending, self._pending = False, True
            return
        if self._unmade_loop and isinstance(unraisable.exc_value, AttributeError) and \
                getattr(unraisable.object, "__qualname__", None) == "BaseEventLoop.__del__":
            self._unmade_loop = False  # the loop `run` could not make, closing what it never had: its error is said
            return
        self._other_unraisable(unraisable)

    def _handle(self, signum: int, frame: object) -> None:
        if self._ending or self._pending:  # a signal after the one the process is ending for: it ends the same way
            return
        self.received = signum
        if self._cancel is not None:
            self._ending = True
            self._cancel()
        elif self._held:
            self._pending = True
        else:
            self._ending = True
            raise KeyboardInterrupt(self.signal_name())

    @contextmanager
    def held(self) -> Iterator[None]:
        """A signal arriving inside the block is raised when the block ends."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
        self._raise_pending()

    def _raise_pending(self) -> None:
        """Raise the signal left pending (by a `held()` block, or dropped by Python where it could not be raised)."""
        if not self._held and self._pending and self._cancel is None:
            self._pending, self._ending = False, True
            raise KeyboardInterrupt(self.signal_name())

    @contextmanager
    def cancelling(self, cancel: Callable[[], None]) -> Iterator[None]:
        """Inside the block a signal calls `cancel` (thread-safe: it runs from a signal handler) instead of raising."""
        self._cancel = cancel
        try:
            yield
        finally:
            self._cancel = None

    def run(self, main: Callable[[], Awaitable[T]]) -> T:
        """asyncio.run(main()), a signal cancelling it through the loop; raised as KeyboardInterrupt once it unwound."""
        import asyncio  # here: the audit commands that only read load no event loop

        async def cancellable() -> T:
            loop, task, active = asyncio.get_running_loop(), asyncio.current_task(), [True]
            loop.set_exception_handler(_unless_cancelled)
            self._raise_pending()
            self.received, self._ending = None, False

            def cancel() -> None:
                if active[0]:
                    task.cancel()
            try:
                with self.cancelling(lambda: loop.call_soon_threadsafe(cancel)), _waking(loop):
                    return await main()
            except asyncio.CancelledError:
                if self.received is None:
                    raise
            finally:
                active[0] = False
            raise KeyboardInterrupt(self.signal_name())
        runner = asyncio.Runner()
        try:  # the loop made before the coroutine, which a loop the system refused (`ulimit -n`) left never awaited
            runner.get_loop()
        except OSError:
            self._unmade_loop = True
            raise
        with runner:
            return runner.run(cancellable())


def _unless_cancelled(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    """asyncio's report of an error nothing retrieved, but for a cancellation (a subprocess's pipes, cancelled as a
    run ended on the system's refusal of a thread, were logged as a traceback on standard output after its line)."""
    import asyncio

    if not isinstance(context.get("exception"), asyncio.CancelledError):
        loop.default_exception_handler(context)


@contextmanager
def _waking(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """A signal wakes `loop` (`signal.set_wakeup_fd`), so that its handler runs at once. The kernel may hand a signal
    to any thread of the process (the event loop's helper threads among them); the handler runs in the main thread
    only, and a main thread idle in the loop's `select` would otherwise not run it until some answer came. A loop in
    another thread (the Python API called from one) runs no handler, and Python lets only the main thread set the
    wakeup fd: nothing is done there."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    receiving, waking = socket.socketpair()
    for end in (receiving, waking):
        end.setblocking(False)
    loop.add_reader(receiving, _drained, receiving)
    before = signal.set_wakeup_fd(waking.fileno(), warn_on_full_buffer=False)
    try:
        yield
    finally:
        signal.set_wakeup_fd(before)
        loop.remove_reader(receiving)
        receiving.close()
        waking.close()


def _drained(receiving: socket.socket) -> None:
    try:
        while receiving.recv(4096):
            pass
    except BlockingIOError:
        pass


def ignore_terminal_signals() -> None:
    """In a child process: ignore TERMINAL_SIGNALS."""
    for sig in TERMINAL_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)


PR_SET_PDEATHSIG = 1
"""prctl(2)'s option: the signal a process is sent when the thread that started it ends."""


def die_with(parent: int) -> None:
    """In a child process: be killed when `parent` ends, however it ends (SIGKILL, the OOM killer, a run's last call
    left running), even in user code that never reads again. Linux's PR_SET_PDEATHSIG; elsewhere a child ends when it
    next reads its closed stdin."""
    if sys.platform != "linux":
        return
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it ended before it could be watched
        os._exit(1)


TIMERS = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)
"""The interval timers a process has (`signal.alarm` sets the first)."""
TIMER_SIGNALS = {signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF}
"""The signals TIMERS send as they go off."""


def handling_now() -> Callable[[], None]:
    """Every signal's handling as it is now, as a function that puts it back, the timers too: what a user's
    code sets there (a handler, `signal.alarm(5)`) must not outlive the code that set it. So too what it has
    faulthandler do, which Python's own view of the handlers does not show: a stack dump on a signal
    (`faulthandler.register(signal.SIGUSR1)`: Slurm's warning before its time limit dumped every thread's stack on
    the console and the run went on), on a crash (`enable()`), or after a delay (`dump_traceback_later`, exit too);
    and the signals it blocks (`signal.pthread_sigmask`: a scorer's SIG_BLOCK of SIGALRM reached every later call,
    whose own `signal.alarm` then never went off), a timer's signal it left pending there dropped with its timer."""
    kept = {sig: signal.getsignal(sig) for sig in signal.valid_signals() if sig not in (signal.SIGKILL, signal.SIGSTOP)}
    dumping, blocked = faulthandler.is_enabled(), signal.pthread_sigmask(signal.SIG_BLOCK, [])
    timers_back = _timers_now()

    def put_back() -> None:
        timers_back()
        faulthandler.cancel_dump_traceback_later()
        for sig in kept:
            with suppress(RuntimeError, ValueError):  # the signals of a crash are enable()'s, never registered
                faulthandler.unregister(sig)
        if not dumping:
            faulthandler.disable()
        for sig, handler in kept.items():
            if signal.getsignal(sig) is not handler:
                with suppress(OSError, ValueError, TypeError):  # a handler Python did not set (None) stays
                    signal.signal(sig, handler)
        while stale := (signal.sigpending() & TIMER_SIGNALS) - blocked:  # delivered now, it would end the process
            signal.sigtimedwait(stale, 0)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    return put_back


def _timers_now() -> Callable[[], None]:
    """The interval timers as they are now, as a function that sets them back, less the time gone since (one due
    meanwhile goes off at once), and stops one set since: a parent's alarm, which exec keeps (`perl -e 'alarm 3600;
    exec @ARGV'`, a time limit), was stopped once the benchmark's code was imported, and the run went on past it."""
    kept = {timer: (signal.getitimer(timer), _spent(timer)) for timer in TIMERS}

    def put_back() -> None:
        for timer, ((delay, interval), spent) in kept.items():
            left = delay - (_spent(timer) - spent)
            signal.setitimer(timer, max(left, 1e-6) if delay else 0.0, interval)

    return put_back


def _spent(timer: int) -> float:
    """The time `timer` counts: the wall clock's for ITIMER_REAL, this process's CPU time for the others."""
    return time.monotonic() if timer == signal.ITIMER_REAL else time.process_time()


def process_interrupts() -> Interrupts:
    """This process's one `Interrupts`."""
    return INTERRUPTS


INTERRUPTS = Interrupts()

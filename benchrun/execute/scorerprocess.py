"""The scorer process as the run sees it: the user's scorers (custom_scorer.py) called in a child process
(benchrun.execute.scorer_worker), never on the event loop, in batches; each call within `scorer_timeout_s`, one that
overruns recorded as that call's error and the process replaced (ended with every process its scorers started), the
calls behind it going on; a reply taken only as the process writes one. What the scorers print (the process's
stdout and stderr, a pipe read here) goes to the run's log file, at most PRINTED_MAX bytes of it."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import os
import signal
from collections import OrderedDict
from contextlib import suppress
from pathlib import Path
from typing import Any, Callable

from benchrun.archive.dirlock import no_link, own_file
from benchrun.compiler.scoring import MAX_METRICS, MAX_NAME, Metric, Scorer, source_sha256
from benchrun.compiler.usercode import imported_as
from benchrun.core.codeenv import code_env
from benchrun.core.errors import refused_by_system
from benchrun.core.jsonwords import bytes_said
from benchrun.core.metricvalue import in_bounds
from benchrun.core.ownpython import own_python
from benchrun.core.records import ErrorInfo
from benchrun.core.runclock import RUN_CLOCK
from benchrun.core.scratch import remove_scratch, scratch_folder
from benchrun.core.text import CONTROL, one_line
from benchrun.execute.proctree import end_tree
from benchrun.execute.scorerleft import HOLDING

Result = dict[str, Metric] | ErrorInfo
SEND_BATCH, SEND_WITHIN_S = 64, 0.02
"""Calls go to the scorer process in batches, one write (so one wake-up of the process) per 64 calls, the first of
a batch waiting at most 20 ms; on a machine with few cores every wake-up costs the run and the server time."""
_ENCODE = json.JSONEncoder(default=str).encode


PRINTED_MAX = 64 * 2**20
"""How much of what the scorers print a run's log keeps: a scorer printing 50 MB a call wrote them all to
benchrun.log (50 GB for 1,000 samples), filling the disk at the run's pace."""


class _Printed:
    """What the scorers print (the process's stdout and stderr), appended to the run's log up to PRINTED_MAX bytes,
    then one line saying that the rest is not kept."""

    def __init__(self, log: Path):
        self._log, self._left = log, PRINTED_MAX

    def __call__(self, data: bytes) -> None:
        if self._left < 0:
            return
        kept, self._left = data[:self._left], self._left - len(data)
        try:
            with open(self._log, "ab", opener=no_link) as out:
                out.write(kept)
                if self._left < 0:
                    out.write(f"\nbenchrun: the scorers printed more than {PRINTED_MAX:,} bytes; the rest of what they "
                              "print is not kept\n".encode())
        except OSError:  # the log cannot take it (a full disk): what they print is not kept, the run goes on
            self._left = -1


def reply_bytes(scorers: dict[str, Scorer]) -> int:
    """The longest line the scorer process writes in reply to a call of one of `scorers`, as `json.dumps` writes it
    (every character escaped, at most 12 bytes): MAX_METRICS metrics, each named `scorer.key` (a key of at most
    MAX_NAME characters) with a number of at most 102 characters; an error's type and message are far shorter."""
    longest = max(map(len, scorers), default=0)
    return MAX_METRICS * (12 * (longest + 1 + MAX_NAME) + 108) + 64


class _Pipe(asyncio.SubprocessProtocol):
    """The scorer process's side of the pipes: each line it writes to stdout goes to `on_line`, what it writes to
    stderr to `on_output`; once its stdout is closed and it has exited, `on_exit` gets the exit code. A line longer
    than `most` bytes goes to `on_line` as far as it came, without its end (user code writing to the reply pipe
    without end: the run kept it all, searching it again for a line's end with each piece, its loop busy until the
    call's time limit). Callbacks only: no task waits on a process."""

    def __init__(self, on_line: Callable[[_Pipe, bytes], None], on_exit: Callable[[_Pipe, int | None], None],
                 on_output: Callable[[bytes], None], most: int, scratch: str):
        self._on_line, self._on_exit, self._on_output, self._most = on_line, on_exit, on_output, most
        self.scratch = scratch
        """The process's own $TMPDIR (`core.scratch`), removed once it has ended."""
        self._buffer = bytearray()
        self._open = 2
        """What is left of the process: its stdout and its life."""
        self.transport: asyncio.SubprocessTransport | None = None
        self.exited: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 2:
            self._on_output(data)
            return
        start = len(self._buffer)
        self._buffer += data
        while (end := self._buffer.find(b"\n", start)) >= 0:
            line = bytes(self._buffer[:end + 1])
            del self._buffer[:end + 1]
            start = 0
            self._on_line(self, line)
        if len(self._buffer) > self._most:
            line = bytes(self._buffer)
            self._buffer.clear()
            self._on_line(self, line)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self._closed()

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)
        self._closed()

    def _closed(self) -> None:
        self._open -= 1
        if not self._open:
            self._on_exit(self, self.transport.get_returncode())


class ScorerProcess:
    """User scorers in a child process, called in order, each within `timeout_s` (see the module docstring)."""

    def __init__(self, scorers: dict[str, Scorer], log: Path, timeout_s: float):
        self._named = {name: [inspect.getsourcefile(fn), source_sha256(fn), imported_as(fn)]
                       for name, fn in scorers.items()}
        self._imported: dict[str, None] = {}
        """The libraries a process's calls first imported, which each process started after imports first."""
        self.log, self.timeout_s, self._reply_bytes = log, timeout_s, reply_bytes(scorers)
        self._printed = _Printed(log)
        self._pending: OrderedDict[int, tuple[asyncio.Future[Result], bytes, str]] = OrderedDict()
        """Each call under way: its future, what was sent, the scorer it calls."""
        self._seq = itertools.count()
        self._since = 0.0
        """When the oldest pending call became the oldest: its time limit runs from here."""
        self._pipe: _Pipe | None = None
        self._ready = False
        """Whether `_pipe` takes calls (not before its greeting, nor while it is being replaced)."""
        self._started: asyncio.Future[None] | None = None
        self._broken: ErrorInfo | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._unsent: list[bytes] = []
        self._send_at: asyncio.TimerHandle | None = None
        self._replacing: asyncio.Task[None] | None = None
        self._retired: _Pipe | None = None
        """The process last replaced, which `_replacing` ends (and `close`, if that was cancelled first)."""

    async def start(self) -> None:
        """Start the process (none when there is nothing to call). Its log is the run's own file, never written
        through a symbolic link (a resume's scorers printed through `benchrun.log` -> `~/.bashrc` into that file)."""
        if self._named:
            own_file(self.log)
            RUN_CLOCK.now()  # its heartbeat's thread started here, where the system's refusal fails the run
            await self._spawn()

    def call(self, name: str, response: str, reference: Any) -> asyncio.Future[Result]:
        """Send one scorer call; its future gets the metrics, or the error it raised (or that it timed out)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Result] = loop.create_future()
        if self._broken is not None:
            future.set_result(self._broken)
            return future
        seq = next(self._seq)
        payload = _ENCODE([seq, name, response, reference]).encode() + b"\n"
        if not self._pending:
            self._since = RUN_CLOCK.now()
        self._pending[seq] = (future, payload, name)
        if self._ready:
            self._unsent.append(payload)
            if len(self._unsent) >= SEND_BATCH:
                self.send()
            elif self._send_at is None:
                self._send_at = loop.call_later(SEND_WITHIN_S, self.send)
        self._arm()
        return future

    def send(self) -> None:
        """Send the calls waiting for their batch to fill (before waiting on their results)."""
        if self._send_at is not None:
            self._send_at.cancel()
            self._send_at = None
        if self._unsent and self._ready:
            self._pipe.transport.get_pipe_transport(0).write(b"".join(self._unsent))
        self._unsent.clear()

    async def close(self) -> None:
        for timer in (self._timer, self._send_at):
            if timer is not None:
                timer.cancel()
        if self._replacing is not None:
            self._replacing.cancel()
            await asyncio.gather(self._replacing, return_exceptions=True)
        await _ended(self._retired)  # a replacement cancelled before it ended it: the last call overran, say
        await self._stop()

    async def _spawn(self) -> None:
        loop = asyncio.get_running_loop()
        self._started = loop.create_future()
        open(self.log, "ab", opener=no_link).close()  # the log is there once the scorers are, as they print or not
        scratch = scratch_folder()
        try:
            _, self._pipe = await loop.subprocess_exec(
                lambda: _Pipe(self._line, self._exited, self._printed, self._reply_bytes, scratch),
                *own_python("-m", "benchrun.execute.scorer_worker", str(os.getpid())), stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                env=code_env(scratch), process_group=0)
        except BaseException:
            remove_scratch(scratch)
            raise
        setup = json.dumps([self._named, list(self._imported)]).encode() + b"\n"
        self._pipe.transport.get_pipe_transport(0).write(setup)
        await self._started

    def _line(self, pipe: _Pipe, line: bytes) -> None:
        if pipe is not self._pipe:
            return
        message = _message(line) if line.endswith(b"\n") else None  # a line without end is no reply
        if not self._ready:
            self._greeted(message if isinstance(message, dict) else {"error": _foreign(line)})
            return
        oldest = next(iter(self._pending.items()), None)
        if not _reply_to(oldest and (oldest[0], oldest[1][2]), message):
            self._replace(ErrorInfo(type="ScorerProtocolError", message=_foreign(line)))
            return
        seq, found, error, *ending = message
        future = self._pending.pop(seq)[0]
        if not future.done():
            future.set_result(found if error is None else ErrorInfo(type=error[0], message=error[1]))
        self._since = RUN_CLOCK.now()
        if ending:  # the call left the process changed past putting back: it ends, and another takes the calls behind
            self._imported.update(dict.fromkeys(ending[1]))
            self._retire()

    def _greeted(self, hello: dict[str, Any]) -> None:
        """The process's first line: ready (what waits is sent), or why it cannot score (every call fails so)."""
        if "error" in hello:
            self._broken = ErrorInfo(type="ScorerUnavailable", message=hello["error"])
            self._fail_all(self._broken)
        else:
            self._pipe.transport.get_pipe_transport(0).write(b"".join(p for _, p, _ in self._pending.values()))
            self._unsent.clear()
            self._ready = True
            self._since = RUN_CLOCK.now()
            self._arm()
        if not self._started.done():
            self._started.set_result(None)

    def _exited(self, pipe: _Pipe, code: int | None) -> None:
        """The process ended: before its greeting it could not start (after a greeting saying why it cannot score,
        that why stands); after, the call it was making ended it."""
        if pipe is not self._pipe or self._broken is not None:
            return
        if not self._ready:
            self._greeted({"error": "the scorer process did not start"})
            return
        self._replace(ErrorInfo(type="ScorerProcessDied",
                                message=f"the scorer's process ended (exit code {code}) during this call"))

    def _arm(self) -> None:
        """Check the oldest call's time limit when it would run out (once: `_check` re-arms itself). The limit is on
        the run's running time (`RUN_CLOCK`): a run stopped with its scorers (a Slurm suspend) spends none of it."""
        if self._timer is None and self._pending and self._ready:
            left = self._since + self.timeout_s - RUN_CLOCK.now()
            self._timer = asyncio.get_running_loop().call_later(max(0.0, left), self._check)

    def _check(self) -> None:
        self._timer = None
        if self._ready and self._pending and RUN_CLOCK.now() >= self._since + self.timeout_s:
            self._replace(ErrorInfo(type="TimeoutError", message=f"timed out after {self.timeout_s:g} s"))
        self._arm()

    def _replace(self, error: ErrorInfo) -> None:
        """The oldest call fails with `error`; a new process takes the ones behind it."""
        if self._pending:
            future = self._pending.popitem(last=False)[1][0]
            if not future.done():
                future.set_result(error)
        self._retire()

    def _retire(self) -> None:
        """A new process takes the calls behind the last one answered; this one is ended."""
        self._ready = False
        self._retired, self._pipe = self._pipe, None  # what it writes from now on answers nothing
        self._replacing = asyncio.ensure_future(self._respawn(self._retired))

    async def _respawn(self, retired: _Pipe | None) -> None:
        """Start the process that takes the calls behind the one that overran; one the system will not start (no
        process, or no thread to watch it: a pids limit) fails them all, where they waited for ever."""
        await _ended(retired)
        try:
            await self._spawn()
        except (OSError, RuntimeError) as err:
            if not refused_by_system(err):
                raise
            self._greeted({"error": f"cannot start the scorer process: {err}"})

    async def _stop(self) -> None:
        self._ready = False
        pipe, self._pipe = self._pipe, None
        await _ended(pipe)

    def _fail_all(self, error: ErrorInfo) -> None:
        while self._pending:
            future = self._pending.popitem(last=False)[1][0]
            if not future.done():
                future.set_result(error)


async def _ended(pipe: _Pipe | None) -> None:
    """The process of `pipe` killed, if it is still running, with every process its scorers started (its process
    group: a scorer running an answer's code in a child that never ends, as a HumanEval-like scorer does, left that
    child running for good when its call overran or the run ended; and every process below it, in a session of its
    own too: `proctree.end_tree`), and its pipes closed."""
    if pipe is None:
        return
    if pipe.transport.get_returncode() is None:  # not reaped: its pid, and its children's parent, are still its
        end_tree(pipe.transport.get_pid())
        await asyncio.shield(pipe.exited)  # a caller cancelled as it waits (a replacement) leaves it for the next
    else:
        with suppress(ProcessLookupError, PermissionError):  # nothing of the group is left
            os.killpg(pipe.transport.get_pid(), signal.SIGKILL)
    pipe.transport.close()
    remove_scratch(pipe.scratch)


def _message(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _reply_to(call: tuple[int, str] | None, message: Any) -> bool:
    """Whether `message` is what the scorer process writes in reply to `call` (its seq, the scorer it calls): `[seq,
    metrics, null]`, the metrics as `scoring.metrics` gives them for that scorer (at most MAX_METRICS, each named as
    that scorer's, of at most MAX_NAME characters after it and no control character, finite numbers within MAX_METRIC),
    or `[seq, null, [type, message]]`; either with a fourth element, a text, and a fifth, the libraries of HOLDING it
    first imported, where the call left the process changed past putting back (`scorerleft`: the process ends after
    it). A line user code wrote to the reply pipe in that shape
    (`[0, {"s": Infinity}, null]`) crashed the run summing an infinite score; one of 100,000 metrics grew the summary to
    16 MB."""
    if not (isinstance(message, list) and len(message) in (3, 5) and call is not None and message[0] == call[0]):
        return False
    _, found, error, *ending = message
    if ending and not (isinstance(ending[0], str) and isinstance(ending[1], list)
                       and all(name in HOLDING for name in ending[1])):
        return False
    if error is None:
        return isinstance(found, dict) and 0 < len(found) <= MAX_METRICS and all(
            isinstance(name, str) and _named_for(call[1], name) and type(value) in (int, float) and in_bounds(value)
            for name, value in found.items())
    return found is None and isinstance(error, list) and len(error) == 2 and all(isinstance(e, str) for e in error)


def _named_for(scorer: str, name: str) -> bool:
    """Whether `name` is a metric's name `scoring.metrics` gives for `scorer`: its own, or `scorer.key`."""
    if name == scorer:
        return True
    key = name[len(scorer) + 1:]
    return name.startswith(f"{scorer}.") and 0 < len(key) <= MAX_NAME and not CONTROL.search(key)


def _foreign(line: bytes) -> str:
    """What is wrong when the scorer process's reply pipe holds a line it did not write: the calls are answered in
    order, so user code of the call being made wrote it there, to a file descriptor of benchrun's."""
    return (f"the scorer wrote {one_line(bytes_said(line[:200]))} to the scorer process's reply pipe, a file "
            "descriptor of benchrun's: what a scorer prints goes to stdout or stderr (benchrun.log); a file it writes, "
            "it opens")

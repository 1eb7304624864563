"""Grading one response: its format checked against the response class, then every scorer of its task.

The user's scorers (custom_scorer.py) run in a child process (benchrun.execute.scorer_worker), never on the event loop:
each call has `scorer_timeout_s`; one that overruns is recorded as that sample's error ("timed out after 10 s"),
the process is replaced and the calls behind it go on. A scorer that exits, or kills its process, costs only
its own call. What scorers print goes to the run's log file. A grading is started (`Grader.start`) and its
scores collected when done, so the run asks the next samples meanwhile; the process answers each call as it ends.
benchrun's own scorers (exact_match, contains) are called in this process, as the child would call them: they are
not user code, and a round trip to the child costs more than they do.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import sys
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from benchrun.compiler.scoring import BUILTIN, MAX_METRICS, MAX_NAME, Metric, Scorer, source_sha256
from benchrun.core.layout import FORMAT_VALID
from benchrun.core.manifest import PROMPT_ID, Manifest, Sample
from benchrun.core.metricvalue import in_bounds
from benchrun.core.records import ErrorInfo, JudgementRecord, ResponseRecord, ScoreRecord
from benchrun.core.secrets import SECRETS
from benchrun.core.text import CONTROL, one_line
from benchrun.execute.formatcheck import FormatCheck
from benchrun.execute.judging import Judge
from benchrun.execute.scorer_worker import call

Result = dict[str, Metric] | ErrorInfo
SEND_BATCH, SEND_WITHIN_S = 64, 0.02
"""Calls go to the scorer process in batches, one write (so one wake-up of the process) per 64 calls, the first of
a batch waiting at most 20 ms; on a machine with few cores every wake-up costs the run and the server time."""
_ENCODE = json.JSONEncoder(default=str).encode


class _Pipe(asyncio.SubprocessProtocol):
    """The scorer process's side of the pipes: each line it writes goes to `on_line`; once its stdout is closed and
    it has exited, `on_exit` gets the exit code. Callbacks only: no task waits on a process."""

    def __init__(self, on_line: Callable[[_Pipe, bytes], None], on_exit: Callable[[_Pipe, int | None], None]):
        self._on_line, self._on_exit = on_line, on_exit
        self._buffer = bytearray()
        self._open = 2
        """What is left of the process: its stdout and its life."""
        self.transport: asyncio.SubprocessTransport | None = None
        self.exited: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self._buffer += data
        while (end := self._buffer.find(b"\n")) >= 0:
            line = bytes(self._buffer[:end + 1])
            del self._buffer[:end + 1]
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
        self._setup = json.dumps({name: [inspect.getsourcefile(fn), source_sha256(fn)]
                                  for name, fn in scorers.items()}).encode() + b"\n"
        self.log, self.timeout_s = log, timeout_s
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

    async def start(self) -> None:
        """Start the process (none when there is nothing to call)."""
        if self._setup != b"{}\n":
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
            self._since = loop.time()
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
        await self._stop()

    async def _spawn(self) -> None:
        loop = asyncio.get_running_loop()
        self._started = loop.create_future()
        _, self._pipe = await loop.subprocess_exec(
            lambda: _Pipe(self._line, self._exited), sys.executable, "-m", "benchrun.execute.scorer_worker", str(self.log),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=None, env=SECRETS.child_env())
        self._pipe.transport.get_pipe_transport(0).write(self._setup)
        await self._started

    def _line(self, pipe: _Pipe, line: bytes) -> None:
        if pipe is not self._pipe:
            return
        message = _message(line)
        if not self._ready:
            self._greeted(message if isinstance(message, dict) else {"error": _foreign(line)})
            return
        oldest = next(iter(self._pending.items()), None)
        if not _reply_to(oldest and (oldest[0], oldest[1][2]), message):
            self._replace(ErrorInfo(type="ScorerProtocolError", message=_foreign(line)))
            return
        seq, found, error = message
        future = self._pending.pop(seq)[0]
        if not future.done():
            future.set_result(found if error is None else ErrorInfo(type=error[0], message=error[1]))
        self._since = asyncio.get_running_loop().time()

    def _greeted(self, hello: dict[str, Any]) -> None:
        """The process's first line: ready (what waits is sent), or why it cannot score (every call fails so)."""
        if "error" in hello:
            self._broken = ErrorInfo(type="ScorerUnavailable", message=hello["error"])
            self._fail_all(self._broken)
        else:
            self._pipe.transport.get_pipe_transport(0).write(b"".join(p for _, p, _ in self._pending.values()))
            self._unsent.clear()
            self._ready = True
            self._since = asyncio.get_running_loop().time()
            self._arm()
        if not self._started.done():
            self._started.set_result(None)

    def _exited(self, pipe: _Pipe, code: int | None) -> None:
        """The process ended: before its greeting it could not start; after, the call it was making ended it."""
        if pipe is not self._pipe:
            return
        if not self._ready:
            self._greeted({"error": "the scorer process did not start"})
            return
        self._replace(ErrorInfo(type="ScorerProcessDied",
                                message=f"the scorer's process ended (exit code {code}) during this call"))

    def _arm(self) -> None:
        """Check the oldest call's time limit when it would run out (once: `_check` re-arms itself)."""
        if self._timer is None and self._pending and self._ready:
            self._timer = asyncio.get_running_loop().call_at(self._since + self.timeout_s, self._check)

    def _check(self) -> None:
        self._timer = None
        if self._ready and self._pending and asyncio.get_running_loop().time() >= self._since + self.timeout_s:
            self._replace(ErrorInfo(type="TimeoutError", message=f"timed out after {self.timeout_s:g} s"))
        self._arm()

    def _replace(self, error: ErrorInfo) -> None:
        """The oldest call fails with `error`; a new process takes the ones behind it."""
        self._ready = False
        if self._pending:
            future = self._pending.popitem(last=False)[1][0]
            if not future.done():
                future.set_result(error)
        retired, self._pipe = self._pipe, None  # what it writes from now on answers nothing
        self._replacing = asyncio.ensure_future(self._respawn(retired))

    async def _respawn(self, retired: _Pipe | None) -> None:
        await _ended(retired)
        try:
            await self._spawn()
        except OSError as err:
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
    """The process of `pipe` killed, if it is still running, and its pipes closed."""
    if pipe is None:
        return
    if pipe.transport.get_returncode() is None:
        pipe.transport.kill()
        await pipe.exited
    pipe.transport.close()


def _message(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _reply_to(call: tuple[int, str] | None, message: Any) -> bool:
    """Whether `message` is what the scorer process writes in reply to `call` (its seq, the scorer it calls):
    `[seq, metrics, null]`, the metrics as `scoring.metrics` gives them for that scorer (at most MAX_METRICS, each
    named as that scorer's, of at most MAX_NAME characters after it and no control character, finite numbers within
    MAX_METRIC), or `[seq, null, [type, message]]`. A line user code wrote to the reply pipe in that shape (`[0, {"s":
    Infinity}, null]`) crashed the run summing an infinite score; one of 100,000 metrics grew the summary to 16 MB."""
    if not (isinstance(message, list) and len(message) == 3 and call is not None and message[0] == call[0]):
        return False
    _, found, error = message
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
    return (f"the scorer wrote {one_line(repr(line[:200]))} to the scorer process's reply pipe, a file descriptor of "
            "benchrun's: what a scorer prints goes to stdout or stderr (benchrun.log); a file it writes, it opens")


class Grader:
    """Scores responses of one manifest with the given scorer functions (by name); an async context manager that
    owns the scorer process. Records on the per-sample path are built with `model_construct`: their fields are
    checked here (scorer results by `scoring.metrics`), and validating them again costs more than the rest."""

    def __init__(self, manifest: Manifest, scorers: dict[str, Scorer], log: Path, timeout_s: float,
                 judge: Judge | None = None):
        self._judge = judge
        self._formats = {t.name: FormatCheck(t.format.json_schema) for t in manifest.tasks}
        self._scorers = {t.name: [s.name for s in t.scorers] for t in manifest.tasks}
        self._calculated = {t.name for t in manifest.tasks if t.reference == "calculated"}
        used = {name: scorers[name] for names in self._scorers.values() for name in names}
        self._builtin = {name: fn for name, fn in used.items() if BUILTIN.get(name) is fn}
        self._process = ScorerProcess({name: fn for name, fn in used.items() if name not in self._builtin}, log,
                                      timeout_s)

    async def __aenter__(self) -> Grader:
        await self._process.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._process.close()

    async def grade(self, sample: Sample, response: ResponseRecord) -> Grading:
        """The answer graded: format_valid first, then one record per scorer and per judge, in the task's order
        (`Grading.records`), and each judge call (`Grading.judged`)."""
        grading = self.start(sample, response)
        self.send()
        await grading.scores()
        return grading

    def send(self) -> None:
        """Send the scorer calls still waiting for a batch (before waiting on a grading that is not done)."""
        self._process.send()

    def start(self, sample: Sample, response: ResponseRecord) -> Grading:
        """Check the format and send the scorer calls; the scores are collected from the `Grading` when done."""
        names, of = self._scorers[sample.task], {"id": sample.id, "task": sample.task, "repeat": response.repeat}
        judges = self._judge.judges_of(sample.task) if self._judge else ()
        if response.text is None:
            error = ErrorInfo(type="NoResponse", message=f"no response: {response.error.message}")
            return Grading(response, [ScoreRecord(**of, scorer=n, metrics=None, error=error)
                                      for n in [FORMAT_VALID, *names, *judges]])
        reference = scorer_reference(sample, sample.task in self._calculated)
        calls = [self._call(name, response.text, reference) for name in names]
        judging = self._judge.start(sample, response) if judges else []
        return Grading(response, [self._format(of, sample.task, response.text)], of, names, calls, self._judge,
                       judging)

    def _call(self, name: str, text: str, reference: Any) -> asyncio.Future[Result]:
        """One scorer call: a built-in's result at once, a user scorer's from the scorer process."""
        fn = self._builtin.get(name)
        if fn is None:
            return self._process.call(name, text, reference)
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        found, error = call(name, fn, text, reference)
        future.set_result(found if error is None else ErrorInfo(type=error[0], message=error[1]))
        return future

    def _format(self, of: dict[str, Any], task: str, text: str) -> ScoreRecord:
        problem = self._formats[task].problem(text)
        return ScoreRecord.model_construct(**of, scorer=FORMAT_VALID, metrics={FORMAT_VALID: int(problem is None)},
                                           detail=problem)


@dataclass
class Grading:
    """One response's grading under way: its format checked, its scorer calls sent, their results still coming."""

    response: ResponseRecord
    ready: list[ScoreRecord]
    """The records known at once: format_valid, or for a failed request every record."""
    of: dict[str, Any] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)
    calls: list[asyncio.Future[Result]] = field(default_factory=list)
    judge: Judge | None = None
    judging: list[asyncio.Future[JudgementRecord]] = field(default_factory=list)
    """The judge calls on the answer, under way."""
    judged: list[JudgementRecord] = field(default_factory=list)
    """The judge calls, once `scores` has waited for them."""
    records: list[ScoreRecord] = field(default_factory=list)
    """The score records, once `scores` has waited for them."""

    def done(self) -> bool:
        return all(call.done() for call in self.calls) and all(call.done() for call in self.judging)

    @property
    def new_judgements(self) -> list[JudgementRecord]:
        """The judge calls made for this grading (not read again from the archive): what is written."""
        return self.judge.new(self.judged) if self.judge else []

    async def scores(self) -> list[ScoreRecord]:
        """The response's score records, in the task's order: format_valid, the scorers, the judges (waiting for
        the scorers and judges still at work)."""
        results = [await call for call in self.calls]
        self.judged = list(await asyncio.gather(*self.judging))
        judges = self.judge.scores(self.of, self.response.task, self.judged) if self.judging else []
        self.records = [*self.ready, *(_record(self.of, n, r) for n, r in zip(self.names, results)), *judges]
        return self.records


def scorer_reference(sample: Sample, calculated: bool) -> Any:
    """What a scorer gets as its second argument: the reference, or for `calculated` the values + prompt_id."""
    return {**sample.values, PROMPT_ID: sample.id} if calculated else sample.reference


def _record(of: dict[str, Any], name: str, result: Result) -> ScoreRecord:
    """One scorer's record for the response `of` names (id, task, repeat)."""
    if isinstance(result, ErrorInfo):
        return ScoreRecord(**of, scorer=name, metrics=None, error=result)
    return ScoreRecord.model_construct(**of, scorer=name, metrics=result)

"""Grading one response: its format checked against the response class, then every scorer of its task.

Scorers are the user's code, so they run in a child process (benchrun.scorer_worker), never on the event loop:
each call has `scorer_timeout_s`; one that overruns is recorded as that sample's error ("timed out after 10 s"),
the process is replaced and the calls behind it go on. A scorer that exits, or kills its process, costs only
its own call. What scorers print goes to the run's log file.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import sys
from collections import OrderedDict
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from benchrun.manifest import Manifest, Sample
from benchrun.records import FORMAT_VALID, ErrorInfo, ResponseRecord, ScoreRecord
from benchrun.scoring import BUILTIN, Metric, Scorer, source_sha256

Result = dict[str, Metric] | ErrorInfo


class ScorerProcess:
    """User scorers in a child process, called in order, each within `timeout_s` (see the module docstring)."""

    def __init__(self, scorers: dict[str, Scorer], log: Path, timeout_s: float):
        self._setup = json.dumps({name: [None if BUILTIN.get(name) is fn else inspect.getsourcefile(fn),
                                         source_sha256(fn)] for name, fn in scorers.items()}).encode() + b"\n"
        self.log, self.timeout_s = log, timeout_s
        self._pending: OrderedDict[int, tuple[asyncio.Future[Result], bytes]] = OrderedDict()
        self._seq = itertools.count()
        self._since = 0.0
        self._proc: asyncio.subprocess.Process | None = None
        self._ready = False
        """Whether `_proc` takes calls (not while it is being replaced: `_spawn` sends what waits)."""
        self._broken: ErrorInfo | None = None
        self._wake = asyncio.Event()
        self._supervisor: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Start the process (none when there is nothing to call)."""
        if self._setup != b"{}\n":
            await self._spawn()
            self._supervisor = asyncio.create_task(self._supervise())

    async def call(self, name: str, response: str, reference: Any) -> Result:
        """One scorer call: its metrics, or the error it raised (or that it timed out)."""
        if self._broken is not None:
            return self._broken
        seq = next(self._seq)
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        payload = json.dumps([seq, name, response, reference], default=str).encode() + b"\n"
        if not self._pending:
            self._since = asyncio.get_running_loop().time()
        self._pending[seq] = (future, payload)
        if self._ready:
            self._proc.stdin.write(payload)
        self._wake.set()
        return await future

    async def close(self) -> None:
        if self._supervisor is not None:
            self._supervisor.cancel()
            await asyncio.gather(self._supervisor, return_exceptions=True)
        await self._stop()

    async def _spawn(self) -> None:
        self._proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "benchrun.scorer_worker", str(self.log), stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, limit=1 << 24)
        self._proc.stdin.write(self._setup)
        hello = json.loads(await self._proc.stdout.readline() or b'{"error": "the scorer process did not start"}')
        if "error" in hello:
            self._broken = ErrorInfo(type="ScorerUnavailable", message=hello["error"])
            self._fail_all(self._broken)
            return
        for _, payload in self._pending.values():
            self._proc.stdin.write(payload)
        self._ready = True
        self._since = asyncio.get_running_loop().time()

    async def _stop(self) -> None:
        self._ready = False
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        proc.kill()
        await proc.wait()

    async def _supervise(self) -> None:
        """Read answers in order; replace the process when the oldest call overruns, or when it dies."""
        loop = asyncio.get_running_loop()
        while self._broken is None:
            read = asyncio.ensure_future(self._proc.stdout.readline())
            while not read.done():
                self._wake.clear()
                wake = asyncio.ensure_future(self._wake.wait())
                left = self._since + self.timeout_s - loop.time() if self._pending else None
                await asyncio.wait({read, wake}, timeout=None if left is None else max(left, 0),
                                   return_when=asyncio.FIRST_COMPLETED)
                wake.cancel()
                if not read.done() and self._pending and loop.time() >= self._since + self.timeout_s:
                    read.cancel()
                    await self._replace(ErrorInfo(type="TimeoutError",
                                                  message=f"timed out after {self.timeout_s:g} s"))
                    break
            else:
                await self._answer(read.result())

    async def _answer(self, line: bytes) -> None:
        if not line:  # the process ended: the call it was making is what ended it
            code = await self._proc.wait()
            await self._replace(ErrorInfo(type="ScorerProcessDied",
                                          message=f"the scorer's process ended (exit code {code}) during this call"))
            return
        seq, found, error = json.loads(line)
        future, _ = self._pending.pop(seq)
        future.set_result(found if error is None else ErrorInfo(type=error[0], message=error[1]))
        self._since = asyncio.get_running_loop().time()

    async def _replace(self, error: ErrorInfo) -> None:
        """The oldest call fails with `error`; a new process takes the ones behind it."""
        if self._pending:
            future, _ = self._pending.popitem(last=False)[1]
            future.set_result(error)
        await self._stop()
        await self._spawn()

    def _fail_all(self, error: ErrorInfo) -> None:
        while self._pending:
            future, _ = self._pending.popitem(last=False)[1]
            future.set_result(error)


class Grader:
    """Scores responses of one manifest with the given scorer functions (by name); an async context manager that
    owns the scorer process. Records on the per-sample path are built with `model_construct`: their fields are
    checked here (scorer results by `scoring.metrics`), and validating them again costs more than the rest."""

    def __init__(self, manifest: Manifest, scorers: dict[str, Scorer], log: Path, timeout_s: float):
        self._validators = {t.name: Draft202012Validator(t.format.json_schema) for t in manifest.tasks}
        self._scorers = {t.name: [s.name for s in t.scorers] for t in manifest.tasks}
        self._calculated = {t.name for t in manifest.tasks if t.reference == "calculated"}
        self._process = ScorerProcess({name: scorers[name] for names in self._scorers.values() for name in names},
                                      log, timeout_s)

    async def __aenter__(self) -> Grader:
        await self._process.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._process.close()

    async def grade(self, sample: Sample, response: ResponseRecord) -> list[ScoreRecord]:
        """format_valid first, then one record per scorer, in the task's order."""
        names, of = self._scorers[sample.task], {"id": sample.id, "task": sample.task, "repeat": response.repeat}
        if response.text is None:
            error = ErrorInfo(type="NoResponse", message=f"no response: {response.error.message}")
            return [ScoreRecord(**of, scorer=n, metrics=None, error=error) for n in [FORMAT_VALID, *names]]
        reference = scorer_reference(sample, sample.task in self._calculated)
        results = await asyncio.gather(*(self._process.call(name, response.text, reference) for name in names))
        return [self._format(of, sample.task, response.text), *(_record(of, n, r) for n, r in zip(names, results))]

    def _format(self, of: dict[str, Any], task: str, text: str) -> ScoreRecord:
        problem = format_problem(self._validators[task], text)
        return ScoreRecord.model_construct(**of, scorer=FORMAT_VALID, metrics={FORMAT_VALID: int(problem is None)},
                                           detail=problem)


def scorer_reference(sample: Sample, calculated: bool) -> Any:
    """What a scorer gets as its second argument: the reference, or for `calculated` the values + prompt_id."""
    return {**sample.values, "prompt_id": sample.id} if calculated else sample.reference


def format_problem(validator: Draft202012Validator, text: str) -> str | None:
    """None when `text` is JSON valid for the response class, else what is wrong."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        return f"invalid JSON: {err}"
    error = best_match(validator.iter_errors(data))
    if error is None:
        return None
    where = "/".join(map(str, error.absolute_path))
    return f"{where}: {error.message}" if where else error.message


def _record(of: dict[str, Any], name: str, result: Result) -> ScoreRecord:
    """One scorer's record for the response `of` names (id, task, repeat)."""
    if isinstance(result, ErrorInfo):
        return ScoreRecord(**of, scorer=name, metrics=None, error=result)
    return ScoreRecord.model_construct(**of, scorer=name, metrics=result)

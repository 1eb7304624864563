"""Asking every sample of a manifest: bounded concurrency, retries with backoff, each answer recorded then graded."""

from __future__ import annotations

import asyncio
import gc
import itertools
import time
from collections import deque
from contextlib import contextmanager
from typing import Iterable, Iterator, Protocol

from benchrun.core.errors import FailFast, ServerLost
from benchrun.core.manifest import Manifest, Message, Query, Sample
from benchrun.core.records import Completion, ResponseRecord, answered
from benchrun.core.text import counted
from benchrun.execute.asking import Outcome
from benchrun.execute.cache import LOOKUP_BATCH, CacheFailed, Entry, Repeat, RunCache
from benchrun.execute.cachehit import whole_hit
from benchrun.execute.failurekind import failure_kind, longer
from benchrun.execute.grading import Grader, Grading
from benchrun.execute.hosts import Dispatch
from benchrun.execute.runners.base import Runner


class Recorder(Protocol):
    """Where the executor puts what it gets: each response as soon as it is known, then what the gradings done by
    then came to (their judge calls and score records, oldest first)."""

    def asking(self) -> None:
        """The first request of the model goes out now (the answers recorded already are graded)."""

    def response(self, record: ResponseRecord) -> None: ...

    def graded(self, gradings: list[Grading]) -> None: ...

    def host_lost(self, host: str, why: str, left: int) -> None: ...


GRADING_AHEAD = 128
"""How many recorded answers (beyond one per worker) may wait for their scorers while the next samples are asked."""


class Executor:
    """Sends samples to a runner; each response is recorded before it is graded, so no scorer can cost an answer.

    Two kinds of failure are a broken setup, not a benchmark result, and stop the run without recording the
    samples they hit (so `resume` asks them once the setup is mended): a server that cannot be reached
    (ServerLost, after the retries), and `max_consecutive_failures` different samples in a row failing the same
    kind of way (`failure_kind`) with no answer of the model in between (one from the response cache asked nothing)
    (FailFast); a response cache that fails mid-run (CacheFailed) stops it alike. A failed sample is held back until
    the next answer of the model (or a failure of another kind) shows the failures were the samples' own; one that
    is the sample's own whatever the setup (a chat longer than the context the manifest pins) is recorded at once."""

    def __init__(self, manifest: Manifest, runner: Runner, grader: Grader, recorder: Recorder,
                 cache: RunCache | None = None):
        self.runner, self.grader, self.recorder, self.policy = runner, grader, recorder, runner.config
        self.manifest = manifest
        self.cache = cache
        self._schemas = {t.name: t.format.json_schema for t in manifest.tasks}
        self._tasks = {t.name: t for t in manifest.tasks}
        self._dispatch = Dispatch(runner, recorder.host_lost)
        self._held: list[tuple[Sample, ResponseRecord]] = []
        self._grading: deque[Grading] = deque()
        self._judged = grader.held()
        self._ahead = self._dispatch.width + GRADING_AHEAD

    async def run(self, queries: Iterable[Query], regrade: Iterable[tuple[Sample, ResponseRecord]] = ()) -> None:
        """Grade the answers recorded already in `regrade` (a resume's or a retry's), then ask every query (a
        sample's repeat), `policy.concurrency` at a time (at each server of a list); returns when all are recorded
        and graded. A broken setup stops the asking, but what was answered is still graded; one judge failure run
        holds the gradings of both (`Held`)."""
        queue = self._looked_up(queries)
        with frozen_heap():
            workers: list[asyncio.Task[None]] = []
            try:
                for sample, response in regrade:
                    self._grading.append(self.grader.start(sample, response))
                    await self._collect(self._ahead)
                self.recorder.asking()
                workers = [asyncio.create_task(self._worker(queue)) for _ in range(self._dispatch.width)]
                await asyncio.gather(*workers)
            except (FailFast, ServerLost, CacheFailed):
                await _stop(workers)
                await self._collect(0)
                raise
            finally:
                await _stop(workers)
            await self._release()
            await self._collect(0)
            if held := self._judged.release():  # no broken judge stopped the asking: their failures are their own
                self.recorder.graded(held)

    def _looked_up(self, queries: Iterable[Query]) -> Iterator[tuple[Query, str | None, Entry | None]]:
        """Each query with its cache key and the cache's answer (None, None without a cache), looked up
        LOOKUP_BATCH at a time."""
        queries = iter(queries)
        while batch := list(itertools.islice(queries, LOOKUP_BATCH)):
            if not self.cache:
                yield from ((query, None, None) for query in batch)
                continue
            keys = [self._key(query) for query in batch]
            found = self.cache.get_many(keys)
            yield from ((query, key, found.get(key)) for query, key in zip(batch, keys))

    def _key(self, query: Query) -> str:
        seed = self.manifest.seed(query.repeat)
        sent = self.policy.options.get("seed") if seed is None else seed
        sample = query.sample
        return self.cache.key(self._messages(sample), self._schemas[sample.task], Repeat(query.repeat, sent))

    def _messages(self, sample: Sample) -> list[Message]:
        return self._tasks[sample.task].messages(sample.prompt)

    async def _worker(self, queue: Iterator[tuple[Query, str | None, Entry | None]]) -> None:
        for (sample, repeat), key, found in queue:
            hit = await whole_hit(self.runner, self.cache, key, found) if key else None
            response, fresh = await self._answer(sample, repeat, key, hit)
            kind = None if response.error is None else failure_kind(response.error)
            if hit is None and (response.error is None or (self._held and kind is not None and
                                                           failure_kind(self._held[-1][1].error) != kind)):
                await self._release()  # a cached answer asked nothing: it shows nothing of the setup
            if kind is None:  # an answer, or a failure of the sample's own: recorded at once, never held
                await self._record(sample, response)
                if key and fresh is not None:  # kept once recorded: a cache that fails costs no answer
                    self.cache.put(key, fresh)
                continue
            self._held.append((sample, response))
            failed = len({held.id for held, _ in self._held})
            if failed >= self.policy.max_consecutive_failures:
                raise FailFast(f"{counted(failed, 'sample')} in a row failed the same way, so the setup is broken, not "
                               f"the benchmark: {response.error} (runner.max_consecutive_failures)",
                               longer(response.error, self.policy))

    async def _answer(self, sample: Sample, repeat: int, key: str | None,
                      hit: Entry | None) -> tuple[ResponseRecord, Completion | None]:
        """The cache's answer `hit` when there is one (no request is sent), else the model's; and the model's answer
        to keep in the cache (None for the cache's own, or none)."""
        if hit is not None:
            return hit.record(sample.id, sample.task, repeat), None
        started = time.perf_counter()
        outcome, host = await self._ask(sample, self.manifest.seed(repeat))
        return _response(sample, repeat, outcome, time.perf_counter() - started, host), outcome.completion

    async def _record(self, sample: Sample, response: ResponseRecord) -> None:
        """Commit the response, send it to its scorers, and commit the scores that are ready: the next sample is
        asked while the scorers work."""
        self.recorder.response(response)
        self._grading.append(self.grader.start(sample, response))
        await self._collect(self._ahead)

    async def _collect(self, keep: int) -> None:
        """Commit the scores of the gradings that are done, oldest first and together (one write per record file),
        waiting while more than `keep` are not."""
        done: list[Grading] = []
        while self._grading and (len(self._grading) > keep or self._grading[0].done()):
            grading = self._grading.popleft()
            if not grading.done():
                self._commit(done)  # what is done is not kept waiting behind a scorer at work
                self.grader.send()
            await grading.scores()
            done.append(grading)
        self._commit(done)
        self._judged.unkept()  # the judge's reply the cache failed to keep is recorded: the run stops now

    def _commit(self, done: list[Grading]) -> None:
        """Commit the gradings in `done` together (but those a judge failure holds back, `Held`), and empty it."""
        if ready := self._judged.ready(done):
            self.recorder.graded(ready)
        done.clear()

    async def _release(self) -> None:
        """Record the failed samples held back: they were failures of their own."""
        held, self._held = self._held, []
        for sample, response in held:
            await self._record(sample, response)

    async def _ask(self, sample: Sample, seed: int | None) -> tuple[Outcome, str | None]:
        return await self._dispatch.ask(self._messages(sample), self._schemas[sample.task], seed,
                                        f"sample '{sample.id}'")


@contextmanager
def frozen_heap() -> Iterator[None]:
    """What exists when the asking starts (the manifest, its queries, the config, the libraries) is left out of the
    garbage collector's passes until it ends (`gc.freeze`; undone after, so nothing is kept for good): a full pass
    over a 10,000-sample run's objects, every few thousand allocations, cost a third of the time per answer. The
    young generations' garbage is collected first; a full pass over a long-lived process's heap (a sweep's jobs in
    one process) took 0.1 s, half a small run's asking, and what it would find is collected once the heap thaws."""
    gc.collect(1)
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


async def _stop(workers: list[asyncio.Task[None]]) -> None:
    for worker in workers:
        worker.cancel()
    await asyncio.gather(*workers, return_exceptions=True)


def _response(sample: Sample, repeat: int, outcome: Outcome, seconds: float, host: str | None) -> ResponseRecord:
    done = outcome.completion
    base = {"id": sample.id, "task": sample.task, "repeat": repeat, "seconds": round(seconds, 6),
            "attempts": len(outcome.failures) + (done is not None), "failed_attempts": tuple(outcome.failures)}
    if host is not None:
        base["host"] = host
    if outcome.host_seconds is not None:
        base["host_seconds"] = round(outcome.host_seconds, 6)
    if done is None:
        return ResponseRecord(**base, text=None, error=outcome.error)
    return answered(done, **base)

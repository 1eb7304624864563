"""Responders that hold a fake server's answers back, so that a test knows where a run stands when it acts: `Hold`
answers the first requests and holds the rest; `Gathering` holds the first requests until they are all in flight."""

from __future__ import annotations

import threading
from collections import Counter
from contextlib import contextmanager
from typing import Callable, Iterator

from benchrun.testing.chat import ChatRequest, Reply, Responder
from benchrun.testing.http_fake import FakeServer

HELD_S = 60
"""How long a held request waits at most (a test that forgets to let go fails instead of hanging)."""


class Hold:
    """A responder that answers the first `after` chat requests (of each model, if `each_model`: a sweep's jobs
    then all stop at the same point, however their asking interleaves) and holds the others until `release()`."""

    def __init__(self, respond: Responder, after: int, each_model: bool = False):
        self.respond, self.after, self.each_model = respond, after, each_model
        self.asked: Counter[str] = Counter()
        self._lock, self._released = threading.Lock(), threading.Event()

    def __call__(self, req: ChatRequest) -> Reply | str:
        with self._lock:
            key = req.model if self.each_model else ""
            self.asked[key] += 1
            held = self.asked[key] > self.after
        if held:
            self._released.wait(HELD_S)
        return self.respond(req)

    @property
    def holding(self) -> bool:
        """Whether a request is being held: the asker waits for an answer that does not come."""
        return bool(self.held_models)

    @property
    def held_models(self) -> int:
        """How many models have a request being held (1 at most unless `each_model`)."""
        return sum(asked > self.after for asked in self.asked.values())

    def release(self) -> None:
        self._released.set()


@contextmanager
def holding_answers(server: FakeServer, after: int, each_model: bool = False) -> Iterator[Hold]:
    """`server` answers `after` chat requests (of each model, if `each_model`), then holds the others until the block
    ends."""
    respond = server.responder
    hold = server.responder = Hold(respond, after, each_model)
    try:
        yield hold
    finally:
        hold.release()
        server.responder = respond


class Gathering:
    """A responder that holds the first `n` chat requests `counted` picks until all `n` are in, so that `n` are in
    flight at once; every other request, and these once gathered, `respond` answers."""

    def __init__(self, respond: Responder, n: int,
                 counted: Callable[[ChatRequest], bool] = lambda req: True):
        self.respond, self.counted, self._left = respond, counted, n
        self._lock, self._gathered = threading.Lock(), threading.Event()

    def __call__(self, req: ChatRequest) -> Reply | str:
        if self.counted(req):
            with self._lock:
                self._left -= 1
                if self._left <= 0:
                    self._gathered.set()
            self._gathered.wait(HELD_S)
        return self.respond(req)

"""One request as benchrun makes it, to the model or to a judge: within `timeout_s` from connecting to the answer's
last byte, retried with backoff after a 5xx/429, a dropped connection or a timeout, and its answer taken through the
boundary (`received`); every failed attempt is noted. A server that cannot be reached is lost (ServerLost), an
embedded engine that died likewise (EngineLost): the run stops, and `resume` asks again. A server that dropped a
request through all its retries but takes a new connection is there: that request's error."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from benchrun.core.errors import EngineLost, ServerLost
from benchrun.core.manifest import Message
from benchrun.core.records import Attempt, ErrorInfo
from benchrun.core.text import counted
from benchrun.execute.boundary import received
from benchrun.execute.runners.base import (
    Completion,
    Dropped,
    EngineDied,
    Refused,
    Retryable,
    Runner,
    Unreachable,
    connects,
    own_limit,
    retrying,
)


@dataclass
class Outcome:
    """What asking came to: the answer, or the error of the last attempt; each failed attempt."""

    completion: Completion | None = None
    failures: list[Attempt] = field(default_factory=list)
    error: ErrorInfo | None = None
    host_seconds: float | None = None
    """The time at the server of a list that answered, when the request was asked of another first."""


class Asker:
    """Asks one runner, as its config says (timeout_s, retries, backoff_s, max_response_bytes); `server` names it in
    the message of a lost server (the model server, the judge's server)."""

    def __init__(self, runner: Runner, server: str = "the model server", doing: str = "answering"):
        self.runner, self.policy, self.server, self.doing = runner, runner.config, server, doing

    async def ask(self, messages: list[Message], schema: dict[str, Any], seed: int | None, what: str) -> Outcome:
        """`messages` answered in `schema`; `what` (sample 'x') names it in a lost server's message."""
        outcome = Outcome()
        try:
            outcome.completion = await self._attempts(messages, schema, seed, outcome.failures)
        except Unreachable as err:
            if isinstance(err, Dropped) and await connects(self._url(), self.policy.timeout_s):
                outcome.error = outcome.failures[-1].error  # the server is there: it dropped this request
                return outcome
            lost = ServerLost(f"lost {self.server}: {outcome.failures[-1].error} "
                              f"(after {counted(len(outcome.failures), 'attempt')} at {what})")
            lost.attempts = tuple(outcome.failures)
            raise lost from err
        except EngineDied as err:
            raise EngineLost(f"the embedded engine (llama.cpp) {err} while {self.doing} {what}") from err
        except Exception as err:  # retries used up, or a failure not worth retrying: recorded, the run goes on
            if own_limit(err) is not None:  # out of file descriptors here: the run's own limit, not this sample's
                raise
            outcome.error = outcome.failures[-1].error if outcome.failures else ErrorInfo.of(err)
        return outcome

    def _url(self) -> str:
        return self.runner.public_config()[self.runner.config.server_key]

    async def _attempts(self, messages: list[Message], schema: dict[str, Any], seed: int | None,
                        failures: list[Attempt]) -> Completion:
        """A first attempt without tenacity, whose per-call retry state costs more CPU and GC than all the
        rest of benchrun's per-sample work; after a retryable failure, tenacity replays it, then retries."""
        try:
            return await self._timed(messages, schema, seed, failures)
        except Retryable as err:
            if not self.policy.retries:
                raise
            first: Retryable | None = err
        async for attempt in retrying(self.policy):
            with attempt:
                if first is not None:  # counted by tenacity as attempt 1, so stop and backoff are unchanged
                    failure, first = first, None
                    raise failure
                completion = await self._timed(messages, schema, seed, failures)
        return completion

    async def _timed(self, messages: list[Message], schema: dict[str, Any], seed: int | None,
                     failures: list[Attempt]) -> Completion:
        """One attempt within `timeout_s`, from connecting to the answer's last byte (a server that drips an
        answer a byte at a time never beats it); a failed attempt is noted in `failures`."""
        started = time.perf_counter()
        try:
            try:
                async with asyncio.timeout(self.policy.timeout_s):  # no task of its own, unlike wait_for
                    answer = await self.runner.complete(messages, schema, seed)
                return received(answer, self.policy.max_response_bytes, self.policy.key("max_response_bytes"),
                                time.perf_counter() - started, self.policy.timeout_s)
            except TimeoutError as err:
                raise Retryable(f"no answer within {self.policy.timeout_s:g} s") from err
        except Exception as err:
            failures.append(Attempt(number=len(failures) + 1, error=_error_info(err),
                                    seconds=round(time.perf_counter() - started, 6)))
            raise


def _error_info(err: BaseException) -> ErrorInfo:
    """The error as recorded: for the runners' own wrappers, the type of what they wrapped (ReadError, ...)."""
    cause = err.__cause__ if isinstance(err, (Retryable, Refused)) and err.__cause__ else err
    return ErrorInfo(type=type(cause).__name__, message=str(err) or type(err).__name__)

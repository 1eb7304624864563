"""Helpers for the thirtieth hostile pass of the asking side."""

from __future__ import annotations

import traceback
from typing import Any, Callable

from benchrun.execute.asking import Asker
from benchrun.testing.chat import Reply
from tests.helpers.answers import listbench_answer
from tests.helpers.p28_asking import AnsweringAs
from tests.helpers.wire import wire


def counting(read: list[str], method: Callable[..., Any]) -> Callable[..., Any]:
    """`method`, each call noting in `read` the function of benchrun's that called it."""

    def counted(self: Any) -> Any:
        read.append(traceback.extract_stack()[-2].name)
        return method(self)

    return counted


def busy(after: str, status: str = "429 Too Many Requests") -> Reply:
    """An OpenAI-compatible server's 429 (or `status`, a 200 saying 429 in its body) whose `Retry-After` asks the wait
    `after`."""
    said = wire(b'{"error": {"message": "slow down", "code": 429}}', status=status)
    return Reply(wire=said.replace(b"\r\n\r\n", f"\r\nRetry-After: {after}\r\n\r\n".encode(), 1))


def then_answered(first: Reply) -> Callable[[Any], Any]:
    """A responder answering its first request with `first`, every other `{"answer": "ok"}`."""
    asked: list[Any] = []

    def responder(request: Any) -> Any:
        asked.append(request)
        return first if len(asked) == 1 else '{"answer": "ok"}'

    return responder


async def asked_of(runner: Any, prompt: str) -> Any:
    """What asking `runner` `prompt` (in no schema) came to (`Asker.ask`), the runner closed after."""
    try:
        return await Asker(runner).ask([{"role": "user", "content": prompt}], {}, None, "sample 'x'")
    finally:
        await runner.aclose()


class Pool(AnsweringAs):
    """A server serving `qwen` whose answers name each of `said` in turn (a pool of two models behind one URL)."""

    def __init__(self, said: list[str], responder: Any = listbench_answer) -> None:
        super().__init__(said[0], responder=responder)
        self.turns = list(said)

    def dispatch(self, request: Any) -> Any:
        response = super().dispatch(request)
        if request.path == "/v1/chat/completions" and response is not None and response.status == 200:
            self.said = self.turns[1]
            self.turns.reverse()
        return response

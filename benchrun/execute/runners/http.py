"""What every HTTP runner's client reads of an answer: at most `runner.max_response_bytes` of its body (through
httpx's documented response hook, the body wrapped before it is read), so a server whose answer never ends costs
that much memory and no more, and the sample's error says so."""

from __future__ import annotations

from typing import Any, AsyncIterator, Awaitable, Callable

import httpx

from benchrun.execute.runners.base import too_large


class _Bounded(httpx.AsyncByteStream):
    """A response body that raises TooLarge once more than `limit` bytes have come."""

    def __init__(self, stream: httpx.AsyncByteStream, limit: int):
        self._stream, self._limit = stream, limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        read = 0
        async for chunk in self._stream:
            read += len(chunk)
            if read > self._limit:
                raise too_large(self._limit)
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()


def bounded(limit: int) -> dict[str, list[Callable[[httpx.Response], Awaitable[None]]]]:
    """httpx `event_hooks` that bound every response body to `limit` bytes."""

    async def bound(response: httpx.Response) -> None:
        response.stream = _Bounded(response.stream, limit)

    return {"response": [bound]}


def client_options(limit: int, concurrency: int) -> dict[str, Any]:
    """The httpx client options of a runner: `concurrency` connections kept alive, bodies bounded, no deadline of
    httpx's own (the executor's timeout_s holds each request, from connecting to the last byte)."""
    return {"timeout": None, "event_hooks": bounded(limit),
            "limits": httpx.Limits(max_connections=concurrency, max_keepalive_connections=None)}

"""The HTTP transport of every runner: httpcore's connection pool, connections kept alive as httpx's own transport
keeps them, over a network backend (httpcore's documented hook) that notes whether anything was read from a
connection since its last request was written. A response whose head had all arrived before its request went out
answers an earlier request (a server that sent two responses to one): it is refused and the connection closed, so
no answer is ever recorded for a request it did not answer."""

from __future__ import annotations

import os
import ssl
import warnings
from contextlib import contextmanager
from typing import Any, AsyncIterator, Iterable, Iterator

import httpcore
import httpx

from benchrun.core.errors import OWN_LIMITS, ConfigError, os_problem
from benchrun.core.filebytes import not_a_file

ERRORS = ("ConnectError", "ConnectTimeout", "ReadError", "ReadTimeout", "WriteError", "WriteTimeout", "PoolTimeout",
          "NetworkError", "TimeoutException", "ProxyError", "UnsupportedProtocol", "RemoteProtocolError",
          "LocalProtocolError", "ProtocolError")
"""httpcore's exceptions, most specific first, each raised as httpx's of the same name (as httpx's transport does)."""


UNSTARTED_CONNECT = r"coroutine 'connect_tcp\.<locals>\.try_connect' was never awaited"
"""What anyio (4.14 and later) warns of a happy-eyeballs connection attempt whose task was cancelled before it began
(a request cancelled as it connects: a judge's other calls as it fails fast, a run stopped): the task's wrapper never
awaits the attempt. Nothing was lost; its two lines at the process's end are not said (pyproject.toml's test
filters say the same)."""
warnings.filterwarnings("ignore", message=UNSTARTED_CONNECT, category=RuntimeWarning)

CERTIFICATES_ENV = ("SSL_CERT_FILE", "SSL_CERT_DIR")
"""The variables httpx reads the CA certificates from, when set (else certifi's), in the order it reads them."""


CONTEXTS: dict[tuple[tuple[str | None, tuple[int, int, int] | None], ...], ssl.SSLContext] = {}
"""The SSL contexts made in this process, by the certificates each was made of (httpx's advice: loading them is
slow, ~30 ms, and one context serves every connection)."""


def ssl_context() -> ssl.SSLContext:
    """httpx's SSL context, as it makes it from the environment, made once for the same certificates; a
    $SSL_CERT_FILE that names no file of certificates (or a $SSL_CERT_DIR that cannot be read) is the environment's
    one-line error naming it, not an OSError that the last resort took for a file benchrun was writing. One that
    names a pipe or a device is refused before OpenSSL opens it: a named pipe nothing writes to held the run at its
    start for good."""
    if kind := _not_a_file(os.environ.get(CERTIFICATES_ENV[0])):
        raise _unreadable(CERTIFICATES_ENV[0], f"{kind}, not a file")
    made_of = tuple((path, _version(path)) for path in map(os.environ.get, CERTIFICATES_ENV))
    if made_of not in CONTEXTS:
        CONTEXTS[made_of] = _made()
    return CONTEXTS[made_of]


def _version(path: str | None) -> tuple[int, int, int] | None:
    """Which version of the file or folder `path` is (its inode, size and change time), None when none is there."""
    try:
        found = os.stat(path) if path else None
    except OSError:
        return None
    return (found.st_ino, found.st_size, found.st_mtime_ns) if found else None


def _made() -> ssl.SSLContext:
    """A new SSL context of httpx's, from the environment's certificates; their errors said as `ssl_context` says."""
    try:
        return httpx.create_ssl_context()
    except (OSError, ssl.SSLError) as err:
        if type(err) is not ssl.SSLError and err.errno in OWN_LIMITS:
            raise  # this process's limit of open files (`ulimit -n`), told as the system's error, not the variable's
        name = next((name for name in CERTIFICATES_ENV if os.environ.get(name)), CERTIFICATES_ENV[0])
        raise _unreadable(name, os_problem(err) if type(err) is not ssl.SSLError else err.reason or str(err)) from None


def _not_a_file(path: str | None) -> str | None:
    """What `path` is when it is there and is neither a file nor a directory (a named pipe, a device), else None."""
    try:
        kind = not_a_file(os.stat(path).st_mode) if path else None
    except OSError:  # not there, or not to be looked at: OpenSSL says so
        return None
    return None if kind == "a directory" else kind


def _unreadable(name: str, why: str) -> ConfigError:
    return ConfigError(f"${name} names {os.environ.get(name)!r}, which cannot be read as CA certificates ({why}); "
                       f"unset {name}, or point it at a PEM file of certificates")


class _Watched(httpcore.AsyncNetworkStream):
    """A connection's stream that knows whether it has been read from since it was last written to."""

    def __init__(self, stream: httpcore.AsyncNetworkStream):
        self._stream = stream
        self.heard = True
        """Whether bytes were read after the last write: False while a request waits for its response."""

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = await self._stream.read(max_bytes, timeout)
        self.heard = True
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.heard = False
        await self._stream.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        return _Watched(await self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _Watching(httpcore.AsyncNetworkBackend):
    """httpcore's own backend, each connection it makes watched."""

    def __init__(self) -> None:
        self._backend = httpcore.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        return _Watched(await self._backend.connect_tcp(host, port, timeout, local_address, socket_options))

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        return _Watched(await self._backend.connect_unix_socket(path, timeout, socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


@contextmanager
def _as_httpx(request: httpx.Request) -> Iterator[None]:
    """httpcore's exceptions raised as httpx's, which the runners know."""
    try:
        yield
    except Exception as err:
        for name in ERRORS:
            if isinstance(err, getattr(httpcore, name)):
                raise getattr(httpx, name)(str(err), request=request) from err
        raise


class _Body(httpx.AsyncByteStream):
    def __init__(self, stream: Any, request: httpx.Request):
        self._stream, self._request = stream, request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _as_httpx(self._request):
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        with _as_httpx(self._request):
            await self._stream.aclose()


class Transport(httpx.AsyncBaseTransport):
    """Requests over watched connections: at most `limits.max_connections`, kept alive."""

    def __init__(self, limits: httpx.Limits):
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context(), max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections, keepalive_expiry=limits.keepalive_expiry,
            network_backend=_Watching())

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = httpcore.URL(scheme=request.url.raw_scheme, host=request.url.raw_host, port=request.url.port,
                           target=request.url.raw_path)
        sent = httpcore.Request(method=request.method, url=url, headers=request.headers.raw, content=request.stream,
                                extensions=request.extensions)
        with _as_httpx(request):
            response = await self._pool.handle_async_request(sent)
            if not getattr(response.extensions.get("network_stream"), "heard", True):
                await response.aclose()
                raise httpx.RemoteProtocolError(
                    "the server had sent this response before the request was (a second response to an earlier "
                    "request on the connection): not taken as the answer, the connection closed", request=request)
        return httpx.Response(status_code=response.status, headers=response.headers,
                              stream=_Body(response.stream, request), extensions=response.extensions)

    async def aclose(self) -> None:
        await self._pool.aclose()

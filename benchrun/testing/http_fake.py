"""The shared base of the fake model servers: a keep-alive HTTP/1.1 server on loopback, routing to its handlers."""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import socketserver
import ssl
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

from benchrun.testing.chat import ChatRequest, Reply, Responder, default_responder, full_name

HOST = "127.0.0.1"


class BadRequest(Exception):
    """The request body is unusable; answered with 400."""


@dataclass(frozen=True)
class Request:
    """An HTTP request as the route handlers see it."""

    method: str
    path: str
    headers: Message
    body: bytes

    def json(self) -> dict[str, Any]:
        """The body parsed as a JSON object (an empty body is `{}`); raises BadRequest otherwise."""
        try:
            data = json.loads(self.body or b"{}")
        except ValueError as exc:
            raise BadRequest(f"invalid JSON body: {exc}") from None
        if not isinstance(data, dict):
            raise BadRequest("the request body must be a JSON object")
        return data


@dataclass(frozen=True)
class Response:
    """A complete HTTP response; it is always sent with Content-Length."""

    status: int
    body: bytes
    content_type: str = "application/json"
    drip_s: float = 0.0
    """Seconds between the bytes of the body (0: all at once)."""
    endless: bool = False
    """Send the body chunked, followed by white space until the client goes away."""
    wire: bytes | None = None
    """Send these bytes instead, as the whole HTTP response, and close the connection (unless `keep_open`)."""
    keep_open: bool = False


def json_response(obj: Any, status: int = 200) -> Response:
    return Response(status, json.dumps(obj).encode())


Route = Callable[[Request], Response | None]
_S = TypeVar("_S", bound="FakeServer")


class FakeServer(ABC):
    """A loopback HTTP server run in a thread; subclasses provide `routes()` and use `answer()` for chats."""

    url_suffix = ""

    def __init__(self, models: Iterable[str], responder: Responder | None = None, latency_s: float = 0.0,
                 max_parallel: int | None = None, port: int = 0) -> None:
        self.models = list(models)
        self.responder: Responder = responder or default_responder
        self.latency_s = latency_s
        self.port = port
        self.requests: list[dict[str, Any]] = []
        self.max_in_flight = 0
        self.connections = 0
        """How many connections clients have made."""
        self._in_flight = 0
        self._attempts: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max_parallel) if max_parallel else contextlib.nullcontext()
        self._routes = self.routes()
        self._running: tuple[_HTTPServer, threading.Thread] | None = None

    @abstractmethod
    def routes(self) -> dict[tuple[str, str], Route]:
        """(method, path) → handler; a handler returning None drops the connection."""

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}{self.url_suffix}"

    def start(self: _S) -> _S:
        """Listen (on the same port as before after a `stop()`) and serve in a daemon thread."""
        if self._running is None:
            server = _HTTPServer(self, self.port)
            self.port = server.server_address[1]
            thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                      name=f"{type(self).__name__}:{self.port}", daemon=True)
            thread.start()
            self._running = server, thread
        return self

    def serve_tls(self, context: ssl.SSLContext) -> str:
        """Answer in TLS (`context`, a server's) from now on, on the same port; the server's https:// URL."""
        server = self.start()._running[0]
        server.socket = context.wrap_socket(server.socket, server_side=True)
        return self.url.replace("http://", "https://", 1)

    def stop(self) -> None:
        """Close the listening socket and every open connection; new connections are refused."""
        if self._running is None:
            return
        (server, thread), self._running = self._running, None
        server.shutdown()
        server.server_close()
        server.close_connections()
        thread.join()

    def __enter__(self: _S) -> _S:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def find_model(self, name: str) -> str | None:
        """The configured model `name` refers to, with or without `:latest`."""
        return next((m for m in self.models if full_name(m) == full_name(name)), None) if name else None

    def record(self, path: str, body: Mapping[str, Any]) -> None:
        with self._lock:
            self.requests.append({**body, "path": path})

    def next_attempt(self, model: str, prompt: str) -> int:
        """Count one more request for (model, prompt); returns the 1-based attempt number."""
        with self._lock:
            self._attempts[model, prompt] += 1
            return self._attempts[model, prompt]

    def answer(self, req: ChatRequest) -> Reply:
        """Run the responder inside a parallel slot, after the latency and before the reply's delay."""
        with self._slots:
            self._enter()
            try:
                if self.latency_s:
                    time.sleep(self.latency_s)
                reply = self.responder(req)
                reply = Reply(content=reply) if isinstance(reply, str) else reply
                if reply.delay_s:
                    time.sleep(reply.delay_s)
            finally:
                self._leave()
        return replace(
            reply,
            prompt_eval_count=len(req.prompt.split()) if reply.prompt_eval_count is None else reply.prompt_eval_count,
            eval_count=len(reply.content.split()) if reply.eval_count is None else reply.eval_count,
        )

    def dispatch(self, request: Request) -> Response | None:
        """Route one request; unknown paths get Ollama's plain-text 404, bad bodies 400, crashes 500."""
        route = self._routes.get((request.method, request.path))
        if route is None:
            return Response(404, b"404 page not found", "text/plain; charset=utf-8")
        try:
            return route(request)
        except BadRequest as exc:
            return json_response({"error": str(exc)}, 400)
        except Exception as exc:  # a broken responder must show up in the test, not as a dropped connection
            return json_response({"error": f"fake server error: {exc!r}"}, 500)

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "benchrun-fake"
    sys_version = ""
    disable_nagle_algorithm = True
    wbufsize = -1  # headers and body leave in one write, flushed after each request
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.untrack(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request log."""

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        request = Request(self.command, self.path.split("?", 1)[0], self.headers, self._read_body())
        response = self.server.app.dispatch(request)
        if response is None:
            self.close_connection = True
            return
        if response.wire is not None:
            self.close_connection = not response.keep_open
            self.wfile.write(response.wire)
            return
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        if response.endless:
            self._send_endless(response.body)
            return
        self.send_header("Content-Length", str(len(response.body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if not response.drip_s:
            self.wfile.write(response.body)
            return
        for byte in response.body:
            self.wfile.write(bytes([byte]))
            self.wfile.flush()
            time.sleep(response.drip_s)

    def _send_endless(self, start: bytes) -> None:
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        try:
            for chunk in itertools.chain([start], itertools.repeat(b" " * 65536)):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        except OSError:  # the client stopped reading
            pass

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            return self._read_chunked()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _read_chunked(self) -> bytes:
        chunks = []
        while size := int(self.rfile.readline().split(b";", 1)[0], 16):
            chunks.append(self.rfile.read(size))
            self.rfile.readline()
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass
        return b"".join(chunks)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, app: FakeServer, port: int) -> None:
        self.app = app
        self._connections: set[socket.socket] = set()
        self._closing = False
        self._conn_lock = threading.Lock()
        super().__init__((HOST, port), _Handler)

    def server_bind(self) -> None:
        """Bind without HTTPServer's reverse DNS lookup of the host name."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.socket.getsockname()[:2]

    def track(self, conn: socket.socket) -> None:
        with self._conn_lock:
            self._connections.add(conn)
            self.app.connections += 1
            if self._closing:
                _shut(conn)

    def untrack(self, conn: socket.socket) -> None:
        with self._conn_lock:
            self._connections.discard(conn)

    def close_connections(self) -> None:
        with self._conn_lock:
            self._closing = True
            for conn in self._connections:
                _shut(conn)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Ignore clients that went away (timeouts, drops, `stop()`); report anything else."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


def _shut(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_RDWR)

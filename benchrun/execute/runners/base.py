"""The runner interface: identify the model once, then answer one chat at a time."""

from __future__ import annotations

import ast
import asyncio
import json
import math
import os
import re
import socket
import ssl
from contextlib import suppress
from typing import Any, Callable, Mapping, Protocol
from urllib.parse import urlsplit

import h11
import httpcore
import httpx
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential_jitter

from benchrun.core.errors import OWN_LIMITS, RunnerError
from benchrun.core.jsonwords import bytes_said
from benchrun.core.manifest import Message
from benchrun.core.records import Completion
from benchrun.core.settings import RunnerConfig
from benchrun.core.text import one_line
from benchrun.execute.runners.retryafter import retry_after_s, waiting
from benchrun.execute.runners.statuses import undefined


class Retryable(Exception):
    """A failure worth another try: a 5xx/429 answer, a dropped connection, a timeout; `after_s` the wait before it
    that the server asked (its Retry-After), if any."""

    after_s: float | None = None


class BusySaid(Retryable):
    """An answer of 200 whose body says the server is busy (an error object naming 429 or 503: a proxy before
    Ollama); `headers` the answer's, for the wait its Retry-After asks (`asked_again`), as of a 429's."""

    def __init__(self, line: str, headers: Mapping[str, str]) -> None:
        super().__init__(line)
        self.headers = headers


class Refused(Exception):
    """A request the server refused in a way another try would not change (a 4xx, or a 5xx saying it is invalid)."""


class ServerChanged(RunnerError):
    """A server that says other things of itself as a run ends than as it began (Ollama's version: upgraded)."""


class EngineDied(Exception):
    """The process that runs the model ended (a signal, an abort, the out-of-memory killer): no later request can be
    answered. The run stops as interrupted, as for a lost server; the message says how it ended."""


class Unreachable(Retryable):
    """The connection itself failed (refused, reset, closed before an answer): the server, not the sample. When
    every retry fails this way the run stops as interrupted instead of burning the samples that remain."""


class Dropped(Unreachable):
    """A connection made, then closed or reset before an answer: the server gone, or this request refused so (a
    proxy that drops a request it will not take, a worker it crashes). When the retries are used up, the server is
    lost only if a new connection to it cannot be made (`connects`); else it is that sample's error."""


class BrokenAnswer(Retryable):
    """An answer the server began and broke: bytes HTTP does not allow (a bad status line, Content-Length or chunk),
    or a body cut short or reset. Worth another try; but the server was there, so when the retries are used up it is
    that sample's error, not a lost server (a server that died mid-answer is found unreachable by the retry)."""


def own_limit(err: BaseException | None) -> OSError | None:
    """The OSError of OWN_LIMITS behind `err` (as its cause or context: the ollama client raises its ConnectionError
    `from None`), else None."""
    while err is not None:
        if isinstance(err, OSError) and err.errno in OWN_LIMITS:
            return err
        err = err.__cause__ or err.__context__
    return None


def transport_failure(err: Exception) -> Retryable | Refused | OSError:
    """An httpx transport error (or the ollama client's ConnectionError) as the runners' own: the OSError itself when
    this process ran out of file descriptors (`ulimit -n` below what runner.concurrency connections need: not a
    server lost, told as the system's error, the run resumable), BrokenAnswer when the HTTP parser refused what the
    server sent (Refused where that was a status below 100, as any status HTTP does not define is: `undefined`),
    Unreachable when no connection could be made, Dropped when it broke before an answer, Retryable for a request
    that ran out of time."""
    if (limit := own_limit(err)) is not None:
        return limit
    message = transport_said(err) or f"{type(err).__name__}: no answer"
    if _unparsable(err):
        if below := UNDEFINED_STATUS.search(message):
            return Refused(undefined(int(below[1])))
        return BrokenAnswer(SWITCHED if "_SWITCH_UPGRADE" in message else HEAD_TOO_LONG if message == LONG_HEAD else
                            message)
    if isinstance(err, (ConnectionError, httpx.ConnectError, httpx.ConnectTimeout)):
        return Unreachable(message)
    return Dropped(message) if isinstance(err, (httpx.NetworkError, httpx.RemoteProtocolError)) else Retryable(message)


BYTES_REPR = re.compile(r"""bytearray\((b'(?:[^'\\]|\\.)*'|b"(?:[^"\\]|\\.)*")\)""")
"""How the HTTP parser (h11) quotes what it refused: Python's repr of its buffer (`bytearray(b'zz\\r\\n')`)."""


def transport_said(err: BaseException) -> str:
    """What an error of the HTTP stack says (empty: nothing), a buffer its parser quotes said as JSON text."""
    return BYTES_REPR.sub(_bytes_said, str(err))


def _bytes_said(found: re.Match[str]) -> str:
    """The bytes a repr of `found` holds, quoted as JSON text is (`"zz\\r\\n"`), not as Python writes them."""
    return bytes_said(ast.literal_eval(found[1]))


UNDEFINED_STATUS = re.compile(r"^InformationalResponse status_code should be in range \[100, 200\), not (\d+)$")
"""How the HTTP parser (h11) refuses a status below 100 (`HTTP/1.1 099`), in its class's words."""
LONG_HEAD = "Receive buffer too long"
"""How the HTTP parser (h11) refuses an answer whose head is longer than the client lets it read (a header of 1 MB)."""
HEAD_TOO_LONG = (f"the answer's head (its status line and headers) is longer than "
                 f"{httpcore.AsyncHTTP11Connection.MAX_INCOMPLETE_EVENT_SIZE // 1024} KiB, the most the HTTP client "
                 "reads")
SWITCHED = "HTTP 101: the server switched to another protocol, which benchrun never asks for (it sends no Upgrade)"
"""A 101 answer, which the HTTP parser (h11) names by its own event (`Received server _SWITCH_UPGRADE event without a
pending proposal`)."""


def _unparsable(err: BaseException | None) -> bool:
    """Whether the HTTP parser (h11) refused what the server sent: it answered, but not in HTTP."""
    while err is not None:
        if isinstance(err, h11.RemoteProtocolError):
            return True
        err = err.__cause__ or err.__context__
    return False


CERTIFICATE_FOR_ANOTHER = frozenset({62, 64})
"""OpenSSL's verify codes of a certificate that is not for the name connected to (X509_V_ERR_HOSTNAME_MISMATCH,
X509_V_ERR_IP_ADDRESS_MISMATCH)."""
NOT_TLS = frozenset({"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG"})
"""What OpenSSL (1.1 to 3.x) calls the first bytes of a server that answered a TLS handshake in plain HTTP."""


TLS_PROBE_S = 5.0
"""The longest the preflight waits for a TLS handshake with a server that closed its http:// connection (a handshake
takes milliseconds; a server of plain HTTP may wait for the rest of what it takes for a request's head)."""


async def there_unanswered(err: Exception, url: str, key: str, timeout_s: float) -> str | None:
    """Why the preflight's request to the server of `url` (the value of config `key`) failed when a server is there,
    with the fix ("cannot reach it, start it" would be wrong advice): an https:// server whose handshake failed
    (`_handshake_failed`), an http:// one that closed the connection without an answer and completes a TLS handshake
    (an https server named with http://), or one that took the connection and closed it unanswered. None when no
    connection was made."""
    if (why := _handshake_failed(err, url, key)) is not None:
        return why
    if not isinstance(transport_failure(err), Dropped):
        return None
    if urlsplit(url).scheme == "http" and await connects(url, min(timeout_s, TLS_PROBE_S), tls=_unchecked()):
        return (f"the server at {url} answers in TLS, not in plain HTTP: name it with https:// in {key} (its "
                "certificate trusted by this machine, or named by $SSL_CERT_FILE)")
    return (f"the server at {url} took the connection and closed it without an answer ({type(err).__name__}: "
            f"{one_line(str(err), 200)}): something runs there that does not answer its HTTP requests; check its "
            f"log, or point {key} at its HTTP API")


def unproxied() -> str:
    """`, asked directly (...)` for a server not reached while the environment names a proxy ($HTTP_PROXY,
    $ALL_PROXY, ...), which benchrun's transport never reads (a user behind one may count on it); else empty."""
    named = sorted(name for name, value in os.environ.items()
                   if value.strip() and name.lower().endswith("_proxy") and name.lower() != "no_proxy")
    return f", asked directly (benchrun reads no proxy; ${named[0]} names one)" if named else ""


def _unchecked() -> ssl.SSLContext:
    """A TLS context that checks no certificate: for asking whether a server speaks TLS at all."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    return context


def _handshake_failed(err: BaseException | None, url: str, key: str) -> str | None:
    """Why no connection to the https:// server of `url` could be made when its TLS handshake failed, with the fix;
    None when the failure was not TLS's."""
    while err is not None and not isinstance(err, ssl.SSLError):
        err = err.__cause__ or err.__context__
    if err is None:
        return None
    if isinstance(err, ssl.SSLCertVerificationError):
        if err.verify_code in CERTIFICATE_FOR_ANOTHER:
            return (f"the server at {url} answers with a TLS certificate for another name "
                    f"({err.verify_message.rstrip('.')}); name the server in {key} as its certificate does")
        return (f"the server at {url} answers with a TLS certificate this machine does not trust "
                f"({err.verify_message}); point $SSL_CERT_FILE at a PEM file of the authority that signed it (of "
                "the certificate itself, for a self-signed one)")
    why = (err.reason or "").lower().replace("_", " ") or str(err)
    if err.reason in NOT_TLS:
        return (f"the server at {url} does not answer in TLS ({why}): a server of plain HTTP is named with http:// "
                f"in {key}")
    return f"the TLS handshake with the server at {url} failed ({why}): it is there, but its TLS is not one this " \
           "machine takes"


def asked_again(line: str, headers: Mapping[str, str], policy: RunnerConfig) -> Retryable | Refused:
    """The error of an answer worth another try, as the server said it (`line`): Retryable after the wait its
    Retry-After asks, where that is within the request's timeout_s; else Refused, saying the wait asked is longer."""
    after = retry_after_s(headers)
    if after is not None and after > policy.timeout_s:
        return Refused(f"{line}; the server asks to be asked again after Retry-After: "
                       f"{one_line(headers['Retry-After'].strip(), 40)}, longer than a request may take "
                       f"({policy.key('timeout_s')}={policy.timeout_s:g} s): not asked again")
    retry = Retryable(line)
    retry.after_s = after
    return retry


def refusal_line(line: str, retry: bool, headers: Mapping[str, str], policy: RunnerConfig) -> str:
    """The line of an answer refused for good (`line`), saying so where it was worth another try (`retry`) and its
    server asked a wait longer than policy.timeout_s (`asked_again`): why it was not asked again."""
    return str(asked_again(line, headers, policy)) if retry else line


BACKOFF_MAX_S = 8.0
"""The longest wait between two attempts that the server asks none of."""


def retrying(policy: RunnerConfig) -> AsyncRetrying:
    """A request's attempts as a runner's config says: `retries` more after a Retryable failure, with backoff from
    `backoff_s` or the longer wait the server asked (`retryafter.waiting`), the last failure raised."""
    return AsyncRetrying(stop=stop_after_attempt(policy.retries + 1), retry=retry_if_exception_type(Retryable),
                         wait=waiting(wait_exponential_jitter(initial=policy.backoff_s, max=BACKOFF_MAX_S)),
                         reraise=True)


async def resolvable(url: str, key: str) -> None:
    """Raise RunnerError, once and plainly, when the host name of `url` (the value of config `key`) does not
    resolve: no server can be reached there, started or not."""
    host = urlsplit(url).hostname or ""
    try:
        await asyncio.get_running_loop().getaddrinfo(host, None)
    except socket.gaierror:
        raise RunnerError(f"the host name '{host}' in {key}={url} does not resolve; check the name, or use the "
                          "machine's address") from None


async def connects(url: str, timeout_s: float, tls: ssl.SSLContext | None = None) -> bool:
    """Whether a new connection to the server of `url` is made within `timeout_s` (its port takes connections); with
    `tls`, whether its TLS handshake completes too. The connection is only a question: closed at once."""
    parts = urlsplit(url)
    try:
        async with asyncio.timeout(timeout_s):
            _, writer = await asyncio.open_connection(parts.hostname, parts.port or _PORTS.get(parts.scheme, 80),
                                                      ssl=tls)
    except (OSError, TimeoutError) as err:
        if own_limit(err) is not None:
            raise
        return False
    writer.transport.abort()  # no goodbye (TLS's either) to wait for
    with suppress(OSError):
        await writer.wait_closed()
    return True


_PORTS = {"http": 80, "https": 443}
FIXED_STRINGS = {"enum", "const", "pattern", "format", "maxLength"}
"""What makes a string in a JSON schema more than free-form text."""


def free_strings(schema: Any, keys: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    """`schema` with `keys(string)` added to every free-form `string` schema in it (one without an enum, const,
    pattern, format or maxLength): a schema sent to a generator, never the one recorded."""
    if isinstance(schema, list):
        return [free_strings(item, keys) for item in schema]
    if not isinstance(schema, dict):
        return schema
    updated = {key: free_strings(value, keys) for key, value in schema.items()}
    if updated.get("type") == "string" and not FIXED_STRINGS & updated.keys():
        updated.update(keys(updated))
    return updated


def bounded_strings(schema: Any, max_length: int | None) -> Any:
    """`schema` with maxLength=max_length on every free-form string, so answers end within num_predict; never below
    the string's minLength, so the answer the format asks for stays one the generator may make."""
    if max_length is None:
        return schema
    return free_strings(schema, lambda string: {"maxLength": max(max_length, string.get("minLength", 0))})


def json_count(value: Any) -> int | None:
    """A token count or duration as a server wrote it: a JSON integer, else None (not reported): `true`, `"7"`, 7.0,
    1.5, `"many"` and 1e400 are none, though a lax reader would take some of them for one."""
    return value if type(value) is int else None


def json_kind(value: Any) -> str:
    """What a JSON value is, as an error names it."""
    kinds = {bool: "a bool", int: "a number", float: "a number", list: "a list", dict: "an object"}
    return kinds.get(type(value), "null" if value is None else "a string")


def not_the_models(role: Any) -> str | None:
    """Why an answer whose message is of `role` is not the model's (a server echoing the chat back: `user`), or None
    for the assistant's, or a role not given."""
    if role is None or role == "assistant":
        return None
    said = one_line(json.dumps(role), 40) if isinstance(role, str) else json_kind(role)
    return f"its message's role is {said}, where the model's answer is the assistant's"


def tools_called(calls: Any) -> str:
    """The tool calls an answer makes, as their JSON text (`extra.tool_calls`): benchrun offers no tools, so a server's
    calls are kept as they came, for the archive holds all that came back (the call may be where the answer is)."""
    return json_text(calls)


def json_text(value: Any) -> str:
    """What an answer says besides its text (its tool calls, its content's other parts), kept as JSON text: a NaN or
    an infinity in it (`NaN`, `1e999`, which Python's reader takes) as null, as JSON has no such number: kept as
    Python writes them, `[{"x": NaN}]` was a text no reader of JSON takes."""
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)
    except ValueError:
        return json.dumps(_nulled([value])[0], ensure_ascii=False, sort_keys=True)


def _nulled(value: list[Any]) -> list[Any]:
    """`value` (parsed JSON, a server's) with each NaN or infinity in it made None, in place, walked without recursion:
    tool calls nest as deep as Python's JSON reader goes, past what a recursive walk can (a RecursionError lost the
    answer)."""
    pending: list[Any] = [value]
    while pending:
        item = pending.pop()
        for key in item.keys() if isinstance(item, dict) else range(len(item)):
            child = item[key]
            if isinstance(child, float) and not math.isfinite(child):
                item[key] = None
            elif isinstance(child, (dict, list)):
                pending.append(child)
    return value


def with_seed(options: dict[str, Any], seed: int | None, key: str = "seed") -> dict[str, Any]:
    """`options` with `key` set to `seed`, or as they are when there is no seed of a repeat's own."""
    return options if seed is None else {**options, key: seed}


class Runner(Protocol):
    """What the executor needs from a way of reaching a model."""

    config: RunnerConfig
    """The runner's typed config (model, options, concurrency, timeout_s, retries, backoff_s, ...)."""

    async def identify(self) -> dict[str, Any]:
        """Preflight: check the server and model, and describe the model (digest, versions, ...).

        Raises RunnerError (one line, with the fix) when the run cannot start."""

    async def complete(self, messages: list[Message], schema: dict[str, Any], seed: int | None = None) -> Completion:
        """One request: the chat `messages` answered in the JSON `schema`, with `seed` in place of options.seed when
        given (a
        repeat's own seed). Raises Retryable or another error."""

    async def digests_now(self) -> dict[str, str | None]:
        """Server URL -> the digest it serves the model by now, asked again as the run ends (none where there is no
        digest to ask: an OpenAI-compatible server gives none, and the embedded model in memory answered every
        request). Raises RunnerError when a server cannot say."""

    async def loaded(self, identity: dict[str, Any]) -> dict[str, Any]:
        """`identity` (`identify`'s) with what a server said of the model as loaded once it answered (Ollama's
        context_length); as it is where nothing more is known."""

    async def seen_whole(self, answered: Completion) -> Completion:
        """`answered` (fresh, or from the response cache), or Refused (`ContextFull`) where what the server said of it
        shows the model did not see the chat whole (`contextfull.outgrew`)."""

    def request_settings(self) -> dict[str, Any]:
        """Everything each request sends besides the messages and the format (model, options, ...): part of the
        response cache's key. Called after `identify`."""

    def format_sent(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        """The format's schema as the engine is given it, where the runner rewrites it (`llamaschema.readable`): part
        of the response cache's key, so an answer to another benchrun's rewrite of a format is not taken for one to
        this one's."""

    async def aclose(self) -> None:
        """Release connections."""

    def public_config(self) -> dict[str, Any]:
        """The runner config as used, without secrets, for run.json."""

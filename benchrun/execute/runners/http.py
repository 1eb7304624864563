"""What every HTTP runner's client reads of an answer: at most `max_response_bytes` of its body once decoded
(through httpx's documented response hook, the body wrapped before it is read, gzip and deflate undone there with
zlib's own output bound), so neither a server whose answer never ends nor a compressed bomb costs more memory than
that, and the sample's error says so; no redirect, so every answer comes from the server the run names; and no
cookie kept, so every request is sent as the run asks it."""

from __future__ import annotations

import codecs
import zlib
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any, AsyncIterator, Awaitable, Callable

import httpx

from benchrun.core.secrets import said_url
from benchrun.core.settings import RunnerConfig
from benchrun.execute.boundary import too_large
from benchrun.execute.runners.base import BrokenAnswer, Refused, transport_said
from benchrun.execute.runners.transport import Transport

WBITS = {"gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS, "x-gzip": zlib.MAX_WBITS | 16}
"""The content codings benchrun reads, bounded, as zlib's window bits. httpx decodes others when a package for them
is installed (brotli's `br`, zstandard's `zstd`), past any bound: they are neither asked for nor read."""
ACCEPTED = "gzip, deflate"
"""The Accept-Encoding of every request: the codings benchrun reads."""
MAX_CODINGS = 4
"""The most content codings, one over another, an answer's body is undone from. Each is a decoder of its own, of up
to 44 KB once it reads: a Content-Encoding naming gzip 12,000 times (the 100 KB a header may hold) over a body
gzipped so often cost 400 MB for one answer, runner.concurrency times over, before the bound on its length."""


class Redirected(Refused):
    """A 3xx answer: benchrun follows no redirect, so an answer never comes from a server the run does not name."""


class _Inflater:
    """One content coding undone, through zlib. `deflate` is read as zlib's format, or as raw deflate when it does
    not start as zlib's: the body many servers send as deflate, which httpx's own decoder (and curl's) reads too."""

    def __init__(self, coding: str):
        self._coding, self._start = coding, b""
        self._zlib = zlib.decompressobj(WBITS[coding])

    @property
    def unconsumed_tail(self) -> bytes:
        return self._zlib.unconsumed_tail

    @property
    def cut_short(self) -> bool:
        """Whether its stream began and has not ended: the body broke off inside it (a stream holds its own end)."""
        return self._start != b"" and not self._zlib.eof

    def decompress(self, data: bytes, limit: int) -> bytes:
        try:
            out = self._zlib.decompress(data, limit)
        except zlib.error:
            if self._coding != "deflate" or self._start is None:
                raise
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
            out = self._zlib.decompress(self._start + data, limit)
        self._start = None if out else (self._start or b"") + data  # what came before zlib's header was judged
        while self._zlib.eof and self._zlib.unused_data and len(out) <= limit:
            out += self._next_member(self._zlib.unused_data, limit + 1 - len(out))
        return out

    def _next_member(self, data: bytes, limit: int) -> bytes:
        """What follows the end of a stream: gzip's next member (a gzip body may be several, RFC 1952), decoded; in
        deflate, nothing may follow."""
        if self._coding == "deflate":
            raise zlib.error("bytes follow the end of the deflate stream")
        self._zlib = zlib.decompressobj(WBITS[self._coding])
        return self._zlib.decompress(data, limit)


class _Bounded(httpx.AsyncByteStream):
    """A response body, decoded as its Content-Encoding says, that raises TooLarge once more than `limit` bytes
    have come out, and BrokenAnswer when it breaks off, does not decode or is `unread` (the status line and headers
    came: the server answered). An error status's body (`cut`) ends at the bound, and where it cannot be read says
    why in its place (`(body not read: ...)`): the failure is its status's, asked again as that says."""

    def __init__(self, stream: httpx.AsyncByteStream, limit: int, key: str, codings: list[str],
                 read: Callable[[bytes], None] | None = None, cut: bool = False, unread: str | None = None):
        self._stream, self._limit, self._key, self._codings, self._cut = stream, limit, key, codings, cut
        self._inflaters = [_Inflater(coding) for coding in reversed(codings)]
        self._read, self._unread = read, unread
        """Given the whole body, decoded, once it has all come (None: nothing needs it); why it is not read."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for piece in self._pieces():
                yield piece
        except BrokenAnswer as err:
            if not self._cut:
                raise
            yield f" (body not read: {err})".encode()

    async def _pieces(self) -> AsyncIterator[bytes]:
        if self._unread:
            raise BrokenAnswer(self._unread)
        read, pieces = 0, []
        try:
            async for chunk in self._stream:
                piece, past = self._decoded(chunk)
                before, read = read, read + len(piece)
                if (past or read > self._limit) and self._cut:
                    yield piece[:self._limit - before]
                    return
                if past or read > self._limit:
                    raise too_large(self._limit, self._key)
                if self._read:
                    pieces.append(piece)
                yield piece
        except httpx.TransportError as err:
            raise BrokenAnswer(f"the answer broke off: {transport_said(err) or type(err).__name__}") from err
        except httpx.DecodingError as err:
            raise BrokenAnswer(str(err)) from err
        if any(inflater.cut_short for inflater in self._inflaters):
            raise BrokenAnswer(f"the answer broke off: its body ended inside its {', '.join(self._codings)} stream "
                               "(what came was a part of the answer)")
        if self._read:
            self._read(b"".join(pieces))

    def _decoded(self, chunk: bytes) -> tuple[bytes, bool]:
        """`chunk` through each inflater in turn, none giving more than `limit` + 1 bytes at a time; and whether one
        was left holding more (the body decodes past the bound)."""
        for inflater in self._inflaters:
            try:
                chunk = inflater.decompress(chunk, self._limit + 1)
            except zlib.error as err:
                raise httpx.DecodingError(f"the answer's body does not decode as its Content-Encoding "
                                          f"({', '.join(self._codings)}) says: {err}") from None
            if inflater.unconsumed_tail:
                return chunk, True
        return chunk, False

    async def aclose(self) -> None:
        await self._stream.aclose()


REDIRECTS = (301, 302, 303, 307, 308)
"""The statuses that are a redirect whether or not they name an address (httpx's `is_redirect` is every 3xx)."""


NOT_AN_ANSWER = {
    202: "HTTP 202: accepted, not yet answered (Accepted), whose body says how the request stands, not its answer",
    205: "HTTP 205: an answer that has no body (Reset Content), which HTTP says of a 205",
    206: ("HTTP 206: a part of an answer (Partial Content), which only a request for a range is answered with and "
          "benchrun sends none"),
    207: "HTTP 207: the statuses of several resources (Multi-Status), which WebDAV answers with",
    226: ("HTTP 226: an answer's changes since an earlier one (IM Used), which only a request naming A-IM is answered "
          "with and benchrun sends none")}
"""The successes whose body HTTP says is not the request's whole answer (RFC 9110 15.3; WebDAV's 207, RFC 4918 13;
delta encoding's 226, RFC 3229 10.4.1): each a success httpx takes as any, whose JSON may parse. A 204's body is none
by HTTP (the parser reads none), said as an empty body."""


def not_an_answer(status: int) -> str:
    """Why a success of NOT_AN_ANSWER is refused (and asked again)."""
    return f"{NOT_AN_ANSWER[status]}: not taken as a whole answer"


def _redirects(response: httpx.Response) -> bool:
    """Whether `response` is a redirect: a 3xx with a Location, or of a redirect's status with none. Any other 3xx
    (`304 Not Modified`, `300` naming no choice) is an error status, said by the runner as any is."""
    return response.is_redirect and ("Location" in response.headers or response.status_code in REDIRECTS)


def _redirected(response: httpx.Response) -> Redirected:
    """A 3xx answer refused, naming the address it redirects to; one naming none (no Location, or an empty one:
    httpx's `is_redirect` is its status alone) is refused as one, not a KeyError as the sample's error, or a
    preflight's traceback. The address is quoted as a URL the user gives would be (`said_url`): never with a
    credential in it."""
    to = response.headers.get("Location", "").strip()
    if not to:
        header = "an empty Location header" if "Location" in response.headers else "no Location header"
        return Redirected(f"HTTP {response.status_code}: a redirect that names no address ({header}); benchrun "
                          "follows no redirect: point the runner at the server's own address")
    return Redirected(f"HTTP {response.status_code}: redirected to {said_url(to)}; benchrun follows no "
                      "redirect, so that every answer comes from the server the run names: point the runner at the "
                      "address it redirects to")


def bounded(limit: int, key: str) -> dict[str, list[Callable[[Any], Awaitable[None]]]]:
    """httpx `event_hooks` that ask for the codings benchrun reads (not httpx's `br` or `zstd`, which a package
    installed for something else turns on), refuse a redirect, a success that is no whole answer (NOT_AN_ANSWER), an
    answer in another coding or in more than MAX_CODINGS (an error status's body, not read, says so: `_Bounded`), and
    bound every response body to `limit` decoded bytes (the setting `key`)."""

    async def bound(response: httpx.Response) -> None:
        if _redirects(response):
            raise _redirected(response)
        if response.status_code in NOT_AN_ANSWER:
            raise BrokenAnswer(not_an_answer(response.status_code))
        codings = _codings(response.headers.get_list("Content-Encoding", split_commas=True))
        decoded = [c for c in codings if c in WBITS]
        unread = _unread(codings, decoded, key)
        if unread and response.is_success:
            raise BrokenAnswer(unread)
        if decoded or unread:
            del response.headers["Content-Encoding"]
        response.stream = _Bounded(response.stream, limit, key, decoded, _text_read(response),
                                   cut=not response.is_success, unread=unread)

    async def accept(request: httpx.Request) -> None:
        request.headers["Accept-Encoding"] = ACCEPTED

    return {"request": [accept], "response": [bound]}


def _codings(listed: list[str]) -> list[str]:
    """The content codings a Content-Encoding lists, in lower case, its empty elements left out (RFC 9110 5.6.1: a
    recipient ignores them; `, gzip ,` is gzip, which was refused as codings benchrun does not read, said `(, )`)."""
    return [coding for coding in (each.strip().lower() for each in listed) if coding]


def _unread(codings: list[str], decoded: list[str], key: str) -> str | None:
    """Why a body in `codings` is not read: a coding benchrun does not read, or more than MAX_CODINGS; None else."""
    if unread := [c for c in codings if c not in WBITS and c != "identity"]:
        return (f"the answer's body is in a content coding benchrun does not read within {key} ({', '.join(unread)}); "
                f"it asks for {ACCEPTED}")
    if len(decoded) > MAX_CODINGS:
        return (f"the answer's body is in {len(decoded)} content codings, one over another; benchrun undoes at most "
                f"{MAX_CODINGS}")
    return None


def _text_read(response: httpx.Response) -> Callable[[bytes], None] | None:
    """How an answer's text is to be read, once its body has come: in the charset it declares where that reads it,
    else as UTF-8, its bytes that are not replaced (`reads_as_text`); None where it declares none, or UTF-8. A
    Content-Type naming no charset is not parsed: parsing one cost every answer 4 µs."""
    if "charset" not in response.headers.get("Content-Type", "").lower():
        return None
    charset = response.charset_encoding
    if charset is None:
        return None
    if _utf8(charset):
        response.encoding = "utf-8"  # so httpx does not look the name up again (a NUL in it raised ValueError there)
        return None

    def read(body: bytes) -> None:
        if not reads_as_text(body, charset):
            response.encoding = "utf-8"
    return read


def _utf8(charset: str) -> bool:
    """Whether a body in `charset` is read as UTF-8: it names UTF-8, or a name Python does not know (httpx reads such
    a body as UTF-8), or none Python can look up (a NUL in it, as RFC 2231's `charset*=utf-8''a%00b` spells one:
    httpx's own lookup raised ValueError, the sample's error `embedded null character`, a 500's status lost)."""
    try:
        return codecs.lookup(charset).name == "utf-8"
    except (LookupError, ValueError):
        return True


def reads_as_text(body: bytes, charset: str) -> bool:
    """Whether `body` reads as text in `charset`, as httpx reads it (its decoder, bytes that are no text replaced). Not
    where the charset names a codec of Python's that is no text encoding (`zlib`, `hex`, `rot13`: bytes.decode takes
    none), never run; nor where its decoder fails on the body, for the charset lies (`utf-16` on UTF-8, which has no
    BOM) or replaces nothing (`idna`): through each, httpx read an error's text into a TypeError, an AssertionError or
    a UnicodeError, `charset=zlib` inflating the body without bound first."""
    try:
        b"a".decode(charset)
    except LookupError:
        return False
    except UnicodeError:  # a text encoding in which one byte is no text (UTF-16)
        pass
    try:
        decoder = codecs.getincrementaldecoder(charset)(errors="replace")
        return isinstance(decoder.decode(body) + decoder.decode(b"", True), str)
    except (ValueError, LookupError, TypeError, AssertionError):  # UnicodeError is a ValueError
        return False


def no_cookies() -> CookieJar:
    """A cookie jar that takes no cookie (its policy allows no domain): a server's Set-Cookie never rides on a later
    request, which the archive would not hold, and a server setting a new one with every answer does not grow every
    later request and benchrun's memory by all it set before."""
    return CookieJar(DefaultCookiePolicy(allowed_domains=[]))


def client_options(config: RunnerConfig) -> dict[str, Any]:
    """The httpx client options of a runner: `concurrency` connections kept alive (a new transport: no response is
    taken for a request it did not answer), bodies bounded, no redirect followed, no cookie kept, no deadline of
    httpx's own (the executor's timeout_s holds each request, from connecting to the last byte)."""
    limits = httpx.Limits(max_connections=config.concurrency, max_keepalive_connections=None)
    hooks = bounded(config.max_response_bytes, config.key("max_response_bytes"))
    return {"timeout": None, "event_hooks": hooks, "follow_redirects": False, "cookies": no_cookies(),
            "transport": Transport(limits)}

"""What a server says of a failure: its status and message, or an error in a 200's body (an OpenAI-compatible
server's, Ollama's or a proxy's before it), and whether another try may be answered."""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

import httpx

from benchrun.core.records import ENDED_IN_ERROR
from benchrun.core.secrets import said_urls
from benchrun.core.text import NESTED, server_json
from benchrun.execute.boundary import nests_deeper
from benchrun.execute.runners.base import json_kind
from benchrun.execute.runners.statuses import SPENT, defined, transient, undefined

BUSY_SAID = re.compile(r"(?i)overload|rate.?limit|too many requests|temporar|unavailable|capacity|try again|"
                       r"timed? ?out|timeout|currently loading|server.?error|internal.?error")
"""What an error object naming no status says of a server busy or failing of itself, as providers name it (OpenAI's
`rate_limit_exceeded`, `server_error`; Anthropic's `overloaded_error`; TGI's `overloaded`; Hugging Face's `currently
loading`): another try may be answered."""


class Said(NamedTuple):
    """A failure as the server said it: whether another try may be answered, and the line saying it."""

    retry: bool
    line: str


def status_said(status: int, message: str) -> Said:
    """An HTTP error status and its message (`HTTP 503: ...`); one of a status HTTP does not define (`base.defined`)
    said so, not asked again."""
    if not defined(status):
        return Said(False, f"{undefined(status)}: {message}")
    return Said(transient(status, message), f"HTTP {status}: {message}")


def server_message(body: bytes, charset: str | None, reason: str) -> str:
    """What an error body says, read from its bytes as an answer is: a JSON body's `error` (its `message` or `detail`:
    OpenAI's, vLLM's, llama.cpp's, FastAPI's and Ollama's shapes), else the body's text (`body_text`); `reason`, the
    status's phrase, for a body that says nothing (`_unsaid`)."""
    try:
        said = server_json(body)
    except (ValueError, RecursionError):
        said = None
    error = said.get("error", said) if isinstance(said, dict) else said
    if isinstance(error, dict):
        error = error.get("message") or error.get("detail") or error
    if error is None or (not _finite(error) and len(body) <= UNHELD_QUOTED):
        return body_text(body, charset).strip() or _unsaid(reason)
    return quoted(error).strip() or _unsaid(reason)


def reason_of(response: httpx.Response) -> str:
    """The status line's phrase as the server wrote it: as UTF-8 where it is, else as Latin-1 (the obs-text HTTP
    allows there); httpx's `reason_phrase` leaves out each byte past ASCII (`400 B\xe4d` said `HTTP 400: Bd`)."""
    raw = response.extensions.get("reason_phrase")
    if not isinstance(raw, bytes):
        return response.reason_phrase
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _unsaid(reason: str) -> str:
    """What is said of an error body that says nothing: the status's phrase, or where the status line gave none
    (`HTTP/1.1 500`), that the body is empty (`HTTP 500:` said nothing at all)."""
    return reason.strip() or "an empty body"


UNHELD_QUOTED = 200
"""The longest body quoted as its own text where what it says holds a number too large to hold (`1e999`, an integer
of more digits than Python converts), which JSON written again would say as a word the server did not write."""


def _finite(said: Any) -> bool:
    """Whether `said` holds no number too large to hold (read as an infinity)."""
    try:
        json.dumps(said, allow_nan=False, default=str)
    except ValueError:
        return False
    except RecursionError:  # nested too deep to look through: said as such by `quoted`
        pass
    return True


def quoted(said: Any) -> str:
    """What a server said of a failure, as an error quotes it: a string as it is; FastAPI's list of problems (each a
    `loc` and a `msg`) as `body.messages: field required; ...`; anything else as its JSON, not a Python repr (JSON
    nested deeper than QUOTED_DEPTH as what it is: `a list nested too deep to quote`; one holding a number too large to
    hold as what it is, UNHELD); a URL in it holding a
    credential as `http://...` (`said_urls`)."""
    if isinstance(said, str):
        return said_urls(said)
    if isinstance(said, list) and said and all(isinstance(p, dict) and isinstance(p.get("msg"), str) for p in said):
        return said_urls("; ".join(_problem(p) for p in said))
    if nests_deeper(said, QUOTED_DEPTH):
        return f"{json_kind(said)} nested too deep to quote"
    if not _finite(said):
        return UNHELD if isinstance(said, float) else f"{json_kind(said)} holding {UNHELD}"
    return said_urls(json.dumps(said, ensure_ascii=False, default=str))


UNHELD = "a number too large to hold"
"""What a number of an error is said as where it is too large to hold (`1e999`): JSON writes it `Infinity`, a word
the server did not write; its own text is quoted where the body is short (`server_message`)."""


QUOTED_DEPTH = 32
"""The deepest JSON an error quotes (a real server's error nests two or three levels): deeper, written, ran out of
Python's stack, at a depth that depends on the runner reading it."""


def _problem(problem: dict[str, Any]) -> str:
    """One of FastAPI's problems: where it is (`loc`, its parts joined by dots) and its message."""
    loc = problem.get("loc")
    where = ".".join(map(str, loc)) if isinstance(loc, list) else ""
    return f"{where}: {problem['msg']}" if where else problem["msg"]


def body_text(body: bytes, charset: str | None) -> str:
    """A body's text: UTF-8 where it is UTF-8 (as an answer's JSON is read, whatever charset it declares), else in the
    charset it declares where that reads it, else UTF-8 with its odd bytes replaced; a body more than a tenth of which
    is control characters or bytes no charset reads is said to be no text (`a body of 500 bytes that is not text`),
    not quoted as characters it does not hold; a URL in it holding a credential as `http://...` (`said_urls`)."""
    for encoding, errors in (("utf-8-sig", "strict"), (charset, "strict"), ("utf-8-sig", "replace")):
        try:
            text = body.decode(encoding, errors) if encoding else None
        except (LookupError, ValueError, TypeError, AssertionError):  # UnicodeError is a ValueError
            continue
        if text is not None and len(NOT_TEXT.findall(text)) * 10 <= len(text):
            return said_urls(text)
    return f"a body of {len(body)} bytes that is not text"


def not_json(err: BaseException, body: bytes, charset: str | None) -> str:
    """A body that should be an answer and is no JSON, as an error says it: why, and its text (`body_text`), or that
    it is empty (an Ollama answer said only `Expecting value: line 1 column 1 (char 0)` of an empty body); JSON nested
    deeper than Python can follow said so, not as `not JSON` with its brackets quoted."""
    if isinstance(err, RecursionError):
        return f"JSON {NESTED}"
    return f"not JSON ({type(err).__name__}: {err}): {body_text(body, charset).strip() or 'an empty body'}"


NOT_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffd]")
"""A control character no text holds (white space aside), or a byte read as no character."""


def error_said(body: Any) -> Said | None:
    """What a 200 that is no answer says: a body with an `error`, beside choices or none (the server says the request
    failed, so what it gives beside is no whole answer of the model, as Ollama's is not: `HTTP 200 saying 503: ...`
    where its `code` is a status, as OpenRouter answers an error met once a request has begun; `HTTP 200 saying
    insufficient_quota: ...` where it is a name; `HTTP 200 saying an error: ...` where it names none), or a first
    choice that ended in an error (`finish_reason: "error"`, with its `error` object: OpenRouter's for one met while
    the answer was made, whose text is no answer of the model); None for an answer."""
    if not isinstance(body, dict):
        return None
    if (error := said_error(body)) is not None:
        return error_in_200(error)
    choices = body.get("choices")
    if not choices:
        return None
    choice = choices[0] if isinstance(choices, list) else None
    if not isinstance(choice, dict) or choice.get("finish_reason") != ENDED_IN_ERROR:
        return None
    retry, code, message = _said(choice.get("error"))
    return Said(retry, f"HTTP 200, the answer ending in an error{'' if code is None else f' saying {code}'}: {message}")


def said_error(body: dict[str, Any]) -> Any:
    """A body's `error` where it says one: not null, false, 0 or empty (`""`, `{}`, `[]`), as a proxy writes where
    there is none; None otherwise."""
    error = body.get("error")
    return error if (error.strip() if isinstance(error, str) else error) else None


def error_in_200(error: Any) -> Said:
    """A 200 whose body is an error (an object, or a string) in place of an answer: `HTTP 200 saying 503: ...` where
    its `code` is a status, `HTTP 200 saying insufficient_quota: ...` where it is a name, `HTTP 200 saying an error:
    ...` where it names none."""
    retry, code, message = _said(error)
    return Said(retry, f"HTTP 200 saying {code or 'an error'}: {message}")


def _said(error: Any) -> tuple[bool, str | int | None, str]:
    """An error object (or an error given as a string) as whether it is worth another try, its status or name, and its
    message (what it says, `quoted`: the whole object where it has no message, `{"code": 0}`): a status as
    `transient` reads it; a name or message given by BUSY_SAID, unless it says a plan's limit is spent (SPENT)."""
    if not isinstance(error, dict):
        message = "no message" if error is None else quoted(error).strip()
        return _busy(message), None, message
    code, given = error.get("code"), quoted(error.get("message") or "").strip()
    message = given or quoted(error)
    if (status := _status(code)) is not None:
        return transient(status, given), status, message
    name = next((said for said in (code, error.get("type")) if isinstance(said, str) and said.strip()), None)
    return _busy(f"{name or ''} {given}"), name, message


def _status(code: Any) -> int | None:
    """An error object's `code` as the HTTP error status it names: a number from 400 to 599, or its digits as a string
    (LiteLLM's `"code": "429"`); None for a name or anything else."""
    if isinstance(code, str) and len(code) == 3 and code.isascii() and code.isdigit():
        code = int(code)
    return code if type(code) is int and 400 <= code <= 599 else None


def _busy(said: str) -> bool:
    return bool(BUSY_SAID.search(said)) and not SPENT.search(said)


STREAMS = {"text/event-stream": "an event stream", "application/x-ndjson": "JSON lines"}
"""The media types of an answer streamed in parts (an OpenAI-compatible server's, Ollama's), as a stream is named."""
EVENTS = re.compile(rb"\A(?:\xef\xbb\xbf)?\s*(?::|(?:data|event|id|retry)[:\r\n])")
"""A body that opens as an event stream: any of its fields, or a comment (`: OPENROUTER PROCESSING`, a keep-alive
`:ok`), after a BOM (which an event stream may open with)."""


def streamed(body: bytes, content_type: str) -> str | None:
    """Why a 200 that is not JSON is no answer when it is an answer streamed in parts (its media type says so, or its
    body is events or JSON lines, relabelled by a proxy) though benchrun asks for one whole answer: a server, or a
    proxy before it, set to stream every answer. Its parts are not put together: a stream cut short reads as a whole
    answer. None otherwise."""
    kind = STREAMS.get(content_type.split(";")[0].strip().lower())
    if kind is None and EVENTS.match(body):
        kind = STREAMS["text/event-stream"]
    elif kind is None and _json_lines(body):
        kind = STREAMS["application/x-ndjson"]
    if kind is None:
        return None
    return (f"the server streamed the answer in parts ({kind}) where one whole answer was asked: set the server (or "
            "the proxy before it) not to stream")


def _json_lines(body: bytes) -> bool:
    """Whether `body` is JSON lines: its first two lines each a JSON object (a JSON object followed by other text is
    not; its integers read as floats, which Python reads of any number of digits)."""
    lines = body.strip().split(b"\n", 2)
    try:
        return len(lines) > 1 and all(isinstance(json.loads(line, parse_int=float), dict) for line in lines[:2])
    except (ValueError, RecursionError):
        return False

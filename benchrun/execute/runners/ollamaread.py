"""What benchrun reads of an Ollama server's answers before the official client reads them (an httpx response hook):
each key given once, what is not of the API's type left out, an error's message read from its bytes, an error in a
200 refused as that error, tool calls of another shape set aside."""

from __future__ import annotations

import json
from contextvars import ContextVar
from typing import Any, AsyncIterator, Awaitable, Callable, Mapping

import httpx

from benchrun.core.officialclient import ollama_package
from benchrun.core.text import NotJSON, server_reading
from benchrun.execute.runners.base import BusySaid, Refused, json_count, json_kind
from benchrun.execute.runners.errorbody import error_in_200, not_json, reason_of, said_error, server_message, streamed

ollama = ollama_package()

DURATIONS = ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration")
_MEASURED = ("prompt_eval_count", "eval_count", *DURATIONS)
"""The fields of Ollama's chat answer that are what the server measured: JSON integers, when it gives them."""


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _flag(value: Any) -> bool | None:
    """A JSON true or false (the official client's lax reader takes `"false"`, `0`, `"no"` for false, so an answer
    whose `done` was none of Ollama's was refused as `not done (done: false)`)."""
    return value if type(value) is bool else None


def _unread(value: Any) -> None:
    """What benchrun reads nothing of (a chat answer's logprobs, its message's images): never read, so never the
    reason an answer is refused for its shape."""


_TYPED: dict[str, Callable[[Any], Any]] = {**{key: json_count for key in _MEASURED}, "done_reason": _string,
                                           "model": _string, "created_at": _string, "logprobs": _unread,
                                           "done": _flag}
"""What Ollama's chat answer says of itself besides its text, each as its API gives it (else None: not kept): a served
model's name or a time given as a number, logprobs of any shape, cost the answer itself ('not Ollama's chat answer: 1
validation error for ChatResponse created_at'), where an OpenAI-compatible answer is kept."""
_APART: dict[str, Callable[[Any], Any]] = {"thinking": _string, "tool_name": _string, "images": _unread}
"""What a chat answer's message says apart from its text, as its API gives it (a string; else not kept, as an
OpenAI-compatible answer's reasoning of another type is not): never the reason the answer itself is refused."""
SET_ASIDE: ContextVar[list[Any] | None] = ContextVar("benchrun_ollama_set_aside", default=None)
"""The tool calls of the chat answer read in this task (`OllamaRunner.complete`) that the official client does not
read (`_apart`): set aside by the response hook, kept as they came."""
_LISTED: dict[str, Callable[[Any], Any]] = {"size": json_count, "modified_at": _unread}
"""What the model's entry in Ollama's model list says as a number (run.json's model size), a JSON integer else not
kept; and its time, never read."""
_SHOWN: dict[str, Callable[[Any], Any]] = {"modified_at": _unread, "license": _unread, "modelfile": _unread,
                                           "details": _unread}
"""What Ollama's /api/show says that run.json keeps nothing of (the model's details are its list entry's): never read,
so never the reason the run is refused."""
_OBJECTS = ("/api/chat", "/api/tags", "/api/show", "/api/ps")
"""The paths whose answer the official client reads, each a JSON object (/api/version's benchrun reads itself)."""


def as_typed_hook(model: str) -> Callable[[httpx.Response], Awaitable[None]]:
    """An httpx response hook of a runner of `model`: an answer's body (bounded already) giving a key twice is refused
    (a digest or a chat's text given twice, which readers resolve each their own way); and a chat answer's is read
    with each count and duration that is not a JSON integer, and a done_reason that is not a string, left out before
    the official client reads it into its lax model (which takes `true` as 1, `"7"` as 7 and `7.0` as 7, and refuses
    the whole answer for a count of 1.5 or a done_reason of 5): not reported, as an OpenAI-compatible answer's are
    not; so is a model list entry's size that is not a JSON integer, and of another model's entry all but its name."""

    async def hook(response: httpx.Response) -> None:
        if response.is_success:
            response.stream = _AsTyped(response.stream, response.request.url.path, response.headers, model,
                                       response.charset_encoding)
        else:
            response.stream = _ErrorSaid(response.stream, response.charset_encoding, reason_of(response))
            response.encoding = "utf-8"
    return hook


class _ErrorSaid(httpx.AsyncByteStream):
    """An error answer's body as the official client takes its message (`{"error": ...}`), the message read from the
    body's bytes as the OpenAI-compatible runner reads it (`errorbody.server_message`): not the client's reading of
    the body's text in the charset it declares, a body that is no text as U+FFFD, nor JSON that is no object as
    the client's AttributeError."""

    def __init__(self, stream: httpx.AsyncByteStream, charset: str | None, reason: str):
        self._stream, self._charset, self._reason = stream, charset, reason

    async def __aiter__(self) -> AsyncIterator[bytes]:
        body = b"".join([chunk async for chunk in self._stream])
        yield json.dumps({"error": server_message(body, self._charset, self._reason)}).encode()

    async def aclose(self) -> None:
        await self._stream.aclose()


class _AsTyped(httpx.AsyncByteStream):
    """An answer's body, whole, each key given once, without what it says that is not of the API's type."""

    def __init__(self, stream: httpx.AsyncByteStream, path: str, headers: Mapping[str, str], model: str,
                 charset: str | None):
        self._stream, self._path, self._headers, self._model = stream, path, headers, model
        self._charset = charset

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield _as_typed(b"".join([chunk async for chunk in self._stream]), self._path, self._headers, self._model,
                        self._charset)

    async def aclose(self) -> None:
        await self._stream.aclose()


def _as_typed(body: bytes, path: str, headers: Mapping[str, str], model: str, charset: str | None) -> bytes:
    """`body` as it came (as read where an integer had more digits than Python converts, `server_reading`, for which
    the official client's reader refused the whole answer), or its JSON without a chat answer's field of `_TYPED` (its
    message's of `_APART`), a field of `_SHOWN`, or `model`'s list entry's of `_LISTED`, that is not of the API's type,
    and each other model's entry as its name alone (`_listed`); NotJSON (not Ollama's answer) when it gives a key
    twice, or for an answer that is no JSON, saying what came (`not_json`: an empty body); TypeError for an
    answer the client reads that is no JSON object (in its words, not the client's `ListResponse() argument after **
    must be a mapping`); Refused when it is an answer streamed in parts
    (`errorbody.streamed`, its Content-Type among the answer's `headers` saying so)."""
    try:
        answer, reread = server_reading(body)
    except NotJSON:
        raise
    except (ValueError, RecursionError) as err:  # not JSON: a stream of answers, or an answer saying what came
        if said := streamed(body, headers.get("Content-Type", "")):
            raise Refused(said) from None
        raise NotJSON(not_json(err, body, charset)) from None
    if not isinstance(answer, dict) and path.endswith(_OBJECTS):
        raise TypeError(f"the answer is {json_kind(answer)}, not a JSON object")
    if not isinstance(answer, dict):
        return json.dumps(answer).encode() if reread else body
    _refuse_error(answer, headers)
    typed = answer
    if path.endswith("/api/chat"):
        typed = _without_odd(answer, _TYPED)
        message = typed.get("message")
        if isinstance(message, dict) and (apart := _apart(message)) is not message:
            typed = {**typed, "message": apart}
    elif path.endswith("/api/tags") and isinstance(models := answer.get("models"), list):
        typed = {**answer, "models": [listed for entry in models if (listed := _listed(entry, model)) is not None]}
    elif path.endswith("/api/show"):
        typed = _without_odd(answer, _SHOWN)
    elif path.endswith("/api/ps") and isinstance(models := answer.get("models"), list):
        typed = {**answer, "models": [_loaded(entry) for entry in models if isinstance(entry, dict)]}
    return body if typed is answer and not reread else json.dumps(typed).encode()


def _apart(message: dict[str, Any]) -> dict[str, Any]:
    """A chat answer's message without what it says apart from its text that is not of the API's type (`_APART`), and
    without tool calls of another shape than the official client reads (arguments given as a JSON string, as an
    OpenAI-compatible answer gives them): those are set aside (`SET_ASIDE`), kept as they came, never the reason
    the answer itself is refused."""
    apart = _without_odd(message, _APART)
    calls = apart.get("tool_calls")
    if calls is None or _client_reads(calls):
        return apart
    if (aside := SET_ASIDE.get()) is not None:
        aside.append(calls)
    return {key: value for key, value in apart.items() if key != "tool_calls"}


def _client_reads(calls: Any) -> bool:
    """Whether tool calls are of the shape the official client reads: a list of calls, each a function with a string
    name and an object of arguments."""
    if not isinstance(calls, list):
        return False
    functions = [call.get("function") if isinstance(call, dict) else None for call in calls]
    return all(isinstance(f, dict) and isinstance(f.get("name"), str) and isinstance(f.get("arguments"), dict)
               for f in functions)


def _listed(entry: Any, model: str) -> dict[str, Any] | None:
    """An entry of the model list as read: `model`'s (its name, or with `:latest`) without what is not of its type
    (`_LISTED`); another model's as its name alone, for nothing else of it is read (another model's odd time, digest or
    details refused the run, saying the server was not Ollama's); none for one naming no model by a string."""
    if not isinstance(entry, dict) or not isinstance(name := entry.get("model"), str):
        return None
    return _without_odd(entry, _LISTED) if name in (model, f"{model}:latest") else {"model": name}


def _loaded(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry of the models loaded (/api/ps) as read: its names, and its context_length where a JSON integer
    (`json_count`: not `"8192"` or `true`, which the client's lax model takes); nothing else of it is read."""
    read = {key: entry[key] for key in ("model", "name") if isinstance(entry.get(key), str)}
    length = json_count(entry.get("context_length"))
    return read if length is None else {**read, "context_length": length}


def _refuse_error(answer: dict[str, Any], headers: Mapping[str, str]) -> None:
    """An answer of 200 that holds an error (a proxy before Ollama answering so, as Ollama's stream does; no answer of
    Ollama's API has an `error`) as that error, asked again when it says the server is busy
    (`errorbody.error_in_200`, its Retry-After heeded: BusySaid keeps the answer's `headers`): not a malformed answer,
    nor at the preflight a model list or a model's details."""
    if (error := said_error(answer)) is not None:
        said = error_in_200(error)
        failure = BusySaid(said.line, headers) if said.retry else Refused(said.line)
        raise failure from ollama.ResponseError(said.line, 200)


def _without_odd(answer: dict[str, Any], typed: dict[str, Callable[[Any], Any]]) -> dict[str, Any]:
    """`answer` itself, or a copy without each field of `typed` that is given and not of its type."""
    odd = {key for key, kept in typed.items() if answer.get(key) is not None and kept(answer[key]) is None}
    return {k: v for k, v in answer.items() if k not in odd} if odd else answer

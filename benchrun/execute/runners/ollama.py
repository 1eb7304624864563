"""The Ollama runner: the official `ollama` AsyncClient against `runner.host`."""

from __future__ import annotations

import asyncio
import json
from contextvars import ContextVar
from typing import Any, AsyncIterator, Awaitable, Callable, Mapping

import httpx

from benchrun.core.errors import RunnerError
from benchrun.core.manifest import Message
from benchrun.core.officialclient import ollama_package
from benchrun.core.recordvalues import same_model_name
from benchrun.core.secrets import SECRETS
from benchrun.core.serverurls import http_url
from benchrun.core.settings import OLLAMA_KEY_ENV, OllamaConfig
from benchrun.core.text import NotJSON, one_line, server_json, writable_data
from benchrun.execute.boundary import TooLarge, described
from benchrun.execute.runners.base import (
    BrokenAnswer,
    Completion,
    Refused,
    Retryable,
    Unreachable,
    json_count,
    json_kind,
    resolvable,
    there_unanswered,
    tools_called,
    transport_failure,
    with_seed,
)
from benchrun.execute.runners.errorbody import error_in_200, said_error, server_message, status_said, streamed
from benchrun.execute.runners.http import client_options

ollama = ollama_package()

_DURATIONS = ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration")
_MEASURED = ("prompt_eval_count", "eval_count", *_DURATIONS)
"""The fields of Ollama's chat answer that are what the server measured: JSON integers, when it gives them."""


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _unread(value: Any) -> None:
    """What benchrun reads nothing of (a chat answer's logprobs, its message's images): never read, so never the
    reason an answer is refused for its shape."""


_TYPED: dict[str, Callable[[Any], Any]] = {**{key: json_count for key in _MEASURED}, "done_reason": _string,
                                           "model": _string, "created_at": _string, "logprobs": _unread}
"""What Ollama's chat answer says of itself besides its text, each as its API gives it (else None: not kept): a served
model's name or a time given as a number, logprobs of any shape, cost the answer itself ('not Ollama's chat answer: 1
validation error for ChatResponse created_at'), where an OpenAI-compatible answer is kept."""
_APART: dict[str, Callable[[Any], Any]] = {"thinking": _string, "tool_name": _string, "images": _unread}
"""What a chat answer's message says apart from its text, as its API gives it (a string; else not kept, as an
OpenAI-compatible answer's reasoning of another type is not): never the reason the answer itself is refused."""
_SET_ASIDE: ContextVar[list[Any] | None] = ContextVar("benchrun_ollama_set_aside", default=None)
"""The tool calls of the chat answer read in this task (`OllamaRunner.complete`) that the official client does not
read (`_apart`): set aside by the response hook, kept as they came."""
_LISTED: dict[str, Callable[[Any], Any]] = {"size": json_count, "modified_at": _unread}
"""What the model's entry in Ollama's model list says as a number (run.json's model size), a JSON integer else not
kept; and its time, never read."""
_SHOWN: dict[str, Callable[[Any], Any]] = {"modified_at": _unread, "license": _unread, "modelfile": _unread}
"""What Ollama's /api/show says that run.json keeps nothing of: never read, so never the reason the run is refused."""


class OllamaRunner:
    """One model on one Ollama server; options, keep_alive and think sent with every request."""

    def __init__(self, config: OllamaConfig):
        self.config = config
        self.host = http_url(config.host)
        self.model = config.model
        self._key = SECRETS.register_key(OLLAMA_KEY_ENV, None)  # the official client sends it as a bearer token
        self.client = ollama.AsyncClient(host=self.host, **self._http())
        self._request: dict[str, Any] = {"options": config.options}
        self._request.update({k: v for k in ("keep_alive", "think") if (v := getattr(config, k)) is not None})

    def _http(self) -> dict[str, Any]:
        options = client_options(self.config)
        options["event_hooks"]["response"].append(_as_typed_hook(self.model))
        return options

    async def identify(self) -> dict[str, Any]:
        """Digest and details from the model list, show()'s parameters/template/capabilities, server version."""
        await resolvable(self.host, self.config.key("host"))
        listed = await self._listed_model()
        shown = await self._call(self.client.show(listed.model))
        self._can_answer(listed.model, list(shown.capabilities or []))
        version = await self._call(self._version())
        return described({
            "name": listed.model, "digest": listed.digest, "size": listed.size,
            "details": listed.details.model_dump(exclude_none=True) if listed.details else {},
            "parameters": shown.parameters, "template": shown.template,
            "capabilities": list(shown.capabilities or []), "model_info": dict(shown.modelinfo or {}),
            "server_version": version,
        }, f"Ollama at {self.host}", self.config.key("host"))

    def _can_answer(self, name: str, capabilities: list[str]) -> None:
        """RunnerError when the server says (`capabilities`, given by Ollama 0.6.4 on) that the model cannot do what
        every request asks: chat (an embedding model), or think when runner.think asks it to. Each request would be
        refused (`does not support chat`), and the run stopped as a broken setup that no resume can mend."""
        said = one_line(", ".join(map(str, capabilities)), 160)
        if capabilities and "completion" not in capabilities:
            chat = f"pick a chat model for {self.config.key('model')}"
            raise RunnerError(f"Ollama at {self.host} says model '{name}' cannot chat (it can: {said}); "
                              f"{self._mend('chats', chat)}")
        if capabilities and self.config.think and "thinking" not in capabilities:
            think = self.config.key("think")
            raise RunnerError(f"Ollama at {self.host} says model '{name}' does not think (it can: {said}), and "
                              f"{think}={str(self.config.think).lower()} asks it to; "
                              f"{self._mend('thinks', f'unset {think}, or pick a thinking model')}")

    def _mend(self, can: str, otherwise: str) -> str:
        """The advice when the model cannot do what the run asks: `otherwise` (keys to change) for a new run; for a
        command asking a run again (resume, retry), which takes only the server, a server where the model `can`."""
        if self.config.asked_again:
            return f"give {self.config.key('host')} a server where '{self.model}' {can}"
        return otherwise

    async def digests_now(self) -> dict[str, str | None]:
        """The digest as `identify` keeps it (writable), so that one the server writes oddly compares as itself."""
        return writable_data({self.host: (await self._listed_model()).digest})

    async def _version(self) -> Any:
        """The server's version, asked as the official client asks the rest (which has no call for it): with
        $OLLAMA_API_KEY as its bearer token, so a server that needs the key answers this too."""
        key = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        async with httpx.AsyncClient(base_url=self.host, headers=key, **self._http()) as http:
            response = await http.get("/api/version")
        if not response.is_success:  # its body's error, as the official client reads one (`_ErrorSaid`)
            raise ollama.ResponseError(response.text, response.status_code)
        answer = response.json()
        return answer.get("version") if isinstance(answer, dict) else None

    async def _listed_model(self) -> Any:
        """The model's entry in the server's list (its name as given, else with `:latest`); a list that gives it more
        than once with different digests is refused, for which of them answers cannot be told."""
        models = (await self._call(self.client.list())).models
        named = [e for e in models if e.model == self.model] or [e for e in models if e.model == f"{self.model}:latest"]
        if len({entry.digest for entry in named}) > 1:
            digests = ", ".join(sorted(one_line(str(entry.digest), 80) for entry in named))
            raise RunnerError(f"Ollama at {self.host} lists model '{named[0].model}' {len(named)} times with different "
                              f"digests ({digests}): which one answers cannot be told; remove the copies with "
                              f"`ollama rm` and pull it again")
        if named:
            return named[0]
        have = ", ".join(sorted(m.model for m in models if m.model)) or "none"  # an entry may name no model
        other = "" if self.config.asked_again else f" or pick another {self.config.key('model')}"
        raise RunnerError(f"model '{self.model}' is not pulled on {self.host} (it has: {have}); "
                          f"run `ollama pull {self.model}`{other}")

    async def _call(self, awaitable: Any) -> Any:
        """One preflight request within timeout_s; what goes wrong is one line with the fix."""
        try:
            return await asyncio.wait_for(awaitable, self.config.timeout_s)
        except asyncio.TimeoutError:
            raise RunnerError(f"Ollama at {self.host} did not answer the preflight within {self.config.timeout_s:g} s "
                              f"({self.config.key('timeout_s')})") from None
        except (ConnectionError, httpx.TransportError) as err:
            if isinstance(failure := transport_failure(err), OSError):
                raise failure from None
            if not isinstance(failure, Unreachable):
                raise self._not_ollama(err) from None
            if there := await there_unanswered(err, self.host, self.config.key("host"), self.config.timeout_s):
                raise RunnerError(there) from None
            raise RunnerError(f"cannot reach Ollama at {self.host} ({type(err).__name__}); start it with "
                              f"`ollama serve`, or point {self.config.key('host')} at a running server") from None
        except (ollama.ResponseError, Refused) as err:
            if _status(err) == 404:  # no such path: Ollama answers every call of its preflight
                raise self._not_ollama(err) from None
            if _status(err) in (401, 403):  # a proxy before Ollama that checks the key the client sends
                raise RunnerError(self._key_refused(_status(err))) from None
            raise RunnerError(f"Ollama at {self.host} refused the preflight: {_refusal(err)}") from None
        except (ValueError, TypeError, RecursionError, TooLarge, BrokenAnswer) as err:  # not Ollama's answer
            raise self._not_ollama(err) from None
        except Retryable as err:  # a 200 saying the server is busy (`_refuse_error`)
            raise RunnerError(f"Ollama at {self.host} did not answer the preflight ({err})") from None

    def _key_refused(self, status: int) -> str:
        """Why the server said 401/403 to the preflight, naming the variable the key is read from, never the key."""
        if self._key is None:
            return (f"Ollama at {self.host} wants an API key ({status}) and ${OLLAMA_KEY_ENV} is not set; export it "
                    f"(the official client sends it as a bearer token), or point {self.config.key('host')} at a "
                    "server that needs none")
        return (f"Ollama at {self.host} refused the API key from ${OLLAMA_KEY_ENV} ({status}); check the key, or "
                f"point {self.config.key('host')} at a server that takes it")

    def _not_ollama(self, err: BaseException) -> RunnerError:
        """A preflight answer that is not Ollama's: not HTTP, too large, not JSON, or not the shape of its answer."""
        return RunnerError(f"Ollama at {self.host} answered the preflight with what is not Ollama's answer "
                           f"({type(err).__name__}: {_said(err)}); {self.config.key('host')} must name an Ollama server")

    async def complete(self, messages: list[Message], schema: dict[str, Any], seed: int | None = None) -> Completion:
        request = self._request if seed is None else {**self._request, "options": with_seed(self.config.options, seed)}
        aside: list[Any] = []
        token = _SET_ASIDE.set(aside)
        try:
            response = await self.client.chat(model=self.model, messages=messages, format=schema, **request)
        except ollama.ResponseError as err:  # a 401 or 403 names the key's variable and the fix, as at the preflight
            message = self._key_refused(err.status_code) if err.status_code in (401, 403) else str(err.error)
            said = status_said(err.status_code, message)
            raise (Retryable if said.retry else Refused)(said.line) from err
        except (ConnectionError, httpx.TransportError) as err:
            raise transport_failure(err) from err
        except (ValueError, TypeError, RecursionError) as err:  # not JSON, or not the shape of Ollama's answer
            raise Refused(f"not Ollama's chat answer: {_said(err)}") from err
        finally:
            _SET_ASIDE.reset(token)
        if response.done is False:
            raise BrokenAnswer("the answer says it is not done (done: false): a part of an answer, not taken as one")
        return Completion.model_construct(  # from the client's validated ChatResponse: no second validation
            text=response.message.content or "", done_reason=response.done_reason,
            extra={**_thought(response.message, aside), **_served(response.model, self.model)},
            prompt_tokens=response.prompt_eval_count, completion_tokens=response.eval_count,
            durations_ns={name.removesuffix("_duration"): getattr(response, name)
                          for name in _DURATIONS if getattr(response, name) is not None},
        )

    def request_settings(self) -> dict[str, Any]:
        return {"model": self.model, **self._request}

    def format_sent(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        return schema

    async def aclose(self) -> None:
        await self.client.close()

    def public_config(self) -> dict[str, Any]:
        return {**self.config.model_dump(mode="json"), "host": self.host}


def _as_typed_hook(model: str) -> Callable[[httpx.Response], Awaitable[None]]:
    """An httpx response hook of a runner of `model`: an answer's body (bounded already) giving a key twice is refused
    (a digest or a chat's text given twice, which readers resolve each their own way); and a chat answer's is read
    with each count and duration that is not a JSON integer, and a done_reason that is not a string, left out before
    the official client reads it into its lax model (which takes `true` as 1, `"7"` as 7 and `7.0` as 7, and refuses
    the whole answer for a count of 1.5 or a done_reason of 5): not reported, as an OpenAI-compatible answer's are
    not; so is a model list entry's size that is not a JSON integer, and of another model's entry all but its name."""

    async def hook(response: httpx.Response) -> None:
        if response.is_success:
            response.stream = _AsTyped(response.stream, response.request.url.path,
                                       response.headers.get("Content-Type", ""), model)
        else:
            response.stream = _ErrorSaid(response.stream, response.charset_encoding, response.reason_phrase)
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

    def __init__(self, stream: httpx.AsyncByteStream, path: str, content_type: str, model: str):
        self._stream, self._path, self._type, self._model = stream, path, content_type, model

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield _as_typed(b"".join([chunk async for chunk in self._stream]), self._path, self._type, self._model)

    async def aclose(self) -> None:
        await self._stream.aclose()


def _as_typed(body: bytes, path: str, content_type: str, model: str) -> bytes:
    """`body` as it came, or its JSON without a chat answer's field of `_TYPED` (its message's of `_APART`), a field
    of `_SHOWN`, or `model`'s list entry's of `_LISTED`, that is not of the API's type, and each other model's entry
    as its name alone (`_listed`); NotJSON (not Ollama's answer) when it gives a key twice; TypeError for a chat
    answer that is no JSON object; Refused when it is an answer streamed in parts (`errorbody.streamed`, its
    `content_type` saying so)."""
    try:
        answer = server_json(body)
    except NotJSON:
        raise
    except (ValueError, RecursionError):  # not JSON: the client says so, unless it is a stream of answers
        if said := streamed(body, content_type):
            raise Refused(said) from None
        return body
    if not isinstance(answer, dict) and path.endswith("/api/chat"):
        raise TypeError(f"the answer is {json_kind(answer)}, not a JSON object")
    if not isinstance(answer, dict):
        return body
    _refuse_error(answer)
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
    return body if typed is answer else json.dumps(typed).encode()


def _apart(message: dict[str, Any]) -> dict[str, Any]:
    """A chat answer's message without what it says apart from its text that is not of the API's type (`_APART`), and
    without tool calls of another shape than the official client reads (arguments given as a JSON string, as an
    OpenAI-compatible answer gives them): those are set aside (`_SET_ASIDE`), kept as they came, never the reason
    the answer itself is refused."""
    apart = _without_odd(message, _APART)
    calls = apart.get("tool_calls")
    if calls is None or _client_reads(calls):
        return apart
    if (aside := _SET_ASIDE.get()) is not None:
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


def _refuse_error(answer: dict[str, Any]) -> None:
    """An answer of 200 that holds an error (a proxy before Ollama answering so, as Ollama's stream does; no answer of
    Ollama's API has an `error`) as that error, asked again when it says the server is busy
    (`errorbody.error_in_200`): not a malformed answer, nor at the preflight a model list or a model's details."""
    if (error := said_error(answer)) is not None:
        said = error_in_200(error)
        raise (Retryable if said.retry else Refused)(said.line) from ollama.ResponseError(said.line, 200)


def _without_odd(answer: dict[str, Any], typed: dict[str, Callable[[Any], Any]]) -> dict[str, Any]:
    """`answer` itself, or a copy without each field of `typed` that is given and not of its type."""
    odd = {key for key, kept in typed.items() if answer.get(key) is not None and kept(answer[key]) is None}
    return {k: v for k, v in answer.items() if k not in odd} if odd else answer


def _thought(message: Any, aside: list[Any]) -> dict[str, str]:
    """What an answer keeps besides its text: a thinking model's thinking (runner.think), which Ollama gives apart
    from the content, and the tool calls it makes (those of a shape the client does not read, set `aside`), so the
    archive holds all that came back."""
    read = [call.model_dump() for call in message.tool_calls or ()]  # as Python: no depth limit of pydantic's JSON
    calls = aside[0] if aside else read
    return {**({"thinking": message.thinking} if message.thinking else {}),
            **({"tool_calls": tools_called(calls)} if calls else {})}


def _served(said: Any, asked: str) -> dict[str, str]:
    """What an answer keeps of the model it says it is of: nothing when that is the model asked (Ollama names it as
    asked), else its name, as an OpenAI-compatible answer's served model is kept (a proxy before Ollama that answered
    with another model)."""
    if isinstance(said, str) and not same_model_name(said, asked):
        return {"model": said}
    return {}


def _status(err: BaseException) -> int | None:
    """The HTTP status of a refused preflight call (the official client's ResponseError; none for a redirect)."""
    return getattr(err, "status_code", None)


def _refusal(err: BaseException) -> str:
    """A refused preflight call as a request's error is said (`HTTP 500: ...`), not the official client's `... (status
    code: 500)`."""
    if isinstance(err, ollama.ResponseError):
        return status_said(err.status_code, str(err.error)).line
    return str(err)


def _said(err: BaseException) -> str:
    """What is wrong with an answer, in one line: a pydantic error's first problem, without its link."""
    return " ".join(str(err).splitlines()[:3])

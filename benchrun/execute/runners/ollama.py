"""The Ollama runner: the official `ollama` AsyncClient against `runner.host`."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, Mapping

import httpx
from pydantic import ValidationError

from benchrun.core.errors import TAKEN, RunnerError, problem_line
from benchrun.core.manifest import Message
from benchrun.core.officialclient import ollama_package
from benchrun.core.recordvalues import same_model_name
from benchrun.core.secrets import SECRETS
from benchrun.core.serverurls import http_url
from benchrun.core.settings import OLLAMA_KEY_ENV, OllamaConfig
from benchrun.core.text import NotJSON, names_listed, one_line, writable_data
from benchrun.execute.boundary import TooLarge, described
from benchrun.execute.runners.base import (
    BrokenAnswer,
    BusySaid,
    Completion,
    Refused,
    Retryable,
    ServerChanged,
    Unreachable,
    asked_again,
    json_kind,
    not_the_models,
    refusal_line,
    resolvable,
    there_unanswered,
    tools_called,
    transport_failure,
    unproxied,
    with_seed,
)
from benchrun.execute.runners.contextfull import outgrew, stated
from benchrun.execute.runners.errorbody import status_said
from benchrun.execute.runners.http import client_options
from benchrun.execute.runners.localadvice import LocalAdvice
from benchrun.execute.runners.ollamaread import DURATIONS, SET_ASIDE, as_typed_hook
from benchrun.execute.runners.retryafter import DIGEST_CHECK, PREFLIGHT, AskedLater, asked_later, heeding

ollama = ollama_package()
UNASKED = {"load": "loaded", "unload": "unloaded"}
"""The done_reasons of Ollama's answer to a chat of no messages, which generates nothing, and what each says the
server did instead; benchrun's chats always have messages, so such an answer (empty) is no answer to one."""
LOADED_WAIT_S = 5.0
"""The longest the end of a run waits for the server to say what it loaded the model with (`OllamaRunner.loaded`):
asked beside the run, after its first answer, it says so in milliseconds, or says nothing the run waits for."""


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
        self._loading: asyncio.Future[int | None] | None = None
        """The context length the server loaded the model with, asked once after its first answer (`_loaded_with`)."""
        self._loaded_by = 0.0
        """When the answers stop waiting for it (the loop's clock)."""
        self._began: str | None = None
        """The server's version as `identify` found it (none where it said none)."""

    def _http(self) -> dict[str, Any]:
        options = client_options(self.config)
        options["event_hooks"]["response"].append(as_typed_hook(self.model))
        return options

    async def identify(self) -> dict[str, Any]:
        """Digest and details from the model list, show()'s parameters/template/capabilities, server version (where
        it says one)."""
        await resolvable(self.host, self.config.key("host"))
        listed = await self._listed_model()
        shown = await self._call(lambda: self.client.show(listed.model))
        self._can_answer(listed.model, list(shown.capabilities or []))
        version = self._began = await self._call(self._version)
        return described({
            "name": listed.model, "digest": listed.digest, "size": listed.size,
            "details": listed.details.model_dump(exclude_none=True) if listed.details else {},
            "parameters": shown.parameters, "template": shown.template,
            "capabilities": list(shown.capabilities or []), "model_info": dict(shown.modelinfo or {}),
            **({"server_version": version} if version else {}),  # none said: not kept (`show` said `server None`)
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
        """The digest as `identify` keeps it (writable), so that one the server writes oddly compares as itself;
        ServerChanged where the server says another version than it did then (upgraded mid-run: the answers came
        from two builds of its engine, and the run's identity names one)."""
        digest = (await self._listed_model(DIGEST_CHECK)).digest
        now = await self._call(self._version, asking=DIGEST_CHECK) if self._began else None
        if now and now != self._began:
            raise ServerChanged(f"Ollama at {self.host} changed version while it was asked: {self._began!r} when it "
                                f"began, {now!r} as it ended (upgraded?); the answers may come from either build and "
                                "cannot be told apart, and the run's identity names the first")
        return writable_data({self.host: digest})

    async def _version(self) -> str | None:
        """The server's version, asked as the official client asks the rest (which has no call for it): with
        $OLLAMA_API_KEY as its bearer token, so a server that needs the key answers this too. A version that is no
        text, or empty, is none (an object of it, kept, made a list of servers' comparison of versions a traceback)."""
        key = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        async with httpx.AsyncClient(base_url=self.host, headers=key, **self._http()) as http:
            response = await http.get("/api/version")
        try:
            response.raise_for_status()
        except httpx.HTTPStatusError:  # its body's error as the client reads one (`_ErrorSaid`), raised as it raises it
            raise ollama.ResponseError(response.text, response.status_code)
        answer = response.json()
        version = answer.get("version") if isinstance(answer, dict) else None
        return version if isinstance(version, str) and version else None

    async def _listed_model(self, asking: str = PREFLIGHT) -> Any:
        """The model's entry in the server's list (its name as given, else with `:latest`), asked for `asking`; a list
        that gives it more than once with different digests is refused, for which of them answers cannot be told."""
        models = (await self._call(self.client.list, asking=asking)).models
        named = [e for e in models if e.model == self.model] or [e for e in models if e.model == f"{self.model}:latest"]
        if len({entry.digest for entry in named}) > 1:
            digests = ", ".join(sorted(one_line(str(entry.digest), 80) for entry in named))
            raise RunnerError(f"Ollama at {self.host} lists model '{named[0].model}' {len(named)} times with different "
                              f"digests ({digests}): which one answers cannot be told; remove the copies with "
                              f"`ollama rm` and pull it again")
        if named:
            return named[0]
        have = names_listed(sorted(m.model for m in models if m.model)) or "none"  # an entry may name no model
        other = "" if self.config.asked_again else f" or pick another {self.config.key('model')}"
        raise RunnerError(f"model '{self.model}' is not pulled on {self.host} (it has: {have}); "
                          f"run `ollama pull {self.model}`{other}")

    async def _call(self, ask: Callable[[], Awaitable[Any]], retries: int | None = None,
                    asking: str = PREFLIGHT) -> Any:
        """One preflight request (or one made as one, for `asking`) within timeout_s (`_heeded`, asked again at most
        `retries` times, runner.retries unless given); what goes wrong is one line with the fix."""
        try:
            return await self._heeded(ask, self.config.retries if retries is None else retries, asking)
        except asyncio.TimeoutError:
            raise RunnerError(f"Ollama at {self.host} did not answer the preflight within {self.config.timeout_s:g} s "
                              f"({self.config.key('timeout_s')})") from None
        except (ConnectionError, httpx.TransportError) as err:
            if isinstance(failure := transport_failure(err), OSError):
                raise failure from None
            if isinstance(failure, Refused):  # a status HTTP does not define
                raise RunnerError(f"Ollama at {self.host} refused the preflight: {failure}") from None
            if not isinstance(failure, Unreachable):
                raise self._not_ollama(err, failure) from None
            if there := await there_unanswered(err, self.host, self.config.key("host"), self.config.timeout_s):
                raise RunnerError(there) from None
            raise RunnerError(f"cannot reach Ollama at {self.host} ({type(err).__name__}){unproxied()}; start it with "
                              f"`ollama serve`, or point {self.config.key('host')} at a running server") from None
        except (ollama.ResponseError, Refused) as err:
            if _status(err) == 404:  # no such path: Ollama answers every call of its preflight
                raise self._not_ollama(err) from None
            if _status(err) in (401, 403):  # a proxy before Ollama that checks the key the client sends
                raise RunnerError(self._key_refused(_status(err))) from None
            raise RunnerError(f"Ollama at {self.host} refused the preflight: {self._refusal(err)}") from None
        except (ValueError, TypeError, RecursionError, TooLarge, BrokenAnswer) as err:  # not Ollama's answer
            raise self._not_ollama(err) from None
        except Retryable as err:  # a 200 saying the server is busy (`_refuse_error`)
            raise RunnerError(f"Ollama at {self.host} did not answer the preflight ({self._refusal(err)})") \
                from None

    def _refusal(self, err: BaseException) -> str:
        """A refused preflight call as a request's error is said (`HTTP 500: ...`, not the official client's `...
        (status code: 500)`), with why it was not asked again where its server asked too long a wait
        (`base.refusal_line`)."""
        if isinstance(err, ollama.ResponseError):
            said = status_said(err.status_code, str(err.error))
            return refusal_line(said.line, said.retry, _headers(err), self.config)
        if isinstance(err, BusySaid):
            return refusal_line(str(err), True, err.headers, self.config)
        return str(err)

    async def _heeded(self, ask: Callable[[], Awaitable[Any]], retries: int, asking: str) -> Any:
        """What `ask()` answers within timeout_s, asked again (`retries` times) where a server busy a moment asks a wait
        within timeout_s by Retry-After (`retryafter.asked_later`)."""
        try:
            async for attempt in heeding(retries, f"Ollama at {self.host}", asking):
                with attempt:
                    try:
                        return await asyncio.wait_for(ask(), self.config.timeout_s)
                    except (ollama.ResponseError, BusySaid) as err:
                        asked_later(_worth_another(err), _headers(err), self.config.timeout_s, err)
                        raise
        except AskedLater as later:
            raise later.failure or later from None

    def _key_refused(self, status: int) -> str:
        """Why the server said 401/403 to the preflight, naming the variable the key is read from, never the key."""
        if self._key is None:
            return (f"Ollama at {self.host} wants an API key ({status}) and ${OLLAMA_KEY_ENV} is not set; export it "
                    f"(the official client sends it as a bearer token), or point {self.config.key('host')} at a "
                    "server that needs none")
        return (f"Ollama at {self.host} refused the API key from ${OLLAMA_KEY_ENV} ({status}); check the key, or "
                f"point {self.config.key('host')} at a server that takes it")

    def _not_ollama(self, err: BaseException, failure: BaseException | None = None) -> RunnerError:
        """A preflight answer that is not Ollama's: not HTTP, too large, not JSON, or not the shape of its answer; what
        the HTTP parser refused said as a chat answer's `failure` says it (`transport_failure`), not in its words."""
        said = _said(err) if isinstance(err, NotJSON) else f"{type(err).__name__}: {_said(failure or err)}"
        return RunnerError(f"Ollama at {self.host} answered the preflight with what is not Ollama's answer ({said}); "
                           f"{self.config.key('host')} must name an Ollama server")

    async def complete(self, messages: list[Message], schema: dict[str, Any], seed: int | None = None) -> Completion:
        request = self._request if seed is None else {**self._request, "options": with_seed(self.config.options, seed)}
        aside: list[Any] = []
        token = SET_ASIDE.set(aside)
        try:
            response = await self.client.chat(model=self.model, messages=messages, format=schema, **request)
        except BusySaid as err:  # a 200 saying the server is busy: asked again as a 429 is
            raise asked_again(str(err), err.headers, self.config) from err.__cause__
        except ollama.ResponseError as err:  # a 401 or 403 names the key's variable and the fix, as at the preflight
            message = self._key_refused(err.status_code) if err.status_code in (401, 403) else str(err.error)
            said = status_said(err.status_code, message)
            raise (asked_again(said.line, _headers(err), self.config) if said.retry else Refused(said.line)) from err
        except (ConnectionError, httpx.TransportError) as err:
            raise transport_failure(err) from err
        except (ValueError, TypeError, RecursionError) as err:  # not JSON, or not the shape of Ollama's answer
            raise Refused(f"not Ollama's chat answer: {_said(err)}") from err
        finally:
            SET_ASIDE.reset(token)
        if response.done is False:
            raise BrokenAnswer("the answer says it is not done (done: false): a part of an answer, not taken as one")
        if said := not_the_models(response.message.role):
            raise Refused(f"not Ollama's chat answer: {said}")
        if (reason := response.done_reason) in UNASKED:
            raise BrokenAnswer(f"the answer says the server only {UNASKED[reason]} the model (done_reason: {reason}), "
                               "as Ollama answers a chat of no messages: no answer to this one, not taken as one")
        return await self._seen(Completion.model_construct(  # from the client's validated ChatResponse: not again
            text=response.message.content or "", done_reason=response.done_reason,
            extra={**_thought(response.message, aside), **_served(response.model, self.model)},
            prompt_tokens=response.prompt_eval_count, completion_tokens=response.eval_count,
            durations_ns={name.removesuffix("_duration"): getattr(response, name)
                          for name in DURATIONS if getattr(response, name) is not None},
        ), fresh=True)

    async def seen_whole(self, answered: Completion) -> Completion:
        """A cached answer as `_seen` takes it."""
        return await self._seen(answered, fresh=False)

    async def _seen(self, answered: Completion, fresh: bool) -> Completion:
        """`answered`, or Refused (ContextFull, as the embedded engine's) where the counts Ollama gave say the chat and
        its answer did not fit in the model's context (`_context`): Ollama cuts such a chat (or drops its start to go
        on answering) and says nothing, so the model did not see it whole. Counts no server measured (negative, past
        JSON's integers) say nothing (`boundary._counted` does not report them)."""
        chat, answer = answered.prompt_tokens, answered.completion_tokens or 0
        context = await self._context(fresh)
        if outgrew(chat, answer, context):
            advice = LocalAdvice(self.config.key("model"), self.config.key("options.num_ctx"), self.config.asked_again)
            raise Refused(f"ContextFull: the chat and its answer are {chat} + {answer} tokens as Ollama counted them, "
                          f"and the model's context holds {context} ({self._context_said(advice)}): Ollama cut the "
                          f"chat to fit, so the model did not see it whole; {advice.larger_context()}")
        return answered

    async def _context(self, fresh: bool) -> int | None:
        """The context the model answers in: runner.options.num_ctx where given, else the length the server says it
        loaded the model with (asked once, after the first `fresh` answer, waited for until LOADED_WAIT_S after that:
        before one, as a run's first answers come from the response cache, the model may not be loaded, and the
        server would say nothing of it)."""
        asked = self.config.options.get("num_ctx")
        if self._loading is None and not fresh:
            return asked if isinstance(asked, int) and asked > 0 else None
        if self._loading is None:
            self._loading = asyncio.ensure_future(self._loaded_with())
            self._loaded_by = asyncio.get_running_loop().time() + min(self.config.timeout_s, LOADED_WAIT_S)
        if isinstance(asked, int) and asked > 0:
            return asked
        return await self._loaded_length(self._loading, self._loaded_by - asyncio.get_running_loop().time())

    @staticmethod
    async def _loaded_length(loading: asyncio.Future[int | None], wait: float) -> int | None:
        """The length `loading` (`_loaded_with`) says, waited for at most `wait` seconds (it is not cancelled)."""
        await asyncio.wait({loading}, timeout=max(0.0, wait))
        said = loading.done() and not loading.cancelled() and loading.exception() is None
        return loading.result() if said else None

    def _context_said(self, advice: LocalAdvice) -> str:
        """Where the context's length comes from: the key that set it, or the server that loaded the model so."""
        if self.config.options.get("num_ctx"):
            return advice.context_key
        return f"as Ollama at {self.host} loaded it, {advice.context_key} unset"

    async def _loaded_with(self) -> int | None:
        """The context length the server says (/api/ps, Ollama 0.6 on) it holds the model loaded with; None where it
        does not say (an older server, the model unloaded already, busy: a best-effort read beside the run, never
        asked again, whose wait the run's end would not wait out, LOADED_WAIT_S) or says so of two copies of it
        differently."""
        try:
            loaded = (await self._call(self.client.ps, retries=0)).models
        except (RunnerError, OSError):
            return None
        lengths = {entry.context_length for entry in loaded
                   if same_model_name(str(entry.model or entry.name), self.model)}
        return stated(lengths.pop()) if len(lengths) == 1 else None

    async def loaded(self, identity: dict[str, Any]) -> dict[str, Any]:
        """`identity` with the context length the server loaded the model with (`context_length`), once it answered
        (where it says it)."""
        if self._loading is None:
            return identity
        length = await self._loaded_length(self._loading, min(self.config.timeout_s, LOADED_WAIT_S))
        return identity if length is None else {**identity, "context_length": length}

    def request_settings(self) -> dict[str, Any]:
        return {"model": self.model, **self._request}

    def format_sent(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        return schema

    async def aclose(self) -> None:
        if self._loading is not None:
            self._loading.cancel()
        await self.client.close()

    def public_config(self) -> dict[str, Any]:
        return {**self.config.model_dump(mode="json"), "host": self.host}


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


def _worth_another(err: ollama.ResponseError | BusySaid) -> bool:
    """Whether the failure of a preflight call is worth another try, as a request's is."""
    return isinstance(err, BusySaid) or status_said(err.status_code, str(err.error)).retry


def _headers(err: ollama.ResponseError | BusySaid) -> Mapping[str, str]:
    """The headers of the answer the official client raised `err` for (its HTTPStatusError, the context it raises it
    in; a BusySaid's own), where it kept them: a server's Retry-After is heeded (`base.asked_again`) as runner=openai
    heeds it."""
    if isinstance(err, BusySaid):
        return err.headers
    context = err.__context__
    return context.response.headers if isinstance(context, httpx.HTTPStatusError) else {}


def _said(err: BaseException) -> str:
    """What is wrong with an answer, in one line: of one not of the shape of Ollama's, its first problem and what
    was given there (`message.content: 5 is a number, where text is taken`; of a key not given, not the object it is
    missing from: `message.role: Field required`)."""
    if isinstance(err, ValidationError):
        first = err.errors()[0]
        said = first["type"] == "missing" or first["type"] in TAKEN  # said by problem_line
        given = "" if said else f" ({json_kind(first['input'])} was given)"
        return f"{problem_line(first)}{given}"
    return " ".join(str(err).splitlines()[:3])

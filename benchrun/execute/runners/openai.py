"""The OpenAI-compatible runner: chat completions over httpx (vLLM, llama-server, LM Studio, Ollama's /v1, OpenAI)."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Mapping

import httpx

from benchrun.core.errors import RunnerError
from benchrun.core.manifest import Message
from benchrun.core.recordvalues import pin_shown, pinned_as, same_model_name
from benchrun.core.secrets import SECRETS
from benchrun.core.serverurls import http_url
from benchrun.core.settings import OPENAI_FIELDS, OpenAIConfig
from benchrun.core.text import NotJSON, names_listed, server_json, writable_data
from benchrun.execute.boundary import TooLarge, described
from benchrun.execute.runners.base import (
    BrokenAnswer,
    Completion,
    Refused,
    Retryable,
    Unreachable,
    asked_again,
    refusal_line,
    resolvable,
    retrying,
    there_unanswered,
    transport_failure,
    unproxied,
    with_seed,
)
from benchrun.execute.runners.contextfull import LLAMACPP, outgrew, props_context, stated
from benchrun.execute.runners.errorbody import Said, error_said, not_json, reason_of, server_message, status_said
from benchrun.execute.runners.http import client_options
from benchrun.execute.runners.llamaschema import readable
from benchrun.execute.runners.openaianswer import APIError, completion_of, said_of
from benchrun.execute.runners.openaiformat import response_format
from benchrun.execute.runners.retryafter import DIGEST_CHECK, PREFLIGHT, AskedLater, asked_later, heeding

_LISTED = ("id", "object", "owned_by", "created")
DIALECTS = ("json_schema", "json_object", "none")
"""The ways to send the response schema, in the order runner.structured=auto tries them."""
PROBE_PROMPT = "Say ok."
PROBE_CHAT = [{"role": "user", "content": PROBE_PROMPT}]
PROBE_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"],
                "additionalProperties": False, "title": "Probe"}


class OpenAIRunner:
    """One model on one OpenAI-compatible server; the API key is read from the variable named by `api_key_env`."""

    def __init__(self, config: OpenAIConfig):
        self.config = config
        self.base_url = http_url(config.base_url)
        self.model = config.model
        self.key_env = config.api_key_env
        self._key = SECRETS.register_key(self.key_env)
        self._options = {OPENAI_FIELDS[k]: v for k, v in config.options.items() if _sent(k, v)}
        self.options_not_sent = sorted(k for k, v in config.options.items() if not _sent(k, v))
        self.dialect = config.structured
        """The structured-output dialect requests use (for `auto`, found at preflight)."""
        self.fingerprint: str | None = None
        """The system_fingerprint of the preflight's probe answer (runner.structured=auto), if the server sent one."""
        self._formats: dict[str, dict[str, Any]] = {}
        """Each schema's response_format in a dialect, made once: not for every request."""
        self.answered_as: str | None = None
        """The served model the preflight's probe answer named (runner.structured=auto), if the server named one."""
        self._says_weights = False
        """Whether the model's entry in GET /models said at the preflight what weights are behind it (`weights_said`)."""
        self._context: tuple[int, str] | None = None
        """The context the server states (`_stated_context`) and where, None where it states none."""
        self.client = httpx.AsyncClient(base_url=self.base_url, headers=_auth(self._key),
                                        **client_options(config))

    async def identify(self) -> dict[str, Any]:
        """The served id, owned_by and created of the model in GET /models (other fields as details), base_url, and
        the structured-output dialect the server takes."""
        entry = await self._entry()
        self.dialect = await self._dialect()
        self._says_weights = pinned_as({"details": _details(entry)}) is not None
        self._context = await self._stated_context(entry)
        return described({
            "name": entry["id"], "owned_by": entry.get("owned_by"), "created": entry.get("created"),
            "details": _details(entry), "base_url": self.base_url,
            "structured_dialect": self.dialect, "system_fingerprint": self.fingerprint, **self._answers_as(entry),
        }, f"the server at {self.base_url}", self.config.key("base_url"))

    def _answers_as(self, entry: dict[str, Any]) -> dict[str, str]:
        """The name the probe's answer gave the model where it is not its id but for `:latest` (OpenAI's dated
        `gpt-4o-2024-08-06` for `gpt-4o`): an answer of the run under that name is the model's (`cache.pinned_by`)."""
        said = self.answered_as
        return {"answers_as": said} if said and not same_model_name(said, entry["id"]) else {}

    async def _entry(self, asking: str = PREFLIGHT) -> dict[str, Any]:
        """The model's entry in GET /models, asked for `asking`; RunnerError naming what the server serves when it is
        not there."""
        models = await self._models(asking)
        named = [m for m in models if m.get("id") in (self.model, f"{self.model}:latest")]
        if len(said := {pinned_as({"details": _details(m)}) for m in named}) > 1:
            each = ", ".join(sorted(pin_shown(pin) if pin else "nothing of its weights" for pin in said))
            raise RunnerError(f"the server at {self.base_url} lists model '{self.model}' {len(named)} times, saying "
                              f"different weights are behind it ({each}): which of them answers cannot be told; point "
                              f"{self.config.key('base_url')} at a server that serves it once")
        entry = named[0] if named else None
        if entry is None:
            have = names_listed(sorted(m["id"] for m in models if _named(m))) or "none"
            pick = "" if self.config.asked_again else f"pick one of those for {self.config.key('model')}, or "
            raise RunnerError(f"model '{self.model}' is not served at {self.base_url} (it serves: {have}); "
                              f"{pick}start the server with it")
        return entry

    async def _models(self, asking: str) -> list[dict[str, Any]]:
        await resolvable(self.base_url, self.config.key("base_url"))
        try:
            async for attempt in heeding(self.config.retries, f"the server at {self.base_url}", asking):
                with attempt:
                    response = await self._listing()
                    body = self._list_body(response) if response.is_success else None
                    said = error_said(body) if response.is_success else status_said(
                        response.status_code, self._server_message(response))
                    if said is not None:
                        asked_later(said.retry, response.headers, self.config.timeout_s)
        except AskedLater:
            pass
        if not response.is_success:
            raise RunnerError(self._preflight_refusal(response))
        if (said := error_said(body)) is not None:  # a 200 that is an error, as a chat answer's is read
            line = refusal_line(said.line, said.retry, response.headers, self.config)
            raise RunnerError(f"the server at {self.base_url} refused the preflight: {line}")
        models = body.get("data") if isinstance(body, dict) else None
        if not isinstance(models, list):
            raise self._no_list()
        return [m for m in models if isinstance(m, dict)]

    def _list_body(self, response: httpx.Response) -> Any:
        """GET /models's body of 200 as JSON; RunnerError where it is no JSON (saying what came, as of a chat answer:
        `errorbody.not_json`) or gives a key twice."""
        try:
            return server_json(response.content)
        except NotJSON as err:
            raise self._no_list(err) from None
        except (ValueError, RecursionError) as err:
            raise self._no_list(NotJSON(not_json(err, response.content, response.charset_encoding))) from None

    async def _listing(self) -> httpx.Response:
        """GET /models's answer, whatever its status; RunnerError where none came."""
        try:
            return await asyncio.wait_for(self.client.get("/models"), self.config.timeout_s)
        except asyncio.TimeoutError:
            raise RunnerError(f"the server at {self.base_url} did not answer GET /models within "
                              f"{self.config.timeout_s:g} s ({self.config.key('timeout_s')})") from None
        except httpx.TransportError as err:
            if isinstance(failure := transport_failure(err), OSError):
                raise failure from None
            if isinstance(failure, Refused):  # a status HTTP does not define
                raise RunnerError(f"the server at {self.base_url} refused the preflight: {failure}") from None
            if not isinstance(failure, Unreachable):
                raise self._no_list(err, failure) from None
            if there := await there_unanswered(err, self.base_url, self.config.key("base_url"), self.config.timeout_s):
                raise RunnerError(there) from None
            key = self.config.key("base_url")
            raise RunnerError(f"cannot reach the OpenAI-compatible server at {self.base_url} ({type(err).__name__})"
                              f"{unproxied()}; start it, or point {key} at a running server") from None
        except Refused as err:
            raise RunnerError(f"the server at {self.base_url} refused the preflight: {err}") from None
        except (TooLarge, BrokenAnswer) as err:
            raise self._no_list(err) from None

    def _no_list(self, err: BaseException | None = None, failure: BaseException | None = None) -> RunnerError:
        """GET /models answered without a model list: not HTTP, too large, not JSON, or not its shape; what the HTTP
        parser refused said as a chat answer's `failure` says it (`transport_failure`)."""
        why = "" if err is None else f" ({err})" if isinstance(err, NotJSON) else \
            f" ({type(err).__name__}: {failure or err})"
        return RunnerError(f"the server at {self.base_url} answered GET /models without a model list{why}; "
                           f"{self._api_root}")

    def _preflight_refusal(self, response: httpx.Response) -> str:
        status = response.status_code
        if status in (401, 403):
            return self._key_refused(status)
        if status == 404:
            return f"the server at {self.base_url} has no /models (404); {self._api_root}"
        said = status_said(status, self._server_message(response))
        line = refusal_line(said.line, said.retry, response.headers, self.config)
        return f"the server at {self.base_url} refused the preflight: {line}"

    @property
    def _api_root(self) -> str:
        return f"{self.config.key('base_url')} is the API root, usually ending in /v1"

    def _key_refused(self, status: int) -> str:
        """Why the server said 401/403, naming the variable and never the key."""
        if self._key is None:
            return (f"the server at {self.base_url} wants an API key ({status}) and ${self.key_env} is not set; "
                    f"export it{self._other_variable('the key')}")
        return (f"the server at {self.base_url} refused the API key from ${self.key_env} ({status}); "
                f"check the key{self._other_variable('the right one')}")

    def _past_probe(self, probe: str) -> str:
        """The way past a probe unanswered: runner.structured given, which skips the `probe`; for a command asking a
        run again (resume, retry), which asks with the run's runner.structured and takes only its server, another."""
        if self.config.asked_again:
            return f"give {self.config.key('base_url')} a server that answers {probe}"
        return f"{self.config.key('structured')}=json_schema, json_object or none skips {probe}"

    def _other_variable(self, holding: str) -> str:
        """The advice to name another variable, where the command takes one (not resume's, retry's: the run's)."""
        key = self.config.key("api_key_env")
        if self.config.asked_again:
            return f" (the run names its variable: {key})"
        return f", or set {key} to the variable that holds {holding}"

    async def complete(self, messages: list[Message], schema: dict[str, Any], seed: int | None = None) -> Completion:
        response = await self._chat(messages, schema, self.dialect, with_seed(self._options, seed))
        if not response.is_success:
            said = status_said(response.status_code, self._server_message(response))
        else:
            try:
                answered = completion_of(response)
            except Retryable as err:  # a 200 whose body is an error worth another try: its Retry-After heeded too
                said = Said(True, str(err))
            else:
                return await self.seen_whole(answered)
        if said.retry:
            raise asked_again(said.line, response.headers, self.config) from APIError(said.line)
        raise APIError(said.line)

    async def _stated_context(self, entry: dict[str, Any]) -> tuple[int, str] | None:
        """The context the model's GET /models entry states (vLLM's `max_model_len`), or llama.cpp's server its GET
        /props (asked only of a server whose entry says it is llama.cpp's), with where it said so."""
        if length := stated(entry.get("max_model_len")):
            return length, f"max_model_len, as GET /models at {self.base_url} states it"
        if entry.get("owned_by") == LLAMACPP and (length := await props_context(self.client, self.base_url,
                                                                                self.config.timeout_s)):
            return length, f"n_ctx, as GET /props of the server at {self.base_url} states it"
        return None

    async def seen_whole(self, answered: Completion) -> Completion:
        """`answered`, or Refused (ContextFull, as Ollama's) where its usage says the chat and its answer outgrew the
        context the server states (`_context`): the server cut the chat to fit, so the model did not see it whole."""
        chat, answer = answered.prompt_tokens, answered.completion_tokens or 0
        if self._context and outgrew(chat, answer, self._context[0]):
            raise Refused(f"ContextFull: the chat and its answer are {chat} + {answer} tokens as the server counted "
                          f"them (usage), and the model's context holds {self._context[0]} ({self._context[1]}): the "
                          "server cut the chat to fit, so the model did not see it whole; serve the model with a "
                          "longer context, or shorten the chat")
        return answered

    def _format(self, schema: dict[str, Any], dialect: str) -> dict[str, Any]:
        key = f"{dialect} {json.dumps(schema, sort_keys=True)}"
        if key not in self._formats:
            self._formats[key] = response_format(schema, dialect, self.config.strict, self.config.max_string_length)
        return self._formats[key]

    async def _chat(self, messages: list[Message], schema: dict[str, Any], dialect: str,
                    options: dict[str, Any]) -> httpx.Response:
        body = {"model": self.model, "messages": messages, **options}
        if dialect != "none":
            body["response_format"] = self._format(schema, dialect)
        try:
            return await self.client.post("/chat/completions", json=body)
        except httpx.TransportError as err:
            raise transport_failure(err) from err

    async def _dialect(self) -> str:
        """runner.structured, or for `auto` the first dialect the server takes a tiny request in. A command asking a
        run again (resume, retry) asks the probe in its runner.structured too: the name the answer gives the model
        (`answers_as`) pins the model in every setting, as a run's answers gave it (`recordvalues.answered_as`)."""
        if self.config.structured != "auto":
            if self.config.asked_again:
                response, said = await self._probe(self.config.structured)
                if said is not None:
                    raise RunnerError(f"the server at {self.base_url} refused the probe of the model it answers as "
                                      f"({said.line}); {self._past_probe('it')}")
                self.answered_as = said_of(response, "model")
            return self.config.structured
        refused = []
        for dialect in DIALECTS:
            response, said = await self._probe(dialect)
            if said is None:
                self.fingerprint = said_of(response, "system_fingerprint")
                self.answered_as = said_of(response, "model")
                return dialect
            refused.append(f"{dialect}: {said.line}")
        raise RunnerError(f"the server at {self.base_url} refused every structured-output dialect "
                          f"({'; '.join(refused)})")

    async def _probe(self, dialect: str) -> tuple[httpx.Response, Said | None]:
        """The probe's answer in `dialect` and what it says of a failure, asked again as any request is (runner.retries,
        with backoff) while the server is busy or drops it, which says nothing of the dialect; RunnerError when the
        retries are used up, the probe timed out or was refused as every request would be."""
        try:
            async for attempt in retrying(self.config):
                with attempt:
                    probe = self._chat(PROBE_CHAT, PROBE_SCHEMA, dialect, {"max_tokens": 8})
                    response = await asyncio.wait_for(probe, self.config.timeout_s)
                    if (said := self._failure(response)) and said.retry:
                        raise asked_again(said.line, response.headers, self.config)
        except asyncio.TimeoutError:
            raise RunnerError(f"the server at {self.base_url} did not answer the structured-output probe within "
                              f"{self.config.timeout_s:g} s ({self.config.key('timeout_s')}); raise it (a server "
                              "that loads the model on its first request answers it late), or "
                              f"{self._past_probe('the probe')}") from None
        except (Retryable, TooLarge) as err:
            raise RunnerError(f"the server at {self.base_url} did not answer the structured-output probe "
                              f"({err}); {self._past_probe('it')}") from None
        except Refused as err:  # a redirect: every request of the run would be
            raise RunnerError(f"the server at {self.base_url} refused the structured-output probe: {err}") from None
        return response, said

    def _failure(self, response: httpx.Response) -> Said | None:
        """What a probe's answer that fails says (`HTTP 503: ...`, a 200's error object `HTTP 200 saying 503: ...`, a
        200 that is no chat completion `not a chat completion: ...`, as a request's would be); None for an answer."""
        if not response.is_success:
            return status_said(response.status_code, self._server_message(response))
        try:
            completion_of(response)
        except Retryable as err:
            return Said(True, str(err))
        except APIError as err:
            return Said(False, str(err))
        return None

    def _server_message(self, response: httpx.Response) -> str:
        """The server's error message (OpenAI, vLLM, llama.cpp and FastAPI shapes), made one line where an error becomes
        data (benchrun.core.records.ErrorInfo, benchrun.core.errors.BenchrunError) and where it is printed."""
        if response.status_code in (401, 403):
            return self._key_refused(response.status_code)
        return server_message(response.content, response.charset_encoding, reason_of(response))

    def request_settings(self) -> dict[str, Any]:
        """The model, the options sent (as chat-completions fields) and how the schema is sent."""
        return {"model": self.model, "options": self._options, "dialect": self.dialect, "strict": self.config.strict,
                "max_string_length": self.config.max_string_length}

    def format_sent(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        """As llama-cpp-python's server's converter is given it (`json_object`: `llamaschema.readable`)."""
        return readable(schema) if self.dialect == "json_object" else schema

    async def digests_now(self) -> dict[str, str | None]:
        """What the server's model entry says now of the weights behind the served name (`pinned_as`, with the name
        the preflight's answer gave the model, as `identify` pins it), where it said it at the preflight: a server
        restarted on other weights under that name mid-run is told as a model pulled again is (no request to a server
        that says nothing of them)."""
        if not self._says_weights:
            return {}
        entry = await self._entry(DIGEST_CHECK)
        return {self.base_url: pinned_as({"details": _details(entry), **self._answers_as(entry)})}

    async def loaded(self, identity: dict[str, Any]) -> dict[str, Any]:
        return identity

    async def aclose(self) -> None:
        await self.client.aclose()

    def public_config(self) -> dict[str, Any]:
        return {**self.config.model_dump(mode="json"), "base_url": self.base_url,
                "options_not_sent": self.options_not_sent}


def _sent(name: str, value: Any) -> bool:
    """Whether an option goes into requests: it has a field, is set, and is not an unlimited num_predict (<= 0)."""
    return name in OPENAI_FIELDS and value is not None and not (name == "num_predict" and value <= 0)


def _named(entry: dict[str, Any]) -> bool:
    """Whether a /models entry names a model: by a string, as a model is asked for (an id of 5, null or a list was
    listed as `it serves: 5` to a model '5' refused, or in Python's words, `None`, `['m']`)."""
    return isinstance(entry.get("id"), str) and entry["id"] != ""


def _details(entry: dict[str, Any]) -> dict[str, Any]:
    """What a /models entry says of its model besides its id, owned_by and created, as writable as run.json keeps it."""
    return writable_data({key: value for key, value in entry.items() if key not in _LISTED})


def _auth(key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key else {}

"""A fake OpenAI-compatible chat-completions server (non-streaming), sharing the Ollama fake's responder types.

    python -m benchrun.testing.openai_server --port 0 --models qwen2.5 --api-key sk-test
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from benchrun.testing.chat import FIXED_TIME_EPOCH, ChatRequest, Reply, Responder, last_user_text
from benchrun.testing.fake_cli import cli_parser, model_names, serve_until_signal
from benchrun.testing.http_fake import FakeServer, Request, Response, Route, json_response
from benchrun.testing.oracle import answers

__all__ = ["ChatRequest", "FakeOpenAI", "Reply", "Responder", "main"]

OPTION_KEYS = ("temperature", "seed", "max_tokens", "top_p", "stop")


class FakeOpenAI(FakeServer):
    """Fake OpenAI API under /v1: GET /models and POST /chat/completions, with optional Bearer-key checking."""

    url_suffix = "/v1"

    def __init__(self, models: Iterable[str] = ("qwen2.5",), responder: Responder | None = None,
                 latency_s: float = 0.0, max_parallel: int | None = None, api_key: str | None = None,
                 system_fingerprint: str = "fp_fake", echo_auth: bool = False, dialects: Iterable[str] | None = None,
                 port: int = 0) -> None:
        self.api_key = api_key
        self.dialects = set(dialects) if dialects is not None else {"json_schema", "json_object", "none"}
        """The response_format types it takes ("none": no response_format); others get llama-cpp-python's 500."""
        self.system_fingerprint = system_fingerprint
        self.echo_auth = echo_auth
        """A leaky server: the Authorization header it got comes back in every answer, model entry and error."""
        self.auth_headers: list[str | None] = []
        self._ids = itertools.count(1)
        super().__init__(models, responder, latency_s, max_parallel, port)

    def routes(self) -> dict[tuple[str, str], Route]:
        return {("GET", "/v1/models"): self._models, ("POST", "/v1/chat/completions"): self._completions}

    def _models(self, request: Request) -> Response:
        if denied := self._deny(request):
            return denied
        owner = request.headers.get("Authorization") if self.echo_auth else "library"
        data = [{"id": m, "object": "model", "created": FIXED_TIME_EPOCH, "owned_by": owner} for m in self.models]
        return json_response({"object": "list", "data": data})

    def _completions(self, request: Request) -> Response | None:
        if denied := self._deny(request):
            return denied
        body = request.json()
        self.record(request.path, body)
        name = body.get("model") or ""
        if self.find_model(name) is None:
            return _error(404, f"The model `{name}` does not exist", "model_not_found")
        if body.get("stream"):
            return _error(400, "stream=true is not supported by the fake OpenAI server")
        dialect = (body.get("response_format") or {}).get("type", "none")
        if dialect not in self.dialects:
            taken = " or ".join(f"'{d}'" for d in sorted(self.dialects - {"none"}) or ["text"])
            return _error(500, f"[{{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': "
                               f"\"Input should be {taken}\"}}]")
        messages = list(body.get("messages") or [])
        prompt = last_user_text(messages)
        reply = self.answer(ChatRequest(
            model=name, messages=messages, prompt=prompt, format=_format(body.get("response_format")),
            options={key: body[key] for key in OPTION_KEYS if key in body}, keep_alive=None, think=None,
            attempt=self.next_attempt(name, prompt), path=request.path,
        ))
        if reply.drop:
            return None
        if reply.wire is not None:
            return Response(200, b"", wire=reply.wire, keep_open=reply.keep_open)
        echoed = request.headers.get("Authorization") if self.echo_auth else None
        if reply.status != 200:
            return _error(reply.status, f"{reply.error_text} (you sent {echoed})" if echoed else reply.error_text)
        if reply.raw is not None:
            return Response(200, reply.raw.encode(), "text/event-stream")
        completion = self._completion(name, reply)
        response = json_response({**completion, "system_fingerprint": echoed} if echoed else completion)
        return replace(response, endless=reply.endless)

    def _completion(self, model: str, reply: Reply) -> dict[str, Any]:
        prompt_tokens, completion_tokens = reply.prompt_eval_count or 0, reply.eval_count or 0
        return {
            "id": f"chatcmpl-{next(self._ids):06d}",
            "object": "chat.completion",
            "created": FIXED_TIME_EPOCH,
            "model": model,
            "system_fingerprint": self.system_fingerprint,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.content},
                         "finish_reason": reply.done_reason}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }

    def _deny(self, request: Request) -> Response | None:
        """Record the Authorization header (None when absent); a 401 if `api_key` is set and it is wrong."""
        header = request.headers.get("Authorization")
        self.auth_headers.append(header)
        if self.api_key and header != f"Bearer {self.api_key}":
            return _error(401, "Incorrect API key provided", "invalid_api_key")
        return None


def _format(response_format: Any) -> dict[str, Any] | str | None:
    """The JSON schema of a json_schema response_format (or of a json_object one with a `schema`, as
    llama-cpp-python's server takes), "json" for a json_object without one, else None."""
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if kind == "json_schema":
        schema: dict[str, Any] | None = response_format.get("json_schema", {}).get("schema")
        return schema
    if kind == "json_object":
        return response_format.get("schema") or "json"
    return None


def _error(status: int, message: str, code: str | None = None) -> Response:
    kind = "server_error" if status >= 500 else "invalid_request_error"
    return json_response({"error": {"message": message, "type": kind, "param": None, "code": code}}, status)


def main(argv: list[str] | None = None) -> None:
    parser = cli_parser("Serve a fake OpenAI-compatible API on 127.0.0.1 until SIGTERM or SIGINT.")
    parser.add_argument("--api-key", default=None, help="require 'Authorization: Bearer KEY'")
    parser.add_argument("--system-fingerprint", default="fp_fake")
    args = parser.parse_args(argv)
    serve_until_signal(FakeOpenAI(model_names(args.models), responder=answers(args), latency_s=args.latency,
                                  max_parallel=args.max_parallel,
                                  api_key=args.api_key, system_fingerprint=args.system_fingerprint, port=args.port))


if __name__ == "__main__":
    main()

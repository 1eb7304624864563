"""What a fake model server's responder is given and answers, and what every fake says alike of its models."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

FIXED_TIME_ISO = "2024-01-01T00:00:00Z"
FIXED_TIME_EPOCH = 1_704_067_200


@dataclass(frozen=True)
class ChatRequest:
    """One chat or generate request, as a responder sees it."""

    model: str
    messages: list[dict[str, Any]]
    prompt: str
    format: dict[str, Any] | str | None
    options: dict[str, Any]
    keep_alive: float | str | None
    think: bool | str | None
    attempt: int
    path: str


@dataclass
class Reply:
    """What the fake answers; counts left as None are derived from the prompt and the content."""

    content: str = ""
    status: int = 200
    error: str | None = None
    delay_s: float = 0.0
    drip_s: float = 0.0
    """Send the answer one byte at a time, this long apart (a server that never quite stops answering)."""
    drop: bool = False
    endless: bool = False
    """Send the answer's start and then white space without end (a body that never stops coming)."""
    raw: str | None = None
    """Send this as the whole body instead of the API's answer (a proxy that speaks another protocol)."""
    wire: bytes | None = None
    """Send these bytes as the whole HTTP response, status line and headers included, then close (a broken server)."""
    keep_open: bool = False
    """Keep the connection open after sending `wire` (bytes holding two responses: a server that answers twice)."""
    done_reason: str = "stop"
    prompt_eval_count: int | None = None
    eval_count: int | None = None
    total_duration: int = 50_000_000
    load_duration: int = 5_000_000
    prompt_eval_duration: int = 10_000_000
    eval_duration: int = 30_000_000

    @property
    def error_text(self) -> str:
        """The error message to send: `error`, else the status phrase."""
        return self.error or HTTPStatus(self.status).phrase


Responder = Callable[[ChatRequest], Reply | str]


def fake_digest(name: str) -> str:
    """The deterministic digest the fakes list for a model name: sha256 of the name, hex."""
    return hashlib.sha256(name.encode()).hexdigest()


def full_name(name: str) -> str:
    """`name` with Ollama's implicit `:latest` tag."""
    return name if ":" in name else f"{name}:latest"


def sample_instance(schema: Mapping[str, Any], defs: Mapping[str, Any] | None = None) -> Any:
    """A deterministic instance of a JSON schema: first enum value, zeros, "ok" strings, empty arrays."""
    defs = (schema.get("$defs") or schema.get("definitions") or {}) if defs is None else defs
    if "$ref" in schema:
        return sample_instance(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return sample_instance(schema[key][0], defs)
    kinds = schema.get("type") or "null"
    kind = kinds[0] if isinstance(kinds, list) else kinds
    if kind == "object":
        return {name: sample_instance(sub, defs) for name, sub in schema.get("properties", {}).items()}
    scalars = {"array": [], "string": "ok", "integer": int(schema.get("minimum", 0)),
               "number": float(schema.get("minimum", 0)), "boolean": False}
    return scalars.get(kind)


def default_responder(req: ChatRequest) -> Reply:
    """Valid JSON for the request's format (`{}` for "json"), else "ok"."""
    if isinstance(req.format, Mapping):
        return Reply(content=json.dumps(sample_instance(req.format)))
    return Reply(content="{}" if req.format == "json" else "ok")


def last_user_text(messages: Iterable[Mapping[str, Any]]) -> str:
    """The text of the last user message; list-of-parts content is joined."""
    content: Any = next((m.get("content") for m in reversed(list(messages)) if m.get("role") == "user"), "")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, Mapping))
    return content or ""

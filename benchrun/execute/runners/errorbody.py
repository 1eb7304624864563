"""What an OpenAI-compatible server says of a failure besides its status: an error object in a 200's body, and which
statuses say the server is busy rather than that the request is wrong."""

from __future__ import annotations

from typing import Any

from benchrun.core.records import ENDED_IN_ERROR
from benchrun.execute.runners.base import GATEWAY

BUSY = frozenset({408, 429, *GATEWAY})
"""What a server answers when it cannot take a request now (a timeout, a rate limit, unavailable), whatever the
request: a structured-output probe so answered says nothing of the dialect it asked in."""


def busy(status: int | None) -> bool:
    return status in BUSY


def error_said(body: Any) -> tuple[int | None, str] | None:
    """The status (None when none is named) and the line saying it of a 200 that is no answer: a body that is an error
    object naming a status as its `code` (`HTTP 200 saying 503: ...`), as OpenRouter answers an error met once a
    request has begun, or a first choice that ended in an error (`finish_reason: "error"`, with its `error` object:
    OpenRouter's for one met while the answer was made, whose text is no answer of the model); None for an answer."""
    if not isinstance(body, dict):
        return None
    if "choices" not in body:
        code, message = _said(body.get("error"))
        return None if code is None else (code, f"HTTP 200 saying {code}: {message}")
    choice = body["choices"][0] if isinstance(body["choices"], list) and body["choices"] else None
    if not isinstance(choice, dict) or choice.get("finish_reason") != ENDED_IN_ERROR:
        return None
    code, message = _said(choice.get("error"))
    return code, f"HTTP 200, the answer ending in an error{'' if code is None else f' saying {code}'}: {message}"


def _said(error: Any) -> tuple[int | None, str]:
    """An error object's status (its `code`, when a status) and message."""
    if not isinstance(error, dict):
        return None, "no message"
    code = error.get("code")
    status = code if type(code) is int and 400 <= code <= 599 else None
    return status, str(error.get("message") or "no message").strip()

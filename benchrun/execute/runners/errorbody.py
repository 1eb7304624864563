"""What an OpenAI-compatible server says of a failure besides its status: an error object in a 200's body, and which
statuses say the server is busy rather than that the request is wrong."""

from __future__ import annotations

from typing import Any

from benchrun.execute.runners.base import GATEWAY

BUSY = frozenset({408, 429, *GATEWAY})
"""What a server answers when it cannot take a request now (a timeout, a rate limit, unavailable), whatever the
request: a structured-output probe so answered says nothing of the dialect it asked in."""


def busy(status: int) -> bool:
    return status in BUSY


def error_said(body: Any) -> tuple[int, str] | None:
    """The status and message of a 200 whose body is an error object naming a status as its `code`, as OpenRouter
    answers once a request has begun (`{"error": {"code": 503, "message": ...}}`); None for a body of another
    shape."""
    error = body.get("error") if isinstance(body, dict) and "choices" not in body else None
    code = error.get("code") if isinstance(error, dict) else None
    if type(code) is not int or not 400 <= code <= 599:
        return None
    return code, str(error.get("message") or "no message").strip()

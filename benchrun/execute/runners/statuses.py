"""What an HTTP status says of a failure: whether HTTP defines it, and whether another try may be answered."""

from __future__ import annotations

import re


def defined(status: int) -> bool:
    """Whether HTTP defines `status` (100-599). One it does not is the server's error of its own kind, said so and not
    asked again: no class of HTTP says it may pass."""
    return 100 <= status <= 599


def undefined(status: int) -> str:
    """A status HTTP does not define, as an error says it."""
    return f"HTTP {status} (a status HTTP does not define)"


INVALID_REQUEST = re.compile(r"(?i)invalid (request|argument|parameter|param|value|input|json|schema|format|type|"
                             r"field|option|body)|validation|input should|not supported|unsupported|unrecognized|"
                             r"unknown (field|parameter|argument)|extra (fields|inputs)|bad request")
"""What a 5xx answer's message says when it is the request that is wrong (llama-cpp-python answers 500 to a
response_format it does not take): another try would fail the same way. Not `invalid` alone, which a server's own
fault says too (Go's `invalid memory address or nil pointer dereference`, a proxy's `invalid upstream response`)."""
GATEWAY = frozenset({502, 503, 504})
"""What a server or a proxy answers of itself (a bad gateway, unavailable, a gateway's timeout), whatever it says."""
SPENT = re.compile(r"(?i)insufficient.?(quota|credit|balance|funds)|exceeded your current quota|billing.?hard.?limit")
"""What says a plan's limit is spent, which another try does not lift (OpenAI's 429 `insufficient_quota`, `You
exceeded your current quota`; `billing_hard_limit_reached`; OpenRouter's `Insufficient credits`). Not `quota` or
`billing` alone: a rate limit's message names them too (Gemini's `Quota exceeded for ... per minute`, OpenAI's free
tier's `Visit .../account/billing`), and another try a moment later is answered."""


def transient(status: int, message: str = "") -> bool:
    """Whether an HTTP error is worth another try: 408, 429 and 5xx, unless a 5xx other than 502, 503 and 504 says
    the request is invalid, or a 429 that the plan's limit is spent (SPENT)."""
    if status in GATEWAY:
        return True
    if status >= 500:
        return not INVALID_REQUEST.search(message)
    return status == 408 or (status == 429 and not SPENT.search(message))

"""A server's `Retry-After` (RFC 9110 10.2.3) on an answer worth another try: the wait it asks before that try,
honoured within a request's own timeout (`waiting`); a longer one is refused for that request, and said so
(`runners.base.asked_again`)."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any, Callable

from tenacity import RetryCallState

SECONDS = re.compile(r"\s*\d+\s*")
"""Retry-After's delta-seconds: a whole number of seconds."""


def retry_after_s(value: str | None, now: datetime | None = None) -> float | None:
    """The seconds a Retry-After value asks to wait: delta-seconds (`120`), or an HTTP date from `now` (none, for one
    past); None for no value or one of neither form, which is no ask (RFC 9110 lets a client ignore it)."""
    if value is None:
        return None
    if SECONDS.fullmatch(value):
        return float(value)
    try:
        then = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if then.tzinfo is None:
        return None
    return max(0.0, (then - (now or datetime.now(timezone.utc))).total_seconds())


def waiting(backoff: Callable[[RetryCallState], float]) -> Callable[[RetryCallState], float]:
    """The wait before another try, a tenacity wait: `backoff`'s, or the longer wait the failure's server asked
    (`Retryable.after_s`, within the request's timeout: `base.asked_again`)."""

    def wait(state: RetryCallState) -> float:
        failed: Any = state.outcome.exception() if state.outcome else None
        return max(backoff(state), getattr(failed, "after_s", None) or 0.0)

    return wait

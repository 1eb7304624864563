"""A server's `Retry-After` (RFC 9110 10.2.3) on an answer worth another try: the wait it asks before that try,
honoured within a request's own timeout (`waiting`); a longer one is refused for that request, and said so
(`runners.base.asked_again`). A preflight call is asked again only where its server asked a wait (`heeding`)."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any, Callable, Mapping

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt

from benchrun.console import output

SECONDS = re.compile(r"\s*\d+\s*")
"""Retry-After's delta-seconds: a whole number of seconds."""
ASCTIME = re.compile(r"\s*[A-Za-z]{3} [A-Za-z]{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\s*")
"""The third form of an HTTP date, C's asctime (`Sun Nov  6 08:49:37 1994`), which names no zone: it is of UTC, and a
recipient must read it as the other two (RFC 9110 5.6.7)."""


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """The seconds an answer's Retry-After asks to wait: delta-seconds (`120`), or an HTTP date (none, for one past),
    measured from the answer's own Date where it has one (the server's clock, which the date it asks is of: a server
    an hour ahead of this machine asking 5 s was read as asking 3605 s, and not asked again; one behind asking an hour
    was asked again at once), else from now; None for no value or one of neither form, which is no ask (RFC 9110 lets
    a client ignore it)."""
    value = headers.get("Retry-After")
    if value is None:
        return None
    if SECONDS.fullmatch(value):
        return float(value)
    then = _http_date(value)
    if then is None:
        return None
    return max(0.0, (then - (_http_date(headers.get("Date", "")) or datetime.now(timezone.utc))).total_seconds())


def _http_date(value: str) -> datetime | None:
    """An HTTP date as a time of a zone (an asctime date's of UTC: ASCTIME, where it was read as no date and its ask
    ignored); None for a value of no date, or of none in a zone, or of a year or a zone no HTTP date has
    (`01 Jan 99999999999`, `+99999999999`), which Python's date cannot hold (an OverflowError, that sample's error in
    Python's words and a preflight's traceback)."""
    try:
        then = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if then.tzinfo is None and ASCTIME.fullmatch(value):
        return then.replace(tzinfo=timezone.utc)
    return then if then.tzinfo is not None else None


def waiting(backoff: Callable[[RetryCallState], float]) -> Callable[[RetryCallState], float]:
    """The wait before another try, a tenacity wait: `backoff`'s, or the longer wait the failure's server asked
    (`Retryable.after_s`, within the request's timeout: `base.asked_again`)."""

    def wait(state: RetryCallState) -> float:
        failed: Any = state.outcome.exception() if state.outcome else None
        return max(backoff(state), getattr(failed, "after_s", None) or 0.0)

    return wait


class AskedLater(Exception):
    """A preflight call answered by a server busy a moment (429, 503, ...) that asked by Retry-After a wait within a
    request's timeout: asked again after that wait, where a busy answer asking none is refused at once; `failure` the
    error the call raised, if one."""

    def __init__(self, after_s: float, failure: BaseException | None = None) -> None:
        super().__init__(f"asked again after {after_s:g} s")
        self.after_s, self.failure = after_s, failure


def asked_later(retry: bool, headers: Mapping[str, str], timeout_s: float,
                failure: BaseException | None = None) -> None:
    """Raise AskedLater for an answer worth another try (`retry`) whose Retry-After asks a wait of at most
    `timeout_s`."""
    after = retry_after_s(headers)
    if retry and after is not None and after <= timeout_s:
        raise AskedLater(after, failure)


PREFLIGHT = "the preflight"
DIGEST_CHECK = "its model list, which says whether the model is the one the run began with,"
"""What a server's model list is asked for as the run ends (`same_to_the_end`), long after its preflight."""


def heeding(retries: int, server: str, asking: str = PREFLIGHT) -> AsyncRetrying:
    """A preflight call's attempts (or another call `asking` names, made as one): `retries` more while its server asks
    a wait (AskedLater), each after that wait, a wait of a second or more said on the console (`server`: who asked
    it), where the user waits; the last AskedLater raised."""
    return AsyncRetrying(stop=stop_after_attempt(retries + 1), retry=retry_if_exception_type(AskedLater),
                         wait=_asked, reraise=True, before_sleep=lambda state: _said(state, retries, server, asking))


def _said(state: RetryCallState, retries: int, server: str, asking: str) -> None:
    if (after := _asked(state)) >= 1:
        output.warning(f"{server} is busy and asks to be asked again after Retry-After: {after:g} s: {asking} is "
                       f"asked again then (try {state.attempt_number + 1} of {retries + 1})")


def _asked(state: RetryCallState) -> float:
    failed: Any = state.outcome.exception() if state.outcome else None
    return getattr(failed, "after_s", 0.0)

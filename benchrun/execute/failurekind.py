"""What kind of failure a request's error is, for fail-fast: the model's requests (`executor`) and a judge's
(`judging`) are counted alike."""

from __future__ import annotations

import re

from benchrun.core.records import ErrorInfo

HTTP_STATUS = re.compile(r"^HTTP (\d{3})\b")


def failure_kind(error: ErrorInfo) -> tuple[str, str | None]:
    """What kind of failure `error` is: its type and HTTP status, not its text (which names the sample, the
    server's page, ...): failures of one kind sample after sample are a broken setup."""
    status = HTTP_STATUS.match(error.message)
    return error.type, status[1] if status else None

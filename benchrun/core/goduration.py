"""A keep_alive as Ollama reads it: text as Go's time.ParseDuration, a number as seconds, either kept as Go's int64
nanoseconds."""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction

GO_DURATION = re.compile(r"[-+]?(0|((\d+\.?\d*|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h))+)", re.ASCII)
"""A duration as Go's time.ParseDuration reads it: `0`, or numbers each with its unit (`1h30m`, `-1s`, `.5h`)."""
GO_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")
GO_UNITS = {"ns": 1, "us": 10**3, "\u00b5s": 10**3, "\u03bcs": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9,
            "h": 3600 * 10**9}
"""Each unit of a Go duration in nanoseconds, the count Go keeps a duration as: an int64, so at most 2**63 - 1
(2562047h47m16.854775807s, about 292 years)."""


def keep_alive_problem(keep_alive: str | float | None) -> str | None:
    """Why Ollama cannot take `keep_alive` (every request of the run refused, HTTP 400, or a number wrapped round);
    None when it can."""
    if isinstance(keep_alive, str) and not GO_DURATION.fullmatch(keep_alive):
        return (f"{json.dumps(keep_alive)} is not a duration Ollama reads: a number of seconds, or text such as 30s, "
                "5m or 1h30m (a negative one keeps the model loaded for ever)")
    if beyond_go(keep_alive):
        return (f"{json.dumps(keep_alive)} is longer than a duration Ollama reads (Go counts one in nanoseconds, at "
                "most 2562047h47m16.854775807s, about 292 years; a text beyond is refused by every request, a number "
                "wraps around); for a model kept loaded for ever give -1")
    return None


def beyond_go(keep_alive: str | float | None) -> bool:
    """Whether a keep_alive is beyond what Ollama keeps as Go's int64 nanoseconds: text as time.ParseDuration adds it
    up (each part truncated to whole nanoseconds), a number of seconds as `int(t) * int(time.Second)` (a negative
    one is for ever)."""
    if isinstance(keep_alive, str):
        total = sum(int(Fraction(number) * GO_UNITS[unit]) for number, unit in GO_PART.findall(keep_alive))
        return total > 2**63 - (not keep_alive.startswith("-"))
    finite = keep_alive is not None and math.isfinite(keep_alive)  # inf and nan: refused as JSON holds none
    return finite and keep_alive >= 0 and int(keep_alive) > (2**63 - 1) // GO_UNITS["s"]

"""Helpers for the thirty-fifth hostile pass of the asking side."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchrun.core.errors import EXIT
from benchrun.execute.formatcheck import FormatCheck
from benchrun.testing.http_fake import Response
from benchrun.testing.lab import Lab
from tests.helpers.wire import records

UNEVALUATED_ITEMS = FormatCheck({"type": "array", "prefixItems": [{"type": "integer"}], "unevaluatedItems": False})
"""A format of one number and nothing after it, closed by unevaluatedItems."""
ONE_OF = FormatCheck({"oneOf": [{"type": "integer"}, {"type": "number"}, {"const": True}, {"type": "boolean"},
                                {"enum": [None, "x"]}, {"type": "string"}]})
"""A format of exactly one of several alternatives, some of which take the same values."""


FORKING = """import os


def s(response, values):
    return 0.5 if os.fork() == 0 else 1.0
"""
"""A scorer that forks, its copy returning from the call too (with another score)."""


STATEFUL = """import gc
import io
import locale
import os
import signal
import socket
import sys
import time
import warnings

ZONE, DIGITS, DEPTH = time.tzname, sys.get_int_max_str_digits(), sys.getrecursionlimit()


def s(response, values):
    try:
        fed = int(bool(input()))
    except EOFError:
        fed = 0
    found = {"fed": fed, "blocked": int(signal.SIGALRM in signal.pthread_sigmask(signal.SIG_BLOCK, [])),
             "locale": int(locale.setlocale(locale.LC_NUMERIC) != "C"), "traced": int(sys.gettrace() is not None),
             "timeout": int(socket.getdefaulttimeout() is not None), "collecting": int(gc.isenabled()),
             "quiet": int(os.path.samestat(os.fstat(2), os.stat(os.devnull))), "zoned": int(time.tzname != ZONE),
             "bounded": int((sys.get_int_max_str_digits(), sys.getrecursionlimit()) != (DIGITS, DEPTH)),
             "strict": int(any(each[0] == "error" for each in warnings.filters)), "pathed": int("/nowhere" in sys.path),
             "rebound": int(type(os.environ) is dict)}
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    signal.setitimer(signal.ITIMER_REAL, 0.01)
    locale.setlocale(locale.LC_NUMERIC, "C.UTF-8")
    sys.settrace(lambda *called: None)
    socket.setdefaulttimeout(0.001)
    gc.disable()
    os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
    os.putenv("TZ", "XYZ-5")
    sys.set_int_max_str_digits(640)
    sys.setrecursionlimit(DEPTH + 7)
    warnings.simplefilter("error")
    sys.path.append("/nowhere")
    os.environ = dict(os.environ)
    sys.stdin = io.StringIO("fed\\n")
    time.tzset()
    time.sleep(0.03)
    sys.path = None
    return found
"""
"""A scorer that says which of the process's settings its call began with changed (SIGALRM blocked, a locale of
numbers other than C, a trace function, a default socket timeout, the garbage collector off, descriptor 2 quieted
to /dev/null, a time zone, a bound on an int's digits or a recursion limit other than those it was imported
with, warnings made errors, a path of its own to import from, os.environ bound to a plain dict, a standard input
that reads something), then changes each
(sys.path bound to None last, its timer's signal left pending while SIGALRM is blocked, the time zone set past
os.environ)."""


def scores_of(tmp_path: Path, source: str, n: int) -> list[tuple[str, Any, Any]]:
    """(sample id, metrics, error) of scorer `s` of `source` in a lab's run of `n` samples, which completed saying
    nothing."""
    with Lab(tmp_path, n=n, latency_s=0, scorer=source) as lab:
        result = lab.call(*lab.args())
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    return sorted((s["id"], s["metrics"], s["error"]) for s in records(lab, "scores.jsonl") if s["scorer"] == "s")


BUSY = b'{"error": "busy"}'


def busy(status: str, after: str) -> bytes:
    """A whole HTTP response of `status` saying it is busy and asking to be asked again after `after`."""
    head = [f"HTTP/1.1 {status}", "Content-Type: application/json", f"Retry-After: {after}",
            f"Content-Length: {len(BUSY)}", "Connection: close"]
    return "\r\n".join(head).encode() + b"\r\n\r\n" + BUSY


def busy_response(after: str) -> Response:
    """A 503 asking to be asked again after `after`, as a fake server's answer."""
    return Response(503, BUSY, wire=busy("503 Service Unavailable", after))


PAST_HOLDING = ("Mon, 01 Jan 99999999999 00:00:00 GMT", "Mon, 01 Jan 2030 00:00:00 +99999999999999999999")
"""Retry-After dates of a year, or a zone, past what Python's date holds (no HTTP date has either)."""


NUL_CHARSET = "application/json; charset*=utf-8''a%00b"
"""A Content-Type whose charset, in RFC 2231's spelling, names a text with a NUL in it (`a\\x00b`)."""


def labelled(body: bytes, content_type: str, status: str = "200 OK") -> bytes:
    """A whole HTTP response of `status` whose body `body` is labelled `content_type`."""
    head = [f"HTTP/1.1 {status}", f"Content-Type: {content_type}", f"Content-Length: {len(body)}", "Connection: close"]
    return "\r\n".join(head).encode() + b"\r\n\r\n" + body


WRITING = """import os


def s(response, values):
    for fd in (100, 101):
        try:
            os.write(fd, b'caf\\xc3\\xa9 \\xff\\n')
        except OSError:
            pass
    return 1
"""
"""A scorer that writes a line, UTF-8 but for one byte, to the scorer process's own pipes (kept at 100 and above)."""

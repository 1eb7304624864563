"""The boundary every answer passes before it is kept, whether a server sent it or the response cache held it: its
size bounded, its strings fit to write, its counts as a server can have measured them, every credential masked; and
what a server says of its model at the preflight, bounded as run.json keeps it."""

from __future__ import annotations

import json
from typing import Any

from benchrun.archive.speed import NS_PER_S
from benchrun.core.errors import RunnerError
from benchrun.core.records import Completion
from benchrun.core.secrets import SECRETS
from benchrun.core.text import writable, writable_data
from benchrun.core.yamlfile import MAX_INT


class TooLarge(Exception):
    """An answer longer than max_response_bytes: that sample's error, not worth another try."""


def too_large(limit: int, key: str) -> TooLarge:
    """TooLarge for an answer past `limit` bytes, the limit set by `key` (runner.max_response_bytes)."""
    return TooLarge(f"the answer is longer than {key} ({limit:,} bytes); the rest was not read")


def received(completion: Completion, max_bytes: int, key: str, seconds: float | None = None,
             waited_s: float | None = None) -> Completion:
    """A runner's answer as it may be kept: its text at most `max_bytes` of UTF-8 (else TooLarge, naming the `key`
    that sets it), every string fit to write (lone surrogates replaced), token counts and durations only as a server
    can have measured them (`_counted`, over the `seconds` the request took where it was asked now, within the
    `waited_s` benchrun waits for one), and every credential benchrun sends masked, so that neither the archive nor
    the response cache can hold one a server echoed."""
    text = writable(completion.text)
    if len(text) * 4 > max_bytes and len(text.encode("utf-8")) > max_bytes:
        raise too_large(max_bytes, key)
    done = writable(completion.done_reason) if completion.done_reason else completion.done_reason
    extra = writable_data(completion.extra) if completion.extra else completion.extra
    counted = _counted(completion, seconds, waited_s)
    if text is not completion.text or done is not completion.done_reason or extra != completion.extra or any(
            value != getattr(completion, key) for key, value in counted.items()):
        completion = completion.model_copy(update={"text": text, "done_reason": done, "extra": extra, **counted})
    if SECRETS:
        completion = Completion.model_validate_json(SECRETS.scrub(completion.model_dump_json()))
    return completion


MAX_TOKENS_PER_S = 10**6
"""The fastest a server can have read or written tokens: ten times past any (a small model's prompt on a large GPU is
read at some 10^5 tokens a second, its answer written at some 10^3)."""
RATED = (("prompt_tokens", "prompt_eval"), ("completion_tokens", "eval"))
"""Each token count and the duration the server says it took."""


def _counted(completion: Completion, seconds: float | None, waited_s: float | None = None) -> dict[str, Any]:
    """An answer's token counts and durations as a server can have measured them (`_measured`): a duration its count
    was read or written in faster than MAX_TOKENS_PER_S is not reported (10^12 tokens, or 50, in a microsecond), nor
    is a completion count written faster than that in the `seconds` the whole request took, for each made speeds of
    10^15 tokens a second in the archive and `show`; nor a completion count of 0 for an answer with text (a proxy
    that counts none), which made the run's speed 0 tokens a second; nor a duration longer than benchrun waits for a
    request (`waited_s`, runner.timeout_s: a load of 11 days, which `show` gave as the run's load time)."""
    wrote = _measured(completion.completion_tokens)
    counts = {"prompt_tokens": _measured(completion.prompt_tokens),
              "completion_tokens": None if wrote == 0 and completion.text else wrote}
    durations = {k: v for k, v in completion.durations_ns.items() if _measured(v) is not None and (
        waited_s is None or v <= waited_s * NS_PER_S)}
    for count, took in RATED:
        if counts[count] is not None and took in durations and _too_fast(counts[count], durations[took] / NS_PER_S):
            del durations[took]
    wrote = counts["completion_tokens"]
    if seconds is not None and wrote is not None and _too_fast(wrote, seconds):
        counts["completion_tokens"] = None
    return {**counts, "durations_ns": durations}


def _too_fast(count: int, seconds: float) -> bool:
    return count > MAX_TOKENS_PER_S * seconds


def _measured(value: int | None) -> int | None:
    """A token count or duration as a server may have measured it: a whole number from 0 to 2^53 - 1 (what every
    JSON reader keeps exactly); anything else (a negative count, 10**30 tokens) is not reported."""
    return value if value is not None and 0 <= value <= MAX_INT else None


MAX_DESCRIPTION_BYTES = 2**20
"""The most JSON run.json keeps of what one server says of its model (Ollama's /api/tags entry, /api/show and
/api/version; an OpenAI-compatible /models entry): a real server's is a few KB (a template, the GGUF's metadata).
run.json keeps it once for each server of a list and for the judge's, and its readers take at most 64 MiB of it."""
MAX_DESCRIPTION_DEPTH = 32
"""The deepest a server's description may nest (a real server's: a few levels); run.json's writer fails on JSON
nested some 250 deep, and making strings writable recursed out of Python's stack on 900."""


SOURCES = {"server": "not what a model server says; {mend} must name one",
           "model file": "not what a GGUF file's metadata holds; {mend}"}
"""What describes a model (an HTTP runner's server, runner=local's GGUF file), and the advice for a description run.json
cannot keep."""


def described(identity: dict[str, Any], server: str, mend: str, source: str = "server") -> dict[str, Any]:
    """`identity` as run.json may keep it, its strings writable: RunnerError when it nests deeper than
    MAX_DESCRIPTION_DEPTH or its JSON is longer than MAX_DESCRIPTION_BYTES (each answer of the preflight is bounded
    by runner.max_response_bytes alone, so two servers' 8 MiB templates and versions made a run.json that every
    reader of the run refused, and a /models entry nested 300 deep a traceback writing it; a GGUF's metadata is
    bounded by nothing). `server` names what describes it, a `source` of SOURCES; `mend` is the key naming the
    server, or what to do of a model file."""
    fix = SOURCES[source].format(mend=mend)
    if nests_deeper(identity, MAX_DESCRIPTION_DEPTH):
        raise RunnerError(f"{server} describes the model in JSON nested more than {MAX_DESCRIPTION_DEPTH} deep, "
                          f"deeper than run.json keeps of a {source}'s description (a real {source}'s is a few "
                          f"levels): {fix}")
    identity = writable_data(identity)
    size = len(json.dumps(identity, ensure_ascii=False).encode())
    if size > MAX_DESCRIPTION_BYTES:
        raise RunnerError(f"{server} describes the model in {size:,} bytes of JSON, more than run.json keeps of a "
                          f"{source}'s description ({MAX_DESCRIPTION_BYTES:,} bytes; a real {source}'s is a few KB): "
                          f"{fix}")
    return identity


def nests_deeper(value: Any, limit: int) -> bool:
    """Whether JSON-like `value` holds lists or dicts nested more than `limit` deep (walked without recursion)."""
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, (dict, list, tuple)):
            if depth > limit:
                return True
            pending.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False

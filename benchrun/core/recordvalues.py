"""What a run's records may hold where a value is free-form or measured, wherever a record is read: a time as
benchrun writes them, a wall time a run can measure, a model's identity and the mappings of run.json that readers
look into. A record holding anything else (a hand's edit, a damaged file) is refused where it is read, in one line.
And which model answered, as a model's identity says (its digest, or without one what its server says of its
weights; compared and shown alike by every reader)."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Annotated, Any, Iterable, Iterator, Literal

from pydantic import AfterValidator, BeforeValidator
from pydantic_core import PydanticCustomError

from benchrun.core.layout import is_version
from benchrun.core.metricvalue import MAX_COUNT, number_shown
from benchrun.core.secrets import SECRETS
from benchrun.core.text import one_line


def _kept(text: str) -> str:
    """An error's text as a record keeps it: every credential masked, one line (benchrun.core.text.one_line)."""
    return one_line(SECRETS.scrub(text))


Message = Annotated[str, AfterValidator(_kept)]
"""Where an error becomes data: a message (or a type's name) from a server, a runner or user code, as one line."""


def _whole(found: Any) -> Any:
    """A schema_version as written: the whole number 1 (1.0 and true, which Python takes for 1, are no version; one
    of 20 digits is said to be a larger number, not one pydantic cannot parse)."""
    if is_version(found, 1):
        return found
    raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": "1"})


Version = Annotated[Literal[1], BeforeValidator(_whole)]
"""A file's schema_version: 1, the one this benchrun writes, as a whole number (each file's schema is at version 1)."""


def _moment(text: str) -> str:
    """A time as benchrun writes them (ISO 8601, `2026-12-01T08:00:00.000000+00:00`), kept as written: a run.json
    whose time is any other text (edited, damaged) is unreadable where it is read, not a traceback where it is
    sorted by (`list`)."""
    try:
        datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not a time as benchrun writes them (ISO 8601): {text[:40]!r}") from None
    return text


Moment = Annotated[str, AfterValidator(_moment)]
"""An ISO 8601 date or date-time, as written."""


def moment_at(text: str) -> datetime:
    """The moment an ISO date or date-time (a `Moment`) names; without an offset, in UTC, as benchrun reads the times
    in run.json, so that any two can be compared (ValueError for no such text)."""
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


MAX_SECONDS = 1e9
"""The longest wall time a record may hold, about 31 years: far beyond any request, and small enough that sums and
percentiles of a million of them stay finite."""


def _duration(seconds: float) -> float:
    """A wall time as a run measures it (a difference of monotonic clock readings): from 0 to MAX_SECONDS; anything
    else (1e308, -5, NaN, written by a hand) is refused where the record is read, never summed into the speed."""
    if not 0 <= seconds <= MAX_SECONDS:
        raise ValueError(f"{seconds!r} s is no wall time a run measures (0 to {MAX_SECONDS:g} s)")
    return seconds


Seconds = Annotated[float, AfterValidator(_duration)]
"""A measured wall time, in seconds."""


def is_seconds(value: Any) -> bool:
    """Whether `value` is a wall time a record may hold (`Seconds`): a number, not a bool, from 0 to MAX_SECONDS."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= MAX_SECONDS


def _count(value: int) -> int:
    """A token count or a server's duration (ns) as the run took it from the server: a whole number from 0 to
    MAX_COUNT; anything else (-5 tokens, 10**30, written by a hand) is refused where the record is read, never made
    into a speed."""
    if not 0 <= value <= MAX_COUNT:
        raise ValueError(f"{number_shown(value)} is no count a server measures (0 to 2^53 - 1)")
    return value


Count = Annotated[int, AfterValidator(_count)]
"""A token count or a server's duration in ns, as measured."""


def _identity(identity: dict[str, Any]) -> dict[str, Any]:
    """A model's identity as a runner records it: what the servers say is free-form, but a run over a list of
    servers keeps each one's identity, with its URL, under `hosts`, and the model's `details` (which `show` and the
    report list) are a mapping."""
    hosts = identity.get("hosts")
    if hosts is not None and not (isinstance(hosts, list) and all(
            isinstance(host, dict) and isinstance(host.get("host"), str) for host in hosts)):
        raise ValueError("hosts: not a list of servers' identities, each a mapping with its URL as `host`")
    if not isinstance(identity.get("details") or {}, dict):
        raise ValueError("details: not a mapping")
    return identity


def _mappings(*keys: str) -> AfterValidator:
    """A free-form mapping of run.json whose `keys`, where present, are mappings too."""
    def checked(data: dict[str, Any]) -> dict[str, Any]:
        for key in keys:
            if not isinstance(data.get(key, {}), dict):
                raise ValueError(f"{key}: not a mapping")
        return data
    return AfterValidator(checked)


def _history(entries: tuple[dict[str, Any], ...]) -> tuple[dict[str, Any], ...]:
    """run.json's history as its readers read it (`archive.sessions`): a resume's entry keeps the identity of the
    session that ended (and its judge model's) as mappings, the answers it recorded and kept as counts or null; a
    retry's `carried_by` lists such sessions with their answers."""
    for number, entry in enumerate(entries):
        for session in (entry, *_sessions_carried(entry, number)):
            _session(session, number)
    return entries


def _sessions_carried(entry: dict[str, Any], number: int) -> list[dict[str, Any]]:
    """A retry's `carried_by`: sessions, each with the count of the lines it asked (which place the lines after it)."""
    carried = entry.get("carried_by", [])
    if not (isinstance(carried, list) and all(isinstance(session, dict) for session in carried)):
        raise ValueError(f"{number}.carried_by: not a list of sessions, each a mapping")
    if any(session.get("answers") is None for session in carried):
        raise ValueError(f"{number}.carried_by: a session without its count of answers")
    return carried


def _session(session: dict[str, Any], number: int) -> None:
    """One session's identities and counts, where given: mappings (or null), counts from 0 (or null)."""
    for key in ("identity", "judge_identity"):
        if session.get(key) is not None and not isinstance(session[key], dict):
            raise ValueError(f"{number}.{key}: not a mapping")
    for key in ("answers", "kept"):
        value = session.get(key)
        if value is not None and not (type(value) is int and value >= 0):
            raise ValueError(f"{number}.{key}: not a count (a whole number from 0): {json.dumps(value)[:40]}")


History = Annotated[tuple[dict[str, Any], ...], AfterValidator(_history)]
"""run.json's `history`: earlier sessions of the run (resumes) and what a retry carried over, as readers read them."""


Identity = Annotated[dict[str, Any], AfterValidator(_identity)]
"""run.json's `identity`: the model as its server (or servers, under `hosts`) describes it."""
JudgeInfo = Annotated[dict[str, Any], _mappings("identity", "runner")]
"""run.json's `judge`: the judge model's identity and its runner config as used (mappings), `allow_self`."""
Environment = Annotated[dict[str, Any], _mappings("packages")]
"""run.json's `environment`: versions and the machine, the packages' versions as a mapping."""


RUN_ID = re.compile("[0-9A-Za-z_-]{1,64}")
"""What may name a run in another's records (`cached_from`): benchrun's run ids are 12 hex digits; letters, digits,
`-` and `_`, at most 64, take any other's, but no path, control character or page of text."""


def same_model_name(name: str, other: str) -> bool:
    """Whether two model names name one model: Ollama's default tag (`llama3.2:latest` is `llama3.2`) aside."""
    return name.removesuffix(":latest") == other.removesuffix(":latest")


def is_run_id(text: str) -> bool:
    """Whether `text` can be a run's id (`RUN_ID`)."""
    return RUN_ID.fullmatch(text) is not None


def _run_id(text: str) -> str:
    """A run's id as `RUN_ID` takes them, kept as written: a run.json or a record whose run id is any other text (a
    line break, an escape sequence, a path) is unreadable where it is read, never printed or looked up as an id."""
    if not is_run_id(text):
        raise ValueError(f"not a run id (letters, digits, '-' and '_', at most 64): {text[:40]!r}")
    return text


RunId = Annotated[str, AfterValidator(_run_id)]
"""A run's id, or the id of the run a record names (`carried_from`, `cached_from`, a retry's parent, a shard)."""


SHA256_HEX = re.compile("(?i)(sha256:)?[0-9a-f]{64}")
"""A model digest that is a sha256 in hex, written in either case, `sha256:` before it or not."""


def model_digest(identity: dict[str, Any]) -> str | None:
    """Which model answered, from a runner's identity: a GGUF file's sha256 as `sha256:<hex>` (runner=local), else
    the server's digest (Ollama's), a sha256 in hex as the hex it names however the server writes it (`sha256:`
    before it, upper case); None when the runner reports none (OpenAI-compatible servers). A digest that is not a
    string (a run.json edited or damaged) is its JSON text, `5`, compared and shown as what it is."""
    if identity.get("sha256"):
        return f"sha256:{identity['sha256']}"
    digest = identity.get("digest")
    if isinstance(digest, str) and SHA256_HEX.fullmatch(digest):
        return digest.lower().removeprefix("sha256:")
    return digest if digest is None or isinstance(digest, str) else json.dumps(digest)


WEIGHTS_SAID = ("root", "meta")
"""What an OpenAI-compatible server's model entry says of the weights behind its served name, where it says it: vLLM's
and SGLang's `root` (the model it loaded, whatever `--served-model-name` calls it), llama-server's `meta` (the GGUF's
parameter count, size, vocabulary and trained context, which differ between two quantisations of one model)."""


def weights_said(identity: dict[str, Any]) -> dict[str, Any] | None:
    """What a model's identity says of its weights besides a digest (`WEIGHTS_SAID`, from its `details`, each given
    and not null or empty); None when it says nothing of them (Ollama's details are its family and quantisation,
    pinned by its digest already)."""
    details = identity.get("details")
    if not isinstance(details, dict):
        return None
    return {key: details[key] for key in WEIGHTS_SAID if details.get(key) not in (None, "", {}, [])} or None


SAID = "said "
"""Before the canonical JSON of what a server says of its model's weights, where `pinned_as` gives that for a digest."""


def pinned_as(identity: dict[str, Any]) -> str | None:
    """Which model answered, as a run compares it from its start to its end: its digest, else what its server says of
    its weights (`weights_said`) and the name its answers give it (`answers_as`: OpenAI's dated snapshot behind an
    alias), as `said {...}`; else None (nothing to compare)."""
    if digest := model_digest(identity):
        return digest
    answers = identity.get("answers_as")
    said = {**(weights_said(identity) or {}), **({"answers_as": answers} if isinstance(answers, str) else {})}
    return SAID + json.dumps(said, sort_keys=True, ensure_ascii=False) if said else None


def answered_as(identity: dict[str, Any], served: Served, now: Any = None) -> dict[str, Any]:
    """`identity` with the name a run's answers (`served`, read with them) gave its model, where no digest pins it: the
    name a model answers as `now`, where any of them gave it (a pool behind one URL answers as each of its models);
    else, where the preflight learned none (runner.structured set, no probe), the last answer's served model, where
    that is not its served name (but for `:latest`)."""
    name = identity.get("name")
    if model_digest(identity) or not isinstance(name, str):
        return identity
    if isinstance(now, str) and now in served.names:
        return {**identity, "answers_as": now}
    said = served.name
    if identity.get("answers_as") or not said or same_model_name(said, name):
        return identity
    return {**identity, "answers_as": said}


class Served:
    """The models a run's answers (records with `extra`) named, and the last, kept as the pass that reads them for its
    own ends goes (`each`): the records are read once."""

    def __init__(self) -> None:
        self.name: str | None = None
        self.names: set[str] = set()

    def each(self, answers: Iterable[Any]) -> Iterator[Any]:
        """`answers` as they come, each noted."""
        for answer in answers:
            self.note(answer)
            yield answer

    def note(self, answer: Any) -> None:
        """Keep the served model `answer` names, if it names one."""
        if isinstance(model := answer.extra.get("model"), str):
            self.name = model
            self.names.add(model)


def pin_shown(pin: str) -> str:
    """A `pinned_as` value in one line: `digest 4a65eed368b0`, or `root "Qwen/..."` (a digest that a server wrote as
    `said ...` is shown as the digest it is)."""
    try:
        said = json.loads(pin.removeprefix(SAID)) if pin.startswith(SAID) else None
    except (ValueError, RecursionError):
        said = None
    return _shown(said) if isinstance(said, dict) and said else f"digest {short_digest(pin)}"


def pin_named(pin: str) -> str:
    """A `pinned_as` value as tables name a model: a digest's first 12 digits, else what its server says of its
    weights."""
    return pin_shown(pin).removeprefix("digest ")


def _shown(said: dict[str, Any]) -> str:
    """What a server says of its weights, in one line: `root "Qwen/...", meta {...}`."""
    return ", ".join(f"{key} {one_line(json.dumps(value, sort_keys=True), 160)}" for key, value in said.items())


def said_of_weights(identity: dict[str, Any]) -> str:
    """A model without a digest, as said in one line with what its server says of its weights: `no digest, root
    "Qwen/..."`."""
    said = weights_said(identity)
    return f"no digest, {_shown(said)}" if said else "no digest"


def short_digest(digest: str) -> str:
    """The first 12 hex digits of a model digest, as `ollama list` shows them."""
    return digest.removeprefix("sha256:")[:12]

"""What a format's `format` keywords ask of a string, as the format check asserts them: each keyword pydantic writes
for a type of its own (`date-time` for a `datetime` field, `uuid`, `uri`, `ipv4`, ...) is read as pydantic reads
that type from JSON, so an answer of a `datetime` field is judged as the class the user wrote would judge it.

JSON Schema leaves a `format` unasserted unless asked; unasserted, `"nope"` was format-valid for a `datetime` field
that the class refuses. Every other keyword (`email`, `hostname`, a user's own) stays unasserted, as before.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import uuid
from functools import lru_cache
from typing import Any, Callable

from jsonschema import FormatChecker
from pydantic import AnyUrl, TypeAdapter, ValidationError

PYDANTIC_TYPES: dict[str, Any] = {
    "date-time": datetime.datetime, "date": datetime.date, "time": datetime.time, "duration": datetime.timedelta,
    "uuid": uuid.UUID, "uri": AnyUrl, "ipv4": ipaddress.IPv4Address, "ipv6": ipaddress.IPv6Address,
    "ipv4network": ipaddress.IPv4Network, "ipv6network": ipaddress.IPv6Network,
    "ipv4interface": ipaddress.IPv4Interface, "ipv6interface": ipaddress.IPv6Interface}
"""Each `format` keyword pydantic writes for a type it checks, and that type."""

UNASSERTED = ("email", "hostname", "idn-email", "idn-hostname", "iri", "iri-reference", "json-pointer", "regex",
              "relative-json-pointer", "uri-reference", "uri-template")
"""The keywords jsonschema-rs would assert of its own when asked to assert any: left unasserted (pydantic writes
them for no type it checks without another package, or for none)."""


@lru_cache(maxsize=None)
def _adapter(kind: str) -> TypeAdapter:
    """pydantic's reader of the type of `kind`, made when an answer first asks for it."""
    return TypeAdapter(PYDANTIC_TYPES[kind])


def _reader(kind: str) -> Callable[[Any], bool]:
    def reads(value: Any) -> bool:
        """Whether pydantic takes `value` (a string; any other value is not this keyword's) as its type from JSON."""
        if not isinstance(value, str):
            return True
        try:
            _adapter(kind).validate_json(json.dumps(value))
        except ValidationError:
            return False
        return True
    return reads


def asserted() -> dict[str, Callable[[Any], bool]]:
    """The format check's reading of every keyword jsonschema-rs knows or pydantic writes (for `formats=`)."""
    return {**{kind: _taken for kind in UNASSERTED}, **{kind: _reader(kind) for kind in PYDANTIC_TYPES}}


def _taken(value: Any) -> bool:
    return True


def format_checker() -> FormatChecker:
    """The same readings for jsonschema (the validator that says what is wrong)."""
    checker = FormatChecker(formats=())
    for kind in PYDANTIC_TYPES:
        checker.checks(kind)(_reader(kind))
    return checker

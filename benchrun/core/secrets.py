"""Secrets never reach a file or the console: refused where a user might give one, scrubbed where a server echoes one.

A config key that names a credential (api_key, token, secret, password, authorization, bearer, ...) at any depth,
a value that is one (`Bearer ...`), or a URL with user info is refused before anything is written. A credential
benchrun itself sends (the API key read from the variable `api_key_env` names) is registered here, and every file
benchrun writes and every line it prints passes through `SECRETS.scrub`, so a server that echoes the key cannot put
it in the archive. The registry is process-wide because what must never be printed is a fact about the process.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

SECRET_WORDS = frozenset({"key", "apikey", "token", "secret", "password", "passwd", "passphrase", "authorization",
                          "auth", "bearer", "credential", "credentials", "cookie"})
"""Words of a key name that make it a credential's name (api_key, x-api-key, access_token, headers.Authorization)."""
NOT_SECRET = frozenset({"api_key_env"})
"""Keys whose value is the name of a credential, not the credential."""
USER_INFO = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/?#@\s]*@")
BEARER = re.compile(r"(?i)^(bearer|basic|token)\s+\S")
MASK = "***"


def secret_key(name: str) -> bool:
    """Whether a config key names a credential."""
    if name in NOT_SECRET:
        return False
    words = [w.lower() for w in re.split(r"[^A-Za-z0-9]+|(?<=[a-z])(?=[A-Z])", name) if w]
    return bool(SECRET_WORDS.intersection(words)) or "apikey" in "".join(words)


def secret_value(value: Any) -> str | None:
    """Why a config value is a credential (a URL with user info, an Authorization value), or None."""
    if not isinstance(value, str):
        return None
    if USER_INFO.match(value):
        return "a URL with a user name or password in it"
    if BEARER.match(value):
        return "an Authorization header value"
    return None


def found(data: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(key path, why) for every credential in a config tree: a credential's key name, or a credential value."""
    if isinstance(data, dict):
        for key, value in data.items():
            where = f"{path}.{key}" if path else str(key)
            if secret_key(str(key)) and value not in (None, "", {}, []):
                yield where, "a credential's name"
            else:
                yield from found(value, where)
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from found(value, f"{path}[{index}]")
    elif (why := secret_value(data)) is not None:
        yield path, why


class Secrets:
    """The credentials this process sends; `scrub` masks each of them in text or bytes."""

    def __init__(self) -> None:
        self._values: set[str] = set()

    def add(self, value: str | None) -> None:
        if value:
            self._values.add(value)

    def clear(self) -> None:
        """Forget them all: one process running several benchrun commands (benchrun.testing.inprocess) starts each
        with none, as a new process would."""
        self._values.clear()

    def scrub(self, text: str) -> str:
        for value in self._values:
            text = text.replace(value, MASK)
        return text

    def scrub_bytes(self, data: bytes) -> bytes:
        for value in self._values:
            data = data.replace(value.encode(), MASK.encode())
        return data

    def __bool__(self) -> bool:
        return bool(self._values)


SECRETS = Secrets()

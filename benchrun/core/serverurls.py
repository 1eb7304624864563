"""A server's address as the config gives it (`runner.host`, `runner.base_url`, a judge's): one URL or a list of
different servers' URLs, each well formed, none listed twice, and its URL as benchrun asks it."""

from __future__ import annotations

from typing import Callable
from urllib.parse import urlsplit

DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"
DEFAULT_OPENAI_BASE_URL = "http://127.0.0.1:8000/v1"


def http_url(address: str) -> str:
    """`gpu1:11434` -> `http://gpu1:11434`; a URL is kept as it is (without a trailing slash)."""
    return (address if "://" in address else f"http://{address}").rstrip("/")


def servers(value: str | list[str], default: str, read: Callable[[str], str] = str.strip) -> str | list[str]:
    """A server key's value (`host`, `base_url`): one address (empty: `default`), or a list of different servers'
    URLs, each well formed (ValueError naming the fault), each as `read` reads it."""
    if isinstance(value, str):
        if address := read(value):
            _well_formed(address)
        return address or default
    if not value:
        raise ValueError("an empty list of servers: give one URL, or a list of one or more")
    urls = [read(url) for url in value]
    for url in urls:
        _well_formed(url)
    seen: dict[str, str] = {}
    for given, url in zip(value, urls):
        if http_url(url) in seen:
            raise ValueError(f"'{given.strip()}' is listed twice (as '{seen[http_url(url)]}'): list each server once")
        seen[http_url(url)] = given.strip()
    return urls


def _well_formed(url: str) -> None:
    parts = urlsplit(http_url(url))
    try:
        parts.port
    except ValueError:
        raise ValueError(f"'{url}' is not a server's URL: its port is not a number from 0 to 65535") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"'{url}' is not a server's URL (http://host:port)")
    if parts.query or parts.fragment or url.rstrip("/").endswith(("?", "#")):
        raise ValueError(f"'{url}' is not a server's URL: a query (?...) or a fragment (#...) has no place in it, for "
                         "benchrun adds the API's paths to it (the query sent as part of the path, or dropped); give "
                         "http://host:port and the path of the API's root")

"""A server's address as the config gives it (`runner.host`, `runner.base_url`, a judge's): one URL or a list of
different servers' URLs, each well formed, none listed twice, and its URL as benchrun asks it."""

from __future__ import annotations

import ipaddress
import re
from typing import Callable
from urllib.parse import urlsplit

from benchrun.core.secrets import said_url, secret_value
from benchrun.core.text import no_control_character

DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"
DEFAULT_OPENAI_BASE_URL = "http://127.0.0.1:8000/v1"
IPV4_STYLE = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$")
"""A host httpx reads as an IPv4 address, and refuses unless it is one."""


def http_url(address: str) -> str:
    """`gpu1:11434` -> `http://gpu1:11434`; a URL is kept as it is (without a trailing slash)."""
    return (address if "://" in address else f"http://{address}").rstrip("/")


OLLAMA_PATHS = ("/api/chat", "/api/generate", "/api/tags", "/api")
"""The paths of Ollama's API its client adds to runner.host (`/api/chat`), which a host given with one asks twice."""
OPENAI_PATHS = ("/chat/completions", "/completions", "/models")
"""The paths of the OpenAI API the runner adds to runner.base_url (the API's root), which a base URL ending in one (the
endpoint copied from an API's documentation) asks twice: `/v1/chat/completions/chat/completions`."""


def servers(value: str | list[str], default: str, read: Callable[[str], str] = str.strip,
            endpoints: tuple[str, ...] = ()) -> str | list[str]:
    """A server key's value (`host`, `base_url`): one address (empty: `default`), or a list of different servers'
    URLs, each well formed (ValueError naming the fault) and ending in none of the API's `endpoints`, each as `read`
    reads it."""
    for given in [value] if isinstance(value, str) else value:
        _splittable(given)
        _no_credential(given)
    if isinstance(value, str):
        _one_url(value, read)
        if address := read(value):
            _well_formed(address)
            _no_endpoint(address, endpoints)
        return zone_read(address) or default
    if not value:
        raise ValueError("an empty list of servers: give one URL, or a list of one or more")
    urls = [read(url) for url in value]
    for url in urls:
        _well_formed(url)
        _no_endpoint(url, endpoints)
    urls = [zone_read(url) for url in urls]
    seen: dict[tuple[str, str, int | None, str], str] = {}
    for given, url in zip(value, urls):
        if (asked := one_server(url)) in seen:
            raise ValueError(f"'{given.strip()}' is listed twice (as '{seen[asked]}'): list each server once")
        seen[asked] = given.strip()
    return urls


DEFAULT_PORTS = {"http": 80, "https": 443}


def one_server(url: str) -> tuple[str, str, int | None, str]:
    """The server a well-formed `url` asks, as its requests reach it: its scheme and host in any case, its port with
    or without leading zeros or left to its scheme's own (`HTTP://H:080` is http://h), its path without a last slash."""
    parts = urlsplit(http_url(url))
    port = parts.port if parts.port is not None else DEFAULT_PORTS.get(parts.scheme)
    return parts.scheme, parts.hostname or "", port, parts.path.rstrip("/")


def _splittable(given: str) -> None:
    """ValueError for a server's URL that urlsplit refuses (`[a,b]`: brackets around what is no IPv6 address), said as
    what it is, not in urlsplit's words (`'a,b' does not appear to be an IPv4 or IPv6 address`)."""
    try:
        urlsplit(http_url(given.strip()))
    except ValueError:
        raise ValueError(f"'{given.strip()}' is not a server's URL: its brackets do not close round an IPv6 address (a "
                         "host in brackets is one, as http://[::1]:11434)") from None


def _no_endpoint(url: str, endpoints: tuple[str, ...]) -> None:
    """ValueError for a well-formed server's URL whose path ends in one of the API's `endpoints`, which the runner adds
    to it: each request would ask that path twice, and the preflight fail only once the run had its directory."""
    path = urlsplit(http_url(url)).path.rstrip("/")
    if ended := next((end for end in endpoints if path.lower().endswith(end)), None):
        root = url.rstrip("/")[:-len(ended)]
        raise ValueError(f"'{url}' ends in {ended}, a path of the API that benchrun adds to the server's URL itself "
                         f"(each request would ask {path}{ended}); give the URL without it: '{root}'")


def _one_url(given: str, read: Callable[[str], str]) -> None:
    """ValueError for one value that is several servers' URLs parted by commas (`$OPENAI_BASE_URL` of `http://a/v1,
    http://b/v1`, where no list can be written): read as one URL whose path holds the comma, and asked so."""
    parts = [part.strip() for part in given.split(",")]
    if len(parts) < 2 or not all(parts) or not all(":" in part for part in parts[1:]):
        return
    for part in parts:
        try:
            _well_formed(read(part))
        except ValueError:
            return
    raise ValueError(f"'{given.strip()}' is {len(parts)} servers' URLs parted by commas, which one value reads as one "
                     f"URL (its path holding the commas); give a list of servers: [{','.join(parts)}]")


def _no_credential(given: str) -> None:
    """ValueError for a server's URL holding a credential as benchrun reads it (`user:pass@host:11434` read as
    http://..., `//user:pass@host`), as a config value holding one is refused; the URL quoted as `said_url` says it."""
    url = given.strip()
    if (shown := said_url(url)) != url or secret_value(http_url(url)) is not None:
        shown = shown if shown != url else said_url(http_url(url))
        raise ValueError(f"'{shown}' is not a server's URL benchrun takes: it holds a user name, a password or a "
                         "credential in its query, which would be archived; give the URL without it (an API key goes "
                         "in the variable api_key_env names)")


NO_HOST_CHARACTER = re.compile(r"[\x00-\x2c/:-@\[-\^`{-\x7f]")
"""An ASCII character no host name holds (a space, `$`, `<`, ...): names are letters, digits, `-`, `_` and dots, and
beyond ASCII as IDNA takes them."""


def _well_formed(url: str) -> None:
    no_control_character(url, "a server's URL cannot hold: reading the URL drops a tab or a line break unseen, and "
                              "the requests would go to another path (a variable set from a file of two lines?); give "
                              "the URL alone")
    parts = urlsplit(http_url(url))
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is not None and not 1 <= port <= 65535:  # 0: Ollama's client asks its default port (11434, 80) in its place
        raise ValueError(f"'{url}' is not a server's URL: its port is not a number from 1 to 65535")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"'{url}' is not a server's URL (http://host:port)")
    if why := _unaskable(parts.hostname) or _zone_unaskable(parts.netloc):
        raise ValueError(f"'{url}' is not a server's URL: its host {parts.hostname!r} {why}")
    if parts.query or parts.fragment or url.rstrip("/").endswith(("?", "#")):
        raise ValueError(f"'{url}' is not a server's URL: a query (?...) or a fragment (#...) has no place in it, for "
                         "benchrun adds the API's paths to it (the query sent as part of the path, or dropped); give "
                         "http://host:port and the path of the API's root")


def _unaskable(host: str) -> str | None:
    """Why no request can be sent to `host` (None: one can), as the socket and httpx read it: an IPv4 address of an
    octet past 255, a label empty or longer than 63 characters (the socket's IDNA codec), a name beyond ASCII that
    IDNA does not take (full-width letters, a circled digit: httpx's). A traceback as the runner was made, else."""
    if IPV4_STYLE.match(host):
        try:
            return _no_one_host(ipaddress.IPv4Address(host))
        except ValueError:
            return "is not an IPv4 address (four numbers from 0 to 255)"
    if ":" in host:  # an IPv6 address, which urlsplit has checked
        try:
            return _no_one_host(ipaddress.IPv6Address(host.split("%")[0]))
        except ValueError:
            return None
    if (label := _bad_label(host)) is not None:
        return f"is not a host name that can be asked ({label}; each label is 1 to 63 characters)"
    if (odd := NO_HOST_CHARACTER.search(host)) is not None:
        return (f"is not a host name that can be asked: it holds {odd[0]!r}, which no host name does (letters, "
                "digits, '-', '_' and '.')")
    try:
        host.encode("idna")
        if not host.isascii():
            import idna  # httpx's IDNA, loaded only for such a name (a dry run loads no HTTP library)
            idna.encode(host)
    except (UnicodeError, ValueError) as err:
        return f"is not a host name that can be asked (each label 1 to 63 characters, in IDNA: {err})"
    return None


RFC6874_ZONE = re.compile(r"(\[[0-9A-Fa-f:.]+)%25(?=[^\]])")
"""An IPv6 address's zone as RFC 6874 writes it in a URL (`[fe80::1%25eth0]`): its `%` encoded."""


def zone_read(url: str) -> str:
    """`url` with an IPv6 address's zone as the socket reads it (`[fe80::1%eth0]`), which the clients pass on as
    written: `%25eth0` was asked as a host name, which does not resolve."""
    return RFC6874_ZONE.sub(r"\1%", url, count=1)


def _zone_unaskable(netloc: str) -> str | None:
    """Why the zone of the IPv6 address in `netloc` (`[fe80::1%eth0]`) leaves it unaskable: given to an address that
    takes none (only a link-local one does), or naming no network interface of this machine; None when it has none."""
    address, zoned, zone = zone_read(netloc).partition("[")[2].partition("]")[0].partition("%")
    try:
        link_local = ipaddress.IPv6Address(address).is_link_local
    except ValueError:
        return None
    if not zoned:
        return None
    if not link_local:
        return (f"gives a zone ({zone!r}, after '%'), which only a link-local address (fe80::/10) takes: give the "
                "address without it")
    import socket  # loaded only for a zone

    try:
        socket.if_indextoname(int(zone)) if zone.isdigit() else socket.if_nametoindex(zone)
    except (OSError, ValueError, OverflowError):
        names = ", ".join(name for _, name in socket.if_nameindex())
        return f"gives a zone ({zone!r}, after '%') that names no network interface of this machine ({names})"
    return None


def _no_one_host(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why `address` is no server's (None: it may be one): a broadcast or multicast address names many hosts or none,
    and a connection to it is refused by this machine (`Network is unreachable`), whatever server runs anywhere."""
    if address == ipaddress.IPv4Address("255.255.255.255"):
        return "is the broadcast address, which names no one server (no connection can be made to it)"
    if address.is_multicast:
        return "is a multicast address, which names no one server (no connection can be made to it)"
    return None


def _bad_label(host: str) -> str | None:
    """`host`'s first label that is empty or longer than 63 characters, said alike on every Python (the socket's IDNA
    codec words it otherwise from release to release); None when there is none. A last dot ends a name."""
    labels = host.split(".")
    for label in labels[:-1] if len(labels) > 1 and not labels[-1] else labels:
        if not label or len(label) > 63:
            return f"a label of {len(label)} characters" if label else "an empty label"
    return None

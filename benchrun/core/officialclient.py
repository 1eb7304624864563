"""What benchrun takes of the official Ollama client: its package, loaded in one place, and how it reads an address.

The package's import builds a default client, which benchrun never uses, from the environment: $OLLAMA_HOST,
$OLLAMA_API_KEY, and httpx's own variables (a proxy in $ALL_PROXY or $HTTP_PROXY, the certificates in $SSL_CERT_FILE).
A value that client cannot take (a port out of range, a key beyond ASCII, a `socks5://` proxy without the socksio
package, a certificate file that is not there) was raised from the import itself: a traceback for every run, one of
another runner too. The package is loaded with those variables held back. A runner's own client is given its host
(runner.host, checked as a setting), reads the key after core.secrets has checked it, and goes through benchrun's
transport, which reads no proxy and names a certificate file it cannot read (execute.runners.transport).

runner.host is taken from $OLLAMA_HOST (conf/runner/ollama.yaml), so it is read as the client reads that variable:
`0.0.0.0`, the setting Ollama's FAQ gives for serving on every interface, is port 11434 there, not port 80."""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType
from urllib.parse import urlsplit

PORT = 11434
"""Ollama's port, for an address that names none."""
READ_AT_IMPORT = ("OLLAMA_HOST", "OLLAMA_API_KEY", "SSL_CERT_FILE", "SSL_CERT_DIR")
"""The variables the package's import reads for its default client, besides the proxies (`held_back`)."""


def held_back(name: str) -> bool:
    """Whether the variable `name` is held back from the package's import: one of `READ_AT_IMPORT`, or a proxy
    (`*_proxy` in any case, as urllib and httpx read them)."""
    return name.upper() in READ_AT_IMPORT or name.lower().endswith("_proxy")


def ollama_package() -> ModuleType:
    """The `ollama` package, imported without the variables its default client would read."""
    if (loaded := sys.modules.get("ollama")) is not None:
        return loaded
    held = {name: os.environ.pop(name) for name in list(os.environ) if held_back(name)}
    try:
        return importlib.import_module("ollama")
    finally:
        os.environ.update(held)


def ollama_address(address: str) -> str:
    """An Ollama server's address as the client reads $OLLAMA_HOST, when it gives no scheme: without a port, Ollama's
    (`gpu1` is `gpu1:11434`), and without a host, this machine (`:11434` is `127.0.0.1:11434`). Any other is kept as
    given (a URL with a scheme means its scheme's port, there too)."""
    address = address.strip()
    if not address or "://" in address:
        return address
    parts = urlsplit(f"http://{address}")
    try:
        port = parts.port
    except ValueError:  # not a port: the setting's check names it
        return address
    netloc = parts.netloc
    if netloc.startswith(":"):
        netloc = f"127.0.0.1{netloc}"
    if port is None:
        netloc = f"{netloc.removesuffix(':')}:{PORT}"
    return address if netloc == parts.netloc else address.replace(parts.netloc, netloc, 1)


OLLAMA_NAME_DEFAULTS = ("registry.ollama.ai", "library")
"""The host and namespace Ollama gives a model's name that names none (`llama3.2` is
registry.ollama.ai/library/llama3.2), as it gives `latest` to one that names no tag."""


def ollama_model(name: str) -> str:
    """A model's name as Ollama reads it, whole: `llama3.2` -> `registry.ollama.ai/library/llama3.2:latest`. Its case
    is not read: the server looks each part of a name up among the models it holds by strings.EqualFold
    (getExistingName, server/routes.go), so `LLAMA3.2:Latest` asks llama3.2:latest; a name's parts are ASCII."""
    head, at, digest = name.partition("@")
    head = head.lower()
    path, _, tag = head.rpartition(":") if ":" in head.rsplit("/", 1)[-1] else (head, "", "latest")
    parts = path.split("/")
    return "/".join([*OLLAMA_NAME_DEFAULTS[:max(0, 3 - len(parts))], *parts]) + f":{tag}" + (f"@{digest}" if at else "")


def one_model_named_twice(names: list[str]) -> str | None:
    """Why `names` name one model twice as Ollama reads them (`llama3.2` and `llama3.2:latest`), which a run or a
    sweep would ask twice over; None when each names another."""
    seen: dict[str, str] = {}
    for name in names:
        if (other := seen.setdefault(ollama_model(name), name)) != name:
            return (f"{other!r} and {name!r} name one model as Ollama reads them, {ollama_model(name)} (a name is "
                    "given the host, namespace and tag it leaves out: registry.ollama.ai, library, latest, and its "
                    "case is not read); list each model once")
    return None

"""TLS for the fake servers: a self-signed certificate made with the `openssl` command (the test is skipped without
it), and a server's context that answers with it."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import pytest


def certificate(where: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for `name` (an IP address or a DNS name) and its key, written into `where`."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    cert, key = where / f"{name}.pem", where / f"{name}.key"
    kind = "IP" if name.replace(".", "").isdigit() else "DNS"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "2", "-subj", f"/CN={name}", "-addext", f"subjectAltName={kind}:{name}"],
                   check=True, capture_output=True)
    return cert, key


def answering_with(cert: Path, key: Path) -> ssl.SSLContext:
    """A server's TLS context answering with `cert`."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context

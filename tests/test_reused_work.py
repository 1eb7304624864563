"""Work a run does once and reuses, or waits on exactly: an import probe's child waited for until the moment it
ends (`core.childwait`), the SSL context made once for the same certificates (`transport.ssl_context`)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import certifi
import pytest

from benchrun.core.childwait import waited
from benchrun.execute.runners.transport import ssl_context


def test_a_child_waited_for_gives_its_exit_code():
    child = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    assert waited(child, 60) == 3
    assert child.returncode == 3


def test_a_child_past_its_time_is_said_as_popen_says_it_and_left_running():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with pytest.raises(subprocess.TimeoutExpired) as said:
            waited(child, 0.2)
        assert (said.value.timeout, child.poll()) == (0.2, None)
    finally:
        child.kill()
    assert waited(child, 60) == -9


def test_one_ssl_context_serves_the_same_certificates_and_a_new_one_is_made_for_others(tmp_path, monkeypatch):
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    assert ssl_context() is ssl_context()
    bundle = shutil.copy(certifi.where(), tmp_path / "ca.pem")
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    made = ssl_context()
    assert made is ssl_context()
    with open(bundle, "a") as more:
        more.write("\n")
    assert ssl_context() is not made

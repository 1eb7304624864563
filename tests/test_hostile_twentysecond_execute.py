"""Hostile input, twenty-second pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found
bad, each with the rule it now obeys.
- one server listed twice, once under an IPv4-mapped IPv6 address (`http://[::ffff:127.0.0.1]:11434` beside
  `http://127.0.0.1:11434`, or `[::ffff:7f00:1]`): a connection to it reaches the IPv4 address, yet the list check
  compared the addresses as written, so the run asked one server as two (twice runner.concurrency at it, each
  response naming one of two `host`s, run.json listing it twice). Now an IPv4-mapped address is the IPv4 address it
  reaches (`execute.hosts.reached_address`): refused as every other second spelling is (exit 2)
"""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.commands import call_benchrun


@pytest.mark.parametrize("second", ["http://[::ffff:127.0.0.1]:{port}", "http://[::ffff:7f00:1]:{port}",
                                    "http://[::ffff:0.0.0.0]:{port}"])
def test_one_server_under_an_ipv4_mapped_address_is_listed_twice(tmp_path, second):
    with FakeOllama() as server:
        second = second.format(port=server.port)
        result = call_benchrun(f"runner.host=['{server.url}','{second}']", "runner.model=llama3.2", "cache=false",
                               f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
        asked = [r for r in server.requests if r["path"] == "/api/chat"]
    assert (result.returncode, result.stderr, asked) == (EXIT["usage"], (
        f"benchrun: error: in 'config': runner.host: '{second}' is '{server.url}' again (both reach 127.0.0.1 port "
        f"{server.port}): list each server once\n"), [])

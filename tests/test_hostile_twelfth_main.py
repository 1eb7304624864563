"""Hostile input, twelfth pass, what the lead session tried beside the three sides' passes: the cases it found bad,
each with the rule it now obeys.

- `resume --host ''` / `retry --host ''` (an unset shell variable, `--host "$GPU"`): taken as no --host, so the run
  was asked of its own servers without a word, and the history noted `"host": ""`; now an empty or blank --host is
  refused in one line (`audit.resume.servers_given`)

What held: a server listed twice in `runner.host` (also as `localhost` beside `127.0.0.1`, or with a trailing `/`),
an empty list, a server at another loopback address; `resume --host` given twice the same, a URL with `?` or `#`,
an unclosed IPv6 bracket, another scheme, a trailing `/`, an API path (`/api/chat`, refused by the preflight).
"""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.lab import Lab


@pytest.mark.parametrize("command", ["resume", "retry"])
@pytest.mark.parametrize("given", ["", " "])
def test_resume_and_retry_refuse_an_empty_host(tmp_path, command, given):
    with Lab(tmp_path, n=4, latency_s=0) as lab:
        assert lab.call(*lab.args()).returncode == EXIT["ok"]
        [run_dir] = lab.run_dirs()
        before = {path.name: path.read_bytes() for path in run_dir.iterdir() if path.is_file()}
        result = lab.call(command, str(run_dir), "--host", given, module="benchrun.audit")
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: --host {given!r}: not a server's URL; give http://host:port, or leave --host out to ask "
        "the run's own servers\n"))
    assert ({path.name: path.read_bytes() for path in run_dir.iterdir() if path.is_file()}, lab.run_dirs()) == (
        before, [run_dir])

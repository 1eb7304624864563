"""Hostile input, sixth pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad, each
with the rule it now obeys.

- an API key with a line break at its end (read from a key file), a carriage return, a space or a character beyond
  ASCII: the line break's key was quoted whole in the transport's error (`Illegal header value b'Bearer sk-...\\n'`),
  which masking the key does not match, so it was printed and kept in run.json; the non-ASCII one a traceback. Now
  refused in one line naming the character, never the key, before anything is asked
- a user's scorer that reads stdin (`input()`, a `breakpoint()` left in, `sys.stdin.readline()`): it read the calls
  behind it as its input, so other samples timed out (a `breakpoint()` cost every sample `scorer_timeout_s`, pdb
  evaluating the calls as it went); now stdin gives user code nothing, and the call that reads it fails at once
- a scorer raising an exception whose own `str()` raises: the scorer process died on every call (`ScorerProcessDied`,
  a new process each time); now that call's error, saying its message cannot be shown
"""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.lab import Lab
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.archives import read_jsonl
from tests.helpers.commands import call_benchrun

KEY = "sk-abcdefghijklmnopqrstuvwxyz0123"
UNSENDABLE = {  # the key as the variable holds it -> the character named, and where
    "a line break at its end": (KEY + "\n", "a line break (\\n) at character 34 of 34"),
    "a carriage return and a line break": (KEY + "\r\n", "a carriage return (\\r) at character 34 of 35"),
    "a space first": (" " + KEY, "a space at character 1 of 34"),
    "a character beyond ASCII": (KEY[:5] + "é" + KEY[5:], "the character U+00E9 at character 6 of 34"),
}


@pytest.mark.parametrize("case", list(UNSENDABLE))
def test_an_api_key_holding_what_no_key_holds_is_refused_naming_the_character(tmp_path, monkeypatch, case):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    key, named = UNSENDABLE[case]
    with FakeOpenAI(models=["m"]) as server:
        result = call_benchrun("runner=openai", f"runner.base_url={server.url}", "runner.model=m",
                               f"outputs={tmp_path / 'outputs'}", cwd=tmp_path, env={"OPENAI_API_KEY": key})
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: runner.api_key_env: $OPENAI_API_KEY holds a key with {named}, which no API key holds (a key "
        "is sent in an HTTP header: visible ASCII characters only); set OPENAI_API_KEY to the key alone (a key read "
        "from a file often ends in a line break)\n"))
    assert (server.requests, server.auth_headers, list(tmp_path.rglob("outputs/*"))) == ([], [], [])


def scorer(body: str) -> str:
    """A custom scorer `s` doing `body`, then scoring 1."""
    return "import sys\n\ndef s(response, values):\n" + "".join(f"    {line}\n" for line in body.splitlines())


READING = {  # what the scorer does -> the error each of its calls gets (None: it scores 1)
    "breakpoint()": {"type": "BdbQuit", "message": "BdbQuit"},
    "input('answer? ')": {"type": "EOFError", "message": "EOF when reading a line"},
    "sys.stdin.readline()": None,
}


@pytest.mark.parametrize("reads", list(READING))
def test_a_scorer_reading_stdin_reads_nothing_and_costs_only_its_own_call(tmp_path, reads):
    with Lab(tmp_path, n=4, latency_s=0, scorer=scorer(f"{reads}\nreturn 1")) as lab:
        result = lab.call(*lab.args("scorer_timeout_s=30"))
        [run_dir] = lab.run_dirs()
    assert result.returncode == EXIT["ok"], result.stderr
    error = READING[reads]
    assert [(s["metrics"], s["error"]) for s in read_jsonl(run_dir / "scores.jsonl") if s["scorer"] == "s"] == [
        (None if error else {"s": 1}, error)] * 4


def test_a_scorer_error_whose_message_raises_is_that_calls_error(tmp_path):
    source = scorer("class Odd(Exception):\n    def __str__(self):\n        raise ValueError('no')\nraise Odd()")
    with Lab(tmp_path, n=3, latency_s=0, scorer=source) as lab:
        assert lab.call(*lab.args()).returncode == EXIT["ok"]
        [run_dir] = lab.run_dirs()
    assert [s["error"] for s in read_jsonl(run_dir / "scores.jsonl") if s["scorer"] == "s"] == [
        {"type": "Odd", "message": "(its message cannot be shown: str() raised ValueError)"}] * 3

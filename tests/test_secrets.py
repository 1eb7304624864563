"""A credential benchrun sends never reaches a file or the console: a key too short to mask safely is refused, and a
key is masked as a whole token (benchrun called in this process)."""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from benchrun.core.secrets import SECRETS
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.commands import call_benchrun

KEY = "sk-test-0123456789abcdef"


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("BENCH_TEST_KEY", KEY)
    assert SECRETS.register_key("BENCH_TEST_KEY") == KEY
    yield
    SECRETS.clear()


@pytest.mark.parametrize(("text", "masked"), [
    (f"Bearer {KEY}", "Bearer ***"),
    (f'{{"error": "bad key {KEY}"}}', '{"error": "bad key ***"}'),
    (f"?api_key={KEY}&model=m", "?api_key=***&model=m"),
    (f"refused {KEY}. {KEY}", "refused ***. ***"),
    (f"{KEY}0 x{KEY} {KEY}_v2 {KEY}-2", f"{KEY}0 x{KEY} {KEY}_v2 {KEY}-2"),  # inside longer runs: other tokens
    ("sk-test-0123456789abcde", "sk-test-0123456789abcde"),
])
def test_a_key_is_masked_as_a_whole_token_only(registered, text, masked):
    assert SECRETS.scrub(text) == masked
    assert SECRETS.scrub_bytes(text.encode()) == masked.encode()


@pytest.mark.parametrize(("env", "args"), [
    ({"OPENAI_API_KEY": "x"}, ()),
    ({"BENCH_KEY": "lm-studio"}, ("runner.api_key_env=BENCH_KEY",)),
    ({"OPENAI_API_KEY": "sk-0123456789abcdef"}, ("dry_run=true",)),
], ids=["x", "named-variable", "dry-run"])
def test_a_key_too_short_to_mask_is_refused_before_anything_is_asked(tmp_path, monkeypatch, env, args):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    [(variable, key)] = env.items()
    with FakeOpenAI(models=["llama3.2"]) as server:
        result = call_benchrun("runner=openai", f"runner.base_url={server.url}", f"outputs={tmp_path / 'outputs'}",
                               *args, cwd=tmp_path, env=env)
    assert (result.returncode, result.stdout) == (EXIT["usage"], "")
    assert result.stderr == (
        f"benchrun: error: runner.api_key_env: ${variable} holds a {len(key)}-character key, too short to mask "
        "safely (benchrun masks the key wherever it stands in what it writes, and one under 20 characters can be an "
        f"answer's own text); unset {variable} for a server that needs no key, or use a real key\n")
    assert (server.requests, server.auth_headers) == ([], [])
    assert list((tmp_path / "outputs").rglob("*")) == []

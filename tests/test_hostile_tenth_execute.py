"""Hostile input, tenth pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad, each
with the rule it now obeys.

- the environment of a run of any runner holding what the official Ollama client's default client cannot take:
  `import ollama` builds that client (which benchrun never uses) from $OLLAMA_HOST, $OLLAMA_API_KEY and httpx's own
  variables, so `ALL_PROXY=socks5://...` (a common setting; the socksio package not installed), `HTTP_PROXY=::::`,
  `OLLAMA_HOST=x:99999` or `OLLAMA_HOST=[::1` ended every run, one of runner=openai too, in a traceback (ImportError,
  httpx.InvalidURL, ValueError: exit 1), and an $OLLAMA_API_KEY beyond ASCII in a UnicodeEncodeError before
  benchrun's own check of the key could name it; now the package is loaded in one place
  (`core.officialclient`) with those variables held back: a run of another runner goes on, and a run of Ollama
  has $OLLAMA_API_KEY checked as every key is (the one line naming the character)
- $SSL_CERT_FILE naming no file of certificates (a path that is gone, a directory, a file that is not PEM): httpx's
  SSL context, made for every runner's transport (an http:// server's too), raised an OSError that the last resort
  took for Hydra's (`no such file or directory writing Hydra's files in ... (its copies of the config); nothing was
  recorded`, exit 4); now the transport's one line names the variable and its value (exit 2), and run.json keeps it
  as the failed run's reason
- one server listed twice under spellings the list check did not compare (`http://0.0.0.0:P` beside
  `http://127.0.0.1:P` or `localhost`, a connection to the unspecified address reaching the loopback; a path of
  dot segments, `http://h:P/.` beside `http://h:P`, `/v1/../v1` beside `/v1`, which httpx sends to as one): asked
  as two servers, its concurrency doubled and run.json listing it twice; now refused as every other second
  spelling is (`execute.hosts`: an unspecified address compared as the loopback it reaches, a path as requests are
  sent to it)
- a server's answer giving one key twice (`"content"` twice in one message, `"choices"`, `"done": true, "done":
  false`, a usage count): read as its last, without a word, so the text kept was not the one a reader of the bytes
  may see (the eighth pass refused this in an answer's own text, not in the server's answer around it); now each
  runner reads a chat answer through `core.text.server_json`, which refuses it naming the key: that sample's error;
  likewise the preflight's answers (an Ollama model list giving the model's `digest` twice, a /models entry its
  `owned_by` twice: the last was recorded as the model's identity), the preflight's one line naming the key (exit 3)
- an OpenAI-compatible answer of two choices where one was asked for (no `n` is sent): the first taken as the
  answer without a word; now that sample's error (`2 choices, where one was asked for`)
- a judge's reply grading by a whole number written as a float (`{"grade": 2.0}` for a format's `Literal[1, 2, 3]`
  with `scores: {'1': 0, '2': 0.5, '3': 1}`): valid in the format (JSON Schema reads 2.0 as 2, and so did the
  format check), yet the call's error `grade 2.0 has no number in the scores of judge`; now a grade is looked up in
  `scores` as the JSON value it is (`core.manifest.JudgeSpec.grade`), so 2.0 is 2's number, as on a rescore
- runner.host, which conf/ takes from $OLLAMA_HOST, read otherwise than Ollama's client reads that variable:
  `OLLAMA_HOST=0.0.0.0` (the setting Ollama's FAQ gives for serving on every interface) or `gpu1` was port 80
  (`cannot reach Ollama at http://0.0.0.0`, where `ollama list` reaches 0.0.0.0:11434), and `:11434` was refused
  as no server's URL; now an address without a scheme is read as the client reads it
  (`core.officialclient.ollama_address`: no port, Ollama's 11434; no host, 127.0.0.1), so `gpu1` and `gpu1:11434`
  are also one server listed twice
- a scorer raising an exception whose class is named in 300 MB (`type('B' * 300_000_000, (Exception,), {})`): the
  scorer process bounded the message (the seventh pass) but sent the name whole, so each such call overran its
  time limit on the way (`TimeoutError: timed out after 10 s`, though the scorer had returned at once) and the run
  held it in memory; now the name is bounded as the message is, in the scorer process (`scorer_worker._named`)
- an Ollama server that needs $OLLAMA_API_KEY (behind a proxy that checks it): the official client sends the key,
  but benchrun asked /api/version with a client of its own that did not, so the preflight was refused (`Client
  error '401 Unauthorized' for url '.../api/version'`, exit 3) by a server every other request reached; now the
  version is asked with the key as the client asks the rest (`runners.ollama`)

What held (tried, nothing new): a proxy in the environment (HTTP_PROXY, ALL_PROXY pointing at a loopback listener
that notes what reaches it): benchrun's own clients go through its transport, which reads no proxy, so nothing
(and no API key) reached it; $SSL_CERT_DIR naming no directory (read only for https); $OPENAI_API_KEY holding a
line break, a character beyond ASCII or only spaces (refused naming the character), or 1 MB (the server's 431, one
line); $OLLAMA_HOST with user info (refused as a credential), a path, `[::1]`, a port out of range, `[::1` (refused
naming runner.host); one server listed as 127.0.0.1 and localhost or with a trailing slash (refused). HTTP framing:
a bad chunk size, Content-Length and Transfer-Encoding together, two Content-Lengths, 50 interim `100 Continue`
responses before the answer, an HTTP/1.0 answer without a length, a UTF-16 body with its charset, a UTF-8 BOM, an
integer of 5,000 digits in `usage` (that sample's `not JSON` error, one line), NaN in `usage` (not reported).
Answer shapes: `finish_reason: length` and `tool_calls` with null content (kept as done_reason, the text empty), a
served `model` other than the one asked (kept in the record's extra), usage counts negative or past 2^53 (not
reported, the eighth pass's boundary). The judge: a reply with extra keys, a grade `true` for `Literal[1, 2, 3]`
(the format check refuses it), a grade 2.5 (refused), a judge that is the model it grades (refused unless
judge.allow_self). The scorer process: a scorer returning 10,000 metrics (refused, more than 256), a metric named
with a NUL or a line break or in 100,000 characters (refused), an exception class named with line breaks or with
an empty name (one line), `os._exit(0)` mid-call (`ScorerProcessDied` for that call, the process replaced), a
SIGTERM handler set to ignore, a thread that outlives its call and writes a reply of an earlier call's number to
the reply pipe, a forked child holding the pipes: each run completed with every other score as it should be. The
cache: an entry is keyed by the model's digest (a changed digest is a miss) and read under the
runner.max_response_bytes of the run reading it (the eighth pass).
"""

from __future__ import annotations

import json

import pytest

from benchrun.core.errors import EXIT
from benchrun.core.text import ELIDED
from benchrun.execute.scorer_worker import call
from benchrun.testing.http_fake import Response, json_response
from benchrun.testing.lab import Lab
from benchrun.testing.ollama_server import FakeOllama, Reply
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import odd_one
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.judges import TASKS, answer
from tests.helpers.wire import ANSWER, asking, listed, records, wire

pytestmark = pytest.mark.slow

KEY = "k" * 24 + "é"


@pytest.mark.parametrize("env", [{"ALL_PROXY": "socks5://127.0.0.1:9"}, {"HTTP_PROXY": "::::"},
                                 {"OLLAMA_HOST": "x:99999"}, {"OLLAMA_HOST": "[::1"}, {"OLLAMA_API_KEY": KEY}])
def test_the_official_clients_environment_ends_no_run_of_another_runner(tmp_path, env):
    with Lab(tmp_path, n=2) as lab, FakeOpenAI(models=["m"]) as openai:
        result = call_benchrun(*asking(lab, openai, "openai"), cwd=tmp_path, env=env)
        assert (result.returncode, result.stderr) == (EXIT["ok"], "")
        assert [r["id"] for r in records(lab)] == ["times7:a=0", "times7:a=1"]


@pytest.mark.parametrize("env", [{"ALL_PROXY": "socks5://127.0.0.1:9"}, {"HTTP_PROXY": "::::"},
                                 {"https_proxy": "ftp://x"}])
def test_a_proxy_in_the_environment_neither_ends_nor_carries_an_ollama_run(tmp_path, env):
    with Lab(tmp_path, n=2) as lab:
        result = call_benchrun(*lab.args(), cwd=tmp_path, env=env)
        assert (result.returncode, result.stderr) == (EXIT["ok"], "")
        assert [r["text"] for r in records(lab)] == ['{"answer": 0}', '{"answer": 0}']


def test_an_ollama_key_beyond_ascii_is_named_not_a_traceback(tmp_path):
    with Lab(tmp_path, n=2) as lab:
        result = call_benchrun(*lab.args(), cwd=tmp_path, env={"OLLAMA_API_KEY": KEY})
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        "benchrun: error: $OLLAMA_API_KEY holds a key with the character U+00E9 at character 25 of 25, which no API "
        "key holds (a key is sent in an HTTP header: visible ASCII characters only); set OLLAMA_API_KEY to the key "
        "alone (a key read from a file often ends in a line break)\n"))
    assert lab.run_dirs() == []


@pytest.mark.parametrize("runner", ["ollama", "openai"])
@pytest.mark.parametrize("where, why", [("gone.pem", "no such file or directory"), (".", "is a directory"),
                                        ("bench/tasks.yml", "NO_CERTIFICATE_OR_CRL_FOUND")])
def test_a_certificate_file_that_cannot_be_read_is_named(tmp_path, runner, where, why):
    certificates = str(tmp_path / where)
    with Lab(tmp_path, n=2) as lab, FakeOpenAI(models=["m"]) as openai:
        result = call_benchrun(*asking(lab, openai, runner), cwd=tmp_path, env={"SSL_CERT_FILE": certificates})
    line = (f"$SSL_CERT_FILE names '{certificates}', which cannot be read as CA certificates ({why}); unset "
            "SSL_CERT_FILE, or point it at a PEM file of certificates")
    assert (result.returncode, result.stderr) == (EXIT["usage"], f"benchrun: error: {line}\n")
    [run_dir] = lab.run_dirs()
    info = json.loads((run_dir / "run.json").read_text())
    assert (info["status"], info["reason"]) == ("failed", line)


@pytest.mark.parametrize("runner, first, second", [
    ("ollama", "{url}", "http://0.0.0.0:{port}"),
    ("ollama", "http://0.0.0.0:{port}", "http://localhost:{port}"),
    ("ollama", "{url}", "{url}/."),
    ("openai", "{url}", "{url}/../v1"),
    ("openai", "{url}", "{url}/./"),
])
def test_one_server_under_two_more_spellings_is_refused(tmp_path, runner, first, second):
    result, server, asked = listed(tmp_path, runner, first, second)
    first, second = (spelling.format(url=server.url, port=server.port) for spelling in (first, second))
    key = "runner.host" if runner == "ollama" else "runner.base_url"
    assert (result.returncode, result.stderr, asked) == (EXIT["usage"], (
        f"benchrun: error: in 'config': {key}: '{second.rstrip('/')}' is '{first}' again (both reach 127.0.0.1 port "
        f"{server.port}): list each server once\n"), [])


def _completion(**choice: object) -> bytes:
    message = {"role": "assistant", "content": '{"answer": 21}'}
    return json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "usage": {
        "prompt_tokens": 3}, "choices": [{"index": 0, "message": message, "finish_reason": "stop", **choice}]}).encode()


TWICE = 'the key "{}" is given twice in one object (which one is meant, JSON does not say); give each key once'
CONTENT = b'"content": "{\\"answer\\": 21}"'
ODD = {
    "content twice": ("openai", _completion().replace(CONTENT, CONTENT + b', "content": "{}"'),
                      ("APIError", "not a chat completion: " + TWICE.format("content"))),
    "choices twice": ("openai", _completion().replace(b'"choices": [', b'"choices": [], "choices": ['),
                      ("APIError", "not a chat completion: " + TWICE.format("choices"))),
    "a count twice": ("openai", _completion().replace(b'"prompt_tokens": 3', b'"prompt_tokens": 3, "prompt_tokens": 9'),
                      ("APIError", "not a chat completion: " + TWICE.format("prompt_tokens"))),
    "two choices": ("openai", _completion().replace(b"}]}", b"}, " + json.dumps(
        {"index": 1, "message": {"role": "assistant", "content": "{}"}}).encode() + b"]}"), ("APIError", (
            "not a chat completion: 2 choices, where one was asked for (which of them is the answer cannot be told)"))),
    "ollama's content twice": ("ollama", ANSWER.replace(CONTENT, CONTENT + b', "content": "{}"'),
                               ("NotJSON", "not Ollama's chat answer: " + TWICE.format("content"))),
    "done twice": ("ollama", ANSWER.replace(b'"done": true', b'"done": false, "done": true'),
                   ("NotJSON", "not Ollama's chat answer: " + TWICE.format("done"))),
}


@pytest.mark.parametrize("case", ODD)
def test_an_answer_giving_a_key_twice_or_two_choices_is_that_samples_error(tmp_path, case):
    runner, body, (kind, message) = ODD[case]
    odd = odd_one(Reply(wire=wire(body)))
    with Lab(tmp_path, n=4, responder=odd) as lab, FakeOpenAI(models=["m"], responder=odd) as openai:
        result = call_benchrun(*asking(lab, openai, runner, "runner.retries=0"), cwd=tmp_path)
        answers = {r["id"]: (r["text"], r["error"]) for r in records(lab)}
    assert result.returncode == EXIT["ok"]
    assert answers.pop("times7:a=3") == (None, {"type": kind, "message": message})
    assert answers == {"times7:a=0": ('{"answer": 0}', None), "times7:a=1": ('{"answer": 0}', None),
                       "times7:a=2": ('{"answer": 14}', None)}


GRADED = {"tasks.yml": TASKS, "custom_response.py": (
    "from typing import Literal\nfrom pydantic import BaseModel\n\n\nclass Graded(BaseModel):\n    grade: Literal[1, 2, 3]\n"),
    "judges.yml": ("- name: names\n  rubric: 'Q {prompt} A {response} R {reference}'\n  format: Graded\n  score: grade\n"
                   "  scores: {'1': 0.0, '2': 0.5, '3': 1.0}\n")}


@pytest.mark.parametrize("grade, value", [("2", 0.5), ("2.0", 0.5), ("3e0", 1.0)])
def test_a_grade_written_as_a_whole_float_is_that_numbers_grade(tmp_path, grade, value):
    write_bench(tmp_path, GRADED)
    reply = '{"grade": %s}' % grade
    with FakeOllama(models=["llama3.2", "qwen2.5"],
                    responder=lambda req: reply if req.model.startswith("qwen2.5") else answer(req)) as server:
        result = call_benchrun(f"runner.host={server.url}", "task.path=bench", "judge.model=qwen2.5", "cache=false",
                               f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    [run_dir] = sorted(p.parent for p in (tmp_path / "outputs").glob("*/*/run.json"))
    judged = [(j["grade"], j["value"], j["error"]) for j in read_jsonl(run_dir / "judgements.jsonl")]
    assert (result.returncode, judged) == (EXIT["ok"], [(json.loads(grade), value, None)] * 3)


def test_an_ollama_host_is_read_as_ollamas_client_reads_it(tmp_path):
    with Lab(tmp_path, n=2) as lab:
        args = [arg for arg in lab.args() if not arg.startswith("runner.host=")]
        result = call_benchrun(*args, cwd=tmp_path, env={"OLLAMA_HOST": f":{lab.server.port}"})
        assert (result.returncode, result.stderr) == (EXIT["ok"], "")
        [run_dir] = lab.run_dirs()
    info = json.loads((run_dir / "run.json").read_text())
    assert info["runner"]["host"] == f"http://127.0.0.1:{lab.server.port}"
    listed_twice = call_benchrun("runner.host=[gpu1,gpu1:11434]", cwd=tmp_path)
    assert (listed_twice.returncode, listed_twice.stderr) == (EXIT["usage"], (
        "benchrun: error: in 'config': runner.host: 'gpu1:11434' is listed twice (as 'gpu1'): list each "
        "server once\n"))


DIGEST = "a" * 64


@pytest.mark.parametrize("runner", ["ollama", "openai"])
def test_a_preflight_answer_giving_a_key_twice_is_refused(tmp_path, runner):
    entry = {"name": "llama3.2:latest", "model": "llama3.2:latest", "digest": DIGEST, "size": 1}
    tags = json.dumps({"models": [entry]}).replace('"digest": ', f'"digest": "{"b" * 64}", "digest": ').encode()
    models = b'{"object": "list", "data": [{"id": "m", "owned_by": "x", "owned_by": "y"}]}'
    with Lab(tmp_path, n=2) as lab, FakeOpenAI(models=["m"]) as openai:
        server, path, body = (lab.server, "/api/tags", tags) if runner == "ollama" else (openai, "/v1/models", models)
        answered = server.dispatch
        server.dispatch = lambda request: Response(200, body) if request.path == path else answered(request)
        result = call_benchrun(*asking(lab, openai, runner), cwd=tmp_path)
    twice = TWICE.format("digest" if runner == "ollama" else "owned_by")
    said = (f"Ollama at {lab.server.url} answered the preflight with what is not Ollama's answer ({twice}); "
            "runner.host must name an Ollama server") if runner == "ollama" else (
        f"the server at {openai.url} answered GET /models without a model list ({twice}); runner.base_url is "
        "the API root, usually ending in /v1")
    assert (result.returncode, result.stderr) == (EXIT["runner"], f"benchrun: error: {said}\n")


def test_an_exception_named_at_length_crosses_the_pipe_bounded():
    named = type("B" * 1_000_000, (Exception,), {})

    def scorer(response, reference):
        raise named("wrong")

    result, [kind, said] = call("s", scorer, "{}", None)
    assert (result, said, len(kind), ELIDED in kind) == (None, "wrong", 500, True)


def test_an_ollama_server_that_needs_the_key_is_asked_everything_with_it(tmp_path):
    key, asked = "sk-" + "x" * 30, set()
    with Lab(tmp_path, n=2) as lab:
        answered = lab.server.dispatch

        def guarded(request):
            sent = request.headers.get("Authorization")
            asked.add((request.path, sent == f"Bearer {key}"))
            return answered(request) if sent == f"Bearer {key}" else json_response({"error": "unauthorized"}, 401)

        lab.server.dispatch = guarded
        result = call_benchrun(*lab.args(), cwd=tmp_path, env={"OLLAMA_API_KEY": key})
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    assert asked == {("/api/tags", True), ("/api/show", True), ("/api/version", True), ("/api/chat", True),
                     ("/api/ps", True)}

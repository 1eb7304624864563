"""Hostile input, sixth pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad, each
with the rule it now obeys.

- an API key with a line break at its end (read from a key file), a carriage return, a space or a character beyond
  ASCII: the line break's key was quoted whole in the transport's error (`Illegal header value b'Bearer sk-...\\n'`),
  which masking the key does not match, so it was printed and kept in run.json; the non-ASCII one a traceback. Now
  refused in one line naming the character, never the key, before anything is asked
- a setting or an option that is not a finite number (`runner.options.temperature=nan`, `runner.timeout_s=inf`): taken,
  and made null where the config became JSON, so the temperature was sent as null (the server's own default, 0.8 for
  Ollama, where nan was asked) and run.json said `timeout_s: null`; now refused naming the key, before anything is
  asked
- a user's scorer that reads stdin (`input()`, a `breakpoint()` left in, `sys.stdin.readline()`): it read the calls
  behind it as its input, so other samples timed out (a `breakpoint()` cost every sample `scorer_timeout_s`, pdb
  evaluating the calls as it went); now stdin gives user code nothing, and the call that reads it fails at once
- with a package installed that httpx decodes a content coding by (brotli's `br`, zstandard's `zstd`, which other
  packages pull in): httpx asked for it and decoded it past runner.max_response_bytes (which counts what benchrun
  decodes, gzip and deflate), so a brotli bomb was read whole; now every request asks for gzip and deflate only, and
  an answer in another coding is that sample's error, read no further
- runner.model_path naming a directory, a named pipe or a device (`/dev/zero`): `model file '/dev/zero' not found`,
  though it is there; now what it is, `is a character device, not a GGUF file`
- runner.options.num_ctx too large for the machine's memory (100,000,000): `cannot load model file ... (cut short, or a
  model architecture it does not know)`, of the shipped model itself; now that the context cannot be made, and which
  option to lower
- runner.model_path naming a large file llama.cpp refuses at once (a 40 GB file with GGUF's magic, a disk image):
  the error came only once the file's sha256 was read to its end (80 s here for 40 GB of a sparse file); now the
  digest, made beside the loading, is called off when the loading fails
- a judge whose format gives its grade field a default (`score: float = 0.5`) and a judge model that replies `{}`,
  valid in that format: a KeyError traceback (exit 1), the run `failed` with every answer in; now that answer's
  scorer error (the reply gives no grade), for there is no default grade
- a scorer raising an error of a 200 MB message: the message crossed the pipe whole, the run spending its memory and
  the call's time limit on it (each call `TimeoutError`); now bounded as a record keeps it, in the scorer's process
- a scorer raising an exception whose own `str()` raises: the scorer process died on every call (`ScorerProcessDied`,
  a new process each time); now that call's error, saying its message cannot be shown
"""

from __future__ import annotations

import os
import time

import llama_cpp
import pytest

from benchrun.core.errors import EXIT
from benchrun.core.settings import LocalConfig
from benchrun.core.text import one_line
from benchrun.execute.runners.local import model_file
from benchrun.testing.lab import Lab
from benchrun.testing.ollama_server import FakeOllama, Reply
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import odd_one
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import scorer, write_bench
from tests.helpers.commands import call_benchrun, run_dir_of
from tests.helpers.judges import TASKS, answer
from tests.helpers.wire import ANSWER, MODELS, coded, judge_grades, over

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


BROTLI = '''"""The brotli package as httpx finds it, standing in: every body decodes to itself with 2,000,000 spaces inside."""


class error(Exception):
    pass


class Decompressor:
    def process(self, data):
        return data[:1] + b" " * 2_000_000 + data[1:]
'''


@pytest.mark.slow
def test_an_answer_in_a_coding_httpx_decodes_past_the_bound_is_neither_asked_for_nor_read(tmp_path, monkeypatch):
    (tmp_path / "installed").mkdir()
    (tmp_path / "installed" / "brotli.py").write_text(BROTLI)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "installed"), os.environ.get("PYTHONPATH", "")]))
    with Lab(tmp_path, n=4, latency_s=0, responder=odd_one(Reply(wire=coded(ANSWER, "br")))) as lab:
        served, asked_for = lab.server.dispatch, []
        lab.server.dispatch = lambda request: asked_for.append(request.headers["Accept-Encoding"]) or served(request)
        result = lab.run(*lab.args("runner.max_response_bytes=100000"))
        [run_dir] = lab.run_dirs()
    assert result.returncode == EXIT["ok"], result.stderr
    refused = {"type": "BrokenAnswer", "message": "the answer's body is in a content coding benchrun does not read "
                                                  "within runner.max_response_bytes (br); it asks for gzip, deflate"}
    assert [(r["id"], r["error"], r["attempts"]) for r in read_jsonl(run_dir / "responses.jsonl")] == [
        (f"times7:a={a}", refused if a == 3 else None, 2 if a == 3 else 1) for a in range(4)]
    # tags, show, version, 4 chats, 1 retry, ps once the model answered (the context it was loaded with), and tags
    # and the version again as the run ends (is it still the same model, on the same server?)
    assert set(asked_for) == {"gzip, deflate"} and len(asked_for) == 11


NOT_FILES = {"a directory": ("models", "a directory"), "a named pipe": ("pipe.gguf", "a named pipe (FIFO)"),
             "a device": (os.devnull, "a character device")}


@pytest.mark.parametrize("case", list(NOT_FILES))
def test_a_model_path_that_is_not_a_file_is_named_for_what_it_is(tmp_path, case):
    name, kind = NOT_FILES[case]
    (tmp_path / "models").mkdir()
    os.mkfifo(tmp_path / "pipe.gguf")
    with Lab(tmp_path, n=2, latency_s=0) as lab:
        args = [arg for arg in lab.args("runner=local", f"runner.model_path={name}") if "runner.host" not in arg]
        result = lab.call(*args)
    path = tmp_path / name
    assert (result.returncode, result.stderr) == (EXIT["runner"], (
        f"benchrun: error: model file '{path}' is {kind}, not a GGUF file; set runner.model_path to a GGUF file\n"))


@pytest.mark.slow
def test_a_context_too_large_for_the_memory_is_named_as_such(tmp_path):
    with Lab(tmp_path, n=2, latency_s=0) as lab:
        args = [arg for arg in lab.args("runner=local", "++runner.options.num_ctx=100000000") if "runner.host" not in arg]
        result = lab.call(*args)
    assert (result.returncode, result.stderr) == (EXIT["runner"], (
        f"benchrun: error: llama.cpp {llama_cpp.__version__} loaded model file '{model_file(LocalConfig())}' but cannot make a "
        "context of 100,000,000 tokens (runner.options.num_ctx): the memory it needs could not be had; lower "
        "runner.options.num_ctx\n"))


SCORED = """- name: names
  rubric: "Question: {prompt} Answer: {response}"
  format: Score
  score: score
"""
DEFAULTED = "from pydantic import BaseModel\n\n\nclass Score(BaseModel):\n    score: float = 0.5\n"


def test_a_judges_reply_without_its_grade_field_is_that_answers_error_not_its_default(tmp_path):
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": SCORED, "custom_response.py": DEFAULTED})
    with FakeOllama(models=MODELS, responder=lambda req: "{}" if req.model.startswith("qwen2.5") else answer(req)) as server:
        result = over(tmp_path, [server], "task.path=bench", "judge.model=qwen2.5")
    assert result.returncode == EXIT["ok"], result.stderr
    error = {"type": "JudgeReplyInvalid", "message": "the judge's reply gives no grade: it has no field 'score'"}
    assert judge_grades(run_dir_of(result.stdout)) == [(f"symbol:symb={s}", None, error) for s in "#$@"]


def test_a_scorer_errors_huge_message_is_bounded_where_it_is_raised(tmp_path):
    with Lab(tmp_path, n=2, latency_s=0, scorer=scorer("raise ValueError('x' * 200_000_000)")) as lab:
        assert lab.call(*lab.args("scorer_timeout_s=3")).returncode == EXIT["ok"]
        [run_dir] = lab.run_dirs()
    assert [s["error"] for s in read_jsonl(run_dir / "scores.jsonl") if s["scorer"] == "s"] == [
        {"type": "ValueError", "message": one_line("x" * 200_000_000)}] * 2


def test_a_model_file_that_cannot_be_loaded_is_refused_without_reading_it_whole(tmp_path):
    with open(tmp_path / "image.gguf", "wb") as image:  # sparse: 40 GB of which nothing is on disk
        image.write(b"GGUF" + bytes(60))
        image.truncate(40 * 2**30)
    with Lab(tmp_path, n=2, latency_s=0) as lab:
        args = [arg for arg in lab.args("runner=local", "runner.model_path=image.gguf") if "runner.host" not in arg]
        started = time.monotonic()
        result = lab.call(*args)
        took = time.monotonic() - started
    assert (result.returncode, result.stderr) == (EXIT["runner"], (
        f"benchrun: error: llama.cpp {llama_cpp.__version__} cannot load model file '{tmp_path / 'image.gguf'}' (cut "
        "short, or a model architecture it does not know); set runner.model_path to a GGUF file\n"))
    assert took < 20, f"{took:.0f} s: the file was read whole"


NOT_FINITE = ["runner.options.temperature=nan", "runner.timeout_s=inf", "++runner.options.top_p=-inf"]


@pytest.mark.parametrize("setting", NOT_FINITE)
def test_a_setting_that_is_not_a_finite_number_is_refused_not_sent_as_null(tmp_path, setting):
    key, value = setting.lstrip("+").split("=")
    with Lab(tmp_path, n=2, latency_s=0) as lab:
        result = lab.call(*lab.args(setting))
        asked = lab.server.requests
    assert (result.returncode, result.stderr, asked) == (EXIT["usage"], (
        f"benchrun: error: in 'config': {key}: {value} is not a finite number, and JSON (config.yaml, run.json, the "
        "manifest) has none for it: give a number\n"), [])

"""The twenty-fourth hostile pass of issue 19, the asking side.

- an answer declaring a charset that names a codec of Python's that is no text encoding (`charset=rot13`, `hex`,
  `zlib`, `base64`), or one that cannot read it (`utf-16` or `utf-32` on a body without their BOM: a charset that lies;
  `idna`, `undefined`), was read by httpx through it wherever its text was read (an error's message, a body that is
  not JSON): the sample's error `TypeError: descriptor 'translate' for 'str' objects ...`, a bare `AssertionError` or
  `UnicodeError: UTF-16 stream does not start with BOM` (and `zlib` inflated the body past any bound first); a
  preflight so answered ended in a traceback. Now such a charset is not read: the body is read as UTF-8
  (`runners.http.reads_as_text`, in the response hook `bounded`)
- a 3xx answer naming no address (no Location header: httpx's `is_redirect` reads the status alone) was the sample's
  error `KeyError: 'Location'`, and a preflight so answered a traceback. Now it is refused as a redirect is, saying it
  names no address (`runners.http._redirected`)
- an answer's tool calls or content parts holding `NaN`, `Infinity` or `1e999` (which Python's JSON reader takes)
  were kept as the JSON text `[{"x": NaN, "y": Infinity}]`, which no reader of JSON takes. Now such a number is kept as
  null (`runners.base.json_text`, for OpenAI-compatible and Ollama answers alike), walked without recursion however
  deep the calls nest (`_nulled`)
- an Ollama chat answer whose `created_at` or `model` is no string, whose `logprobs` or `message.images` are of
  another shape, or whose `message.tool_name` is no string: `not Ollama's chat answer: 1 validation error for
  ChatResponse created_at ...`, the answer lost for what benchrun keeps nothing of, where an OpenAI-compatible answer
  is kept. Now those fields are left out before the official client reads the answer (`runners.ollama._TYPED`,
  `_APART`), as the twenty-third pass did for `message.thinking`
- the rule left by the last pass, chosen: an answer streamed in parts to a request for one whole answer (an
  OpenAI-compatible server's event stream, `data: {...}`; Ollama's JSON lines) was `not a chat completion: not JSON
  (JSONDecodeError: ...): data: {...}`, or `not Ollama's chat answer: Extra data: line 2 column 1`. It stays that
  sample's error, never retried, and its parts are not put together (a stream cut short reads as a whole answer); the
  error now says what it is and the fix (`runners.errorbody.streamed`)
- an Ollama model list in which another model's entry was odd (`"modified_at": "not a time"`, `"digest": 5`,
  `"details": "x"`, `"model": 7`), or an /api/show whose `modified_at`, `license` or `modelfile` was, refused the run:
  `answered the preflight with what is not Ollama's answer (ValidationError: ...); runner.host must name an Ollama
  server`, though it is one and the run's model is listed rightly. Now another model's entry is read for its name
  alone (`runners.ollama._listed`), and what run.json keeps nothing of is not read (`_SHOWN`, `_LISTED`)
"""

from __future__ import annotations

import json

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.chat import Reply, fake_digest
from benchrun.testing.http_fake import Response
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.archives import read_jsonl
from tests.helpers.commands import run_dir_of
from tests.helpers.p24_execute import asked, ollama_run, ollama_saying, once, openai_run
from tests.helpers.wire import wire


def _declared(charset: str, body: bytes, status: str = "200 OK") -> Reply:
    """A whole HTTP response of `body` declaring `charset`."""
    declared = f"application/json; charset={charset}".encode()
    return Reply(wire=wire(body, status=status).replace(b"application/json", declared))


def test_a_body_declaring_a_charset_that_is_no_text_encoding_is_read_as_utf8(tmp_path):
    _, done = openai_run(tmp_path, once(_declared("rot13", b"not json at all")))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    said = ("not a chat completion: not JSON (JSONDecodeError: Expecting value: line 1 column 1 (char 0)): not json at "
            "all")
    assert asked(done.stdout) == (None, {"type": "APIError", "message": said}, 1, [said])


@pytest.mark.parametrize("charset", ["zlib", "hex", "rot13", "utf-16", "utf-32", "idna", "undefined"])
def test_an_ollama_error_declaring_a_charset_that_is_no_text_encoding_is_its_words(tmp_path, charset):
    done = ollama_run(tmp_path, once(_declared(charset, b"oops", "500 Internal Server Error")))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert asked(done.stdout) == ('{"answer": 6}', None, 2, ["HTTP 500: oops"])


class _HexModels(FakeOpenAI):
    """A server whose model list is an error in a body declaring `charset=hex`."""

    def _models(self, request):
        return Response(500, b"model store offline", content_type="application/json; charset=hex")


def test_a_preflight_answer_declaring_a_charset_that_is_no_text_encoding_is_one_line(tmp_path):
    url, done = openai_run(tmp_path, once(Reply()), server=_HexModels)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["runner"], "", (
        f"benchrun: error: the server at {url} refused the preflight: HTTP 500: model store offline\n"))


def test_a_redirect_naming_no_address_is_refused_as_a_redirect(tmp_path):
    _, done = openai_run(tmp_path, once(Reply(wire=wire(b"{}", status="307 Temporary Redirect"))))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    said = ("HTTP 307: a redirect that names no address (no Location header); benchrun follows no redirect: point the "
            "runner at the server's own address")
    assert asked(done.stdout) == (None, {"type": "Redirected", "message": said}, 1, [said])


class _Moved(FakeOpenAI):
    """A server whose model list is a redirect naming no address."""

    def _models(self, request):
        return Response(308, b"")


def test_a_preflight_redirect_naming_no_address_is_one_line(tmp_path):
    url, done = openai_run(tmp_path, once(Reply()), server=_Moved)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["runner"], "", (
        f"benchrun: error: the server at {url} refused the preflight: HTTP 308: a redirect that names no address (no "
        "Location header); benchrun follows no redirect: point the runner at the server's own address\n"))


ODD_NUMBERS = ('{"choices": [{"message": {"content": [{"type": "text", "text": "{\\"answer\\": 6}"}, {"type": "score", '
               '"p": NaN}], "tool_calls": [{"x": NaN, "y": 1e999, "z": -Infinity}]}, "finish_reason": "stop"}]}')
OLLAMA_ODD = ('{"model": "llama3.2", "done": true, "message": {"role": "assistant", "content": "{\\"answer\\": 6}", '
              '"tool_calls": [{"function": {"name": "f", "arguments": {"x": NaN, "y": 1e999}}}]}}')


def test_odd_numbers_in_an_answers_tool_calls_and_parts_are_kept_as_null(tmp_path):
    _, done = openai_run(tmp_path, once(Reply(raw=ODD_NUMBERS)))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    [record] = [r for r in read_jsonl(run_dir_of(done.stdout) / "responses.jsonl") if r["id"] == "product:a=2,b=3"]
    assert (record["text"], record["extra"]["tool_calls"], record["extra"]["content_parts"]) == (
        '{"answer": 6}', '[{"x": null, "y": null, "z": null}]', '[{"p": null, "type": "score"}]')


def test_odd_numbers_in_tool_calls_nested_900_deep_are_kept_as_null_with_the_answer(tmp_path):
    deep = "[" * 900 + '{"x": NaN}' + "]" * 900
    said = ('{"choices": [{"message": {"content": "{\\"answer\\": 6}", "tool_calls": ' + deep + '}, '
            '"finish_reason": "stop"}]}')
    _, done = openai_run(tmp_path, once(Reply(raw=said)))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    [record] = [r for r in read_jsonl(run_dir_of(done.stdout) / "responses.jsonl") if r["id"] == "product:a=2,b=3"]
    assert (record["text"], record["error"], record["extra"]["tool_calls"]) == (
        '{"answer": 6}', None, "[" * 900 + '{"x": null}' + "]" * 900)


def test_odd_numbers_in_an_ollama_answers_tool_calls_are_kept_as_null(tmp_path):
    done = ollama_run(tmp_path, once(Reply(raw=OLLAMA_ODD)))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    [record] = [r for r in read_jsonl(run_dir_of(done.stdout) / "responses.jsonl") if r["id"] == "product:a=2,b=3"]
    assert (record["text"], record["extra"]["tool_calls"]) == (
        '{"answer": 6}', '[{"function": {"arguments": {"x": null, "y": null}, "name": "f"}}]')


@pytest.mark.parametrize("odd", [{"created_at": 5}, {"model": 5}, {"logprobs": "x"},
                                 {"message": {"role": "assistant", "content": '{"answer": 6}', "images": 5}},
                                 {"message": {"role": "assistant", "content": '{"answer": 6}', "tool_name": [1]}}])
def test_an_ollama_answer_saying_what_benchrun_keeps_nothing_of_oddly_is_kept(tmp_path, odd):
    said = {"model": "llama3.2", "done": True, "message": {"role": "assistant", "content": '{"answer": 6}'}, **odd}
    done = ollama_run(tmp_path, once(Reply(raw=json.dumps(said))))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert asked(done.stdout) == ('{"answer": 6}', None, 1, [])


SSE = ('data: {"choices": [{"delta": {"content": "{\\"answer\\": 6}"}, "finish_reason": null}]}\n\n'
       'data: [DONE]\n\n').encode()
NDJSON = (b'{"model": "llama3.2", "done": false, "message": {"role": "assistant", "content": "{\\"answer\\": 6}"}}\n'
          b'{"model": "llama3.2", "done": true, "message": {"role": "assistant", "content": ""}}\n')
STREAMED = ("the server streamed the answer in parts ({}) where one whole answer was asked: set the server (or the "
            "proxy before it) not to stream")


@pytest.mark.parametrize(("ask", "answer", "said"), [
    ("openai", Reply(raw=SSE.decode()), "not a chat completion: " + STREAMED.format("an event stream")),
    ("openai", Reply(wire=wire(SSE).replace(b"application/json", b"text/event-stream")),
     "not a chat completion: " + STREAMED.format("an event stream")),
    ("ollama", Reply(wire=wire(NDJSON).replace(b"application/json", b"application/x-ndjson")),
     STREAMED.format("JSON lines"))])
def test_an_answer_streamed_in_parts_is_that_samples_error_saying_so(tmp_path, ask, answer, said):
    done = openai_run(tmp_path, once(answer))[1] if ask == "openai" else ollama_run(tmp_path, once(answer))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    error = {"type": "APIError" if ask == "openai" else "Refused", "message": said}
    assert asked(done.stdout) == (None, error, 1, [said])


def _another(entry: dict):
    return lambda listed: {**listed, "models": [*listed["models"], entry]}


@pytest.mark.parametrize(("path", "change"), [
    ("/api/tags", _another({"model": "other", "modified_at": "not a time", "size": 5})),
    ("/api/tags", _another({"model": "other", "digest": 5, "details": "x"})),
    ("/api/tags", _another({"model": 7})),
    ("/api/tags", lambda listed: {"models": [{**listed["models"][0], "modified_at": "yesterday"}]}),
    ("/api/show", lambda shown: {**shown, "modified_at": "garbage", "license": 5, "modelfile": ["x"]})])
def test_what_an_ollama_preflight_says_oddly_of_what_is_not_read_refuses_no_run(tmp_path, path, change):
    done = ollama_saying(tmp_path, path, change)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    identity = json.loads((run_dir_of(done.stdout) / "run.json").read_text())["identity"]
    assert (identity["name"], identity["digest"]) == ("llama3.2:latest", fake_digest("llama3.2"))

"""The twenty-fourth hostile pass of issue 19, the asking side.

- an answer declaring a charset that names a codec of Python's that is no text encoding (`charset=rot13`, `hex`,
  `zlib`, `base64`) was read by httpx through that codec wherever its text was read (an error's message, a body that is
  not JSON): the sample's error `TypeError: descriptor 'translate' for 'str' objects ...` or a bare `AssertionError`
  (and `zlib` inflated the body past any bound first); a preflight so answered ended in a traceback. Now such a charset
  is not read: the body is read as UTF-8 (`runners.http.text_encoding`, in the response hook `bounded`)
"""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.chat import Reply
from benchrun.testing.http_fake import Response
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.p24_execute import asked, ollama_run, once, openai_run
from tests.helpers.wire import wire


def _declared(charset: str, body: bytes, status: str = "200 OK") -> Reply:
    """A whole HTTP response of `body` declaring `charset`."""
    return Reply(wire=wire(body, status=status).replace(b"application/json", f"application/json; charset={charset}".encode()))


def test_a_body_declaring_a_charset_that_is_no_text_encoding_is_read_as_utf8(tmp_path):
    _, done = openai_run(tmp_path, once(_declared("rot13", b"not json at all")))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    said = "not a chat completion: not JSON (JSONDecodeError: Expecting value: line 1 column 1 (char 0)): not json at all"
    assert asked(done.stdout) == (None, {"type": "APIError", "message": said}, 1, [said])


@pytest.mark.parametrize("charset", ["zlib", "hex", "rot13"])
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

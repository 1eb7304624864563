"""Hostile input, fifth pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad, each
with the rule it now obeys.

- a preflight answer whose body does not decode as its Content-Encoding says (`gzip` over plain JSON): a traceback
  (exit 1) from /api/tags, /api/version or GET /models; now one line naming the server, as for any answer broken off
"""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.http_fake import Response
from benchrun.testing.lab import Lab
from benchrun.testing.openai_server import FakeOpenAI
from tests.test_hostile_fourth_execute import asking, wire

NOT_GZIP = ("(BrokenAnswer: the answer's body does not decode as its Content-Encoding (gzip) says: Error -3 while "
            "decompressing data: incorrect header check)")
UNDECODABLE = {  # (runner, path) -> what the run says
    ("ollama", "/api/tags"): f"Ollama at {{url}} answered the preflight with what is not Ollama's answer {NOT_GZIP}; "
                             "runner.host must name an Ollama server",
    ("ollama", "/api/version"): f"Ollama at {{url}} answered the preflight with what is not Ollama's answer "
                                f"{NOT_GZIP}; runner.host must name an Ollama server",
    ("openai", "/v1/models"): f"the server at {{url}} answered GET /models without a model list {NOT_GZIP}; "
                              "runner.base_url is the API root, usually ending in /v1",
}


@pytest.mark.parametrize("case", list(UNDECODABLE))
def test_a_preflight_answer_that_does_not_decode_as_its_content_encoding_is_one_line(tmp_path, case):
    runner, path = case
    lying = Response(200, b"", wire=wire(b'{"models": []}').replace(b"\r\n\r\n", b"\r\nContent-Encoding: gzip\r\n\r\n"))
    with Lab(tmp_path, n=6, latency_s=0) as lab, FakeOpenAI(models=["m"]) as openai:
        server = lab.server if runner == "ollama" else openai
        served = server.dispatch
        server.dispatch = lambda request: lying if request.path == path else served(request)
        result = lab.call(*asking(lab, openai, runner))
    message = UNDECODABLE[case].format(url=server.url)
    assert (result.returncode, result.stderr) == (EXIT["runner"], f"benchrun: error: {message}\n")

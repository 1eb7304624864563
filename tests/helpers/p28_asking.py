"""Servers for the twenty-eighth hostile pass of the asking side: an OpenAI-compatible server whose every answer (the
preflight's probe's too) names the model by another name than its id, as OpenAI's name a dated snapshot."""

from __future__ import annotations

import json

from benchrun.testing.chat import Reply
from benchrun.testing.http_fake import Request, Response, json_response
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import listbench_answer


class AnsweringAs(FakeOpenAI):
    """A server serving `qwen` whose answers each say they are of the model `said` (`gpt-4o-2024-08-06` for
    `gpt-4o`), and whose /models entry names the weights behind it (`root`), if given."""

    def __init__(self, said: str, responder=listbench_answer, root: str | None = None):
        super().__init__(models=["qwen"], responder=responder)
        self.said, self.root = said, root

    def _models(self, request: Request) -> Response:
        """The /models list, each entry saying (as vLLM's) the weights behind it where `root` is given."""
        listed = json.loads(super()._models(request).body)
        rooted = {"root": self.root} if self.root else {}
        return json_response({**listed, "data": [{**entry, **rooted} for entry in listed["data"]]})

    def dispatch(self, request: Request) -> Response | None:
        response = super().dispatch(request)
        if request.path != "/v1/chat/completions" or response is None or response.status != 200:
            return response
        return json_response({**json.loads(response.body), "model": self.said})


class Breaks:
    """listbench's answers for the first `answered` chats, then HTTP 500 for every chat: a server that broke."""

    def __init__(self, answered: int) -> None:
        self.left = answered

    def __call__(self, req):
        self.left -= 1
        return listbench_answer(req) if self.left >= 0 else Reply(status=500, error="boom")

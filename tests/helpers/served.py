"""An OpenAI-compatible server that says, as vLLM's does, which weights it loaded (`root` in its /models entries)."""

from __future__ import annotations

import json

from benchrun.testing.http_fake import Request, Response, json_response
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import listbench_answer

FULL = "Qwen/Qwen2.5-7B-Instruct"
AWQ = "Qwen/Qwen2.5-7B-Instruct-AWQ"


class Served(FakeOpenAI):
    """An OpenAI-compatible server whose /models entry says, as vLLM's does, which weights it loaded (`root`)."""

    def __init__(self, root: str, name: str = "qwen", responder=listbench_answer):
        self.root = root
        super().__init__(models=[name], responder=responder)

    def _models(self, request: Request) -> Response:
        listed = json.loads(super()._models(request).body)
        return json_response({**listed, "data": [{**entry, "root": self.root} for entry in listed["data"]]})


class Restarted(Served):
    """A server that says, from its `after`-th answer on, that other weights (`AWQ`) are behind the served name."""

    def __init__(self, after: int, name: str = "qwen", responder=listbench_answer):
        super().__init__(FULL, name, self._answer)
        self.after, self.answered, self.answers = after, 0, responder

    def _answer(self, req):
        self.answered += 1
        if self.answered == self.after:
            self.root = AWQ
        return self.answers(req)

"""Servers that fail in the middle of a run, as responders for the loopback servers."""

from __future__ import annotations

import threading

from benchrun.testing.ollama_server import Reply
from tests.helpers.answers import listbench_answer


class DiesAfter:
    """Answers `answers` requests, then drops the next and shuts its server down (a server that dies mid-run)."""

    def __init__(self, answers: int):
        self.answers, self.server = answers, None

    def __call__(self, req):
        self.answers -= 1
        if self.answers >= 0:
            return listbench_answer(req)
        if self.answers == -1:
            threading.Thread(target=self.server.stop).start()
        return Reply(drop=True)

"""Runs for the thirtieth hostile pass of the archive side: an OpenAI-compatible server that answered the preflight's
probe as one model and every sample as another, and a server refusing every sample of some tasks."""

from __future__ import annotations

from pathlib import Path

from benchrun.testing.chat import Reply
from benchrun.testing.http_fake import Request, Response
from benchrun.testing.ollama_server import ChatRequest
from tests.helpers.answers import listbench_answer
from tests.helpers.commands import call_benchrun, run_dir_of
from tests.helpers.p28_asking import AnsweringAs


class SwitchedAfterProbe(AnsweringAs):
    """A server serving `qwen` whose first chat answer (the preflight's probe) names the model `probed`, and every
    later one `later`: a gateway that put another model behind the name after the probe."""

    def __init__(self, probed: str, later: str):
        super().__init__(probed)
        self.later = later

    def dispatch(self, request: Request) -> Response | None:
        response = super().dispatch(request)
        if request.path == "/v1/chat/completions":
            self.said = self.later
        return response


def switched_run(root: Path, probed: str, later: str) -> Path:
    """A finished run (runner.structured=auto) of listbench against `SwitchedAfterProbe(probed, later)`."""
    with SwitchedAfterProbe(probed, later) as server:
        done = call_benchrun("runner=openai", f"runner.base_url={server.url}", "runner.model=qwen", "cache=false",
                             "runner.structured=auto", f"outputs={root / 'o'}", cwd=root)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return run_dir_of(done.stdout)


def symbol_refused(request: ChatRequest) -> Reply | str:
    """listbench's answers, but HTTP 400 for every sample of the symbol tasks: their metrics have no value."""
    return Reply(status=400, error="nope") if "symbol" in request.prompt else listbench_answer(request)

"""The twenty-third hostile pass of issue 19, the asking side: the review's findings on it, then a fresh pass.

- a 200 whose body is an error object naming no status (`{"error": {"code": "insufficient_quota", ...}}`, `{"error":
  "overloaded"}`) and no choices was `not a chat completion` (never retried, the body dumped), and the structured-output
  probe took it for the dialect's answer. Now an `error` with no choices is an error always: its name and message
  said, retried when it says the server is busy (`runners.errorbody.error_said`)
- a structured-output probe answered busy (a 503, a 500 of the server's own, a 200's error object saying 429) was
  never asked again: the run refused at once (exit 3). Now the probe is asked with the runner's retries and backoff,
  as every request is (`OpenAIRunner._probe`, `runners.base.retrying`, `base.transient` for what is worth it)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.execute.runners.openai import PROBE_PROMPT
from benchrun.testing.chat import Reply
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import listbench_answer
from tests.helpers.archives import read_jsonl
from tests.helpers.commands import call_benchrun, run_dir_of

QUOTA = json.dumps({"error": {"code": "insufficient_quota", "type": "insufficient_quota",
                              "message": "You exceeded your current quota, please check your plan and billing details."}})


def _openai(tmp_path: Path, responder, *args: str):
    with FakeOpenAI(models=["m"], responder=responder) as server:
        return server.url, call_benchrun("runner=openai", f"runner.base_url={server.url}", "runner.model=m",
                                         "cache=false", "runner.backoff_s=0", "task.only=[product]",
                                         f"outputs={tmp_path / 'outputs'}", *args, cwd=tmp_path)


def _once(body: str, prompt: str = "find the product of 2 and 3"):
    """A responder answering the first request of `prompt` with the raw 200 body `body`, then rightly."""
    seen: list[str] = []

    def responder(request):
        if request.prompt == prompt and prompt not in seen:
            seen.append(prompt)
            return Reply(raw=body)
        return listbench_answer(request)
    return responder


def _failed(stdout: str) -> list[tuple[str, object, int, list[str]]]:
    return [(r["id"], r["error"], r["attempts"], [a["error"]["message"] for a in r["failed_attempts"]])
            for r in read_jsonl(run_dir_of(stdout) / "responses.jsonl") if r["failed_attempts"]]


def test_a_200_error_object_naming_no_status_is_that_samples_error_not_a_chat_completion(tmp_path):
    _, done = _openai(tmp_path, _once(QUOTA), "runner.structured=json_schema")
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    said = ("HTTP 200 saying insufficient_quota: You exceeded your current quota, please check your plan and billing "
            "details.")
    assert _failed(done.stdout) == [("product:a=2,b=3", {"type": "APIError", "message": said}, 1, [said])]


@pytest.mark.parametrize(("body", "said"), [
    (json.dumps({"error": "overloaded"}), "HTTP 200 saying an error: overloaded"),
    (json.dumps({"error": {"type": "overloaded_error", "message": "Overloaded"}}),
     "HTTP 200 saying overloaded_error: Overloaded"),
    (json.dumps({"error": {"code": "rate_limit_exceeded", "message": "Rate limit reached for requests"}, "choices": []}),
     "HTTP 200 saying rate_limit_exceeded: Rate limit reached for requests"),
])
def test_a_200_error_object_saying_the_server_is_busy_is_asked_again(tmp_path, body, said):
    _, done = _openai(tmp_path, _once(body), "runner.structured=json_schema")
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert _failed(done.stdout) == [("product:a=2,b=3", None, 2, [said])]


def test_a_structured_output_probe_answered_200_with_an_error_object_is_no_dialects_answer(tmp_path):
    url, done = _openai(tmp_path, lambda r: Reply(raw=QUOTA) if r.prompt == PROBE_PROMPT else listbench_answer(r))
    said = ("HTTP 200 saying insufficient_quota: You exceeded your current quota, please check your plan and billing "
            "details.")
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["runner"], "", (
        f"benchrun: error: the server at {url} refused every structured-output dialect (json_schema: {said}; "
        f"json_object: {said}; none: {said})\n"))


@pytest.mark.parametrize("busy", [Reply(status=503, error="overloaded"), Reply(status=500, error="CUDA out of memory"),
                                  Reply(raw=json.dumps({"error": {"code": 429, "message": "Rate limit reached"}}))])
def test_a_structured_output_probe_answered_busy_is_asked_again_with_the_runners_retries(tmp_path, busy):
    _, done = _openai(tmp_path, _busy_once(busy))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    info = json.loads((run_dir_of(done.stdout) / "run.json").read_text())
    assert info["identity"]["structured_dialect"] == "json_schema"


def _busy_once(busy: Reply):
    """A responder answering the structured-output probe `busy` once, then rightly."""
    asked: list[str] = []

    def responder(request):
        if request.prompt == PROBE_PROMPT and not asked:
            asked.append(request.prompt)
            return busy
        return listbench_answer(request)
    return responder

"""Hostile input, twenty-first pass, the asking side's second wave (issue 19's fresh pass of the same kinds): the
cases it found bad, each with the rule it now obeys.

- an OpenAI-compatible answer whose content is a list of parts (Mistral's reasoning models: a `thinking` part, then
  the answer's `text` parts; a refusal part): refused as `content is a list, not a string`, so the archive held no
  word of the answer that came back, and `max_consecutive_failures` of them stopped the run as a broken setup that
  no mending could finish. Now the text parts' text, joined, is the answer, and the other parts are kept as their
  JSON text (`extra.content_parts`), as a thinking model's thinking and a refusal are (`runners.openai._content`)
- a list of OpenAI-compatible servers (two gateways) serving one name from two models: their /models entries alike
  (no digest, no `root`), the preflight's probe answer of each naming another model (`qwen2.5-7b`, `qwen2.5-14b`,
  kept in each server's identity as `answers_as`): the run completed (exit 0), half its answers the 7B's and half
  the 14B's, scored as one model's. Now refused before any question, naming what each answered as
  (`execute.hosts._same_model`), exit 3
- a judge that is the model under test behind one gateway under another name (the gateway serving `qwen` and
  `judge` from one model, the probe's answer of each naming it `qwen2.5-7b`): the model graded its own answers, the
  run completed (exit 0) with `judge.allow_self` false. Now the names compared include the one the probe's answer
  gave each (`execute.session.same_model`, `_names`), refused as the same model on the same server, exit 2
- an Ollama model that cannot chat (an embedding model: /api/show's capabilities `["embedding"]`), or
  `runner.think=true` for a model that does not think (no `thinking` among them): the preflight passed, every request
  was refused (`HTTP 400: "llama3.2" does not support chat`), and five in a row stopped the run as a broken setup with
  the advice `finish it once the setup is mended with: benchrun-audit resume RUN`, which no resume can follow (the
  model and runner.think are the manifest's). Now refused at the preflight, as the server says it
  (`runners.ollama.OllamaRunner._can_answer`), exit 3

What held (tried, nothing new): OpenAI-compatible answers of HTTP 200 that are no chat completion (an error object,
an HTML page, a server-sent-event stream not asked for: the sample's one-line APIError); `finish_reason: length` (kept
as done_reason, format_valid 0); an Ollama that gives no capabilities (asked as before); the judge's and the model's
repeat seeds as cache keys. Retry-After, 429/503 for ever, trickling bodies, odd usage, several choices: earlier
passes' tests.
"""

from __future__ import annotations

import json

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.chat import default_responder
from benchrun.testing.lab import Lab
from benchrun.testing.ollama_server import FakeOllama, Reply
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import listbench_answer, odd_one
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.judges import ANSWERS, JUDGES, RESPONSE, TASKS
from tests.helpers.wire import asking, records, wire


def chat_completion(content: object) -> bytes:
    """An OpenAI-compatible answer of one choice whose message's content is `content`."""
    choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
    return json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                       "choices": [choice]}).encode()


THINKING = {"type": "thinking", "thinking": [{"type": "text", "text": "3 times 7"}]}
PARTS = {  # the content of the answer to a = 3 -> what is recorded: (its text, extra.content_parts, error)
    "thinking, then text in two parts": ([THINKING, {"type": "text", "text": '{"answer":'},
                                          {"type": "text", "text": " 21}"}],
                                         ('{"answer": 21}', json.dumps([THINKING], sort_keys=True), None)),
    "a refusal part": ([{"type": "refusal", "refusal": "no"}],
                       ("", '[{"refusal": "no", "type": "refusal"}]', None)),
    "a part that is not an object": ([{"type": "text", "text": "{}"}, 5], (None, None, {
        "type": "APIError", "message": "not a chat completion: choices[0].message.content[1] is a number, not an "
                                       "object"})),
    "a text part whose text is not a string": ([{"type": "text", "text": ["{}"]}], (None, None, {
        "type": "APIError", "message": "not a chat completion: choices[0].message.content[0].text is a list, not a "
                                       "string"})),
}


@pytest.mark.parametrize("case", list(PARTS))
def test_an_answer_given_as_content_parts_keeps_its_text_and_its_other_parts(tmp_path, case):
    content, kept = PARTS[case]
    odd = odd_one(Reply(wire=wire(chat_completion(content))))
    with Lab(tmp_path, n=4, latency_s=0, responder=odd) as lab, FakeOpenAI(models=["m"], responder=odd) as openai:
        result = lab.call(*asking(lab, openai, "openai"))
        [answer] = [r for r in records(lab) if r["id"] == "times7:a=3"]
        scores = {s["scorer"]: s["metrics"] for s in records(lab, "scores.jsonl") if s["id"] == "times7:a=3"}
    assert result.returncode == EXIT["ok"], result.stderr
    assert (answer["text"], answer["extra"].get("content_parts"), answer["error"]) == kept
    if kept[0] == '{"answer": 21}':
        assert scores == {"format_valid": {"format_valid": 1}, "times7": {"times7": 1}}


class Aliased(FakeOpenAI):
    """A gateway serving `qwen` from the model `behind`, whose answers name it (LiteLLM's alias of a deployment)."""

    def __init__(self, behind: str):
        self.behind = behind
        super().__init__(models=["qwen"], responder=listbench_answer)

    def _completion(self, model, reply):
        return {**super()._completion(model, reply), "model": self.behind}


def test_servers_of_a_list_whose_answers_name_different_models_are_refused(tmp_path):
    with Aliased("qwen2.5-7b") as small, Aliased("qwen2.5-14b") as large:
        result = call_benchrun("runner=openai", f"runner.base_url=[{small.url},{large.url}]", "runner.model=qwen",
                               "cache=false", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
        chats = [r for r in small.requests + large.requests if r["path"] == "/v1/chat/completions"]
    assert (result.returncode, result.stderr) == (EXIT["runner"], (
        f"benchrun: error: the servers of runner.base_url serve different models as 'qwen': {small.url} as 'qwen' (no "
        f"digest, answering as 'qwen2.5-7b'), {large.url} as 'qwen' (no digest, answering as 'qwen2.5-14b'); serve "
        "the same model on each, or leave the odd one out of the list\n"))
    assert {r["messages"][0]["content"] for r in chats} == {"Say ok."}


def judged_symbols(req) -> str:
    """The judge's verdict on a rubric, the symbols' names to their questions, a valid format to the probe."""
    if req.prompt == "Say ok.":
        return default_responder(req)
    if "Does the answer name the reference" in req.prompt:
        return json.dumps({"verdict": "right"})
    return json.dumps({"answer": ANSWERS[req.prompt[-1]]})


class Gateway(FakeOpenAI):
    """A gateway serving `qwen` and `judge` from one model, whose answers name it."""

    def __init__(self):
        super().__init__(models=["qwen", "judge"], responder=judged_symbols)

    def _completion(self, model, reply):
        return {**super()._completion(model, reply), "model": "qwen2.5-7b"}


def test_a_judge_answering_as_the_model_under_test_on_its_server_is_refused(tmp_path):
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with Gateway() as gateway:
        result = call_benchrun("runner=openai", f"runner.base_url={gateway.url}", "runner.model=qwen",
                               "task.path=bench", "judge.runner=openai", f"judge.base_url={gateway.url}",
                               "judge.model=judge", "cache=false", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
        chats = [r["messages"][0]["content"] for r in gateway.requests if r["path"] == "/v1/chat/completions"]
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        "benchrun: error: in 'config': judge.model: the judge judge is the model under test (the same model on the "
        "same server): a model grading its own answers favours them; pick another judge.model, or set "
        "judge.allow_self=true (recorded)\n"))
    assert chats == ["Say ok.", "Say ok."]


CANNOT = {  # what /api/show says the model can do, runner.think -> the refusal
    (("embedding",), None): "cannot chat (it can: embedding); pick a chat model for runner.model",
    (("completion", "tools"), "true"): "does not think (it can: completion, tools), and runner.think=true asks it to; "
                                       "unset runner.think, or pick a thinking model",
    (("completion",), "high"): "does not think (it can: completion), and runner.think=high asks it to; unset "
                               "runner.think, or pick a thinking model",
}


@pytest.mark.parametrize(("capabilities", "think"), list(CANNOT))
def test_an_ollama_model_that_cannot_do_what_the_run_asks_is_refused_at_the_preflight(tmp_path, capabilities, think):
    refused = Reply(status=400, error='"llama3.2" does not support chat')
    with FakeOllama(responder=lambda _: refused, capabilities=capabilities) as ollama:
        thinking = [] if think is None else [f"runner.think={think}"]
        result = call_benchrun(f"runner.host={ollama.url}", *thinking, "cache=false", f"outputs={tmp_path / 'o'}",
                               cwd=tmp_path)
        chats = [r for r in ollama.requests if r["path"] == "/api/chat"]
    assert (result.returncode, result.stderr, chats) == (EXIT["runner"], (
        f"benchrun: error: Ollama at {ollama.url} says model 'llama3.2:latest' {CANNOT[capabilities, think]}\n"), [])


def test_an_ollama_model_that_says_nothing_of_what_it_can_do_is_asked(tmp_path):
    """An Ollama before 0.6.4 gives no capabilities: nothing to refuse by."""
    with FakeOllama(responder=listbench_answer, capabilities=()) as ollama:
        result = call_benchrun(f"runner.host={ollama.url}", "runner.think=true", "cache=false",
                               f"outputs={tmp_path / 'o'}", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")

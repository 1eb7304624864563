"""Hostile input, twenty-first pass, the asking side's second wave (issue 19's fresh pass of the same kinds): the
cases it found bad, each with the rule it now obeys.

- an OpenAI-compatible answer whose content is a list of parts (Mistral's reasoning models: a `thinking` part, then
  the answer's `text` parts; a refusal part): refused as `content is a list, not a string`, so the archive held no
  word of the answer that came back, and `max_consecutive_failures` of them stopped the run as a broken setup that
  no mending could finish. Now the text parts' text, joined, is the answer, and the other parts are kept as their
  JSON text (`extra.content_parts`), as a thinking model's thinking and a refusal are (`runners.openai._content`)
"""

from __future__ import annotations

import json

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.lab import Lab
from benchrun.testing.ollama_server import Reply
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import odd_one
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

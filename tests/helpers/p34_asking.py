"""Helpers for the thirty-fourth hostile pass of the asking side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchrun.execute.formatcheck import FormatCheck
from benchrun.testing.chat import Reply
from benchrun.testing.http_fake import Response
from benchrun.testing.ollama_server import FakeOllama
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import listbench_answer
from tests.helpers.archives import read_jsonl
from tests.helpers.commands import call_benchrun, run_dir_of
from tests.helpers.p24_execute import asked, ollama_run, once, openai_run
from tests.helpers.wire import wire

CHAT = {"ollama": b'{"model": "m", "done": true, "message": {"role": "assistant", "content": "{\\"answer\\": 1}"}}',
        "openai": b'{"choices": [{"message": {"role": "assistant", "content": "{\\"answer\\": 1}"}}]}'}
"""A whole chat answer (of a wrong product) of each runner."""


def first_answered(tmp_path: Path, runner: str, answer: bytes) -> tuple[Any, Any, int, list[str]]:
    """What a run of the product task against a fake of `runner` recorded of the sample whose first answer is the
    whole HTTP response `answer`."""
    responder = once(Reply(wire=answer))
    done = ollama_run(tmp_path, responder) if runner == "ollama" else openai_run(tmp_path, responder)[1]
    assert (done.returncode, done.stderr) == (0, "")
    return asked(done.stdout)


def preflight_answered(tmp_path: Path, runner: str, path: str, response: Response) -> tuple[int, str]:
    """What a run of the product task against a fake of `runner` (ollama, openai) answering GET or POST `path` with
    `response` ended with: its exit code, and its stderr with the fake's URL as `{url}`."""
    server = FakeOllama(models=["llama3.2"], responder=listbench_answer) if runner == "ollama" else FakeOpenAI(
        models=["m"], responder=listbench_answer)
    with server:
        served = ([f"runner.host={server.url}"] if runner == "ollama" else
                  ["runner=openai", f"runner.base_url={server.url}", "runner.model=m"])
        answered = server.dispatch
        server.dispatch = lambda request: response if request.path == path else answered(request)
        done = call_benchrun(*served, "cache=false", "runner.retries=0", "task.only=[product]",
                             f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
        return done.returncode, done.stderr.replace(server.url, "{url}")


KEYED = FormatCheck({"type": "object", "properties": {"a": {"type": "integer"}, "b\"q": {}}, "required": ["a"],
                     "dependentRequired": {"a": ["b\"q"]}, "additionalProperties": False})
"""A format of a required key `a`, which asks for a key `b"q` beside it, and no other key."""
MATCHED = FormatCheck({"type": "object", "patternProperties": {"^a": {}}, "additionalProperties": False,
                       "propertyNames": {"maxLength": 3}})
"""A format of keys that start with `a`, none longer than 3 characters."""
PATTERNED = FormatCheck({"type": "object", "patternProperties": {"^a": {}}, "additionalProperties": False})
"""A format of keys that start with `a`, of any length."""
CLOSED = FormatCheck({"type": "array", "prefixItems": [{"type": "integer"}], "items": False})
"""A format of one number and nothing after it (a tuple, as a hand-written schema closes it)."""
UNEVALUATED = FormatCheck({"type": "object", "properties": {"a": {}}, "unevaluatedProperties": False})
"""A format of a key `a` and no other, by unevaluatedProperties."""
RS_EXPLAINED = FormatCheck({"type": "object", "patternProperties": {"^a": {}}, "unevaluatedProperties": False})
"""A format explained by jsonschema-rs alone (unevaluatedProperties beside patternProperties)."""


TAGGED = {"type": "object", "properties": {
    "tags": {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]}},
    "points": {"type": "array", "items": {"$ref": "#/$defs/Point"}}, "n": {"type": "integer"},
    "named": {"type": "object", "additionalProperties": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}},
    "$defs": {"Point": {"type": "object", "properties": {"x": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}}}
"""A format of tags, numbers or strings (as pydantic writes a `list[int | str]`), points of a class of its own whose
`x` may be null, a count, and numbers or strings by name (`dict[str, int | str]`)."""


def format_said(tmp_path: Path, runner: str, message: dict[str, Any]) -> Any:
    """The format_valid record's metrics and detail of the sample a fake of `runner` first answers with a chat answer
    whose message is `message` (its content, and what it says beside)."""
    said = {"role": "assistant", **message}
    body = {"model": "m", "done": True, "message": said} if runner == "ollama" else {"choices": [{"message": said}]}
    responder = once(Reply(wire=wire(json.dumps(body).encode())))
    done = ollama_run(tmp_path, responder) if runner == "ollama" else openai_run(tmp_path, responder)[1]
    assert (done.returncode, done.stderr) == (0, "")
    [score] = [s for s in read_jsonl(run_dir_of(done.stdout) / "scores.jsonl")
               if (s["id"], s["scorer"]) == ("product:a=2,b=3", "format_valid")]
    return score["metrics"], score["detail"]

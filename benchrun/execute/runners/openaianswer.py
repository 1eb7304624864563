"""What an OpenAI-compatible server's chat completion says: its first choice's text and finish reason, its usage, and
what it says apart (the served model, a refusal, reasoning, tool calls); APIError for a body that is none."""

from __future__ import annotations

from typing import Any

import httpx

from benchrun.core.text import NotJSON, server_json
from benchrun.execute.runners.base import (
    Completion,
    Retryable,
    json_count,
    json_kind,
    json_text,
    not_the_models,
    tools_called,
)
from benchrun.execute.runners.errorbody import body_text, error_said, not_json, streamed

SAID_APART = ("refusal", "reasoning_content", "reasoning")
"""What a chat completion's message may say apart from its content, kept with the answer (`extra`): a refusal, and a
reasoning model's reasoning (vLLM's, llama.cpp's and DeepSeek's `reasoning_content`; `reasoning` of others)."""


class APIError(Exception):
    """An answer that is not a chat completion: an HTTP error status with the server's message, or a malformed body."""


def completion_of(response: httpx.Response) -> Completion:
    """The first choice's text and finish reason, token usage, and the served model id and system_fingerprint."""
    try:
        body = server_json(response.content)
    except NotJSON as err:
        raise APIError(f"not a chat completion: {err}") from None
    except (ValueError, RecursionError) as err:  # UnicodeDecodeError too: a body that is not UTF-8
        if said := streamed(response.content, response.headers.get("Content-Type", "")):
            raise APIError(f"not a chat completion: {said}") from None
        raise APIError(f"not a chat completion: {not_json(err, response.content, response.charset_encoding)}") \
            from None
    if (said := error_said(body)) is not None:
        if said.retry:
            raise Retryable(said.line) from APIError(said.line)
        raise APIError(said.line)
    try:
        choice, *others = body["choices"]
        message = choice["message"]
    except (KeyError, ValueError, TypeError):
        raise APIError(f"not a chat completion: {_text_of(response)}") from None
    if others:
        raise APIError(f"not a chat completion: {len(others) + 1} choices, where one was asked for (which of them "
                       "is the answer cannot be told)")
    if not isinstance(message, dict):
        raise APIError(f"not a chat completion: choices[0].message is {json_kind(message)}, not an object")
    if said := not_the_models(message.get("role")):
        raise APIError(f"not a chat completion: {said}")
    content, parts = _content(message.get("content"))
    usage = body["usage"] if isinstance(body.get("usage"), dict) else {}
    extra = {"model": _text(body.get("model")), "system_fingerprint": _text(body.get("system_fingerprint"))}
    if parts:
        extra["content_parts"] = json_text(parts)
    extra.update({key: said for key in SAID_APART if (said := _text(message.get(key)))})
    if "refusal" not in extra and (refused := _refused(parts)):
        extra["refusal"] = refused
    if calls := message.get("tool_calls") or message.get("function_call"):
        extra["tool_calls"] = tools_called(calls)
    finish = choice.get("finish_reason")
    return Completion(text=content or "", done_reason=finish if isinstance(finish, str) else None,
                      prompt_tokens=json_count(usage.get("prompt_tokens")),
                      completion_tokens=json_count(usage.get("completion_tokens")), extra=extra)

def said_of(response: httpx.Response, field: str) -> str | None:
    """A text field of a probe's answer (a chat completion, read already as `completion_of` reads it), or None."""
    try:
        body = server_json(response.content)
    except (ValueError, RecursionError):
        return None
    return _text(body.get(field)) if isinstance(body, dict) else None


def _content(content: Any) -> tuple[str | None, list[dict[str, Any]]]:
    """An answer's text, and the parts of its content that are not text: a content given as a list of parts (Mistral's
    reasoning models give a `thinking` part, then `text` parts) is its text parts' text, joined, its other parts kept
    (`extra.content_parts`), as the archive holds all that came back; APIError for a content of no such shape."""
    if isinstance(content, (str, type(None))):
        return content, []
    if not isinstance(content, list):
        raise APIError(f"not a chat completion: choices[0].message.content is {json_kind(content)}, not a string")
    for i, part in enumerate(content):
        if not isinstance(part, dict):
            raise APIError(f"not a chat completion: choices[0].message.content[{i}] is {json_kind(part)}, not an "
                           "object")
        if part.get("type") == "text" and not isinstance(said := part.get("text"), str):
            raise APIError(f"not a chat completion: choices[0].message.content[{i}].text is {json_kind(said)}, not a "
                           "string")
    text = [part["text"] for part in content if part.get("type") == "text"]
    return "".join(text), [part for part in content if part.get("type") != "text"]


def _refused(parts: list[dict[str, Any]]) -> str:
    """What content parts of type `refusal` say (OpenAI's parts of an assistant's content: `{"type": "refusal",
    "refusal": "..."}`), joined: the answer's refusal, as a message's `refusal` is (kept beside the parts as they
    came); empty where none says one."""
    return "".join(said for part in parts if part.get("type") == "refusal" and (said := _text(part.get("refusal"))))


def _text(value: Any) -> str | None:
    """An answer's served model id, system_fingerprint or refusal as the API gives it, a string; anything else (a
    number, JSON nested 300 deep, which no record could be written of) is not kept."""
    return value if isinstance(value, str) else None


def _text_of(response: httpx.Response) -> str:
    """A body's text as an error quotes it (`errorbody.body_text`)."""
    return body_text(response.content, response.charset_encoding)

"""The rule for an answer whose chat the server cut to fit the model's context, saying nothing: where the counts it
gave say the chat and its answer outgrew the context it states, the model did not see the chat whole (`ContextFull`,
as the embedded engine refuses such a chat). One rule for a fresh answer and a cached one, for every runner."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from benchrun.core.text import server_json
from benchrun.core.yamlfile import MAX_INT

LLAMACPP = "llamacpp"
"""The owner llama.cpp's server names in its GET /v1/models entries."""


def outgrew(chat: Any, answer: Any, context: int | None) -> bool:
    """Whether `chat` + `answer` tokens (as a server counted them) did not fit in `context`; counts no server measured
    (negative, past JSON's integers, not numbers) and an unknown context say nothing."""
    answer = answer if isinstance(answer, int) and not isinstance(answer, bool) else 0
    if not (context and isinstance(chat, int) and not isinstance(chat, bool)):
        return False
    if not 0 <= min(chat, answer) <= max(chat, answer) <= MAX_INT:
        return False
    return chat >= context or chat + answer > context


def stated(length: Any) -> int | None:
    """A context length as a server states it: a positive JSON integer, else nothing said."""
    valid = isinstance(length, int) and not isinstance(length, bool) and 0 < length <= MAX_INT
    return length if valid else None


async def props_context(client: httpx.AsyncClient, base_url: str, timeout_s: float) -> int | None:
    """The context each slot of llama.cpp's server holds, as its GET /props states it (`default_generation_settings`'
    `n_ctx`, at the server's root, beside /v1); None where it does not answer so (a best-effort read)."""
    try:
        response = await asyncio.wait_for(client.get(f"{base_url.removesuffix('/v1')}/props"), timeout_s)
        settings = server_json(response.content).get("default_generation_settings") if response.is_success else None
    except Exception:  # whatever the server does (no answer, no JSON, too large), it states no context
        return None
    return stated(settings.get("n_ctx")) if isinstance(settings, dict) else None

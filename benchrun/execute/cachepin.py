"""What pins a cached answer to the model that gave it: the model part of a response cache key (`model_pin`), and
whether an answer may be kept, or taken, under a key of it (`pinned_by`)."""

from __future__ import annotations

from typing import Any, Mapping

from benchrun.core.enginebuild import builds
from benchrun.core.records import Completion
from benchrun.core.recordvalues import model_digest, same_model_name, weights_said


def pinned_by(answer: Completion, pin: Mapping[str, Any]) -> bool:
    """Whether `answer` may be kept under a key of `pin`: an OpenAI-compatible answer whose own system_fingerprint is
    not the one the preflight pinned the model by came from another configuration of the server than the key says
    (restarted with another model or build mid-run), and a later run of the pinned one took it from the cache as its
    model's answer; an answer that gives none, or a pin that has none, cannot be told apart. Likewise an answer of a
    model pinned by its digest that says it is of another model than the one asked (Ollama's answer naming another
    model, which its `extra` keeps only then: a proxy before the server that routed the request elsewhere), or an
    OpenAI-compatible answer naming another model than its served name (a router's fallback model: `_named`)."""
    said = answer.extra.get("model")
    if said is not None and ("digest" in pin or "served" in pin and not _named(said, pin)):
        return False
    pinned, given = pin.get("system_fingerprint"), answer.extra.get("system_fingerprint")
    return pinned is None or given is None or given == pinned


def _named(said: str, pin: Mapping[str, Any]) -> bool:
    """Whether an OpenAI-compatible answer's served model `said` is the model `pin` pins: its served name (but for
    `:latest`), or the name the preflight's probe answer gave it (`answers_as`: OpenAI's `gpt-4o-2024-08-06` for
    `gpt-4o`)."""
    return any(same_model_name(said, str(pin[name])) for name in ("served", "answers_as") if pin.get(name))


def model_pin(runner: str, identity: Mapping[str, Any]) -> dict[str, Any] | None:
    """What says which model answers: its digest (Ollama's, a GGUF's sha256) and the build of the engine that runs it
    (`builds`: an answer of Ollama 0.5 is not Ollama 0.9's, whose llama.cpp is another); for runner=openai the served
    model id, the system_fingerprint of the preflight's answer (null when unknown) and, where the server's model entry
    says it, what it says of the weights behind that name (`weights_said`: vLLM's root, llama-server's meta), so one
    name served from other weights is another key. None: nothing pins the model."""
    if runner == "openai":
        weights = weights_said(dict(identity))
        said = {"answers_as": identity["answers_as"]} if identity.get("answers_as") else {}
        return {"served": identity.get("name"), "system_fingerprint": identity.get("system_fingerprint"),
                **({"weights": weights} if weights else {}), **said}
    digest = model_digest(dict(identity))
    built = builds(identity)
    return {"digest": digest, **({"builds": built} if built else {})} if digest else None

"""The build of the engine that answered, as a model's identity says it: Ollama's server version, the embedded
llama.cpp's. Another build of one engine gives other answers to one chat from one model."""

from __future__ import annotations

from typing import Any, Mapping

BUILD_KEYS = {"server_version": "server version", "llama_cpp_version": "llama-cpp-python"}
"""The identity keys naming the engine's build (Ollama's `/api/version`, llama-cpp-python's version), as said."""


def builds(identity: Mapping[str, Any]) -> list[str]:
    """The builds `identity` names, sorted: its own, and each server's of a list (`hosts`), as said (`server version
    '0.12.6'`); empty where none says one."""
    entries = identity.get("hosts")
    each = [identity, *(entries if isinstance(entries, list) else [])]
    return sorted({f"{name} {said!r}" for entry in each if isinstance(entry, Mapping)
                   for key, name in BUILD_KEYS.items() if isinstance(said := entry.get(key), str) and said})

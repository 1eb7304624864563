"""What compare sets side by side beside the inputs: which models answered and judged, and which software ran; and
the settings a manifest was compiled with, as dotted keys."""

from __future__ import annotations

import os
from typing import Any

from benchrun.archive.reader import Run
from benchrun.core.manifest import Manifest
from benchrun.core.recordvalues import model_digest

PROVENANCE_KEYS = ("server_version", "size", "llama_cpp_version", "name", "structured_dialect", "context_length")
"""Identity keys (Ollama, local and OpenAI-compatible runners) that say which model answered, and how it was loaded,
beside its digest."""


def provenance(run: Run) -> dict[str, Any]:
    """The model's (and the judge model's) digest and identity and the software versions of a run, as dotted
    keys."""
    judge = run.info.judge.get("identity", {})
    environment = {k: v for k, v in run.info.environment.items() if k in ("benchrun", "python")}
    return {**_identity("model", run.info.identity), **_identity("judge", judge), **flatten(environment),
            **flatten(run.info.environment.get("packages", {}), "packages.")}


def server_version(identity: dict[str, Any]) -> str:
    """The server's version as a model's identity says it, wherever a reader shows it (show, the judge's line, the
    report): its text; `-` where it says none (an earlier benchrun kept null); `unknown` where it is not text (an
    earlier benchrun kept `{"major": 0}`)."""
    version = identity.get("server_version")
    if isinstance(version, str) and version:
        return version
    return "-" if version is None or version == "" else "unknown"


def _identity(prefix: str, identity: dict[str, Any]) -> dict[str, Any]:
    digest = model_digest(identity)
    return {**({f"{prefix}.digest": digest} if digest else {}),
            **{f"{prefix}.{k}": v for k, v in identity.items() if k in PROVENANCE_KEYS},
            **{f"{prefix}.libraries.{name}": sha for name, sha in _libraries(identity).items()}}


def _libraries(identity: dict[str, Any]) -> dict[str, str]:
    """The sha256 of each llama.cpp and ggml library the embedded engine loaded (`libraries`: path -> sha256), by its
    file's name: the same build loaded from another folder is the same code; the same name loaded twice, both."""
    loaded = identity.get("libraries")
    found: dict[str, list[str]] = {}
    for path, sha in (loaded.items() if isinstance(loaded, dict) else ()):
        found.setdefault(os.path.basename(str(path)), []).append(str(sha))
    return {name: ", ".join(sorted(shas)) for name, shas in found.items()}


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings as dotted keys: {"runner": {"model": "x"}} -> {"runner.model": "x"}."""
    flat = {}
    for key, value in data.items():
        if isinstance(value, dict) and value:
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def settings(manifest: Manifest) -> dict[str, Any]:
    """The settings a manifest was compiled with, as dotted keys: its config's, and its repeats (`repeats=3` is kept
    beside the config, in `repeats`: k, 1 without, and how their seeds follow from the seed)."""
    repeats = {"repeats": manifest.k} | ({"repeats.seeds": manifest.repeats.seeds} if manifest.repeats else {})
    return flatten(manifest.config) | repeats

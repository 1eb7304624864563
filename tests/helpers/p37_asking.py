"""Helpers for the thirty-seventh hostile pass of the asking side."""

from __future__ import annotations

import _codecs
import asyncio
import codecs
import contextlib
import json
import os
import posix
import sys
from pathlib import Path
from typing import Any, Callable

from benchrun.core.errors import EXIT
from benchrun.core.records import Completion
from benchrun.execute import scorerleft
from benchrun.execute.cache import Entry, RunCache, Store
from benchrun.execute.cachehit import whole_hit
from benchrun.execute.runners.base import Refused
from benchrun.execute.runners.registry import make_runner
from benchrun.testing.chat import Reply
from benchrun.testing.http_fake import Response
from benchrun.testing.lab import Lab
from benchrun.testing.ollama_server import FakeOllama
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import listbench_answer
from tests.helpers.archives import read_jsonl
from tests.helpers.commands import call_benchrun
from tests.helpers.p24_execute import asked
from tests.helpers.wire import records


def hits_after_check(tmp_path: Path, counts: list[int], host: Any) -> list[tuple[bool, bool]]:
    """For each of `counts`, whether a cached answer to a chat Ollama counted as that many tokens (and 1 of answer) is
    served to a run of num_ctx 300 asking `host` (runner.host: a URL, or a list), and whether its entry is still in
    the cache after."""
    return asyncio.run(_hits_after_check(tmp_path, counts, host))


async def _hits_after_check(tmp_path: Path, counts: list[int], host: Any) -> list[tuple[bool, bool]]:
    runner = make_runner({"type": "ollama", "model": "llama3.2", "host": host, "options": {"num_ctx": 300}})
    found = []
    try:
        with Store(tmp_path / "cache") as store:
            cache = RunCache(store, "ollama", {}, {}, "llama3.2", "r", 2**20, "b")
            for count in counts:
                answer = Completion(text="x", prompt_tokens=count, completion_tokens=1)
                store.put("k", Entry(answer, "llama3.2", None, "a1b2c3d4e5f6", "2026-01-01T00:00:00Z"))
                hit = await whole_hit(runner, cache, "k", cache.get_many(["k"]).get("k"))
                found.append((hit is not None, store.get("k") is not None))
    finally:
        await runner.aclose()
    return found


def stating(tmp_path: Path, entry: dict[str, Any], chat: int, props: bytes = b"") -> tuple[Any, Any, int, list[str]]:
    """What a run recorded of a sample asked of a fake OpenAI-compatible server whose GET /models lists the model by
    `entry` (its fields beside the id), its GET /props answering `props` (a 404 where empty), its answer's usage
    counting `chat` + 1 tokens ({url} for its URL)."""
    listed = json.dumps({"object": "list", "data": [{"id": "m", "object": "model", **entry}]}).encode()
    reply = Reply(content='{"answer": 6}', prompt_eval_count=chat, eval_count=1)
    with FakeOpenAI(models=["m"], responder=lambda request: reply) as fake:
        answered = fake.dispatch
        said = {"/v1/models": Response(200, listed), "/props": Response(200, props) if props else Response(404, b"")}
        fake.dispatch = lambda request: said.get(request.path) or answered(request)
        done = call_benchrun("runner=openai", f"runner.base_url={fake.url}", "runner.model=m", "cache=false",
                             "task.only=[product]", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    return json.loads(json.dumps(asked(done.stdout)).replace(fake.url, "{url}"))


LEAVING = """import concurrent.futures
import threading
import time

CALLS = []
POOL = concurrent.futures.ThreadPoolExecutor(1)


def s(response, values):
    import ctypes.util  # first imported here: no change of the call's own
    CALLS.append(POOL.submit(int, values["a"]).result())
    if values["a"] == 0:
        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
    return {"calls": len(CALLS)}
"""
"""A scorer that says how many calls its process made, the call of sample a=0 leaving a thread running; each call
asks a pool its file made as it was imported, whose thread starts with its first task."""


def calls_seen(tmp_path: Path) -> list[int]:
    """How many calls each sample's call of the `LEAVING` scorer found its process had made, of 3 samples scored in
    their order (one asked at a time)."""
    with Lab(tmp_path, n=3, latency_s=0, scorer=LEAVING) as lab:
        result = lab.call(*lab.args("runner.concurrency=1"))
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    found = sorted((s["id"], s["metrics"], s["error"]) for s in records(lab, "scores.jsonl") if s["scorer"] == "s")
    assert [error for _, _, error in found] == [None] * 3
    return [metrics["s.calls"] for _, metrics, _ in found]


def left_by(monkeypatch: Any, tmp_path: Path, change: Callable[[Any, list[int]], Any]) -> str | None:
    """What `scorerleft.Left` says a call that did `change` left, in this process: the entry points it wraps stand-ins
    that do nothing, a module `p37_holding` stands for numpy, the priority is read as 0 (1 once `change` set it so),
    and a module `p37_registering` in tmp_path registers a fork handler as it is imported (each put back as the test
    ends)."""
    (tmp_path / "p37_registering.py").write_text("import os\n\nos.register_at_fork(before=print)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "p37_registering", raising=False)
    for owner, name in ((sys, "addaudithook"), (os, "register_at_fork"), (posix, "register_at_fork"),
                        (codecs, "register"), (_codecs, "register"), (codecs, "unregister"), (_codecs, "unregister")):
        monkeypatch.setattr(owner, name, lambda *args, **kwargs: None)
    monkeypatch.setattr(scorerleft, "HOLDING", ("p37_holding",))
    priority = [0]
    monkeypatch.setattr(os, "getpriority", lambda which, who: priority[0])
    watch = scorerleft.Watch()
    left = scorerleft.Left(watch)
    watch.calling = True
    change(monkeypatch, priority)
    watch.calling = False
    return left.why()


def changed_at_a_chat(fake: FakeOllama, repulled: bool = False) -> None:
    """`fake` saying version 0.13.0 (or, `repulled`, another digest of llama3.2) from its first chat on."""
    answered = fake.dispatch

    def dispatch(request: Any) -> Any:
        if request.path == "/api/chat":
            if repulled:
                fake.digests["llama3.2"] = "f" * 64
            else:
                fake.version = "0.13.0"
        return answered(request)

    fake.dispatch = dispatch


def upgraded(tmp_path: Path, servers: int) -> tuple[int, str, str, list[str]]:
    """(exit code, stderr, status run.json records, the texts of the answers it kept) of a run of the product task
    asking a list of `servers` fake Ollamas, the first saying version 0.12.6 until it has answered a chat, 0.13.0 after
    ({url} for its URL)."""
    with contextlib.ExitStack() as stack:
        fakes = [stack.enter_context(FakeOllama(models=["llama3.2"], responder=listbench_answer))
                 for _ in range(servers)]
        changed_at_a_chat(fakes[0])
        done = call_benchrun(f"runner.host=[{','.join(fake.url for fake in fakes)}]", "cache=false",
                             "task.only=[product]", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    [run] = (tmp_path / "outputs").glob("*/*/run.json")
    status = json.loads(run.read_text())["status"]
    texts = sorted(record["text"] for record in read_jsonl(run.parent / "responses.jsonl"))
    return done.returncode, done.stderr.replace(fakes[0].url, "{url}"), status, texts


REPLACING_MODULES = """import fractions
import sys
import types

FIRST = fractions.Fraction


def s(response, values):
    import fractions
    import json
    seen = {"stub": int(hasattr(json, "stub")), "fractions": int(fractions.Fraction is FIRST)}
    sys.modules["json"] = types.SimpleNamespace(stub=1)
    del sys.modules["fractions"]
    return seen
"""
"""A scorer that says whether `import json` gives it a stub an earlier call put in the module table, and whether
`import fractions` gives it the fractions its file imported (an earlier call removed it from the table: a second
import made another Fraction); then does both."""


SETTING_HOOKS = """import os
import sys
import tempfile
import threading

FLAGS = sys.getdlopenflags()


def s(response, values):
    hooks = (sys.excepthook, sys.unraisablehook, threading.excepthook)
    seen = {"tempdir": int(tempfile.tempdir == "/gone/p37"),
            "hooks": int(hooks == (sys.__excepthook__, sys.__unraisablehook__, threading.__excepthook__)),
            "dlopen": int(sys.getdlopenflags() == FLAGS)}
    tempfile.tempdir = "/gone/p37"
    sys.excepthook = sys.unraisablehook = threading.excepthook = print
    sys.setdlopenflags(FLAGS | os.RTLD_GLOBAL)
    return seen
"""
"""A scorer that says whether an earlier call's folder of temporary files (`tempfile.tempdir`) is still set, whether
the hooks reporting uncaught and unraisable exceptions are Python's own, and whether the flags extension modules are
loaded with are as its file found them; then sets each."""


def fresh_after_hit() -> str:
    """What asking a fake Ollama that loads the model with 300 tokens' context (runner.options.num_ctx unset) comes
    to, its answer counting 300 + 1 tokens, after a cached answer of 30 + 1 was checked (as a run's first answers
    from the response cache are): the refusal's line, or `taken`."""
    return asyncio.run(_fresh_after_hit())


async def _fresh_after_hit() -> str:
    reply = Reply(content='{"answer": 6}', prompt_eval_count=300, eval_count=1)
    with FakeOllama(models=["llama3.2"], responder=lambda request: reply, context_length=300) as fake:
        runner = make_runner({"type": "ollama", "model": "llama3.2", "host": fake.url})
        try:
            await runner.identify()
            await runner.seen_whole(Completion(text="x", prompt_tokens=30, completion_tokens=1))
            await runner.complete([{"role": "user", "content": "hi"}], {})
        except Refused as err:
            return str(err).replace(fake.url, "{url}")
        finally:
            await runner.aclose()
    return "taken"

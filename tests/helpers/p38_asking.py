"""Helpers for the thirty-eighth hostile pass of the asking side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchrun.core.errors import EXIT
from benchrun.testing.chat import Reply
from benchrun.testing.lab import Lab
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.answers import listbench_answer
from tests.helpers.cacheentry import stats
from tests.helpers.commands import call_benchrun
from tests.helpers.p28_asking import Breaks
from tests.helpers.p37_asking import changed_at_a_chat
from tests.helpers.wire import records


def resumed_on(tmp_path: Path, version: str, *flags: tuple[str, ...]) -> list[tuple[int, str, str, list[Any], Any]]:
    """For each of `flags` in turn, (exit code, stderr, status, the server versions run.json's history keeps of its
    sessions, its identity's now) of a resume with them at a server of `version`, of a run of Ollama 0.12.6 failed
    after 1 answer of the product task's 3 ({url} for the server's URL)."""
    with FakeOllama(responder=Breaks(1)) as first:
        failed = call_benchrun(f"runner.host={first.url}", "runner.retries=0", "runner.max_consecutive_failures=1",
                               "cache=false", "task.only=[product]", f"outputs={tmp_path / 'o'}", cwd=tmp_path)
    assert failed.returncode == EXIT["runner"]
    [run_dir] = (tmp_path / "o").glob("*/*")
    found = []
    with FakeOllama(responder=listbench_answer, version=version) as now:
        for each in flags:
            done = call_benchrun("resume", str(run_dir), "--host", now.url, *each, cwd=tmp_path,
                                 module="benchrun.audit")
            info = json.loads((run_dir / "run.json").read_text())
            kept = [entry["identity"].get("server_version") for entry in info["history"] if "identity" in entry]
            found.append((done.returncode, done.stderr.replace(now.url, "{url}"), info["status"], kept,
                          info["identity"].get("server_version")))
    return found


class Counting:
    """listbench's answers, counted."""

    def __init__(self) -> None:
        self.chats = 0

    def __call__(self, request: Any) -> Reply:
        self.chats += 1
        return listbench_answer(request)


def asked_by_version(tmp_path: Path, versions: list[str]) -> list[int]:
    """How many chats each of runs in turn, keeping answers in one response cache, asked an Ollama of each of
    `versions` (the model's digest the same)."""
    asked = []
    for version in versions:
        counting = Counting()
        with FakeOllama(responder=counting, version=version) as fake:
            done = call_benchrun(f"runner.host={fake.url}", f"cache_dir={tmp_path / 'cache'}", "task.only=[product]",
                                 f"outputs={tmp_path / 'o'}", cwd=tmp_path)
        assert done.returncode == EXIT["ok"], done.stderr
        asked.append(counting.chats)
    return asked



def upgraded_while_cached(tmp_path: Path) -> tuple[bool, int]:
    """(whether the run failed saying its Ollama changed version, how many entries its response cache keeps) for a
    run of the product task, one chat at a time, on an Ollama saying version 0.12.6 until its first chat, 0.13.0
    after."""
    with FakeOllama(responder=listbench_answer, version="0.12.6") as fake:
        changed_at_a_chat(fake)
        done = call_benchrun(f"runner.host={fake.url}", f"cache_dir={tmp_path / 'cache'}", "task.only=[product]",
                             "runner.concurrency=1", f"outputs={tmp_path / 'o'}", cwd=tmp_path)
    said = done.stderr.startswith(f"benchrun: error: Ollama at {fake.url} changed version while it was asked")
    return (done.returncode == EXIT["runner"] and said), stats(tmp_path / "cache").entries


WAKING = """import os
import signal


def s(response, values):
    found = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(found)
    if values["a"] == 0:
        _, write = os.pipe()
        os.set_blocking(write, False)
        signal.set_wakeup_fd(write)
    return {"set": int(found != -1)}
"""
"""A scorer saying whether its call found a descriptor set for signals to wake, the call of sample a=0 setting one."""


REGISTERING = """import _codecs
import codecs


def s(response, values):
    if values["a"] == 0:
        _codecs.register(_search)
    try:
        codecs.lookup("p38")
    except LookupError:
        return {"found": 0}
    return {"found": 1}


def _search(name):
    return codecs.lookup("utf-8") if name == "p38" else None
"""
"""A scorer whose call of sample a=0 registers a codec search function through `_codecs`, past `codecs.register`;
each call says whether a codec of the name only it finds is found."""
UNREGISTERING = """import codecs
import encodings


def s(response, values):
    if values["a"] == 0:
        codecs.unregister(encodings.search_function)
    try:
        codecs.lookup("cp1140")
    except LookupError:
        return {"found": 0}
    return {"found": 1}
"""
"""A scorer whose call of sample a=0 takes the standard codecs' search function away; each call says whether a
standard codec no call had looked up is found."""


def found_by(tmp_path: Path, source: str, n: int = 3) -> list[Any]:
    """What each of `n` samples' calls of scorer `s` of `source` found, scored in their order (one asked at a time)."""
    with Lab(tmp_path, n=n, latency_s=0, scorer=source) as lab:
        result = lab.call(*lab.args("runner.concurrency=1"))
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    found = sorted((s["id"], s["metrics"], s["error"]) for s in records(lab, "scores.jsonl") if s["scorer"] == "s")
    return [(metrics, error) for _, metrics, error in found]


LOGGING = """import logging


def s(response, values):
    found = {"handlers": len(logging.getLogger().handlers), "disabled": logging.root.manager.disable}
    logging.getLogger().addHandler(logging.NullHandler())
    logging.disable(logging.WARNING)
    return found
"""
"""A scorer saying how many handlers the root logger has and what is not logged at all, as its call found them, each
call adding a handler and turning logging off up to warnings."""


def upgraded_then_resumed(tmp_path: Path) -> list[tuple[int, str, str, Any]]:
    """A resume's (exit code, stderr, the status run.json records, its history's last entry but its time), then a
    forced resume's, of a run of the product task whose Ollama said version 0.12.6 until it answered a chat, 0.13.0
    after ({url} for the server's URL, {run} for the run's directory, {id} for its id)."""
    fake = FakeOllama(responder=listbench_answer)
    with fake:
        changed_at_a_chat(fake)
        failed = call_benchrun(f"runner.host={fake.url}", "cache=false", "task.only=[product]",
                               f"outputs={tmp_path / 'o'}", cwd=tmp_path)
        assert failed.returncode == EXIT["runner"]
        [run_dir] = (tmp_path / "o").glob("*/*")
        found = []
        for flags in ((), ("--force",)):
            done = call_benchrun("resume", str(run_dir), *flags, cwd=tmp_path, module="benchrun.audit")
            info = json.loads((run_dir / "run.json").read_text())
            said = done.stderr.replace(str(run_dir), "{run}").replace(info["run_id"], "{id}")
            last = {k: v.replace(fake.url, "{url}") if isinstance(v, str) else v
                    for k, v in info["history"][-1].items() if k != "at"}
            found.append((done.returncode, said.replace(fake.url, "{url}"), info["status"], last))
    return found


FREEZING = """import gc


def s(response, values):
    found = gc.get_freeze_count()
    gc.freeze()
    return {"frozen": int(found > 0)}
"""
"""A scorer saying whether its call found objects the garbage collector holds frozen, each call freezing them."""

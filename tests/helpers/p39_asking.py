"""Helpers for the thirty-ninth hostile pass of the asking side."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from benchrun.archive.sessions import CHANGED
from benchrun.core.errors import EXIT
from benchrun.testing.chat import Reply
from benchrun.testing.lab import Lab
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.answers import listbench_answer
from tests.helpers.archives import reseal
from tests.helpers.commands import call_benchrun
from tests.helpers.p37_asking import changed_at_a_chat
from tests.helpers.p38_asking import found_by
from tests.helpers.wire import records

LOOPING = """import asyncio


def s(response, values):
    try:
        closed = int(asyncio.get_event_loop().is_closed())
    except RuntimeError:
        closed = -1
    if values["a"] == 0:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        loop.close()
    if values["a"] == 1:
        asyncio.run(asyncio.sleep(0))
    if values["a"] == 2:
        asyncio.get_event_loop().close()
    return {"closed": closed}
"""
"""A scorer saying whether the event loop its call found is closed (-1: none), the call of sample a=0 setting a loop
and closing it, a=1's running one with `asyncio.run`, a=2's closing the one the process found."""


def failed_before_noted(tmp_path: Path, repulled: bool) -> tuple[Path, str]:
    """A run of the product task failed as its Ollama was upgraded (or, `repulled`, its model pulled again) while it
    asked, run.json as a benchrun before `sessions.CHANGED` left it (no such history entry), and the server's URL."""
    with FakeOllama(responder=listbench_answer) as fake:
        changed_at_a_chat(fake, repulled)
        failed = call_benchrun(f"runner.host={fake.url}", "cache=false", "task.only=[product]",
                               f"outputs={tmp_path / 'o'}", cwd=tmp_path)
    assert failed.returncode == EXIT["runner"], failed.stderr
    [run_dir] = (tmp_path / "o").glob("*/*")
    info = json.loads((run_dir / "run.json").read_text())
    info["history"] = [entry for entry in info["history"] if CHANGED not in entry]
    (run_dir / "run.json").write_text(json.dumps(info, indent=2))
    if (run_dir / "seal.json").exists():
        reseal(run_dir)
    return run_dir, fake.url


def resumed_before_noted(tmp_path: Path, repulled: bool) -> tuple[int, str, str]:
    """A plain resume's (exit code, stderr, status run.json records after) of a `failed_before_noted` run ({run} for
    its directory, {id} for its id, {url} for its server's URL)."""
    run_dir, url = failed_before_noted(tmp_path, repulled)
    done = call_benchrun("resume", str(run_dir), cwd=tmp_path, module="benchrun.audit")
    info = json.loads((run_dir / "run.json").read_text())
    said = done.stderr.replace(str(run_dir), "{run}").replace(info["run_id"], "{id}").replace(url, "{url}")
    return done.returncode, said, info["status"]


CHANGING = """import copyreg
import csv
import decimal
import math
import sys
import threading
import time

import numpy

_hook = print


def s(response, values):
    found = {"pi": int(math.pi == 3), "gone": int(not hasattr(math, "tau")), "time": int(time.time() == 0),
             "agen": int(sys.get_asyncgen_hooks().firstiter is not None),
             "depth": sys.get_coroutine_origin_tracking_depth(),
             "bp": int(sys.breakpointhook is not sys.__breakpointhook__),
             "finder": int(sys.path_importer_cache.get("/p39", 1) is None), "argv": int(sys.argv == ["p39"]),
             "print": int(str(numpy.array([1 / 3])) != "[0.33333333]"), "call": int(numpy.geterrcall() is not None),
             "bufsize": int(numpy.getbufsize() != 8192), "limit": int(csv.field_size_limit() != 131072),
             "dialect": int("p39" in csv.list_dialects()), "excel": int(csv.get_dialect("excel").delimiter != ","),
             "threads": _thread_digits(), "reduce": int(range in copyreg.dispatch_table)}
    copyreg.pickle(range, lambda r: (range, (0,)))
    decimal.DefaultContext.prec = 5
    numpy.set_printoptions(precision=2)
    numpy.seterrcall(print)
    numpy.setbufsize(16384)
    csv.field_size_limit(10)
    csv.register_dialect("p39", delimiter=";")
    csv.unregister_dialect("excel")
    csv.register_dialect("excel", delimiter="|")
    sys.argv = ["p39"]
    math.pi = 3
    del math.tau
    time.time = lambda: 0
    sys.set_asyncgen_hooks(firstiter=_hook)
    sys.set_coroutine_origin_tracking_depth(5)
    sys.breakpointhook = _hook
    sys.path_importer_cache["/p39"] = None
    return found


def _thread_digits():
    found = []
    thread = threading.Thread(target=lambda: found.append(decimal.getcontext().prec))
    thread.start()
    thread.join()
    return int(found[0] != 28)
"""
"""A scorer saying whether its call found names of standard modules (sys's too) replaced or removed, the
interpreter's hooks of async generators, coroutines' origins, `breakpoint()` or sys.path's finders set, numpy printing
arrays otherwise than by default, a function set for its floating-point errors or its buffers' size changed, or the
csv module's bound on a field changed, a dialect registered or `excel` replaced, decimal's precision in a new thread
other than 28, or a way to pickle `range` registered; each call changing each."""


RETUNING = """import fractions
import gc
import json
import os


def s(response, values):
    found = {"separator": int(json.JSONEncoder.item_separator != ", "),
             "str": int(str(fractions.Fraction(1, 3)) != "1/3"), "debug": gc.get_debug(),
             "policy": os.sched_getscheduler(0)}
    json.JSONEncoder.item_separator = ";"
    fractions.Fraction.__str__ = lambda self: "x"
    gc.set_debug(gc.DEBUG_SAVEALL)
    if values["a"] == 0:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    return found
"""
"""A scorer saying whether its call found attributes of standard classes replaced (the separator JSON's encoder writes
between items, the scorer process's replies too), the garbage collector debugging or the process scheduled as idle,
each call changing the first three, the call of sample a=0 the last (its process then ends: the next two share
one)."""


def scored_beside(tmp_path: Path, files: dict[str, str]) -> tuple[int, str, list[Any]]:
    """(exit code, stderr, what each of 2 samples' calls of a scorer returning {"ok": 1} gave) of a run started in a
    folder that holds `files` too (by name, their text)."""
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with Lab(tmp_path, n=2, latency_s=0, scorer='def s(response, values):\n    return {"ok": 1}\n') as lab:
        result = lab.call(*lab.args("runner.concurrency=1"))
        scores = records(lab, "scores.jsonl") if result.returncode == EXIT["ok"] else []
    found = sorted((s["id"], s["metrics"], s["error"]) for s in scores if s["scorer"] == "s")
    return result.returncode, result.stderr, [(metrics, error) for _, metrics, error in found]


def retried_after_change(tmp_path: Path) -> tuple[int, str, list[str]]:
    """A retry's (exit code, stderr, the statuses of the runs then in the outputs, in order) at an Ollama of version
    0.12.6 of a run of the product task whose Ollama said 0.12.6 until it answered a chat, 0.13.0 after, and refused
    its second chat ({run} for the run's directory, {id} for its id, {url} for its server's URL)."""
    chats = [Reply(status=400, error="refused") if i == 1 else None for i in range(3)]
    with FakeOllama(responder=lambda request: chats.pop(0) or listbench_answer(request)) as fake:
        changed_at_a_chat(fake)
        failed = call_benchrun(f"runner.host={fake.url}", "cache=false", "task.only=[product]", "runner.retries=0",
                               "runner.concurrency=1", f"outputs={tmp_path / 'o'}", cwd=tmp_path)
    assert failed.returncode == EXIT["runner"], failed.stderr
    [run_dir] = (tmp_path / "o").glob("*/*")
    with FakeOllama(responder=listbench_answer) as other:
        done = call_benchrun("retry", str(run_dir), "--host", other.url, cwd=tmp_path, module="benchrun.audit")
    info = json.loads((run_dir / "run.json").read_text())
    said = done.stderr.replace(str(run_dir), "{run}").replace(info["run_id"], "{id}").replace(fake.url, "{url}")
    statuses = [json.loads((each / "run.json").read_text())["status"] for each in sorted((tmp_path / "o").glob("*/*"))]
    return done.returncode, said, statuses


IMPORTING = """import asyncio
import json


def s(response, values):
    return {"ok": 1}


def _refuse(self):
    raise RuntimeError("the benchmark's own event loop policy")


asyncio.set_event_loop_policy(type("Policy", (asyncio.DefaultEventLoopPolicy,), {"new_event_loop": _refuse})())
json.JSONEncoder.key_separator = "="
json.JSONEncoder.item_separator = ";"
"""
"""A scorer file that sets, as it is imported, an event loop policy that makes no loop, and the separators JSON's
encoder writes between a key and its value and between items."""


def found_after_importing(tmp_path: Path) -> list[Any]:
    """`found_by` of the scorer of IMPORTING, 2 samples; this process's separators and event loop policy put back
    however the run went."""
    try:
        return found_by(tmp_path, IMPORTING, n=2)
    finally:
        json.JSONEncoder.key_separator, json.JSONEncoder.item_separator = ": ", ", "
        asyncio.set_event_loop_policy(None)


STOPPING = """def s(response, values):
    breakpoint()
    return {"ok": 1}
"""
"""A scorer with a `breakpoint()` left in."""

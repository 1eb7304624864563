"""Helpers for the thirty-sixth hostile pass of the asking side."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

from benchrun.core.errors import EXIT
from benchrun.testing.chat import Reply
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.commands import call_benchrun
from tests.helpers.p24_execute import asked, once
from tests.helpers.p35_asking import BUSY
from tests.helpers.wire import wire

SETTING_PAST_ENVIRON = """import ctypes
import os
import subprocess

LIBC = ctypes.CDLL(None)


def s(response, values):
    seen = subprocess.run(["/usr/bin/env"], capture_output=True, text=True, check=True).stdout.splitlines()
    names = {line.partition("=")[0] for line in seen}
    found = {"put": int("P36_PUT" in names), "set": int("P36_SET" in names), "path": int("PATH" in names),
             "odd": int("" in names)}
    os.putenv("P36_PUT", "1")
    LIBC.setenv(b"P36_SET", b"1", 1)
    os.unsetenv("PATH")
    LIBC.putenv(ctypes.c_char_p(b"=odd"))
    return found
"""
"""A scorer that says which of the variables an earlier call set past os.environ its subprocess (`env`) inherited
(`os.putenv`, ctypes' `setenv`, an entry of an empty name by ctypes' `putenv`), and whether PATH, which an earlier
call removed past os.environ, is still there; then sets and removes each so."""



def counted(tmp_path: Path, chat: int, answer: int, loaded: int | None, *args: str) -> tuple[Any, Any, int, list[str]]:
    """What a run against a fake Ollama that says (/api/ps) it `loaded` the model with that context length recorded
    of the sample whose answer says it counted `chat` tokens of the chat and `answer` of the answer (as a list: its
    text, error, attempts and failed attempts' messages, the fake's URL said `{url}`)."""
    responder = once(Reply(content='{"answer": 6}', prompt_eval_count=chat, eval_count=answer))
    with FakeOllama(models=["llama3.2"], responder=responder, context_length=loaded) as fake:
        done = call_benchrun(f"runner.host={fake.url}", "cache=false", "task.only=[product]",
                             f"outputs={tmp_path / 'outputs'}", *args, cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    return json.loads(json.dumps(asked(done.stdout)).replace(fake.url, "{url}"))


NAMING = ("import ctypes, sys\nctypes.CDLL(None).prctl(15, b'\\xffp36', 0, 0, 0)\nprint('named', flush=True)\n"
          "sys.stdin.read()\n")
"""A child process that names itself with a byte that is no UTF-8 (PR_SET_NAME), says so, and waits for its stdin to
close."""


@contextlib.contextmanager
def oddly_named() -> Iterator[int]:
    """The pid of a child process named `\\xffp36`, ended as the block ends."""
    with subprocess.Popen([sys.executable, "-c", NAMING], stdin=subprocess.PIPE, stdout=subprocess.PIPE) as child:
        assert child.stdout is not None and child.stdout.readline() == b"named\n"
        yield child.pid
        child.communicate()


def clocked(status: str, date: str, after: str) -> bytes:
    """A whole HTTP response of `status` saying it is busy, sent at `date` by the server's clock (its Date), asking
    to be asked again at `after` (Retry-After, a date)."""
    head = [f"HTTP/1.1 {status}", "Content-Type: application/json", f"Date: {date}", f"Retry-After: {after}",
            f"Content-Length: {len(BUSY)}", "Connection: close"]
    return "\r\n".join(head).encode() + b"\r\n\r\n" + BUSY


def ended(reason: str) -> bytes:
    """A whole HTTP response of Ollama's answer, empty, that ended for `reason` (its done_reason)."""
    return wire(json.dumps({"model": "llama3.2", "done": True, "done_reason": reason,
                            "message": {"role": "assistant", "content": ""}}).encode())


DRAWING = """import random

import numpy

random.seed(7)
numpy.random.seed(7)


def s(response, values):
    drawn = {"r": random.random(), "n": float(numpy.random.random())}
    drawn["raising"] = int(numpy.geterr()["divide"] == "raise")
    numpy.seterr(all="raise")
    return drawn
"""
"""A scorer that seeds the process's random generators as it is imported and draws from each in its calls, says
whether numpy raises on a division by zero, then makes it raise."""


def echoed(runner: str, role: Any) -> bytes:
    """A whole HTTP response of `runner`'s chat answer whose message is of `role` (a server echoing the chat back)."""
    message = {"role": role, "content": '{"answer": 6}'}
    body = {"model": "llama3.2", "done": True, "message": message} if runner == "ollama" else {
        "choices": [{"message": message}]}
    return wire(json.dumps(body).encode())


RECODING = """import sys


def s(response, values):
    printed = {}
    for name in ("stdout", "stderr"):
        try:
            print("café", file=getattr(sys, name))
            printed[name] = 1
        except UnicodeEncodeError:
            printed[name] = 0
        getattr(sys, name).reconfigure(encoding="ascii", errors="strict")
    return printed
"""
"""A scorer that says whether `café` prints to stdout and stderr, then has each encode in ASCII, strictly."""


HOOKING = """import sys

FINDERS, HOOKS = len(sys.meta_path), len(sys.path_hooks)


def s(response, values):
    hooked = {"finders": len(sys.meta_path) - FINDERS, "hooks": len(sys.path_hooks) - HOOKS}
    sys.meta_path.insert(0, Finder())
    sys.path_hooks.append(lambda entry: None)
    return hooked


class Finder:
    @staticmethod
    def find_spec(name, path=None, target=None):
        return None
"""
"""A scorer that says how many import finders and path hooks the process has beyond those it was imported with,
then adds one of each."""


THREADING = """import threading


def s(response, values):
    found = {"traced": int(threading.gettrace() is not None), "profiled": int(threading.getprofile() is not None),
             "stack": threading.stack_size()}
    threading.settrace(lambda *called: None)
    threading.setprofile(lambda *called: None)
    threading.stack_size(262144)
    return found
"""
"""A scorer that says whether the threads it would start are traced or profiled, and their stack size, then sets
each."""


COLLECTING = """import gc

CALLBACKS = len(gc.callbacks)


def s(response, values):
    added = len(gc.callbacks) - CALLBACKS
    gc.callbacks.append(lambda phase, info: None)
    return added
"""
"""A scorer that says how many callbacks the garbage collector has beyond those it was imported with, then adds one."""

"""Helpers for the fortysecond hostile pass of the asking side."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

from benchrun.core.errors import EXIT
from benchrun.testing.lab import Lab
from tests.helpers.wire import records

IMPORTING = """import sys


def s(response, values):
    first = "numpy" not in sys.modules
    import numpy
    return {"first": int(first), "a": int(numpy.int64(values["a"]))}
"""
"""A scorer importing numpy in its call, saying whether the call was numpy's first import in its process."""


def ends_and_scores(tmp_path: Path, source: str, n: int) -> tuple[int, list[Any]]:
    """How many times the scorer process said it ends after a call (benchrun.log), and what each of `n` samples'
    calls of scorer `s` of `source` gave, by their `s.a` (one asked at a time)."""
    with Lab(tmp_path, n=n, latency_s=0, scorer=source) as lab:
        result = lab.call(*lab.args("runner.concurrency=1"))
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    [log] = tmp_path.rglob("benchrun.log")
    found = [(s["metrics"], s["error"]) for s in records(lab, "scores.jsonl") if s["scorer"] == "s"]
    return log.read_text().count("the scorer process ends after its call"), sorted(found, key=lambda s: s[0]["s.a"])


def module_at(name: str, file: Path) -> types.ModuleType:
    """A module `name` as imported from `file`."""
    module = types.ModuleType(name)
    module.__file__ = str(file)
    return module


FILTERING = """import ctypes
import os


class Instruction(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Instruction))]


def s(response, values):
    found = [line for line in open("/proc/self/status") if line.startswith("Seccomp_filters:")][0].split()[1]
    if values["a"] == 0:
        libc = ctypes.CDLL(None)
        if os.geteuid():
            libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS, which a user's filter needs
        allow = (Instruction * 1)(Instruction(0x06, 0, 0, 0x7FFF0000))  # return SECCOMP_RET_ALLOW
        libc.prctl(22, 2, ctypes.byref(Program(1, allow)), 0, 0)  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
    return {"filters": int(found)}
"""
"""A scorer saying how many seccomp filters its call found, the call of sample a=0 installing one (that allows all)."""


def said_in_log(tmp_path: Path) -> list[str]:
    """The lines benchrun wrote into the run's log (each beginning `benchrun:`)."""
    [log] = tmp_path.rglob("benchrun.log")
    return [line for line in log.read_text().splitlines() if line.startswith("benchrun:")]


ADDING = """import fractions
import json


def s(response, values):
    found = {"equal": int(json.JSONEncoder() == json.JSONEncoder()), "added": int(hasattr(fractions.Fraction, "p42"))}
    json.JSONEncoder.__eq__ = lambda self, other: True
    fractions.Fraction.p42 = 42
    return found
"""
"""A scorer saying whether two JSON encoders are equal and whether Fraction has a name `p42`, as its call found them,
each call adding an `__eq__` to the one class and a `p42` to the other."""


FLAGGING = """import ctypes
import os

libc = ctypes.CDLL(None)


def s(response, values):
    found = {"dumpable": libc.prctl(3, 0, 0, 0, 0), "huge": libc.prctl(42, 0, 0, 0, 0),
             "persona": libc.personality(0xFFFFFFFF), "merge": libc.prctl(68, 0, 0, 0, 0),
             "mce": libc.prctl(34, 0, 0, 0, 0), "dumped": int(open("/proc/self/coredump_filter").read(), 16),
             "leads": int(os.getpgrp() == os.getpid()), "secure": libc.prctl(27, 0, 0, 0, 0)}
    if values["a"] == 0:
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
        libc.prctl(41, 1, 0, 0, 0)  # PR_SET_THP_DISABLE 1
        libc.prctl(67, 1, 0, 0, 0)  # PR_SET_MEMORY_MERGE 1, which root may
        libc.prctl(33, 1, 1, 0, 0)  # PR_MCE_KILL_SET PR_MCE_KILL_EARLY
        with open("/proc/self/coredump_filter", "w") as dumped:
            dumped.write("0")
        os.setpgid(0, 0)  # a process group of its own
        libc.prctl(28, 0x1, 0, 0, 0)  # PR_SET_SECUREBITS SECBIT_NOROOT, which root may
        libc.personality(0x0040000)  # ADDR_NO_RANDOMIZE
    return found
"""
"""A scorer saying whether its process is dumpable, may have huge pages, its execution domain, whether its memory is
merged, its policy on memory errors, what its core dumps hold and whether it leads its process group, as its call
found them, the call of sample a=0 changing each."""

FOREVER = """import ctypes
import os
import socket

libc = ctypes.CDLL(None)


def s(response, values):
    [bounding] = [line.split()[1] for line in open("/proc/self/status") if line.startswith("CapBnd:")]
    found = {"mdwe": libc.prctl(66, 0, 0, 0, 0), "admin": int(bounding, 16) >> 21 & 1,
             "named": int(socket.gethostname() == "p42"), "secure": libc.prctl(27, 0, 0, 0, 0)}
    if values["a"] == 0:
        libc.prctl(65, 1, 0, 0, 0)  # PR_SET_MDWE: no memory both writable and executable
        if os.geteuid() == 0:
            libc.prctl(24, 21, 0, 0, 0)  # PR_CAPBSET_DROP CAP_SYS_ADMIN, which root may
            libc.unshare(0x04000000)  # CLONE_NEWUTS: a host name of its own
            libc.prctl(28, 0x3, 0, 0, 0)  # PR_SET_SECUREBITS SECBIT_NOROOT, locked
            libc.sethostname(b"p42", 3)
    return found
"""
"""A scorer saying whether its process may map memory both writable and executable, whether its bounding set holds
CAP_SYS_ADMIN and whether its host name is p42, as its call found them, the call of sample a=0 forbidding the one (on
Linux 6.3 and later) and, as root, dropping CAP_SYS_ADMIN, naming the host p42 in a UTS namespace of its own and
locking a security bit set."""

"""Helpers for the fortyfirst hostile pass of the asking side."""

from __future__ import annotations

import re
from typing import Any

from benchrun.execute import libraryheld


def library_tables_after_a_call() -> dict[str, Any]:
    """What pandas' display precision, a YAML tag's constructor, a word PyYAML reads as null, an OmegaConf resolver
    and scipy.special's errors are once the scorer process has put back (`libraryheld`) what a call set of them
    (`pandas.set_option`, `yaml.add_constructor`, `yaml.add_implicit_resolver`, `OmegaConf.register_new_resolver`,
    `scipy.special.seterr`): in this process, the libraries imported before as a scorer's module imports them."""
    import pandas
    import scipy.special
    import yaml
    from omegaconf import OmegaConf

    held = libraryheld.held_now()
    pandas.set_option("display.precision", 2)
    yaml.add_constructor("!p41", lambda loader, node: 41)
    yaml.add_implicit_resolver("tag:yaml.org,2002:null", re.compile("^p41$"), ["p"], Loader=yaml.SafeLoader)
    OmegaConf.register_new_resolver("p41", lambda: 41)
    scipy.special.seterr(all="raise")
    for put, found in held:
        put(found)
    return {"precision": pandas.get_option("display.precision"), "tag": "!p41" in yaml.FullLoader.yaml_constructors,
            "word": yaml.safe_load("p41"), "resolver": OmegaConf.has_resolver("p41"),
            "special": scipy.special.geterr()["singular"]}


PROCESS_FLAGS = """import os


def s(response, values):
    found = {"blocking": int(os.get_blocking(1) and os.get_blocking(2)),
             "inherited": int(os.get_inheritable(1) and os.get_inheritable(2)),
             "oom": int(open("/proc/self/oom_score_adj").read())}
    for fd in (1, 2):
        os.set_blocking(fd, False)
        os.set_inheritable(fd, False)
    with open("/proc/self/oom_score_adj", "w") as adjusted:
        adjusted.write("1000")
    return found
"""
"""A scorer saying whether its call found its standard output and error blocking and inherited, and the process's OOM
score adjustment, each call making them non-blocking (`os.set_blocking`, which stays with the open files) and not
inherited, and the process the first the kernel ends when memory runs short."""


PRCTL = """import ctypes

LIBC = ctypes.CDLL(None)
PR_SET_TIMERSLACK, PR_GET_TIMERSLACK, PR_SET_NO_NEW_PRIVS, PR_GET_NO_NEW_PRIVS = 29, 30, 38, 39
IOPRIO_GET, IOPRIO_SET, IDLE = 252, 251, 3 << 13


def s(response, values):
    found = {"slack": int(LIBC.prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0) != 200_000_000),
             "privileged": 1 - LIBC.prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0),
             "io": int(LIBC.syscall(IOPRIO_GET, 1, 0) != IDLE)}
    LIBC.prctl(PR_SET_TIMERSLACK, 200_000_000, 0, 0, 0)
    LIBC.syscall(IOPRIO_SET, 1, 0, IDLE)
    if values["a"] == 1:
        LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    return found
"""
"""A scorer saying whether its call found the process's timer slack other than 200 ms, its I/O class other than idle
and the process free to gain privileges, each call setting that slack (prctl's `PR_SET_TIMERSLACK`) and that class
(ioprio_set, x86-64's number), the call of sample a=1 forbidding the process to gain privileges
(`PR_SET_NO_NEW_PRIVS`: its process then ends)."""


DEFAULTS = """import json
import textwrap


def s(response, values):
    found = {"sorted": int(json.dumps({"b": 1, "a": 2})[2] == "a"),
             "lines": len(textwrap.fill("x " * 50).splitlines()), "encoder": int(json.JSONEncoder().sort_keys)}
    json.dumps.__kwdefaults__["sort_keys"] = True
    json.JSONEncoder.__init__.__kwdefaults__["sort_keys"] = True
    textwrap.fill.__defaults__ = (10,)
    return found
"""
"""A scorer saying whether its call found `json.dumps` sorting keys and in how many lines `textwrap.fill` fills 100
characters (70 wide: 2) and whether a new `json.JSONEncoder` sorts keys, each call setting their default arguments
(`__kwdefaults__`, `__defaults__`, a method's too) otherwise."""

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

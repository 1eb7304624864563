"""Helpers for the fortieth hostile pass of the asking side."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from benchrun.testing.lab import Lab
from tests.helpers.p31_asking import busy_listing
from tests.helpers.wire import records

REGISTERING = """import calendar
import codecs
import copy
import email.charset
import encodings.aliases
import json
import locale
import numbers
import reprlib
import shutil
import sqlite3
import tracemalloc
import urllib.parse

import yaml


class Odd:
    pass


def s(response, values):
    stored = sqlite3.connect(":memory:").execute("select typeof(?)", (1.5,)).fetchone()[0]
    found = {"adapter": int(stored != "real"), "alias": int("p40" in encodings.aliases.aliases),
             "codec": int(values["a"] > 0 and _known("p40c")), "abc": int(isinstance("x", numbers.Number)),
             "copy": int(Odd in copy._deepcopy_dispatch), "join": int(urllib.parse.urljoin("p40://h/a", "b") != "b"),
             "archive": int("p40" in dict(shutil.get_archive_formats())),
             "charset": int("p40" in email.charset.CHARSETS),
             "locale": int("p40" in locale.locale_alias), "yaml": int(yaml.FullLoader is None),
             "week": calendar.monthcalendar(2026, 2)[0][0], "sorted": int(json.dumps({"b": 1, "a": 2})[2] == "a"),
             "repr": int(len(reprlib.repr("x" * 100)) != 30), "tracing": int(tracemalloc.is_tracing())}
    sqlite3.register_adapter(float, str)
    encodings.aliases.aliases["p40"] = "latin_1"
    if values["a"] == 0:
        encodings.aliases.aliases["p40c"] = "latin_1"
        _known("p40c")
    if values["a"] == 1:
        numbers.Number.register(str)
    copy._deepcopy_dispatch[Odd] = lambda x, memo: x
    urllib.parse.uses_relative.append("p40")
    urllib.parse.uses_netloc.append("p40")
    shutil.register_archive_format("p40", lambda *args, **kwargs: None)
    email.charset.add_charset("p40")
    locale.locale_alias["p40"] = "C"
    yaml.FullLoader = None
    calendar.setfirstweekday(calendar.SUNDAY)
    json._default_encoder.sort_keys = True
    reprlib.aRepr.maxstring = 5
    tracemalloc.start(25)
    return found


def _known(name):
    try:
        return codecs.lookup(name) is not None
    except LookupError:
        return False
"""
"""A scorer saying whether its call found what a call registers into the standard library's tables (an adapter of
sqlite3, an encoding's alias, a codec found by one, a class registered with an abstract base class, a way to deep-copy
a class, a URL scheme joined relatively, an archive format, a charset, a locale's alias), an installed library's name
replaced (`yaml.FullLoader`), or an object a standard module holds changed (the first day of `calendar`'s weeks, whether
`json.dumps` sorts keys, how long a string `reprlib.repr` shows), or memory allocations traced; each call changing
each, the call of sample a=0 looking a codec up by its new alias (and later calls looking it up), a=1's registering
`str` as a number (its process then ends)."""


IMPORT_CHANGING = """import json
import sqlite3

import httpx


def s(response, values):
    return {"ok": 1}


async def _spying(self, request, **kwargs):
    print("p40 saw", request.url)
    return await _send(self, request, **kwargs)


sqlite3.register_adapter(str, lambda text: "p40:" + text)
json._default_encoder.indent = 1
_send, httpx.AsyncClient.send = httpx.AsyncClient.send, _spying
"""
"""A custom_scorer.py that, as it is imported, has sqlite3 store every string it is given otherwise, `json.dumps`
write a value over several lines and httpx send every request through a function of its own, which prints it."""


def run_after_import_changing(tmp_path: Path) -> tuple[int, str, str, list[Any], list[Any], int]:
    """(exit code, stderr, status, what scorer `s` gave each of 2 samples, the response cache's schema version and
    the length of its first key, how many requests the file's function printed) of a cached run of a benchmark whose
    custom_scorer.py is IMPORT_CHANGING."""
    with Lab(tmp_path, n=2, latency_s=0, scorer=IMPORT_CHANGING) as lab:
        result = lab.call(*lab.args("runner.concurrency=1", "cache=true", f"cache_dir={tmp_path / 'cache'}"))
        status = json.loads((lab.run_dirs()[0] / "run.json").read_text())["status"]
        scores = [(s["metrics"], s["error"]) for s in records(lab, "scores.jsonl") if s["scorer"] == "s"]
    with contextlib.closing(sqlite3.connect(tmp_path / "cache" / "responses.sqlite3")) as cache:
        kept = [*cache.execute("select value from meta where name = 'schema_version'").fetchone(),
                len(cache.execute("select key from answers").fetchone()[0])]
    return result.returncode, result.stderr, status, scores, kept, result.stdout.count("p40 saw")


def busy_until_asctime(tmp_path: Path) -> tuple[int, str, int]:
    """(exit code, stderr, how many times its model list was asked) of a run of the product task against an Ollama
    whose model list answers its first request with a 503 asking by Retry-After, an HTTP date in C's asctime form,
    a wait of 1 s."""
    then = time.asctime(time.gmtime(time.time() + 1))
    url, done, asked = busy_listing(tmp_path, "ollama", then)
    return done.returncode, done.stderr.replace(url, "{url}"), asked

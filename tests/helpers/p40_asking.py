"""Helpers for the fortieth hostile pass of the asking side."""

from __future__ import annotations

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

import numpy


class Odd:
    pass


def s(response, values):
    stored = sqlite3.connect(":memory:").execute("select typeof(?)", (1.5,)).fetchone()[0]
    found = {"adapter": int(stored != "real"), "alias": int("p40" in encodings.aliases.aliases),
             "codec": int(values["a"] > 0 and _known("p40c")), "abc": int(isinstance("x", numbers.Number)),
             "copy": int(Odd in copy._deepcopy_dispatch), "join": int(urllib.parse.urljoin("p40://h/a", "b") != "b"),
             "archive": int("p40" in dict(shutil.get_archive_formats())),
             "charset": int("p40" in email.charset.CHARSETS),
             "locale": int("p40" in locale.locale_alias), "numpy": int(numpy.pi == 3),
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
    numpy.pi = 3
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
replaced (`numpy.pi`), or an object a standard module holds changed (the first day of `calendar`'s weeks, whether
`json.dumps` sorts keys, how long a string `reprlib.repr` shows), or memory allocations traced; each call changing
each, the call of sample a=0 looking a codec up by its new alias (and later calls looking it up), a=1's registering
`str` as a number (its process then ends)."""

"""Helpers for the fortyfirst hostile pass of the asking side."""

from __future__ import annotations

LIBRARY_TABLES = """import re

import pandas
import yaml


def s(response, values):
    found = {"precision": pandas.get_option("display.precision"),
             "tag": int("!p41" in yaml.FullLoader.yaml_constructors), "word": int(yaml.safe_load("p41") is None)}
    pandas.set_option("display.precision", 2)
    yaml.add_constructor("!p41", lambda loader, node: 41)
    yaml.add_implicit_resolver("tag:yaml.org,2002:null", re.compile("^p41$"), ["p"], Loader=yaml.SafeLoader)
    return found
"""
"""A scorer saying whether its call found pandas' display precision, a YAML tag's constructor or a word read as null
as a call sets them (`pandas.set_option`, `yaml.add_constructor`, `yaml.add_implicit_resolver`), each call setting
them."""


NONBLOCKING = """import os


def s(response, values):
    found = {"blocking": int(os.get_blocking(1) and os.get_blocking(2))}
    os.set_blocking(1, False)
    os.set_blocking(2, False)
    return found
"""
"""A scorer saying whether its call found its standard output and error blocking, each call making them non-blocking
(`os.set_blocking`), which stays with the open files."""

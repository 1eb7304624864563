"""Text from outside made fit to keep: lone surrogates replaced where text enters."""

from __future__ import annotations

import json

from benchrun.core.text import writable, writable_data


def test_a_lone_surrogate_becomes_the_replacement_character():
    text = json.loads('"caf\\u00e9 \\ud800 and \\udfff"')
    assert writable(text) == "café \ufffd and \ufffd"
    writable(text).encode("utf-8")


def test_text_without_one_is_the_same_object():
    text = "plain text, ünïcode and emoji \U0001f600"
    assert writable(text) is text


def test_data_is_cleaned_keys_and_values_alike():
    data = json.loads('{"\\ud800": ["a\\udc00", 1, null, {"k": "\\ud83d"}], "n": 2.5, "big": Infinity}')
    assert writable_data(data) == {"\ufffd": ["a\ufffd", 1, None, {"k": "\ufffd"}], "n": 2.5, "big": None}

"""Hostile input, fifteenth pass, what the lead session tried beside the three sides' passes: the cases it found
bad, each with the rule it now obeys.

- a command-line word whose `~` stands for a home directory that is not UTF-8, with HOME unset (the home is then the
  user's entry in the password database): the refusal read $HOME to name it, and its KeyError escaped as a
  traceback; now it names where the home came from (`__main__._home_named`)
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchrun.__main__ import _text_words
from benchrun.core.errors import ConfigError

NOT_UTF8_HOME = os.fsdecode(b"/tmp/h\xff")


def test_a_tilde_for_a_home_that_is_not_utf8_with_home_unset_names_the_users_entry(monkeypatch):
    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: cls(NOT_UTF8_HOME)))
    with pytest.raises(ConfigError) as refused:
        _text_words(["cache_dir=~/cache"], [f"cache_dir={NOT_UTF8_HOME}/cache"])
    assert str(refused.value) == (
        "the command line's word 'cache_dir=~/cache' (~ is the home directory of this user's entry (HOME is unset), "
        "'/tmp/h\\xff') is not UTF-8 text (a run records its command line as text, in run.json); give it in UTF-8")

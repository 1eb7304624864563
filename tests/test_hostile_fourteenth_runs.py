"""Hostile input, fourteenth pass, the process side (issue 19's fresh pass of the same kinds): benchmark files,
configuration and real `python -m benchrun` processes under abuse, the cases it found bad, each with the rule it now
obeys.

- a word of the command line that is not UTF-8 text (`runner.model=$'gemm\\xe4'` from a script writing Latin-1,
  `judge.model=...`): Python keeps such bytes as lone surrogates; the run's directory was made, then writing run.json
  failed in a PydanticSerializationError's traceback, leaving a directory of config.yaml and run.lock that no audit
  command reads (`not a run directory (no run.json)`); `task.name=...` said pydantic's `unable to parse raw data as a
  unicode string`, `hydra.job.name=...` showed U+FFFD in its advice. Now refused before Hydra reads anything, the byte
  shown escaped (`__main__._text_words`); a word whose `~` is a $HOME that is not UTF-8 (`cache_dir=~/cache`) is
  refused naming $HOME
- UTF-8 text that the locale's encoding cannot read (LC_ALL=C with PYTHONUTF8=0 and PYTHONCOERCECLOCALE=0, or a
  Latin-1 locale): `task.path='bänch'` was refused as `Input should be a valid string`, `runner.model='gemmä'` was
  the traceback above, and a working directory named `bänch` was said to be `not UTF-8 text`, which it is. Now the
  line says the locale cannot read it and to set PYTHONUTF8=1 (`core.text.unreadable_here`)
- a value of the config that is not text by another way in: `runner.model=${oc.env:M}` (or `task.system`,
  `judge.model`, `+runner.options.stop=[${oc.env:M}]`) of an environment variable holding bytes that are not UTF-8:
  the traceback and the half-made directory above. Now every string of the composed config is text or refused,
  naming the key (`compose.config.refuse_unkept_values`), as a number JSON cannot keep is
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from tests.helpers.benchfiles import tasks_yml, write_bench
from tests.helpers.commands import call_benchrun

TASK = {"name": "t", "template": "say {a}", "values": {"a": [1, 2]}, "reference": ["1", "2"]}
ASCII_LOCALE = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
"""A locale whose encoding is ASCII, as Python keeps it when told not to coerce it to C.UTF-8 (a Latin-1 locale is
another, not installed everywhere)."""
LOCALE_FIX = ("is UTF-8 text that this locale's encoding (ascii) cannot read: set PYTHONUTF8=1 (or a UTF-8 locale, "
              "LANG=C.UTF-8)")


def made(root: Path) -> list[str]:
    """The names in `root`: what a refused command left there."""
    return sorted(path.name for path in root.iterdir())


def kept_under_outputs(root: Path) -> list[str]:
    """What is under root/outputs (which a config's refusal leaves, empty, as Hydra made it)."""
    return sorted(str(path.relative_to(root)) for path in (root / "outputs").rglob("*"))


@pytest.mark.parametrize("word, shown", [
    ("runner.model='gemm\udce4'", "runner.model='gemm\\xe4'"),
    ("judge.model=j\udcff", "judge.model=j\\xff"),
    ("task.name='t\udce4'", "task.name='t\\xe4'"),
    ("hydra.job.name=\udce4", "hydra.job.name=\\xe4"),
    ("--config-dir=\udcff", "--config-dir=\\xff"),
])
def test_a_word_of_the_command_line_that_is_not_utf8_is_refused_before_anything_is_made(tmp_path, word, shown):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK)})
    done = call_benchrun("task.path=bench", word, "runner.host=http://127.0.0.1:9", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: the command line's word '{shown}' is not UTF-8 text (a run records its command line as "
        "text, in run.json); give it in UTF-8\n"))
    assert made(tmp_path) == ["bench"]


def in_ascii_locale(args: list[bytes], cwd: Path) -> subprocess.CompletedProcess:
    """`python -m benchrun ARGS` (given as bytes) under an ASCII locale; its errors read back as UTF-8."""
    return subprocess.run([sys.executable, "-m", "benchrun", *args], cwd=cwd, env=child_env(ASCII_LOCALE),
                          capture_output=True, timeout=120)


@pytest.mark.parametrize("word", [b"task.path='b\xc3\xa4nch'", b"runner.model='gemm\xc3\xa4'"])
def test_utf8_words_a_locale_cannot_read_are_refused_saying_so(tmp_path, word):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK)}, name="b\u00e4nch")
    done = in_ascii_locale([b"task.path=bench", word, b"runner.host=http://127.0.0.1:9"], tmp_path)
    shown = word.decode().encode("ascii", "backslashreplace").decode()  # as stderr in that locale writes it
    assert (done.returncode, done.stdout, done.stderr.decode()) == (EXIT["usage"], b"", (
        f"benchrun: error: the command line's word '{shown}' {LOCALE_FIX}\n"))
    assert made(tmp_path) == ["bänch"]


def test_a_utf8_working_directory_a_locale_cannot_read_is_said_to_be_that(tmp_path):
    where = write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK)}, name="b\u00e4nch")
    done = in_ascii_locale([b"task.path=.", b"runner.host=http://127.0.0.1:9"], where)
    assert (done.returncode, done.stdout, done.stderr.decode()) == (EXIT["usage"], b"", (
        f"benchrun: error: the working directory {tmp_path}/b\\xe4nch {LOCALE_FIX}\n"))
    assert made(where) == ["tasks.yml"]


@pytest.mark.parametrize("given, key", [
    ("runner.model=${oc.env:WORD}", "runner.model"),
    ("task.system=${oc.env:WORD}", "task.system"),
    ("judge.model=${oc.env:WORD}", "judge.model"),
    ("+runner.options.stop=[${oc.env:WORD}]", "runner.options.stop[0]"),
])
def test_a_config_value_that_is_not_text_is_refused_naming_its_key(tmp_path, given, key):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK)})
    done = call_benchrun("task.path=bench", given, "runner.host=http://127.0.0.1:9", cwd=tmp_path,
                         env={"WORD": "gemm\udcff"})
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'config': {key}: 'gemm\\xff' is not UTF-8 text, and config.yaml and run.json keep it "
        "as text: give it in UTF-8\n"))
    assert kept_under_outputs(tmp_path) == []


def test_a_config_value_in_utf8_a_locale_cannot_read_is_said_to_be_that(tmp_path):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK)})
    env = child_env({**ASCII_LOCALE, "WORD": "gemm\udcc3\udca4"})
    done = subprocess.run([sys.executable, "-m", "benchrun", "task.path=bench", "runner.model=${oc.env:WORD}",
                           "runner.host=http://127.0.0.1:9"], cwd=tmp_path, env=env, capture_output=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr.decode()) == (EXIT["usage"], b"", (
        f"benchrun: error: in 'config': runner.model: 'gemm\\xe4' {LOCALE_FIX}\n"))
    assert kept_under_outputs(tmp_path) == []


def test_a_word_whose_tilde_is_a_home_that_is_not_utf8_is_refused_naming_home(tmp_path):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK)})
    done = call_benchrun("task.path=bench", "cache_dir=~/cache", "runner.host=http://127.0.0.1:9", cwd=tmp_path,
                         env={"HOME": f"{tmp_path}/h\udcff"})
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: the command line's word 'cache_dir=~/cache' (~ is $HOME, '{tmp_path}/h\\xff') is not UTF-8 "
        "text (a run records its command line as text, in run.json); give it in UTF-8\n"))
    assert made(tmp_path) == ["bench"]

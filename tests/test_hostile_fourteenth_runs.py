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
- a joblib sweep started by a user under `ulimit -u` (9 or 14 processes, as another user than root, whom the limit
  does not hold): loky's ExecutorManagerThread could not start a thread and died, its traceback printed, and the
  sweep waited for ever (16 minutes before it was killed) for jobs never handed over. Now a thread that dies in a
  process whose launcher runs the jobs elsewhere (any launcher but Hydra's basic one) ends the sweep as a signal
  would, in one line naming the thread, its error and the limit (`callbacks._launcher_thread_died`,
  `core.interrupts.Interrupts.stop`), exit 4, what was started taken back
- a folder-style task's folder whose name is not UTF-8 (`tasks/a\xffb`, made by a tool writing Latin-1 names): the
  line showed `a\ufffdb`, a name not on the disk. Now its byte is shown escaped, as a working directory's is
  (`compiler.sources`)

What held: a user other than root (runs1, by `runuser`; Python 3.11 copied where that user can read it, benchrun and
its dependencies from this checkout and its venv on PYTHONPATH, not installed as the README says): a run with the
benchmark folder read-only to the user, with umask 077, with $HOME unset, with TMPDIR unwritable: completed; $HOME=/
or XDG_CACHE_HOME=/etc: one line naming $HOME or $XDG_CACHE_HOME (the run recorded `failed`); `outputs=` a folder
the user cannot write: one line. The locale: LANG=C, LC_ALL=POSIX (Python's UTF-8 mode), PYTHONIOENCODING=ascii or
latin-1, with non-ASCII values and a benchmark folder named `bänch` (quoted): completed, what stdout cannot encode
shown escaped; non-ASCII task names: refused by the name's pattern. COLUMNS=1, 0, -5, abc, LINES=1, TERM=dumb:
completed. $HOME, $XDG_CACHE_HOME or $TMPDIR holding a byte that is not UTF-8: completed (a dry run too). `ulimit
-f` of 8 to 30 KiB: one line (`file too large writing .../.reserve`), the run recorded `failed` and sealed; of 40
KiB mid-records: one line naming responses.jsonl, the run `failed`, and `resume` without the limit completed it,
verify intact. SIGINT sent twice at once at random moments of 8 runs: each exit 130 in one line, each run left
intact (or nothing made, before the run started). SIGTERM to a joblib sweep before its jobs started: one line, the
sweep directory taken back; SIGTERM at six moments of a two-job sweep (basic launcher): each ended completed, or
interrupted in one line with the job recorded `interrupted` and sweep.json written, or (sent as the process exited,
its summary printed) by the signal itself, exit 143, everything recorded and intact. A clock set back a day between
an interrupted run and its `resume` (faketime): completed, verify intact, run.json's ended_at the clock's (a day
before started_at), the speed's wall time from the monotonic clock. A read-only bind mount as the benchmark folder:
a run completes (from elsewhere) and, run inside it, `outputs` is one line (`read-only file system: outputs`).
Folder-style tasks `add` and `Add` side by side: two tasks; a dangling link in tasks/: one line; a named pipe in
tasks/: not a task, left out. Python 3.12.1 (a venv of the README's test extras without llama-cpp-python): this
file, the thirteenth pass's, test_config.py and test_error_lines.py pass; one-line errors as under 3.11.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from tests.helpers.benchfiles import folder_task, tasks_yml, write_bench
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
        f"benchrun: error: in 'config': {key} (from $WORD): 'gemm\\xff' is not UTF-8 text, and config.yaml and "
        "run.json keep it as text: give it in UTF-8\n"))
    assert kept_under_outputs(tmp_path) == []


def test_a_config_value_in_utf8_a_locale_cannot_read_is_said_to_be_that(tmp_path):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK)})
    env = child_env({**ASCII_LOCALE, "WORD": "gemm\udcc3\udca4"})
    done = subprocess.run([sys.executable, "-m", "benchrun", "task.path=bench", "runner.model=${oc.env:WORD}",
                           "runner.host=http://127.0.0.1:9"], cwd=tmp_path, env=env, capture_output=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr.decode()) == (EXIT["usage"], b"", (
        f"benchrun: error: in 'config': runner.model (from $WORD): 'gemm\\xe4' {LOCALE_FIX}\n"))
    assert kept_under_outputs(tmp_path) == []


def test_a_word_whose_tilde_is_a_home_that_is_not_utf8_is_refused_naming_home(tmp_path):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK)})
    done = call_benchrun("task.path=bench", "cache_dir=~/cache", "runner.host=http://127.0.0.1:9", cwd=tmp_path,
                         env={"HOME": f"{tmp_path}/h\udcff"})
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: the command line's word 'cache_dir=~/cache' (~ is $HOME, '{tmp_path}/h\\xff') is not UTF-8 "
        "text (a run records its command line as text, in run.json); give it in UTF-8\n"))
    assert made(tmp_path) == ["bench"]


DYING_THREAD = '''import threading

from hydra.experimental.callback import Callback


class DyingThread(Callback):
    """A thread of the launching process that dies, as loky's does at the limit of processes (ulimit -u)."""

    def on_multirun_start(self, config, **kwargs):
        def dies():
            raise RuntimeError("can't start new thread")
        thread = threading.Thread(target=dies, name="ExecutorManagerThread")
        thread.start()
        thread.join()
'''


def test_a_launcher_thread_that_dies_ends_the_sweep_in_one_line_instead_of_a_wait_for_ever(tmp_path):
    """Under `ulimit -u` (as a user other than root) loky's ExecutorManagerThread died and the sweep waited for ever
    for jobs never handed over; a callback's thread stands for it here, deterministically."""
    write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK)})
    (tmp_path / "dying.py").write_text(DYING_THREAD)
    env = child_env({"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])})
    done = subprocess.run([sys.executable, "-m", "benchrun", "-m", "hydra/launcher=joblib", "task.path=bench",
                           "runner.model=a,b", "runner.host=http://127.0.0.1:9", "outputs=out",
                           "+hydra.callbacks.dying._target_=dying.DyingThread"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    soft = resource.getrlimit(resource.RLIMIT_NPROC)[0]
    limit = "" if soft == resource.RLIM_INFINITY else f"; this user may run {soft} processes and threads (ulimit -u)"
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["archive"], "", (
        "benchrun: error: the launcher's thread ExecutorManagerThread failed (RuntimeError: can't start new thread)"
        f"{limit}: nothing was asked or recorded\n"))
    assert made(tmp_path) == ["bench", "dying.py"]


def test_a_task_folder_whose_name_is_not_utf8_is_named_with_its_byte_escaped(tmp_path):
    bench = write_bench(tmp_path, folder_task("add", "add {a}", "a,reference\n1,1\n"))
    os.mkdir(os.path.join(os.fsencode(bench / "tasks"), b"a\xffb"))
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'tasks/a\\xffb': 'a\\xffb' is not a task name (ASCII letters, digits, _ . - ; not starting "
        "with . or -): rename the folder\n"))

"""The thirty-sixth hostile pass of issue 19, the asking side.

1. a variable a scorer set (or removed) past os.environ (`os.putenv("X", "1")`, ctypes' `setenv`, `unsetenv("PATH")`,
   an entry of an empty name by ctypes' `putenv`) reached every later call's subprocesses: only TZ was put back. The
   process's C environment is read as the first call found it and put back whole where it differs
   (`execute.cenviron`, in `scorer_worker._Found`); the time zone is set anew where it differs after
"""

from __future__ import annotations

import os

import pytest

from benchrun.core.procfs import PARENT, descendants, stat_fields
from tests.helpers.p35_asking import scores_of
from tests.helpers.p36_asking import SETTING_PAST_ENVIRON, counted, oddly_named


@pytest.mark.slow  # the scorer process is a real subprocess
def test_a_variable_a_scorer_sets_past_os_environ_does_not_reach_the_next_calls_subprocesses(tmp_path):
    began = {"s.put": 0, "s.set": 0, "s.path": 1, "s.odd": 0}
    assert scores_of(tmp_path, SETTING_PAST_ENVIRON, n=2) == [(f"times7:a={a}", began, None) for a in range(2)]



FULL = ("ContextFull: the chat and its answer are {} + {} tokens as Ollama counted them, and the model's context holds "
        "{} ({}): Ollama cut the chat to fit, so the model did not see it whole; raise runner.options.num_ctx, or "
        "shorten the chat")
SET = ("+runner.options.num_ctx=300",)


@pytest.mark.parametrize(("chat", "answer", "loaded", "args", "said"), [
    (300, 1, 8192, SET, "runner.options.num_ctx"), (290, 11, None, SET, "runner.options.num_ctx"),
    (4096, 0, 4096, (), "as Ollama at {url} loaded it, runner.options.num_ctx unset")])
def test_an_ollama_chat_longer_than_its_context_is_refused_as_the_embedded_engines_is(tmp_path, chat, answer, loaded,
                                                                                     args, said):
    message = FULL.format(chat, answer, loaded if not args else 300, said)
    assert counted(tmp_path, chat, answer, loaded, *args) == [None, {"type": "Refused", "message": message}, 1, [message]]


@pytest.mark.parametrize(("chat", "answer", "loaded", "args"), [(290, 10, 8192, SET),
                                                                (9000, 5, None, ())])
def test_an_ollama_chat_and_answer_within_its_context_are_taken(tmp_path, chat, answer, loaded, args):
    assert counted(tmp_path, chat, answer, loaded, *args) == ['{"answer": 6}', None, 1, []]


def test_a_process_named_in_bytes_that_are_no_utf8_is_read_from_proc():
    with oddly_named() as pid:
        assert (pid in descendants(os.getpid()), int(stat_fields(pid)[PARENT])) == (True, os.getpid())

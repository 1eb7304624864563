"""The thirty-sixth hostile pass of issue 19, the asking side.

1. a variable a scorer set (or removed) past os.environ (`os.putenv("X", "1")`, ctypes' `setenv`, `unsetenv("PATH")`,
   an entry of an empty name by ctypes' `putenv`) reached every later call's subprocesses: only TZ was put back. The
   process's C environment is read as the first call found it and put back whole where it differs
   (`execute.cenviron`, in `scorer_worker._Found`); the time zone is set anew wherever it then differs
2. a chat longer than the model's context was cut by Ollama unsaid (its start dropped to fit, or to go on answering),
   and its answer recorded and scored as the answer to the whole chat, where the embedded engine refuses it
   (`ContextFull`). One rule for both: where Ollama's counts say the chat and its answer outgrew the context
   (runner.options.num_ctx where set, else the length /api/ps says the model was loaded with), the sample's error is
   `Refused: ContextFull: ...`, not asked again, not counted by fail-fast (`runners.ollama.OllamaRunner._seen_whole`)
3. a process anywhere on the machine whose name is bytes that are no UTF-8 (`prctl(PR_SET_NAME, b"\\xff...")`, a
   program's file name) made the end of every run a traceback (UnicodeDecodeError reading /proc/PID/stat as the
   scorer process's tree was ended), and a lock's writer check too: /proc's files are read as bytes, a name that is
   no UTF-8 decoded as the file system's names are (`core.procfs.proc_text`, a shared module)
4. a busy answer's Retry-After date was measured from this machine's clock, not the server's: a server an hour ahead
   asking to be asked again in 5 s was read as asking 3605 s, and its sample failed `not asked again` (a preflight
   refused); one behind asking an hour was asked again at once. A date is measured from the answer's own Date where
   it has one (`runners.retryafter.retry_after_s`)
5. Ollama's answer saying it only loaded or unloaded the model (`done_reason: "load"`, `"unload"`: its answer to a chat
   of no messages, which generates nothing) was taken as the model's answer, empty, and scored: it is no answer to the
   chat benchrun asked, and is asked again as a broken one is (`runners.ollama.UNASKED`)
6. a scorer that seeds a random generator as it is imported (`random.seed(7)`, `numpy.random.seed(7)`) and draws in
   its calls scored each sample by how many draws the samples scored before it took in that process: a rescore, a
   resume or a process replaced after a timeout scored it anew; so did numpy's handling of floating-point errors a
   scorer set (`numpy.seterr(all="raise")`: a later call's division by zero raised, where it gave inf). Each call
   starts with `random`'s state, and numpy's global generator and error handling where numpy is imported, as the
   first found (`execute.scorer_worker._held_by_libraries`)
7. a chat answer whose message is not the assistant's (`"role": "user"`, a server echoing the chat back; `"tool"`, a
   number) was taken as the model's answer and scored: refused by both runners, as an answer of no chat's shape is
   (`runners.base.not_the_models`)
8. a scorer that changed how stdout or stderr encodes (`sys.stdout.reconfigure(encoding="ascii")`: the same object,
   which the put-back of 35's 5. compares by identity) left it so: a later call's `print("café")` raised
   UnicodeEncodeError, that sample's error. Each is put back to the encoding, errors, line buffering and write-through
   the first call found (`execute.scorer_worker._restream`)
9. an import finder or path hook a scorer added (`sys.meta_path.insert(0, finder)`, `sys.path_hooks.append(...)`, as
   an import hook of typeguard's or pyximport's is installed) stayed for every later call's imports: both are put
   back as the first call found them, as sys.path is (`execute.scorer_worker.SETTINGS`)
10. a trace or profile function a scorer set for the threads started after (`threading.settrace`,
    `threading.setprofile`) and the stack size it gave them (`threading.stack_size(...)`: a small one crashes a later
    call's thread, the process's end blamed on that sample) reached every later call: put back as `sys.settrace`'s
    is (`execute.scorer_worker.SETTINGS`); so is a callback it gave the garbage collector (`gc.callbacks.append`),
    which ran in every later call's collections
11. an answer (or a judge's reply) that is empty, where the model called a tool to give it (`tool_calls`, kept in the
    record's extra), was said `invalid JSON: Expecting value ...` alone, where one empty beside its thinking says so:
    a model's tool calls are where it said something apart too (`execute.formatcheck.APART`)
"""

from __future__ import annotations

import os
import random

import numpy
import pytest

from benchrun.core.procfs import PARENT, descendants, stat_fields
from tests.helpers.p34_asking import first_answered, format_said
from tests.helpers.p35_asking import scores_of
from tests.helpers.p36_asking import (
    COLLECTING,
    DRAWING,
    HOOKING,
    RECODING,
    SETTING_PAST_ENVIRON,
    THREADING,
    clocked,
    counted,
    echoed,
    ended,
    oddly_named,
)


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
    refused = {"type": "Refused", "message": message}
    assert counted(tmp_path, chat, answer, loaded, *args) == [None, refused, 1, [message]]


@pytest.mark.parametrize(("chat", "answer", "loaded", "args"), [(290, 10, 8192, SET),
                                                                (9000, 5, None, ())])
def test_an_ollama_chat_and_answer_within_its_context_are_taken(tmp_path, chat, answer, loaded, args):
    assert counted(tmp_path, chat, answer, loaded, *args) == ['{"answer": 6}', None, 1, []]


def test_a_process_named_in_bytes_that_are_no_utf8_is_read_from_proc():
    with oddly_named() as pid:
        assert (pid in descendants(os.getpid()), int(stat_fields(pid)[PARENT])) == (True, os.getpid())


AHEAD, BEHIND = "Fri, 01 Jan 2100 00:00:00 GMT", ("Mon, 01 Jan 2001 00:00:00 GMT", "Mon, 01 Jan 2001 01:00:00 GMT")
"""A server's clock far ahead of this machine's, asking to be asked again now by its clock; one far behind, asking an
hour."""


@pytest.mark.parametrize(("runner", "status"), [("ollama", "503 Service Unavailable"),
                                                ("openai", "429 Too Many Requests")])
def test_a_retry_after_date_is_measured_from_the_answers_own_date(tmp_path, runner, status):
    assert first_answered(tmp_path, runner, clocked(status, AHEAD, AHEAD)) == (
        '{"answer": 6}', None, 2, [f"HTTP {status.split()[0]}: busy"])


def test_a_long_wait_a_server_whose_clock_is_behind_asks_is_not_waited(tmp_path):
    message = (f"HTTP 503: busy; the server asks to be asked again after Retry-After: {BEHIND[1]}, longer than a "
               "request may take (runner.timeout_s=120 s): not asked again")
    assert first_answered(tmp_path, "ollama", clocked("503 Service Unavailable", *BEHIND)) == (
        None, {"type": "ResponseError", "message": message}, 1, [message])


@pytest.mark.parametrize(("reason", "did"), [("unload", "unloaded")])
def test_an_ollama_answer_saying_it_only_loaded_the_model_is_asked_again(tmp_path, reason, did):
    assert first_answered(tmp_path, "ollama", ended(reason)) == ('{"answer": 6}', None, 2, [
        f"the answer says the server only {did} the model (done_reason: {reason}), as Ollama answers a chat of no "
        "messages: no answer to this one, not taken as one"])


@pytest.mark.slow  # the scorer process is a real subprocess
def test_each_scorer_call_finds_the_random_generators_and_numpys_error_handling_as_the_first_found(tmp_path):
    first = {"s.r": random.Random(7).random(), "s.n": float(numpy.random.RandomState(7).random_sample()),
             "s.raising": 0}
    assert scores_of(tmp_path, DRAWING, n=2) == [(f"times7:a={a}", first, None) for a in range(2)]


@pytest.mark.parametrize(("runner", "role", "said"), [
    ("ollama", "tool", "Refused: not Ollama's chat answer"), ("openai", "user", "APIError: not a chat completion"),
    ("openai", 3, "APIError: not a chat completion")])
def test_a_chat_answer_that_is_not_the_assistants_is_refused(tmp_path, runner, role, said):
    kind, words = said.split(": ", 1)
    shown = f'"{role}"' if isinstance(role, str) else "a number"
    message = f"{words}: its message's role is {shown}, where the model's answer is the assistant's"
    assert first_answered(tmp_path, runner, echoed(runner, role)) == (None, {"type": kind, "message": message}, 1,
                                                                      [message])


@pytest.mark.slow  # the scorer process is a real subprocess
def test_how_stdout_and_stderr_encode_is_put_back_after_each_call(tmp_path):
    assert scores_of(tmp_path, RECODING, n=2) == [(f"times7:a={a}", {"s.stdout": 1, "s.stderr": 1}, None)
                                                  for a in range(2)]


@pytest.mark.slow  # the scorer process is a real subprocess
def test_an_import_finder_or_path_hook_a_scorer_adds_does_not_reach_the_next_call(tmp_path):
    assert scores_of(tmp_path, HOOKING, n=2) == [(f"times7:a={a}", {"s.finders": 0, "s.hooks": 0}, None)
                                                 for a in range(2)]


@pytest.mark.slow  # the scorer process is a real subprocess
def test_the_threading_settings_a_scorer_changes_do_not_reach_the_next_call(tmp_path):
    assert scores_of(tmp_path, THREADING, n=2) == [(f"times7:a={a}", {"s.traced": 0, "s.profiled": 0, "s.stack": 0},
                                                    None) for a in range(2)]


@pytest.mark.slow  # the scorer process is a real subprocess
def test_a_garbage_collector_callback_a_scorer_adds_does_not_reach_the_next_call(tmp_path):
    assert scores_of(tmp_path, COLLECTING, n=2) == [(f"times7:a={a}", {"s": 0}, None) for a in range(2)]


def test_an_empty_answer_whose_tool_calls_hold_it_says_so_in_its_format_detail(tmp_path):
    call = {"function": {"name": "answer", "arguments": {"answer": 6}}}
    assert format_said(tmp_path, "ollama", {"content": "", "tool_calls": [call]}) == ({"format_valid": 0}, (
        "invalid JSON: Expecting value: line 1 column 1 (char 0) (the answer is empty, where its tool_calls (kept in "
        "the record's extra) holds 62 characters)"))

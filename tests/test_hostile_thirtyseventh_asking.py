"""The thirty-seventh hostile pass of issue 19, the asking side.

1. an answer cached by a run of Ollama that did not know the chat was cut to fit the model's context (a benchrun before
   ContextFull, or a model whose context /api/ps did not say) was served from the cache as a whole answer to the chat
   and scored: a cache hit is checked by the rule a fresh answer meets (`Runner.seen_whole`, applied by
   `execute.cachehit.whole_hit` for the samples and the judges' calls): one refused is a miss, its entry deleted and
   the chat asked again. A hit checked before the run's first fresh answer is checked against runner.options.num_ctx
   alone: the length /api/ps says is asked after a fresh answer, once the model is loaded; a run asking a list of
   servers checks a hit by each live server's rule (`execute.hosts.HostPool.seen_whole`)
2. an OpenAI-compatible server that cut a chat longer than the context it states (vLLM's GET /models `max_model_len`;
   llama.cpp's server, whose entry is owned by `llamacpp`, at GET /props: `default_generation_settings.n_ctx`) had its
   answer taken as the answer to the whole chat: its usage is checked against that context by Ollama's rule
   (`runners.contextfull.outgrew`), the sample's error `Refused: ContextFull: ...`
3. what a scorer's call left in the scorer process that it cannot put back reached every later call: a priority it
   lowered (`os.nice`), a user or root directory it changed as root (`os.setuid`, `os.chroot`), a thread left
   running, an audit hook, a fork handler, a codec search function, numpy first imported in the call (and seeded
   there: no state as first found). The process ends after such a call, its reply saying so, and the run starts
   another for the calls behind it, none blamed (`execute.scorerleft`); the three that cannot be listed are seen by
   wrapping `sys.addaudithook`, `os.register_at_fork` and `codecs.register` before the benchmark's modules are imported
4. an Ollama server upgraded while a run asked it (another /api/version as the run ends than at its preflight) left
   a run `completed` whose identity names one version for answers of two builds of its engine: failed as a model
   pulled again mid-run is, its answers kept (`runners.ollama.OllamaRunner.digests_now`, `runners.base.ServerChanged`)
5. a module a scorer replaced or removed in the module table (`sys.modules["json"] = stub`, `del
   sys.modules["fractions"]`) stayed so for every later call: its `import json` took the stub, its `import fractions`
   made a second fractions, whose Fraction is not the first's. The modules the first call found are put back where
   a call replaced or removed them (`execute.scorer_worker._put_back_modules`)
6. the folder of temporary files a scorer set (`tempfile.tempdir = "/gone"`: a later call's `mkstemp` failed, that
   sample's error) and the hooks reporting uncaught and unraisable exceptions (`sys.excepthook`, `sys.unraisablehook`,
   `threading.excepthook`) and the flags extension modules are loaded with (`sys.setdlopenflags`) stayed for every
   later call: put back as the interpreter's other settings are
   (`compiler.runstate.SETTINGS`, the input side's module: two entries)
"""

from __future__ import annotations

import codecs
import importlib
import os
import posix
import sys
import threading
import time
import types

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.p35_asking import scores_of
from tests.helpers.p37_asking import (
    REPLACING_MODULES,
    SETTING_HOOKS,
    calls_seen,
    fresh_after_hit,
    hits_after_check,
    left_by,
    stating,
    upgraded,
)

SERVED = ("ContextFull: the chat and its answer are {} + 1 tokens as the server counted them (usage), and the model's "
          "context holds 2048 ({}): the server cut the chat to fit, so the model did not see it whole; serve the model "
          "with a longer context, or shorten the chat")
VLLM = "max_model_len, as GET /models at {url} states it"
LLAMA = "n_ctx, as GET /props of the server at {url} states it"
UPGRADED = ("benchrun: error: Ollama at {url} changed version while it was asked: '0.12.6' when it began, '0.13.0' as "
            "it ended (upgraded?); the answers may come from either build and cannot be told apart, and the run's "
            "identity names the first: run it again\n")
PROPS = b'{"default_generation_settings": {"n_ctx": 2048}, "total_slots": 1}'


@pytest.mark.parametrize("host", ["http://127.0.0.1:9", ["http://127.0.0.1:9", "http://127.0.0.2:9"]])
def test_a_cached_answer_to_a_chat_cut_to_fit_the_context_is_a_miss_and_deleted(tmp_path, host):
    assert hits_after_check(tmp_path, [300, 299, 299], host) == [(False, False), (True, True), (True, True)]


def test_a_cached_answer_checked_before_the_first_fresh_one_leaves_the_context_to_be_asked_after_it():
    assert fresh_after_hit() == ("ContextFull: the chat and its answer are 300 + 1 tokens as Ollama counted "
                                         "them, and the model's context holds 300 (as Ollama at {url} loaded it, "
                                         "runner.options.num_ctx unset): Ollama cut the chat to fit, so the model did "
                                         "not see it whole; raise runner.options.num_ctx, or shorten the chat")


@pytest.mark.parametrize(("entry", "props", "chat", "error"), [
    ({"max_model_len": 2048}, b"", 2048, {"type": "Refused", "message": SERVED.format(2048, VLLM)}),
    ({"max_model_len": 2048}, b"", 2047, None), ({"max_model_len": "2048"}, b"", 4096, None),
    ({"owned_by": "llamacpp"}, PROPS, 2048, {"type": "Refused", "message": SERVED.format(2048, LLAMA)}),
    ({"owned_by": "llamacpp"}, b"", 4096, None), ({"owned_by": "vllm"}, PROPS, 4096, None)],
    ids=["max_model_len, past", "max_model_len, within", "max_model_len a string", "/props, past", "no /props",
         "/props of no llama.cpp server"])
def test_an_openai_compatible_answer_past_the_context_its_server_states_is_refused(tmp_path, entry, props, chat,
                                                                                   error):
    answered = '{"answer": 6}' if error is None else None
    assert stating(tmp_path, entry, chat, props)[:3] == [answered, error, 1]


@pytest.mark.slow  # the scorer process is a real subprocess
def test_a_scorer_call_leaving_what_cannot_be_put_back_ends_its_process_after_it(tmp_path):
    assert calls_seen(tmp_path) == [1, 1, 2]


IDS = (os.getuid(), os.geteuid(), os.getgid(), os.getegid(), tuple(sorted(os.getgroups())))


@pytest.mark.parametrize(("change", "said"), [
    (lambda patch, priority: priority.__setitem__(0, 1), "set the process's priority to 1 (it was 0)"),
    (lambda patch, priority: threading.Thread(target=time.sleep, args=(0.2,), daemon=True).start(),
     "left a thread running"),
    (lambda patch, priority: sys.addaudithook(print), "added an audit hook (sys.addaudithook)"),
    (lambda patch, priority: os.register_at_fork(before=print), "registered a fork handler (os.register_at_fork)"),
    (lambda patch, priority: posix.register_at_fork(before=print), "registered a fork handler (os.register_at_fork)"),
    (lambda patch, priority: codecs.register(print), "registered a codec search function (codecs.register)"),
    (lambda patch, priority: patch.setitem(sys.modules, "p37_holding", types.ModuleType("p37_holding")),
     "first imported p37_holding, which holds state for every caller"),
    (lambda patch, priority: patch.setattr(os, "geteuid", lambda: 65534),
     f"changed the process's user or groups (uid, gid, groups {IDS[:1] + (65534,) + IDS[2:]}, where they were {IDS})"),
    (lambda patch, priority: patch.setattr(os, "stat", lambda path: os.lstat("/proc")),
     "changed the process's root directory (os.chroot)"),
    (lambda patch, priority: (joined := threading.Thread(target=int)).start() or joined.join(), None),
    (lambda patch, priority: importlib.import_module("p37_registering"), None)])
def test_what_a_scorer_call_leaves_past_putting_back_is_seen(monkeypatch, tmp_path, change, said):
    assert left_by(monkeypatch, tmp_path, change) == said


@pytest.mark.parametrize("servers", [1, 2])
def test_an_ollama_server_upgraded_while_a_run_asks_fails_the_run_its_answers_kept(tmp_path, servers):
    kept = ['{"answer": 11}', '{"answer": 25}', '{"answer": 6}']
    assert upgraded(tmp_path, servers) == (EXIT["runner"], UPGRADED, "failed", kept)


@pytest.mark.slow  # the scorer process is a real subprocess
@pytest.mark.parametrize(("source", "found"), [(REPLACING_MODULES, {"s.stub": 0, "s.fractions": 1}),
                                               (SETTING_HOOKS, {"s.tempdir": 0, "s.hooks": 1, "s.dlopen": 1})],
                         ids=["module table", "temporary files and exception hooks"])
def test_a_module_table_temporary_files_or_exception_hooks_a_scorer_changed_are_put_back(tmp_path, source, found):
    assert scores_of(tmp_path, source, n=2) == [(f"times7:a={a}", found, None) for a in range(2)]

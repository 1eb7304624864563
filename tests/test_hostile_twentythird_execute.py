"""The twenty-third hostile pass of issue 19, the asking side: the review's findings on it, then a fresh pass.

- a 200 whose body is an error object naming no status (`{"error": {"code": "insufficient_quota", ...}}`, `{"error":
  "overloaded"}`) and no choices was `not a chat completion` (never retried, the body dumped), and the structured-output
  probe took it for the dialect's answer. Now an `error` with no choices is an error always: its name and message
  said, retried when it says the server is busy (`runners.errorbody.error_said`)
- a structured-output probe answered busy (a 503, a 500 of the server's own, a 200's error object saying 429) was
  never asked again: the run refused at once (exit 3). Now the probe is asked with the runner's retries and backoff,
  as every request is (`OpenAIRunner._probe`, `runners.base.retrying`, `base.transient` for what is worth it)
- a response cache failing to keep an answer (`CacheFailed` from `RunCache.put`) stopped the run before that answer
  was recorded: the model's answer lost, asked again by the resume. Now the answer is recorded (and graded) first,
  then the cache's failure stops the run (`execute.executor.Executor._worker`); `RunCache.forget` failing (a model
  changed mid-run) no longer hides why the run ended (`execute.session._forgotten`)
- `retry` judged again every answer a judge call of got no reply, those refused for their own chat too (`Refused:
  ContextFull: ...`, a rubric longer than the judge's context), which fail so however often asked: a retry of a retry
  never reached `nothing to retry`. Now only a call failed for the setup (`failure_kind`) is (`audit.judged.unreplied`)
- an Ollama chat answer of 200 that is an error and no message (`{"error": "server busy, please try again. maximum
  pending requests exceeded"}`, as a proxy before Ollama, or Ollama's own stream, sends): `not Ollama's chat answer: 1
  validation error for ChatResponse ...`, the server's words buried and never retried. Now the error itself, retried
  when it says the server is busy, as an OpenAI-compatible one (`runners.ollama._refuse_error`,
  `runners.errorbody.error_in_200`)
- an answer whose token count had more digits than Python converts (`"prompt_tokens": 1000...0`, 5,001 digits, in an
  OpenAI usage or Ollama's eval_count) was `not a chat completion: not JSON (ValueError: Exceeds the limit ...)`, the
  answer lost, though a count of 1e400 was only not reported. Now such an integer is read as its text, no count
  (`core.text.server_json`), the answer kept
- a judge's reply the response cache failed to keep (`CacheFailed` from `RunCache.put` in `Judge._judgement`) failed
  its grading: the reply and the answer's scores lost, graded again by the resume. Now the call is recorded and graded,
  the failure held (`Judge._keep`) and the run stopped on it once what was graded is committed
  (`execute.executor.Executor._collect`, `grading.Held.unkept`)
- an HTTP 429 saying a plan's quota is spent (OpenAI's `You exceeded your current quota, please check your plan and
  billing details.`) was asked again runner.retries times with backoff, for every sample, though no try lifts it. Now a
  429 that says so (`runners.base.SPENT`) is not retried; a rate limit's 429 that names billing (OpenAI's free tier) is
  (`runners.base.transient`, and a 200's error object alike, `errorbody._busy`)
- a structured-output probe answered 200 with no chat completion (`{}`) took the dialect as the server's: every request
  of the run then failed `not a chat completion` in it, the next dialect never tried. Now the probe's answer is read
  as any request's (`OpenAIRunner._failure`, through `_completion`): one that is none refuses that dialect
- an Ollama preflight answered 200 with an error (`{"error": "unauthorized: ..."}` for the model list, from a proxy
  before it) was `not Ollama's answer (ValidationError: 1 validation error for ListResponse ...); runner.host must name
  an Ollama server`. Now any Ollama answer holding an error is that error (`runners.ollama._refuse_error`), the
  preflight refused (or not answered, when it says the server is busy) in its words
- an Ollama answer whose tool call's arguments nest 900 deep: `ValueError: Maximum serialization depth exceeded`, the
  answer lost (pydantic's JSON dump of the call), where an OpenAI-compatible one so nested is kept. Now the calls are
  dumped as Python, then as JSON text (`runners.ollama._thought`), the answer kept
- an Ollama answer whose `message.thinking` is no string (`{"steps": [1, 2]}`): `not Ollama's chat answer: 1
  validation error ... message.thinking`, the answer lost, where an OpenAI-compatible reasoning of another type is
  only not kept. Now it is not kept either (`runners.ollama._APART`, in `_as_typed`), the answer kept
- a 200's error object naming its status as a string (LiteLLM's `"code": "503"`) was read as a name: `HTTP 200 saying
  503: upstream connect error`, never retried. Now three digits of 400-599 are that status (`errorbody._status`)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchrun.archive.reader import load_run
from benchrun.audit.judged import unreplied
from benchrun.audit.retry import retry_run
from benchrun.core.errors import EXIT, ArchiveError
from benchrun.core.recordvalues import short_digest
from benchrun.execute.cache import Store
from benchrun.execute.runners.openai import PROBE_PROMPT
from benchrun.testing.chat import Reply, fake_digest
from benchrun.testing.http_fake import json_response
from benchrun.testing.ollama_server import FakeOllama
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import listbench_answer
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, make_run, run_dir_of
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, answer
from tests.helpers.sqlitefile import sqlite_db

QUOTA = json.dumps({"error": {"code": "insufficient_quota", "type": "insufficient_quota",
                              "message": "You exceeded your current quota, please check your plan and billing details."}})


def _openai(tmp_path: Path, responder, *args: str):
    with FakeOpenAI(models=["m"], responder=responder) as server:
        return server.url, call_benchrun("runner=openai", f"runner.base_url={server.url}", "runner.model=m",
                                         "cache=false", "runner.backoff_s=0", "task.only=[product]",
                                         f"outputs={tmp_path / 'outputs'}", *args, cwd=tmp_path)


def _once(body: str, prompt: str = "find the product of 2 and 3"):
    """A responder answering the first request of `prompt` with the raw 200 body `body`, then rightly."""
    seen: list[str] = []

    def responder(request):
        if request.prompt == prompt and prompt not in seen:
            seen.append(prompt)
            return Reply(raw=body)
        return listbench_answer(request)
    return responder


def _failed(stdout: str) -> list[tuple[str, object, int, list[str]]]:
    return [(r["id"], r["error"], r["attempts"], [a["error"]["message"] for a in r["failed_attempts"]])
            for r in read_jsonl(run_dir_of(stdout) / "responses.jsonl") if r["failed_attempts"]]


def test_a_200_error_object_naming_no_status_is_that_samples_error_not_a_chat_completion(tmp_path):
    _, done = _openai(tmp_path, _once(QUOTA), "runner.structured=json_schema")
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    said = ("HTTP 200 saying insufficient_quota: You exceeded your current quota, please check your plan and billing "
            "details.")
    assert _failed(done.stdout) == [("product:a=2,b=3", {"type": "APIError", "message": said}, 1, [said])]


@pytest.mark.parametrize(("body", "said"), [
    (json.dumps({"error": "overloaded"}), "HTTP 200 saying an error: overloaded"),
    (json.dumps({"error": {"type": "overloaded_error", "message": "Overloaded"}}),
     "HTTP 200 saying overloaded_error: Overloaded"),
    (json.dumps({"error": {"code": "rate_limit_exceeded", "message": "Rate limit reached for requests"}, "choices": []}),
     "HTTP 200 saying rate_limit_exceeded: Rate limit reached for requests"),
])
def test_a_200_error_object_saying_the_server_is_busy_is_asked_again(tmp_path, body, said):
    _, done = _openai(tmp_path, _once(body), "runner.structured=json_schema")
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert _failed(done.stdout) == [("product:a=2,b=3", None, 2, [said])]


def test_a_structured_output_probe_answered_200_with_an_error_object_is_no_dialects_answer(tmp_path):
    url, done = _openai(tmp_path, lambda r: Reply(raw=QUOTA) if r.prompt == PROBE_PROMPT else listbench_answer(r))
    said = ("HTTP 200 saying insufficient_quota: You exceeded your current quota, please check your plan and billing "
            "details.")
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["runner"], "", (
        f"benchrun: error: the server at {url} refused every structured-output dialect (json_schema: {said}; "
        f"json_object: {said}; none: {said})\n"))


@pytest.mark.parametrize("busy", [Reply(status=503, error="overloaded"), Reply(status=500, error="CUDA out of memory"),
                                  Reply(raw=json.dumps({"error": {"code": 429, "message": "Rate limit reached"}}))])
def test_a_structured_output_probe_answered_busy_is_asked_again_with_the_runners_retries(tmp_path, busy):
    _, done = _openai(tmp_path, _busy_once(busy))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    info = json.loads((run_dir_of(done.stdout) / "run.json").read_text())
    assert info["identity"]["structured_dialect"] == "json_schema"


def _busy_once(busy: Reply):
    """A responder answering the structured-output probe `busy` once, then rightly."""
    asked: list[str] = []

    def responder(request):
        if request.prompt == PROBE_PROMPT and not asked:
            asked.append(request.prompt)
            return busy
        return listbench_answer(request)
    return responder


def _refusing_cache(directory: Path) -> Path:
    """A response cache whose every write of an answer fails (as a disk gone bad mid-run would): its path."""
    Store(directory).close()
    with sqlite_db(directory / "responses.sqlite3") as db:
        db.execute("CREATE TRIGGER refuse BEFORE INSERT ON answers BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END")
    return directory / "responses.sqlite3"


def test_an_answer_the_response_cache_fails_to_keep_is_recorded_before_the_run_stops(tmp_path):
    path, asked = _refusing_cache(tmp_path / "cache"), []

    def responder(request):
        asked.append(request.prompt)
        return listbench_answer(request)

    with FakeOllama(models=["llama3.2"], responder=responder) as server:
        done = call_benchrun(f"runner.host={server.url}", "cache=true", f"cache_dir={tmp_path / 'cache'}",
                             "task.only=[product]", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    [run_dir] = (tmp_path / "outputs").glob("*/*")
    responses = read_jsonl(run_dir / "responses.jsonl")
    assert [(r["id"], r["text"]) for r in responses] == [("product:a=2,b=3", '{"answer": 6}')]
    assert asked == ["find the product of 2 and 3"]
    assert {s["scorer"] for s in read_jsonl(run_dir / "scores.jsonl")} == {"format_valid", "calculated_answer"}
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        f"benchrun: error: cache_dir: the response cache at {path} cannot be used (IntegrityError: disk I/O error); "
        "set cache_dir= to a directory on local disk, or cache=false; run "
        f"{json.loads((run_dir / 'run.json').read_text())['run_id']} is recorded as 'failed' with 1 of 3 samples in "
        f"{run_dir}; finish it (a resume asks without the cache) with: benchrun-audit resume {run_dir}\n"))


def test_a_model_pulled_again_mid_run_is_said_when_the_cache_fails_to_forget_its_answers(tmp_path):
    path = tmp_path / "cache" / "responses.sqlite3"
    Store(path.parent).close()
    with sqlite_db(path) as db:
        db.execute("CREATE TRIGGER refuse BEFORE DELETE ON answers BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END")
    asked = []

    def repulled(request):
        asked.append(request)
        if len(asked) == 2:
            server.digests["llama3.2"] = "f" * 64
        return listbench_answer(request)

    with FakeOllama(models=["llama3.2"], responder=repulled) as server:
        done = call_benchrun(f"runner.host={server.url}", "cache=true", f"cache_dir={path.parent}",
                             "task.only=[product]", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    began = short_digest(fake_digest("llama3.2"))
    assert (done.returncode, done.stderr) == (EXIT["runner"], (
        f"benchrun: error: model llama3.2 changed on {server.url} while the run asked: digest {began} when it began, "
        "digest ffffffffffff as it ended (pulled again?); its answers may come from either model and cannot be told "
        "apart: run it again; the answers it kept in the response cache could not be deleted (cache_dir: the "
        f"response cache at {path} cannot be used (IntegrityError: disk I/O error); set cache_dir= to a directory on "
        "local disk, or cache=false): delete them with benchrun-audit cache --clear\n"))


def _judged_run(tmp_path: Path) -> Path:
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    return make_run(tmp_path, "task.path=bench", "judge.model=qwen2.5", responder=answer, models=("llama3.2", "qwen2.5"))


def test_a_judge_call_refused_for_its_own_chat_is_not_asked_again_by_retry(tmp_path):
    run_dir = _judged_run(tmp_path)
    calls = read_jsonl(run_dir / "judgements.jsonl")
    calls[0].update(reply=None, grade=None, value=None, error={
        "type": "Refused", "message": "ContextFull: the chat is 9000 tokens, and the model's context holds 8192"})
    (run_dir / "judgements.jsonl").write_text("".join(json.dumps(call) + "\n" for call in calls))
    assert unreplied(load_run(run_dir)) == set()
    with pytest.raises(ArchiveError, match="has an answer; nothing to retry"):
        retry_run(load_run(run_dir), force=True)


def _ollama(tmp_path: Path, responder):
    with FakeOllama(models=["llama3.2"], responder=responder) as server:
        return call_benchrun(f"runner.host={server.url}", "cache=false", "runner.backoff_s=0", "task.only=[product]",
                             f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)


@pytest.mark.parametrize(("error", "failed"), [
    ("server busy, please try again.  maximum pending requests exceeded", None),
    ("model requires more system memory (9.0 GiB) than is available (4.0 GiB)", "ResponseError")])
def test_an_ollama_200_that_is_an_error_is_that_error_retried_when_busy(tmp_path, error, failed):
    done = _ollama(tmp_path, _once(json.dumps({"error": error})))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    said = f"HTTP 200 saying an error: {' '.join(error.split())}"
    error_info = failed and {"type": failed, "message": said}
    assert _failed(done.stdout) == [("product:a=2,b=3", error_info, 1 if failed else 2, [said])]


DIGITS = "1" + "0" * 5000
"""An integer of more digits than Python converts (4,300)."""
OPENAI_HUGE = ('{"choices": [{"message": {"role": "assistant", "content": "{\\"answer\\": 6}"}, "finish_reason": "stop"}], '
               f'"usage": {{"prompt_tokens": {DIGITS}, "completion_tokens": 3}}}}')
OLLAMA_HUGE = ('{"model": "llama3.2", "message": {"role": "assistant", "content": "{\\"answer\\": 6}"}, "done": true, '
               f'"done_reason": "stop", "prompt_eval_count": 4, "eval_count": {DIGITS}}}')


@pytest.mark.parametrize(("ask", "body", "counts"), [("openai", OPENAI_HUGE, (None, 3)), ("ollama", OLLAMA_HUGE, (4, None))])
def test_a_token_count_of_more_digits_than_python_reads_is_not_reported_and_the_answer_kept(tmp_path, ask, body, counts):
    if ask == "openai":
        _, done = _openai(tmp_path, _once(body), "runner.structured=json_schema")
    else:
        done = _ollama(tmp_path, _once(body))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    [asked] = [r for r in read_jsonl(run_dir_of(done.stdout) / "responses.jsonl") if r["id"] == "product:a=2,b=3"]
    assert (asked["text"], asked["error"], asked["prompt_tokens"], asked["completion_tokens"]) == (
        '{"answer": 6}', None, *counts)


def test_a_judges_reply_the_response_cache_fails_to_keep_is_recorded_before_the_run_stops(tmp_path):
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    path = tmp_path / "cache" / "responses.sqlite3"
    Store(path.parent).close()
    with sqlite_db(path) as db:  # the judge's replies alone fail to be kept
        db.execute("CREATE TRIGGER refuse BEFORE INSERT ON answers WHEN NEW.model = 'qwen2.5' BEGIN "
                   "SELECT RAISE(ABORT, 'disk I/O error'); END")
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=answer) as server:
        done = call_benchrun(f"runner.host={server.url}", "task.path=bench", "judge.model=qwen2.5", "cache=true",
                             f"cache_dir={path.parent}", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    [run_dir] = (tmp_path / "outputs").glob("*/*")
    info = json.loads((run_dir / "run.json").read_text())
    asked = [r["id"] for r in read_jsonl(run_dir / "responses.jsonl")]  # how many were asked before it stopped varies
    assert (done.returncode, done.stderr) == (EXIT["usage"], (  # and none is left ungraded
        f"benchrun: error: cache_dir: the response cache at {path} cannot be used (IntegrityError: disk I/O error); "
        f"set cache_dir= to a directory on local disk, or cache=false; run {info['run_id']} is recorded as 'failed' "
        f"with {len(asked)} of 3 samples in {run_dir}; finish it (a resume asks without the cache) with: "
        f"benchrun-audit resume {run_dir}\n"))
    grades = {"symbol:symb=@": 1, "symbol:symb=$": 1, "symbol:symb=#": 0}
    assert asked and [(c["id"], c["error"], c["value"]) for c in read_jsonl(run_dir / "judgements.jsonl")] == [
        (name, None, grades[name]) for name in asked]
    assert [(s["id"], s["metrics"]) for s in read_jsonl(run_dir / "scores.jsonl") if s["scorer"] == "names"] == [
        (name, {"names": grades[name]}) for name in asked]


QUOTA_SAID = "You exceeded your current quota, please check your plan and billing details."
FREE_TIER = ("Rate limit reached for requests per min. Limit: 3 / min. Please try again in 20s. Please add a payment "
             "method to your account to increase your rate limit. Visit https://platform.openai.com/account/billing")


@pytest.mark.parametrize(("first", "said", "attempts"), [
    (Reply(status=429, error=QUOTA_SAID), f"HTTP 429: {QUOTA_SAID}", 1),
    (Reply(status=429, error=FREE_TIER), f"HTTP 429: {FREE_TIER}", 2),
    (Reply(raw=json.dumps({"error": {"code": "rate_limit_exceeded", "message": FREE_TIER}})),
     f"HTTP 200 saying rate_limit_exceeded: {FREE_TIER}", 2)])
def test_a_spent_quota_is_not_asked_again_and_a_rate_limit_naming_billing_is(tmp_path, first, said, attempts):
    seen: list[str] = []

    def responder(request):
        if request.prompt == "find the product of 2 and 3" and not seen:
            seen.append(request.prompt)
            return first
        return listbench_answer(request)

    _, done = _openai(tmp_path, responder, "runner.structured=json_schema")
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    error = {"type": "APIError", "message": said} if attempts == 1 else None
    assert _failed(done.stdout) == [("product:a=2,b=3", error, attempts, [said])]


def test_a_structured_output_probe_answered_200_with_no_chat_completion_tries_the_next_dialect(tmp_path):
    probes: list[str] = []

    def responder(request):
        if request.prompt == PROBE_PROMPT:
            probes.append(request.prompt)
            return Reply(raw="{}") if len(probes) == 1 else listbench_answer(request)
        return listbench_answer(request)

    _, done = _openai(tmp_path, responder)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    info = json.loads((run_dir_of(done.stdout) / "run.json").read_text())
    assert (info["identity"]["structured_dialect"], len(probes)) == ("json_object", 2)


class _ErringTags(FakeOllama):
    """An Ollama whose model list is a 200 holding an error (a proxy before it answering so)."""

    error = ""

    def routes(self):
        return {**super().routes(), ("GET", "/api/tags"): lambda _: json_response({"error": self.error})}


@pytest.mark.parametrize(("error", "said"), [
    ("unauthorized: this proxy needs a session", "refused the preflight: HTTP 200 saying an error: unauthorized: this "
                                                 "proxy needs a session"),
    ("server overloaded, try again", "did not answer the preflight (HTTP 200 saying an error: server overloaded, try "
                                     "again)")])
def test_an_ollama_preflight_answered_200_with_an_error_says_that_error(tmp_path, error, said):
    _ErringTags.error = error
    with _ErringTags() as server:
        done = call_benchrun(f"runner.host={server.url}", "cache=false", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["runner"], "", f"benchrun: error: Ollama at {server.url} "
                                                                                f"{said}\n")


def test_an_ollama_answers_tool_call_nested_deep_is_kept_with_the_answer(tmp_path):
    deep = "[" * 900 + "]" * 900
    body = ('{"model": "llama3.2", "message": {"role": "assistant", "content": "{\\"answer\\": 6}", "tool_calls": '
            f'[{{"function": {{"name": "f", "arguments": {{"a": {deep}}}}}}}]}}, "done": true, "done_reason": "stop"}}')
    done = _ollama(tmp_path, _once(body))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    [asked] = [r for r in read_jsonl(run_dir_of(done.stdout) / "responses.jsonl") if r["id"] == "product:a=2,b=3"]
    assert (asked["text"], asked["error"], json.loads(asked["extra"]["tool_calls"])) == (
        '{"answer": 6}', None, [{"function": {"name": "f", "arguments": {"a": json.loads(deep)}}}])


def test_an_ollama_answers_thinking_that_is_no_string_is_not_kept_and_the_answer_is(tmp_path):
    body = ('{"model": "llama3.2", "message": {"role": "assistant", "content": "{\\"answer\\": 6}", "thinking": '
            '{"steps": [1, 2]}}, "done": true, "done_reason": "stop"}')
    done = _ollama(tmp_path, _once(body))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    [asked] = [r for r in read_jsonl(run_dir_of(done.stdout) / "responses.jsonl") if r["id"] == "product:a=2,b=3"]
    assert (asked["text"], asked["error"], asked["extra"]) == ('{"answer": 6}', None, {})


def test_a_200_error_object_naming_its_status_as_a_string_is_read_as_that_status(tmp_path):
    body = json.dumps({"error": {"message": "upstream connect error", "type": "None", "param": "None", "code": "503"}})
    _, done = _openai(tmp_path, _once(body), "runner.structured=json_schema")
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert _failed(done.stdout) == [("product:a=2,b=3", None, 2, ["HTTP 200 saying 503: upstream connect error"])]

"""The thirtieth hostile pass of issue 19, the asking side.

- a resume (or retry) of an OpenAI-compatible run that no digest pins read its responses (and judge calls) once more
  to learn the name its answers gave the model: that name is kept as the pass the command makes over them for its
  own ends goes (`core.recordvalues.Served`, fed by `audit.resume._unanswered`, `audit.retry._todo`,
  `execute.judging.archived_calls`, `audit.judged.calls_by_answer`)
- a judge's grade of `1e400` was said as `inf` (and `1e300` as `1e+300`): Python read the reply's number first. A
  grade is said as the judge wrote it, bounded in length (`execute.judging._as_written`)
- a server answering 429 or 503 (or a 200 whose body says 429) with `Retry-After: N` was asked again on benchrun's
  own backoff (0.5 s, then 1 s), whatever it asked: a wait it asks within a request's timeout_s is waited
  (tenacity's wait, `runners.retryafter`); a longer one is not, and the sample's error says so
  (`runners.base.asked_again`); of Ollama too, where the official client keeps the answer's headers
  (`runners.ollama._headers`)
- a resume of a run whose answers came from a pool of two models behind one URL (`qwen2.5-7b`, `qwen2.5-14b` in
  turn) onto that same pool was refused when its probe was answered by the model that did not give the run's last
  answer, or (runner.structured=auto, the default) than its preflight's probe: a model any of the run's answers
  named is the run's (`core.recordvalues.answered_as`)
"""

from __future__ import annotations

import asyncio
import json

import pytest

from benchrun.archive.reader import Run, load_run
from benchrun.audit.resume import resume_run
from benchrun.core.errors import EXIT
from benchrun.execute.runners.registry import make_runner
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.archives import read_jsonl
from tests.helpers.commands import call_benchrun
from tests.helpers.p24_execute import PROMPT, asked, ollama_run, once, openai_run
from tests.helpers.p28_asking import AnsweringAs, Breaks
from tests.helpers.p29_asking import judged_by
from tests.helpers.p30_asking import Pool, asked_of, busy, counting, then_answered


def test_a_resume_reads_the_name_its_answers_gave_the_model_in_its_own_pass_over_them(tmp_path, monkeypatch):
    """A resume read responses.jsonl in five places, check_model's among them; now in four, the same refusal kept
    (test_hostile_twentyninth_asking)."""
    with AnsweringAs("qwen2.5-7b", responder=Breaks(5)) as first:
        done = call_benchrun("runner=openai", f"runner.base_url={first.url}", "runner.model=qwen", "runner.retries=0",
                             "runner.structured=json_schema", "cache=false", f"outputs={tmp_path / 'o'}", cwd=tmp_path)
    [run_dir] = (tmp_path / "o").glob("*/*")
    read: list[str] = []
    monkeypatch.setattr(Run, "responses", counting(read, Run.responses))
    with AnsweringAs("qwen2.5-7b") as same:
        info = resume_run(load_run(run_dir), host=same.url)
    assert (done.returncode, info.status) == (EXIT["runner"], "completed")
    assert read == ["_unanswered", "earlier_wall_s", "reopen", "_resume"]


@pytest.mark.parametrize(("grade", "shown"), [("1e400", "1e400"), ("-1E+400", "-1E+400"), ("1e300", "1e300"),
                                              ("1" + "0" * 400 + ".5", "a number written in 403 characters")])
def test_a_judges_grade_out_of_range_is_said_as_the_judge_wrote_it(tmp_path, grade, shown):
    result, judged = judged_by(tmp_path, '{"grade": %s}' % grade)
    message = (f"judge 'names' graded by {shown}, out of a score's range: a grade is a finite number of magnitude at "
               "most 1e+100")
    assert result.returncode == EXIT["ok"]
    assert [error for _, _, error in judged] == [{"type": "JudgeReplyInvalid", "message": message}] * 3


@pytest.mark.parametrize(("after", "runner"), [("3600", "openai"), ("Fri, 31 Dec 9999 23:59:59 GMT", "openai"),
                                             ("9" * 400, "openai"), ("3600", "ollama")])
def test_a_wait_asked_by_retry_after_longer_than_a_request_may_take_is_not_waited_and_said(tmp_path, after, runner):
    done = openai_run(tmp_path, once(busy(after)))[1] if runner == "openai" else ollama_run(tmp_path, once(busy(after)))
    shown = after if len(after) <= 40 else "9" * 16 + " [...] " + "9" * 17
    kind = "APIError" if runner == "openai" else "ResponseError"
    assert done.returncode == EXIT["ok"]
    assert asked(done.stdout) == (None, {"type": kind, "message": (
        "HTTP 429: slow down; the server asks to be asked again after Retry-After: " + shown + ", longer than a "
        "request may take (runner.timeout_s=120 s): not asked again")}, 1, [
        "HTTP 429: slow down; the server asks to be asked again after Retry-After: " + shown + ", longer than a "
        "request may take (runner.timeout_s=120 s): not asked again"])


def test_a_200_saying_429_whose_retry_after_asks_longer_than_a_request_may_take_is_not_waited(tmp_path):
    done = openai_run(tmp_path, once(busy("3600", "200 OK")))[1]
    message = ("HTTP 200 saying 429: slow down; the server asks to be asked again after Retry-After: 3600, longer than "
               "a request may take (runner.timeout_s=120 s): not asked again")
    assert done.returncode == EXIT["ok"]
    assert asked(done.stdout) == (None, {"type": "APIError", "message": message}, 1, [message])


@pytest.mark.parametrize(("after", "waited"), [("2", [2.0]), ("0", [0.0]), ("soon", [0.0])])
def test_a_wait_asked_by_retry_after_within_a_requests_timeout_is_waited(monkeypatch, after, waited):
    """`runner.backoff_s=0`: benchrun's own backoff waits 0 s plus a jitter below 1 s; the server's ask is waited
    where longer (a value of no form RFC 9110 gives is no ask)."""
    waits: list[float] = []
    slept = asyncio.sleep

    async def sleep(seconds: float) -> None:
        if seconds:
            waits.append(seconds if seconds >= 1 else 0.0)
        await slept(0)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    with FakeOpenAI(models=["m"], responder=then_answered(busy(after))) as fake:
        runner = make_runner({"type": "openai", "model": "m", "base_url": fake.url, "backoff_s": 0,
                              "structured": "json_schema"})
        outcome = asyncio.run(asked_of(runner, PROMPT))
    assert (outcome.completion.text, outcome.error, waits) == ('{"answer": "ok"}', None, waited)


@pytest.mark.parametrize("structured", ["json_schema", "auto"])
def test_a_resume_onto_the_pool_of_models_that_answered_the_run_is_not_refused(tmp_path, structured):
    """With runner.structured=auto the preflight's probe named the first model (run.json's `answers_as`); set, the
    run's last answer named the model its resume compared with."""
    names = ["qwen2.5-7b", "qwen2.5-14b"]
    with Pool(names, responder=Breaks(6)) as first:
        done = call_benchrun("runner=openai", f"runner.base_url={first.url}", "runner.model=qwen", "runner.retries=0",
                             f"runner.structured={structured}", "cache=false", f"outputs={tmp_path / 'o'}",
                             cwd=tmp_path)
    [run_dir] = (tmp_path / "o").glob("*/*")
    said = [r["extra"]["model"] for r in read_jsonl(run_dir / "responses.jsonl") if r["error"] is None]
    pinned = json.loads((run_dir / "run.json").read_text())["identity"].get("answers_as", said[-1])
    with Pool(sorted(names, key=lambda name: name == pinned)) as pool:
        resumed = call_benchrun("resume", str(run_dir), "--host", pool.url, cwd=tmp_path, module="benchrun.audit")
    assert (done.returncode, sorted(set(said))) == (EXIT["runner"], sorted(names))
    assert (resumed.returncode, resumed.stderr) == (EXIT["ok"], "")
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"

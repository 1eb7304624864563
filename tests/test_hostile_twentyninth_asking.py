"""The twenty-ninth hostile pass of issue 19, the asking side.

- a judge's number grade out of a score's range (`{"grade": 1e300}`) was refused in the scorer's words (`scorer
  result names must be a finite number ...`): the judge's refusal names the judge and what it gave
  (`execute.judging._read`)
- a server's URL at the broadcast address or a multicast one was advised `start it with ollama serve`, where no
  server can be: refused as no server's URL, naming the key (`core.serverurls._no_one_host`); 0.0.0.0 and `::` reach
  this machine, where the advice is true
- a resume of an OpenAI-compatible run asked with runner.structured set (no probe) onto a server answering as another
  model went on unsaid: the name the run's answers gave pins it (`core.recordvalues.answered_as`), and a command
  asking a run again probes in its dialect to learn the name the server answers as now (`runners.openai._dialect`)
- a completion count of 0 for an answer with text, and a server's duration longer than benchrun waits for a request
  (a load of 11 days), were kept and made the run's speed 0 tokens/s and its load time 1,000,000 s: not reported
  (`execute.boundary._counted`)
"""

from __future__ import annotations

import json

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.archives import read_jsonl
from tests.helpers.commands import call_benchrun, run_dir_of
from tests.helpers.p24_execute import ollama_run, openai_run
from tests.helpers.p28_asking import AnsweringAs, Breaks
from tests.helpers.p29_asking import eleven_days, judged_by, no_tokens


@pytest.mark.parametrize(("grade", "shown"), [("1e300", "1e300"), ("-1e101", "-1e101"),
                                              ("1" + "0" * 120, "an integer of 121 digits")])
def test_a_judges_number_grade_out_of_range_is_said_in_the_judges_words(tmp_path, grade, shown):
    result, judged = judged_by(tmp_path, '{"grade": %s}' % grade)
    message = (f"judge 'names' graded by {shown}, out of a score's range: a grade is a finite number of magnitude at "
               "most 1e+100")
    assert result.returncode == EXIT["ok"]
    assert judged == [(json.loads(grade), None, {"type": "JudgeReplyInvalid", "message": message})] * 3


@pytest.mark.parametrize(("key", "url", "host", "kind"), [
    ("runner.host", "http://255.255.255.255:9", "255.255.255.255", "is the broadcast address"),
    ("runner.host", "http://224.0.0.1:11434", "224.0.0.1", "is a multicast address"),
    ("runner.base_url", "http://[ff02::1]:8000/v1", "ff02::1", "is a multicast address")])
def test_a_server_at_a_broadcast_or_multicast_address_is_refused_not_advised_to_start(tmp_path, key, url, host, kind):
    runner = ("runner=openai", "runner.model=m") if key == "runner.base_url" else ()
    done = call_benchrun(*runner, f"{key}='{url}'", "cache=false", f"outputs={tmp_path / 'o'}", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'config': {key}: '{url}' is not a server's URL: its host '{host}' {kind}, which names "
        "no one server (no connection can be made to it)\n"))


@pytest.mark.parametrize("structured", ["json_schema", "json_object"])
def test_a_resume_onto_a_server_answering_as_another_model_is_refused_however_asked(tmp_path, structured):
    with AnsweringAs("qwen2.5-7b", responder=Breaks(5)) as first:
        done = call_benchrun("runner=openai", f"runner.base_url={first.url}", "runner.model=qwen", "runner.retries=0",
                             f"runner.structured={structured}", "cache=false", f"outputs={tmp_path / 'o'}", cwd=tmp_path)
    [run_dir] = (tmp_path / "o").glob("*/*")
    resume = ("resume", str(run_dir), "--host")
    with AnsweringAs("qwen2.5-14b") as other, AnsweringAs("qwen2.5-7b") as same:
        refused = call_benchrun(*resume, other.url, cwd=tmp_path, module="benchrun.audit")
        resumed = call_benchrun(*resume, same.url, cwd=tmp_path, module="benchrun.audit")
    assert done.returncode == EXIT["runner"]
    assert (refused.returncode, refused.stderr) == (EXIT["archive"], (
        'benchrun: error: model qwen is now answers_as "qwen2.5-14b", the run used answers_as "qwen2.5-7b"; resume '
        "with --force to continue with it anyway (recorded in run.json)\n"))
    assert (resumed.returncode, resumed.stderr, len(other.requests)) == (EXIT["ok"], "", 1)
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"


@pytest.mark.parametrize("ask", ["ollama", "openai"])
def test_a_completion_of_text_said_to_be_no_tokens_is_not_reported(tmp_path, ask):
    done = ollama_run(tmp_path, no_tokens) if ask == "ollama" else openai_run(tmp_path, no_tokens)[1]
    run_dir = run_dir_of(done.stdout)
    counted = {(r["text"], r["completion_tokens"]) for r in read_jsonl(run_dir / "responses.jsonl")}
    speed = json.loads((run_dir / "summary.json").read_text())["speed"]
    assert (done.returncode, counted) == (EXIT["ok"], {('{"answer": 6}', None), ('{"answer": 11}', None),
                                                        ('{"answer": 25}', None)})
    assert (speed["tokens_per_s"], speed["tokens_per_s_from"]) == (None, None)


def test_a_servers_duration_longer_than_benchrun_waits_is_not_reported(tmp_path):
    run_dir = run_dir_of(ollama_run(tmp_path, eleven_days).stdout)
    durations = [r["durations_ns"] for r in read_jsonl(run_dir / "responses.jsonl")]
    speed = json.loads((run_dir / "summary.json").read_text())["speed"]
    assert durations == [{"prompt_eval": 10_000_000}] * 3
    assert (speed["load_s"], speed["tokens_per_s_from"], speed["prompt_tokens_per_s"]) == (None, "wall", 700.0)

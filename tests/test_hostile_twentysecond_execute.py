"""Hostile input, twenty-second pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found
bad, each with the rule it now obeys.
- one server listed twice, once under an IPv4-mapped IPv6 address (`http://[::ffff:127.0.0.1]:11434` beside
  `http://127.0.0.1:11434`, or `[::ffff:7f00:1]`): a connection to it reaches the IPv4 address, yet the list check
  compared the addresses as written, so the run asked one server as two (twice runner.concurrency at it, each
  response naming one of two `host`s, run.json listing it twice). Now an IPv4-mapped address is the IPv4 address it
  reaches (`execute.hosts.reached_address`): refused as every other second spelling is (exit 2)
- a judge whose every request fails (its server answering 500) with max_consecutive_failures at its default (5): the
  run failed fast as the eleventh pass made it, but the four answers whose judge calls failed before the fifth were
  recorded already, each graded as its own scorer error; `resume` once the judge was mended graded only the answers
  left ungraded, so those four kept `HTTP 500: boom` for good (the judge's n 4 short, its errors 4), and a resume
  while the judge was still broken graded the rest below the limit and sealed the run `completed_with_errors`
  (exit 0) with every grade an error. Now a grading holding a judge failure is held back, as the executor holds a
  failed sample, until a reply (or a failure of another kind, or the end of the asking) shows it was the answer's
  own (`execute.judging.Judge.undecided`, `execute.grading.Held`; the executor's commits and resume's regrading):
  a judge that fails fast leaves every answer of its run of failures ungraded, and `resume` grades them all
- answers longer than runner.max_response_bytes sample after sample (a model that writes more than the limit set):
  the run failed fast with `finish it once the setup is mended with: benchrun-audit resume RUN`, and every resume,
  asked with the same limit, failed the same way, though `--set runner.max_response_bytes=...` is the one mending a
  resume can make. Now the line adds it, as it does a longer timeout for a slow server (`execute.failurekind.longer`:
  `, or, if the answers are only long, with: benchrun-audit resume RUN --set runner.max_response_bytes=4096`)
- a response cache whose disk fills mid-run (a home quota, ~/.cache on a small disk, the archive elsewhere), or
  whose lock another process holds past BUSY_TIMEOUT_S mid-run: the run stopped in one line (exit 2, `failed`) whose
  only advice was for a new run (`set cache_dir= to a directory on local disk, or cache=false`), though `resume`,
  which asks without the cache, finishes it, and what was answered was left ungraded. Now a store's failure while
  the run asks is `CacheFailed` (`execute.cache`): the run stops as a broken setup does, its answers graded, the line
  saying where the run is and how to finish it (`execute.session.recording`)
- a judge taking fewer calls at once than the model answers (`+judge.concurrency=1`, runner.concurrency=8): each
  judge call's `seconds` in judgements.jsonl counted its wait for a free slot, so eight calls of 0.3 s each were
  recorded as 0.3, 0.6, ... 2.4 s. Now a call's time starts once it has its turn, as an answer's does
  (`execute.judging.Judge._judgement`)
- a list of servers whose answer to a sample is longer than runner.max_response_bytes: the request was asked again
  of every other server of the list (each generating the same long answer of the same model: 8 MiB by default, so
  minutes of a GPU's time each), and each server so asked was rested for 10 s as a failing one. Now a request that
  failed for its answer is that sample's error at the server that gave it (`execute.hosts._answers_own`)
What held (tried, nothing new): server lists with a second spelling of a leading or trailing space, `//`, a port with
a leading zero, `2130706433`, `0` (refused as listed twice), `?` or `#x` (refused); a judge failing at random (15% to
75% of calls) with concurrency 4, repeats 2 and judge repeats 2: completed with its failures as the answers' own, or
failed fast and finished by `resume`, never a call twice, verify intact; a judge slower than judge.timeout_s: fail-fast
advising `--set judge.timeout_s=...`, and that resume grades every answer; limits at their edges (`timeout_s` of
.inf, nan, 1e-300; a seed or temperature of `true`, `1.5`, `'7'`: refused or one line); a judge grading `1e400` (the
answer's scorer error, `must be a finite number`); a server lost mid-run in a list: its requests' time elsewhere
is their own (no wait for a free server counted in this trial).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import Lab, line_count, wait_for
from benchrun.testing.ollama_server import ChatRequest, FakeOllama, Reply
from benchrun.testing.oracle import fenced_fields
from benchrun.testing.small_disk import can_mount, small_disk
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.judges import JUDGES, RESPONSE


@pytest.mark.parametrize("second", ["http://[::ffff:127.0.0.1]:{port}", "http://[::ffff:7f00:1]:{port}",
                                    "http://[::ffff:0.0.0.0]:{port}"])
def test_one_server_under_an_ipv4_mapped_address_is_listed_twice(tmp_path, second):
    with FakeOllama() as server:
        second = second.format(port=server.port)
        result = call_benchrun(f"runner.host=['{server.url}','{second}']", "runner.model=llama3.2", "cache=false",
                               f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
        asked = [r for r in server.requests if r["path"] == "/api/chat"]
    assert (result.returncode, result.stderr, asked) == (EXIT["usage"], (
        f"benchrun: error: in 'config': runner.host: '{second}' is '{server.url}' again (both reach 127.0.0.1 port "
        f"{server.port}): list each server once\n"), [])


EIGHT = """- name: symbol
  template: "name {n}"
  values:
     n: [1, 2, 3, 4, 5, 6, 7, 8]
  reference: [a, b, c, d, e, f, g, h]
  scorer: contains
  judge: names
"""
BOOM = Reply(status=500, error="boom")


def right(req: ChatRequest) -> str:
    """The model under test answers `a`; the judge (qwen2.5) says right."""
    return json.dumps({"verdict": "right"} if req.model.startswith("qwen2.5") else {"answer": "a"})


def judged_eight(tmp_path, judge_url: str, model_url: str):
    write_bench(tmp_path, {"tasks.yml": EIGHT, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    return call_benchrun(f"runner.host={model_url}", "task.path=bench", "judge.model=qwen2.5",
                         f"judge.host={judge_url}",
                         "+judge.backoff_s=0", "cache=false", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)


def grades(run_dir) -> list[tuple[str, int | None, str | None]]:
    return sorted((c["id"], c["value"], c["error"] and c["error"]["message"])
                  for c in read_jsonl(run_dir / "judgements.jsonl"))


def test_a_broken_judges_failures_before_it_failed_fast_are_graded_by_the_resume(tmp_path):
    with FakeOllama(models=["llama3.2"], responder=right) as model, \
            FakeOllama(models=["qwen2.5"], responder=lambda req: BOOM) as judge:
        result = judged_eight(tmp_path, judge.url, model.url)
        [run_dir] = [info.parent for info in (tmp_path / "outputs").glob("*/*/run.json")]
        still = call_benchrun("resume", str(run_dir), cwd=tmp_path, module="benchrun.audit")
        judge.responder = right
        mended = call_benchrun("resume", str(run_dir), cwd=tmp_path, module="benchrun.audit")
    assert [result.returncode, still.returncode, mended.returncode] == [EXIT["runner"], EXIT["runner"], EXIT["ok"]]
    assert "(judge.max_consecutive_failures); run " in result.stderr
    assert grades(run_dir) == [(f"symbol:n={n}", 1, None) for n in range(1, 9)]
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"


def test_a_judges_failures_of_its_own_answers_are_recorded_as_the_run_goes_and_as_it_ends(tmp_path):
    def judging(req: ChatRequest) -> Reply | str:
        failing = req.model.startswith("qwen2.5") and fenced_fields(req.prompt)["prompt"] in ("name 1", "name 2",
                                                                                               "name 8")
        return BOOM if failing else right(req)

    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=judging) as server:
        result = judged_eight(tmp_path, server.url, server.url)
    [run_dir] = [info.parent for info in (tmp_path / "outputs").glob("*/*/run.json")]
    assert (result.returncode, json.loads((run_dir / "run.json").read_text())["status"]) == (
        EXIT["ok"], "completed_with_errors")
    assert grades(run_dir) == [(f"symbol:n={n}", None, "HTTP 500: boom") if n in (1, 2, 8) else
                               (f"symbol:n={n}", 1, None) for n in range(1, 9)]


def test_answers_failing_fast_as_too_long_are_finished_by_the_resume_the_line_gives(tmp_path):
    with Lab(tmp_path, n=8, latency_s=0, responder=lambda req: json.dumps({"answer": 7, "pad": "x" * 3000})) as lab:
        result = call_benchrun(*lab.args("runner.max_response_bytes=2048", "runner.concurrency=1"), cwd=tmp_path)
        [run_dir] = lab.run_dirs()
        advised = (f", or, if the answers are only long, with: benchrun-audit resume {run_dir} --set "
                   "runner.max_response_bytes=4096\n")
        resumed = call_benchrun("resume", str(run_dir), "--set", "runner.max_response_bytes=4096", cwd=tmp_path,
                                module="benchrun.audit")
    assert (result.returncode, result.stderr.endswith(advised)) == (EXIT["runner"], True)
    assert "TooLarge: the answer is longer than runner.max_response_bytes (2,048 bytes)" in result.stderr
    errors = [r["error"] for r in read_jsonl(run_dir / "responses.jsonl")]
    assert (resumed.returncode, errors) == (EXIT["ok"], [None] * 8)


@pytest.mark.skipif(not can_mount(), reason="mounting a small tmpfs needs root")
def test_a_response_cache_whose_disk_fills_mid_run_stops_it_saying_how_to_finish_it(tmp_path):
    padded = json.dumps({"answer": 7, "pad": "x" * 4000})
    with small_disk(tmp_path / "cache", 200) as cache, Lab(tmp_path, n=40, latency_s=0,
                                                           responder=lambda req: padded) as lab:
        result = call_benchrun(*lab.args(f"cache_dir={cache}", "cache=true"), cwd=tmp_path)
        [run_dir] = lab.run_dirs()
        info = json.loads((run_dir / "run.json").read_text())
        resumed = call_benchrun("resume", str(run_dir), cwd=tmp_path, module="benchrun.audit")
    full = (f"cache_dir: the response cache at {cache / 'responses.sqlite3'} cannot be used (OperationalError: "
            "database or disk is full); set cache_dir= to a directory on local disk, or cache=false")
    assert (result.returncode, info["status"], info["reason"]) == (EXIT["usage"], "failed", full)
    assert 0 < info["counts"]["responses"] < 40
    assert result.stderr == (
        f"benchrun: error: {full}; run {info['run_id']} is recorded as 'failed' with "
        f"{info['counts']['responses']} of 40 samples in {run_dir}; finish it (a resume asks without the cache) "
        f"with: benchrun-audit resume {run_dir}\n")
    assert (resumed.returncode, len(read_jsonl(run_dir / "responses.jsonl"))) == (EXIT["ok"], 40)


@pytest.mark.slow
def test_a_judge_calls_time_is_its_own_not_its_wait_for_a_turn(tmp_path):
    first, held = threading.Event(), []

    def judging(req: ChatRequest) -> str:
        if not held:  # the first call held until every other answer's judge call waits for its turn
            held.append(fenced_fields(req.prompt)["prompt"].replace("name ", "symbol:n="))
            first.wait(60)
        return right(req)

    write_bench(tmp_path, {"tasks.yml": EIGHT, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2"], responder=right) as model, \
            FakeOllama(models=["qwen2.5"], responder=judging) as judge:
        proc = subprocess.Popen([sys.executable, "-m", "benchrun", f"runner.host={model.url}", "task.path=bench",
                                 "judge.model=qwen2.5", f"judge.host={judge.url}", "runner.concurrency=8",
                                 "+judge.concurrency=1", "cache=false", f"outputs={tmp_path / 'outputs'}"],
                                cwd=tmp_path, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        answers = lambda: list(tmp_path.glob("outputs/*/*/responses.jsonl"))  # noqa: E731
        wait_for(lambda: bool(held) and line_count(answers()[0]) == 8)
        time.sleep(0.5)  # the held call's time, that each call waiting for its turn spent too
        first.set()
        _, stderr = proc.communicate(timeout=60)
    calls = {c["id"]: c["seconds"] for c in read_jsonl(answers()[0].parent / "judgements.jsonl")}
    assert (proc.returncode, stderr, len(calls)) == (EXIT["ok"], "", 8)
    assert max(seconds for name, seconds in calls.items() if name != held[0]) < calls[held[0]] / 2


def test_an_answer_too_long_at_one_server_of_a_list_is_not_asked_of_another(tmp_path):
    padded = json.dumps({"answer": 7, "pad": "x" * 3000})
    with Lab(tmp_path, n=3, latency_s=0, responder=lambda req: padded) as lab, \
            FakeOllama(responder=lambda req: padded) as other:
        result = call_benchrun(*lab.args(f"runner.host=[{lab.server.url},{other.url}]", "runner.retries=0",
                                         "runner.max_response_bytes=2048"), cwd=tmp_path)
        asked = [r for server in (lab.server, other) for r in server.requests if r["path"] == "/api/chat"]
    [run_dir] = lab.run_dirs()
    assert (result.returncode, len(asked)) == (EXIT["ok"], 3)
    said = [(r["attempts"], r["error"]["type"]) for r in read_jsonl(run_dir / "responses.jsonl")]
    assert said == [(1, "TooLarge")] * 3

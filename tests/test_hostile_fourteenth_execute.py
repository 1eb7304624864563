"""Hostile input, fourteenth pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad,
each with the rule it now obeys.

- a limit of open files (`ulimit -n`) that lets the run start but not open runner.concurrency connections: once
  the descriptors ran out mid-run, each connection's `OSError: [Errno 24] Too many open files` was taken for the
  server's (the official Ollama client raises it as `ConnectionError` `from None`, httpx as `ConnectError`), so
  the run stopped as `interrupted` saying `lost the model server: ConnectionError: Failed to connect to Ollama...`
  of a server that was there, and telling to finish it "once the server is back"; a request that failed so in a
  run that went on was recorded as that sample's error. Now a connection that cannot be made for want of a file
  descriptor here (EMFILE, ENFILE, anywhere in the error's chain: `runners.base.own_limit`) is the system's error,
  not the server's nor the sample's (`runners.base.transport_failure`, `asking.Asker`, `base.connects`): the run
  is recorded `failed` with the one line `too many open files; run ... is recorded as 'failed' ...; finish it
  with: benchrun-audit resume ...` (exit 4), on either runner, the judge's requests too (they are asked the same way)
- an answer holding `NaN`, `Infinity` or `-Infinity` (`{"x": NaN}` for a format's `x: float`): Python's JSON reader
  takes them, so the answer was `format_valid` 1, a JSON text that no JSON reader of the archive (nor JSON Schema's
  data model) takes; a judge's reply `{"grade": NaN}` was refused only as a grade out of range (`scorer result names
  must be a finite number...`). Now every reader of an answer's text (`core.text.json_value`: the format check, the
  built-in scorers, the judge's reply) refuses them as not JSON: format_valid 0 with the detail `invalid JSON: NaN is
  no JSON value (JSON has no NaN, Infinity or -Infinity)`, the judge's call `JudgeReplyInvalid` saying so
- a custom scorer that sets or replaces a builtin for its own work (`builtins.round = ...`, a new name): the calls
  after it in the scorer process ran with it, so a score depended on which samples that process had scored before
  (the twelfth and thirteenth passes put back the directory, environment, limits and signals, not the builtins);
  and one that patched what the scorer process itself uses (`json.loads`, `builtins.len`) ended that process as it
  read the next call, which was recorded as that next sample's `ScorerProcessDied`, an error of a sample whose
  scorer did nothing wrong; likewise a time zone it set (`os.environ['TZ'] = ...; time.tzset()`: the twelfth pass put
  $TZ back, but not the zone in force) and the decimal context (`decimal.getcontext().prec = 2`). Now every call
  starts with the builtins, the decimal context and the time zone the first call found (`scorer_worker._Found`), and
  the process reads calls and writes replies with a decoder and an encoder bound before user code runs
- an answer whose Content-Encoding names gzip thousands of times (a header may hold 100 KB: 12,000 times) over a
  body gzipped as often: the bound on the answer's length counts the decoded bytes, but every coding was a decoder of
  its own, so one answer took 400 MB before a byte of it came out (runner.concurrency times over, on either runner);
  now an answer in more than 4 codings one over another is that sample's `BrokenAnswer`, before any decoder is made
  (`runners.http.MAX_CODINGS`)

What held (tried, nothing new): the transport: a chunked answer with trailers (an `Authorization` trailer among them:
ignored, the answer kept), a chunk size of 32 hex digits or `-5` and `Content-Length: +N` (that sample's
`RemoteProtocolError`, one line), a chunk extension of 50 KB and an answer in one-byte chunks (read), an HTTP/1.0
answer without a length (read to its end); gzip and deflate bombs, a coding benchrun does not read, a redirect (the
third and twelfth passes). `ulimit -n` of 24 to 40 with runner.concurrency=64 over answers that come at once: the
run completes (connections are reused); under 20 the run cannot start (one line). The environment: a `~/.netrc`
holding a login and password for 127.0.0.1 and a `default` entry (httpx reads it only through `NetRCAuth`, which
benchrun never uses: no Authorization header reached the server, no file of the archive holds the password);
`PYTHONIOENCODING=ascii`, `LC_ALL=C`, `LANG=C`, `TZ=Nowhere/Odd-99` and `OLLAMA_HOST=[::1` beside runner=openai
(completed, the answers' text kept as it came, the run's times in UTC). The scorer: `os.dup2` of /dev/null over its
pipes (100 and above) in one call (that call's `ScorerProcessDied`, the others scored). The judge: a reply of
`Infinity`, `1e400` or `-1e308` for a `float` grade (that answer's `JudgeReplyInvalid`, out of the range a score
may have); a changed rubric or format is another key in the response cache (the key holds the rendered chat and
the format), so no cached grade of another prompt is taken; a judge that is the model it grades (the tenth pass).
The child processes: the scorer process's environment holds no variable holding a registered API key
(`core.secrets.child_env`). Per-answer cost: benchrun has no price settings (the twelfth pass); token counts as the
fourth, eighth, ninth and eleventh passes left them.

Found and not fixed: a scorer replacing a module's attribute (`math.sqrt = ...`, `json.loads = ...` for its own
work) still reaches the later calls of its process: putting back every loaded module's namespace after each call
costs about 4 ms a call (190 modules, more with numpy), the builtins a few microseconds.
"""

from __future__ import annotations

import gzip
import json
import re
import resource
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.holding import HELD_S, holding_answers
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import Lab
from benchrun.testing.ollama_server import FakeOllama, Reply
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import listbench_answer, odd_one
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import task, tasks_yml, write_bench
from tests.helpers.commands import call_benchrun, run_dir_of
from tests.helpers.judges import ANSWERS, JUDGES, RESPONSE, TASKS, answer
from tests.helpers.wire import ANSWER, coded, records

pytestmark = pytest.mark.slow

OPEN_FILES = 40
"""A limit of open files the run starts under, with fewer than the connections its held answers keep open."""


def _limited(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """`python -m benchrun ARGS` under `ulimit -n OPEN_FILES`."""
    return subprocess.run([sys.executable, "-m", "benchrun", *args], cwd=cwd, env=child_env(), capture_output=True,
                          text=True, timeout=120,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES)))


def _told(result: subprocess.CompletedProcess, outputs: Path) -> tuple[int, str, str, str]:
    """Exit code, stderr with the run directory as RUN, run.json's status and reason."""
    [run_dir] = outputs.glob("*/*")
    info = json.loads((run_dir / "run.json").read_text())
    said = result.stderr.replace(str(run_dir.absolute()), "RUN")
    return result.returncode, re.sub(r"run [0-9a-f]{12} ", "run ID ", said), info["status"], info["reason"]


def _out_of_files(samples: int, answered: int = 0) -> tuple[int, str, str, str]:
    return (EXIT["archive"], f"benchrun: error: too many open files; run ID is recorded as 'failed' with {answered} "
            f"of {samples} samples in RUN; finish it with: benchrun-audit resume RUN\n", "failed",
            "benchrun failed: OSError: [Errno 24] Too many open files")


def test_running_out_of_file_descriptors_mid_run_is_the_systems_error_not_a_lost_ollama(tmp_path):
    with Lab(tmp_path, n=60, latency_s=0) as lab, holding_answers(lab.server, after=0):
        result = _limited(lab.args("runner.concurrency=64"), tmp_path)
    assert _told(result, tmp_path / "outputs") == _out_of_files(60)


def test_running_out_of_file_descriptors_mid_run_is_the_systems_error_not_a_lost_openai_server(tmp_path):
    with FakeOpenAI(models=["llama3.2"], responder=listbench_answer) as server, holding_answers(server, after=0):
        result = _limited(["runner=openai", f"runner.base_url={server.url}", "runner.model=llama3.2",
                           "runner.structured=json_schema", "runner.concurrency=64", "repeats=4",
                           f"outputs={tmp_path / 'outputs'}"], tmp_path)
    assert _told(result, tmp_path / "outputs") == _out_of_files(72)


FLOAT = "from pydantic import BaseModel\n\n\nclass F(BaseModel):\n    x: float\n"
NOT_JSON = "invalid JSON: {} is no JSON value (JSON has no NaN, Infinity or -Infinity)"


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_an_answer_holding_nan_or_infinity_is_not_json(tmp_path, constant):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task(format="F", scorer="contains")), "custom_response.py": FLOAT})
    with FakeOllama(responder=lambda req: f'{{"x": {constant}}}') as server:
        result = call_benchrun(f"runner.host={server.url}", "task.path=bench", "cache=false",
                               f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert result.returncode == EXIT["ok"]
    lines = read_jsonl(run_dir_of(result.stdout) / "scores.jsonl")
    assert [(s["metrics"], s["detail"]) for s in lines if s["scorer"] == "format_valid"] == [
        ({"format_valid": 0}, NOT_JSON.format(constant))] * 2


JUDGED = """- name: marks
  rubric: "Q {prompt} A {response} R {reference}"
  format: F
  score: x
"""


def test_a_judges_reply_holding_nan_is_not_json(tmp_path):
    write_bench(tmp_path, {"tasks.yml": TASKS.replace("judge: names", "judge: marks"), "judges.yml": JUDGED,
                           "custom_response.py": FLOAT})

    def answer(req):
        return '{"x": NaN}' if req.model.startswith("qwen2.5") else json.dumps({"answer": ANSWERS[req.prompt[-1]]})

    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=answer) as server:
        result = call_benchrun(f"runner.host={server.url}", "task.path=bench", "judge.model=qwen2.5", "cache=false",
                               f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert result.returncode == EXIT["ok"]
    why = f"the judge's reply is not JSON: {NOT_JSON.format('NaN').removeprefix('invalid JSON: ')}"
    run_dir = run_dir_of(result.stdout)
    assert [(j["grade"], j["error"]) for j in read_jsonl(run_dir / "judgements.jsonl")] == [
        (None, {"type": "JudgeReplyInvalid", "message": why})] * 3
    assert [s["error"] for s in read_jsonl(run_dir / "scores.jsonl") if s["scorer"] == "marks"] == [
        {"type": "JudgeReplyInvalid", "message": f"1 of 1 judgements give no grade: {why}"}] * 3


PATCHING = """import builtins
import decimal
import json
import os
import time


def s(response, values):
    found = {'round': round(2.7), 'extra': int(hasattr(builtins, 'extra')), 'zone': time.timezone,
             'digits': decimal.getcontext().prec}
    builtins.round = lambda *args: -1
    builtins.extra = 1
    json.loads = lambda text: [-1, 'gone']
    os.environ['TZ'] = 'Asia/Tokyo'
    time.tzset()
    decimal.getcontext().prec = 2
    return found
"""


def test_a_builtin_json_a_time_zone_or_a_decimal_context_a_scorer_sets_reaches_no_other_call(tmp_path):
    with Lab(tmp_path, n=3, latency_s=0, scorer=PATCHING) as lab:
        result = subprocess.run([sys.executable, "-m", "benchrun", *lab.args()], cwd=tmp_path, capture_output=True,
                                text=True, timeout=120, env=child_env({"TZ": "UTC"}))
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    assert [(s["metrics"], s["error"]) for s in records(lab, "scores.jsonl") if s["scorer"] == "s"] == [
        ({"s.round": 3, "s.extra": 0, "s.zone": 0, "s.digits": 28}, None)] * 3


def _layered(times: int) -> bytes:
    """An answer to the sample of a = 3, its body gzipped `times` over, its Content-Encoding naming each."""
    body = ANSWER
    for _ in range(times):
        body = gzip.compress(body, mtime=0)
    return coded(body, ", ".join(["gzip"] * times))


@pytest.mark.parametrize("times, kept", [(4, ('{"answer": 21}', None)), (5, (None, {
    "type": "BrokenAnswer", "message": "the answer's body is in 5 content codings, one over another; benchrun undoes "
                                       "at most 4"}))])
def test_an_answer_in_more_codings_than_any_server_uses_is_refused(tmp_path, times, kept):
    with Lab(tmp_path, n=6, responder=odd_one(Reply(wire=_layered(times)))) as lab:
        result = lab.call(*lab.args())
    assert result.returncode == EXIT["ok"]
    assert [(r["text"], r["error"]) for r in records(lab) if r["id"] == "times7:a=3"] == [kept]


def test_running_out_of_file_descriptors_while_judging_is_the_systems_error_not_a_lost_judge(tmp_path):
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    released = threading.Event()

    def held_judge(req):
        if req.model.startswith("qwen2.5"):
            released.wait(HELD_S)
        return answer(req)

    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=held_judge) as server:
        try:
            result = _limited([f"runner.host={server.url}", "task.path=bench", "judge.model=qwen2.5", "cache=false",
                               "judge.repeats=30", "+judge.concurrency=100", f"outputs={tmp_path / 'outputs'}"],
                              tmp_path)
        finally:
            released.set()
    code, said, status, reason = _told(result, tmp_path / "outputs")
    said = said.replace(" (3 not graded yet)", "")  # said as the writer's books counted them when the run stopped
    assert (code, said, status, reason) == _out_of_files(3, answered=3)

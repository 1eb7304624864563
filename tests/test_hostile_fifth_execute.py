"""Hostile input, fifth pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad, each
with the rule it now obeys.

- a preflight answer whose body does not decode as its Content-Encoding says (`gzip` over plain JSON): a traceback
  (exit 1) from /api/tags, /api/version or GET /models; now one line naming the server, as for any answer broken off
- an answer whose body is raw deflate (no zlib header) under `Content-Encoding: deflate`, as many servers send it and
  httpx's own decoder (and curl's) reads it: benchrun's bounded decoder refused it (`DecodingError`, the answer lost);
  now read as httpx reads it, bounded the same way
- a server (or a proxy before it) that closes the connection of one sample's request without an answer, every time,
  while it answers the others: taken as a lost server, so the run was interrupted, and `resume` stopped at the same
  sample forever; in a list, that server was left out though it answered everything else. A server is lost now only
  when, its retries used up, a new connection to it cannot be made; else the request is that sample's error (or, in
  a list, asked of another server)
- a judge that inherits a list of servers and loses every one: the run was rightly interrupted, but the judge calls of
  answers it stopped before grading failed unheard, and asyncio logged `Task exception was never retrieved` with a
  traceback each once they were collected (in a process that goes on: the public `benchrun.run`, a test); now each
  call's failure is marked heard, and `resume` grades the answers once the servers are back
- `resume --host` and `retry --host` with a URL holding a password or an API key (`http://bob:PASSWORD@gpu1:11434`,
  `?api_key=`): taken, and kept in run.json (history and runner) though the config refuses the same URL; now refused
  the same way, before the run is touched
"""

from __future__ import annotations

import gc
import json
import threading
import zlib

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.http_fake import Response
from benchrun.testing.lab import Lab
from benchrun.testing.ollama_server import FakeOllama, Reply
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import listbench_answer, odd_one
from tests.helpers.archives import read_jsonl
from tests.helpers.commands import call_benchrun, run_dir_of
from tests.helpers.judges import answer
from tests.helpers.wire import ANSWER, GRADES, MODELS, asking, coded, judge_grades, judged_over, over, records

LIMIT = 100_000
NOT_GZIP = ("(BrokenAnswer: the answer's body does not decode as its Content-Encoding (gzip) says: Error -3 while "
            "decompressing data: incorrect header check)")
UNDECODABLE = {  # (runner, path) -> what the run says
    ("ollama", "/api/tags"): f"Ollama at {{url}} answered the preflight with what is not Ollama's answer {NOT_GZIP}; "
                             "runner.host must name an Ollama server",
    ("ollama", "/api/version"): f"Ollama at {{url}} answered the preflight with what is not Ollama's answer "
                                f"{NOT_GZIP}; runner.host must name an Ollama server",
    ("openai", "/v1/models"): f"the server at {{url}} answered GET /models without a model list {NOT_GZIP}; "
                              "runner.base_url is the API root, usually ending in /v1",
}


@pytest.mark.parametrize("case", list(UNDECODABLE))
def test_a_preflight_answer_that_does_not_decode_as_its_content_encoding_is_one_line(tmp_path, case):
    runner, path = case
    lying = Response(200, b"", wire=coded(b'{"models": []}', "gzip"))
    with Lab(tmp_path, n=6, latency_s=0) as lab, FakeOpenAI(models=["m"]) as openai:
        server = lab.server if runner == "ollama" else openai
        served = server.dispatch
        server.dispatch = lambda request: lying if request.path == path else served(request)
        result = lab.call(*asking(lab, openai, runner))
    message = UNDECODABLE[case].format(url=server.url)
    assert (result.returncode, result.stderr) == (EXIT["runner"], f"benchrun: error: {message}\n")



def raw_deflate(padding: int = 0) -> bytes:
    """ANSWER as raw deflate, with `padding` spaces inside it."""
    squeeze = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return b"".join([squeeze.compress(ANSWER[:-1] + b" " * padding), squeeze.compress(b"}"), squeeze.flush()])


RAW = {  # a = 3's body as raw deflate -> what is recorded for it (its text, else its error)
    "an answer": (raw_deflate(), '{"answer": 21}'),
    "a bomb": (raw_deflate(padding=2 * LIMIT), {
        "type": "TooLarge", "message": f"the answer is longer than runner.max_response_bytes ({LIMIT:,} bytes); the "
                                       "rest was not read"}),
}


@pytest.mark.parametrize("body", list(RAW))
def test_a_raw_deflate_answer_is_read_as_httpx_reads_it_and_bounded(tmp_path, body):
    data, kept = RAW[body]
    with Lab(tmp_path, n=6, latency_s=0, responder=odd_one(Reply(wire=coded(data, "deflate")))) as lab:
        result = lab.call(*lab.args(f"runner.max_response_bytes={LIMIT}"))
        [answer] = [r for r in records(lab) if r["id"] == "times7:a=3"]
    assert result.returncode == EXIT["ok"], result.stderr
    assert (answer["text"], answer["error"]) == ((kept, None) if isinstance(kept, str) else (None, kept))


DROPPED = {"type": "RemoteProtocolError", "message": "Server disconnected without sending a response."}


@pytest.mark.parametrize("runner", ["ollama", "openai"])
def test_a_request_the_server_always_drops_is_that_samples_error_not_a_lost_server(tmp_path, runner):
    odd = odd_one(Reply(drop=True))
    with Lab(tmp_path, n=6, latency_s=0, responder=odd) as lab, FakeOpenAI(models=["m"], responder=odd) as openai:
        result = lab.call(*asking(lab, openai, runner, "runner.concurrency=1"))
        responses = records(lab)
        [run_dir] = lab.run_dirs()
    assert result.returncode == EXIT["ok"], result.stderr
    assert [(r["id"], r["error"], r["attempts"]) for r in responses] == [
        (f"times7:a={a}", DROPPED if a == 3 else None, 2 if a == 3 else 1) for a in range(6)]
    info = json.loads((run_dir / "run.json").read_text())
    assert (info["status"], info["history"]) == ("completed_with_errors", [])


def test_a_server_of_a_list_that_drops_one_request_stays_in_the_list(tmp_path):
    seen: list[str] = []

    def dropping(req):
        """Drops the second request it gets, every time it is asked again; answers the others (which rest it for
        REST_S once it has dropped one, so it answers the first)."""
        asked = json.dumps([req.prompt, req.format])
        seen[:] = seen if asked in seen or len(seen) == 2 else [*seen, asked]
        return Reply(drop=True) if seen[1:] == [asked] else listbench_answer(req)

    with FakeOllama(responder=dropping) as first, FakeOllama(responder=listbench_answer) as second:
        result = over(tmp_path, [first, second], "runner.concurrency=1")
    assert result.returncode == EXIT["ok"], result.stderr
    run_dir = run_dir_of(result.stdout)
    responses = read_jsonl(run_dir / "responses.jsonl")
    assert [r["error"] for r in responses] == [None] * 18
    assert {r["host"] for r in responses} == {first.url, second.url}
    [moved] = [r for r in responses if r["failed_attempts"]]
    assert (moved["host"], [a["error"] for a in moved["failed_attempts"]]) == (
        second.url, [{**DROPPED, "message": f"at {first.url}: {DROPPED['message']}"}])
    assert json.loads((run_dir / "run.json").read_text())["history"] == []


def test_a_judge_that_loses_every_server_of_its_list_leaves_no_failure_unheard(tmp_path, caplog):
    def judge_lost(req):
        """The model answers; the judge's first request takes both servers down."""
        if not req.model.startswith("qwen2.5"):
            return answer(req)
        for server in servers:
            threading.Thread(target=server.stop).start()
        return Reply(drop=True)

    with FakeOllama(models=MODELS, responder=judge_lost) as one, FakeOllama(models=MODELS, responder=judge_lost) as two:
        servers = [one, two]
        result = judged_over(tmp_path, servers, "runner.backoff_s=0", "runner.concurrency=1")
        gc.collect()  # asyncio tells of a task's unretrieved failure when the task is collected
        [run_dir] = [info.parent for info in (tmp_path / "outputs").glob("*/*/run.json")]
        for server in servers:
            server.responder = answer
            server.start()
        resumed = call_benchrun("resume", str(run_dir), cwd=tmp_path, module="benchrun.audit")
    assert (result.returncode, resumed.returncode) == (EXIT["runner"], EXIT["ok"]), resumed.stderr
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []
    last = result.stderr.splitlines()[-1]
    assert last.startswith("benchrun: error: lost every server of the list, the last: lost the judge's server ")
    assert f"is recorded as 'interrupted' with 3 of 3 samples (3 not graded yet) in {run_dir}" in last
    assert judge_grades(run_dir) == sorted(GRADES)


@pytest.mark.parametrize("command", ["resume", "retry"])
@pytest.mark.parametrize("url", ["http://bob:hunter2hunter2@{at}", "http://{at}/?api_key=sk-abcdefabcdefabcdefabcd"])
def test_resume_and_retry_refuse_a_host_url_holding_a_credential(tmp_path, command, url):
    with Lab(tmp_path, n=6, latency_s=0, responder=odd_one(Reply(status=400, error="no"))) as lab:
        assert lab.call(*lab.args()).returncode == EXIT["ok"]
        [run_dir] = lab.run_dirs()
        before = {path.name: path.read_bytes() for path in run_dir.iterdir() if path.is_file()}
        given = url.format(at=lab.server.url.removeprefix("http://"))
        result = lab.call(command, str(run_dir), "--host", lab.server.url, "--host", given, module="benchrun.audit")
        why = ("a URL with a user name or password in it" if "@" in given else
               "a URL with a credential in its query string: api_key=")
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: --host http://...: secrets are never taken from --host, where they would be archived "
        f"({why}); give URLs without user names or passwords\n"))
    assert ({path.name: path.read_bytes() for path in run_dir.iterdir() if path.is_file()}, lab.run_dirs()) == (before, [run_dir])

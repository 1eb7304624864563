"""The twenty-eighth hostile pass of issue 19, the asking side.

- a redirect's Location was quoted in the sample's error (and the preflight's line) as the server sent it, a user name
  and password in it (`http://user:pass@host/`), or a credential in its query: a URL from a server is quoted as a URL
  the user gives is (`core.secrets.said_url`, the rule `--host` is said by), `http://...`
- a server's error message quoting a URL with a credential in it (a proxy naming the upstream it could not reach,
  `http://admin:pass@10.0.0.5:8000/v1`) was archived as the sample's error with the credential: every server message
  an error quotes says each URL as `said_url` says it (`core.secrets.said_urls`, in `runners.errorbody.quoted` and
  `body_text`, through which every server's message passes)
- a resume of a run whose OpenAI-compatible server's answers named the model by another name than its id (the probe's
  answer `qwen2.5-7b` for `qwen`, kept as `answers_as`), asked of a server whose answers name another
  (`qwen2.5-14b`), went on unsaid: the run's answers came from two models as one's, though a list of servers that
  answer as two models is refused. Which model answered is pinned by that name where nothing else pins it
  (`core.recordvalues.pinned_as`), so the resume is refused as one onto other weights is, and `show` tells the
  sessions apart
- a server's URL given without its scheme but with user info (`runner.host=user:pass@127.0.0.1:9`, `--host
  user:pass@host/v1`) was taken (the credential check reads URLs by their scheme), asked as http://user:pass@..., and
  its password archived (config.yaml, run.json) and said in the `cannot reach` line; `//user:pass@host` was refused
  quoting the password. A server's URL is checked for a credential as benchrun reads it, and quoted as `said_url`
  says it (`core.serverurls._well_formed`)
"""

from __future__ import annotations

import json

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.chat import Reply
from benchrun.testing.http_fake import Response
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.commands import call_benchrun
from tests.helpers.p24_execute import asked, ollama_run, once, openai_run
from tests.helpers.p28_asking import AnsweringAs, Breaks
from tests.helpers.wire import wire

NOT_FOLLOWED = ("; benchrun follows no redirect, so that every answer comes from the server the run names: point the "
                "runner at the address it redirects to")


def moved(location: str) -> bytes:
    """A 307 answer redirecting to `location`."""
    return wire(b"{}", status="307 Temporary Redirect").replace(
        b"\r\n\r\n", f"\r\nLocation: {location}\r\n\r\n".encode(), 1)


@pytest.mark.parametrize(("location", "said"), [
    ("http://admin:hunter2-pass@10.0.0.1/v1/chat/completions", "http://..."),
    ("//admin:hunter2-pass@10.0.0.1/v1/chat/completions", "http://..."),
    ("https://10.0.0.1/v1/chat/completions?api_key=hunter2-pass", "https://..."),
    ("/v2/chat/completions?sig=hunter2-pass", "http://..."),
    ("http://10.0.0.1/v1/chat/completions", "http://10.0.0.1/v1/chat/completions")])
def test_a_redirects_address_is_quoted_without_a_credential(tmp_path, location, said):
    _, done = openai_run(tmp_path, once(Reply(wire=moved(location))))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    message = f"HTTP 307: redirected to {said}{NOT_FOLLOWED}"
    assert asked(done.stdout) == (None, {"type": "Redirected", "message": message}, 1, [message])


def test_a_preflight_redirects_address_is_quoted_without_a_credential(tmp_path):
    with FakeOllama(models=["llama3.2"]) as fake:
        served = fake.dispatch
        redirect = Response(307, b"", wire=moved("http://admin:hunter2-pass@10.0.0.1/api/tags"))
        fake.dispatch = lambda request: redirect if request.path == "/api/tags" else served(request)
        done = call_benchrun(f"runner.host={fake.url}", "cache=false", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["runner"], "", (
        f"benchrun: error: Ollama at {fake.url} refused the preflight: HTTP 307: redirected to http://..."
        f"{NOT_FOLLOWED}\n"))


UPSTREAM = "upstream http://admin:hunter2-pass@10.0.0.5:8000/v1 refused the connection"


@pytest.mark.parametrize(("ask", "status", "body", "said"), [
    ("openai", "500 Internal Server Error", f'{{"error": {{"message": "{UPSTREAM}"}}}}',
     "HTTP 500: upstream http://... refused the connection"),
    ("openai", "502 Bad Gateway", f"<html>{UPSTREAM}</html>", "HTTP 502: upstream http://... refused the connection"),
    ("openai", "400 Bad Request", '{"error": {"url": "https://10.0.0.5/v1?api_key=hunter2-pass"}}',
     'HTTP 400: {"url": "https://..."}'),
    ("ollama", "500 Internal Server Error", f'{{"error": "{UPSTREAM}"}}',
     "HTTP 500: upstream http://... refused the connection"),
    ("ollama", "200 OK", f'{{"error": "{UPSTREAM}"}}', "HTTP 200 saying an error: upstream http://... refused the "
                                                       "connection")])
def test_a_servers_message_is_quoted_without_a_credential_in_a_url(tmp_path, ask, status, body, said):
    answer = once(Reply(wire=wire(body.encode(), status=status)))
    done = openai_run(tmp_path, answer, "runner.retries=0")[1] if ask == "openai" else ollama_run(
        tmp_path, answer, "runner.retries=0")
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert asked(done.stdout)[1]["message"] == said


def test_a_resume_onto_a_server_answering_as_another_model_is_refused(tmp_path):
    with AnsweringAs("qwen2.5-7b", responder=Breaks(6)) as first:
        done = call_benchrun("runner=openai", f"runner.base_url={first.url}", "runner.model=qwen", "runner.retries=0",
                             "cache=false", f"outputs={tmp_path / 'o'}", cwd=tmp_path)
    [run_dir] = (tmp_path / "o").glob("*/*")
    resume = ("resume", str(run_dir), "--host")
    with AnsweringAs("qwen2.5-14b") as other:
        refused = call_benchrun(*resume, other.url, cwd=tmp_path, module="benchrun.audit")
        forced = call_benchrun(*resume, other.url, "--force", cwd=tmp_path, module="benchrun.audit")
    shown = call_benchrun("show", str(run_dir), cwd=tmp_path, module="benchrun.audit")
    assert done.returncode == EXIT["runner"]
    assert (refused.returncode, refused.stderr) == (EXIT["archive"], (
        'benchrun: error: model qwen is now answers_as "qwen2.5-14b", the run used answers_as "qwen2.5-7b"; resume '
        "with --force to continue with it anyway (recorded in run.json)\n"))
    assert (forced.returncode, json.loads((run_dir / "run.json").read_text())["status"]) == (EXIT["ok"], "completed")
    assert 'answers from 2 models: 5 by answers_as "qwen2.5-7b", 13 by answers_as "qwen2.5-14b"' in shown.stdout


def test_a_resume_onto_a_server_answering_as_the_same_model_goes_on(tmp_path):
    with AnsweringAs("qwen2.5-7b", responder=Breaks(6)) as first:
        call_benchrun("runner=openai", f"runner.base_url={first.url}", "runner.model=qwen", "runner.retries=0",
                      "cache=false", f"outputs={tmp_path / 'o'}", cwd=tmp_path)
    [run_dir] = (tmp_path / "o").glob("*/*")
    with AnsweringAs("qwen2.5-7b") as again:
        resumed = call_benchrun("resume", str(run_dir), "--host", again.url, cwd=tmp_path, module="benchrun.audit")
    assert (resumed.returncode, resumed.stderr) == (EXIT["ok"], "")
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"


def test_a_run_of_a_server_naming_its_weights_and_answering_as_another_name_completes(tmp_path):
    """The check as the run ends compares what the server says now with what it said as the run began, the name its
    answers give the model included: a server whose /models says its root, and whose answers name a snapshot."""
    with AnsweringAs("qwen2.5-7b", root="Qwen/Qwen2.5-7B-Instruct") as server:
        done = call_benchrun("runner=openai", f"runner.base_url={server.url}", "runner.model=qwen", "cache=false",
                             f"outputs={tmp_path / 'o'}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")


CREDENTIAL = ("'http://...' is not a server's URL benchrun takes: it holds a user name, a password or a credential in "
              "its query, which would be archived; give the URL without it (an API key goes in the variable "
              "api_key_env names)")


@pytest.mark.parametrize("given", ["runner.host=user:hunter2-pass@127.0.0.1:9",
                                   "runner.host=[127.0.0.1:8,user:hunter2-pass@127.0.0.1:9]",
                                   "runner.host=//user:hunter2-pass@127.0.0.1:9"])
def test_a_server_url_without_its_scheme_holding_a_credential_is_refused(tmp_path, given):
    done = call_benchrun(given, "dry_run=true", f"outputs={tmp_path / 'o'}", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", f"benchrun: error: in 'config': runner.host: {CREDENTIAL}\n")


@pytest.mark.parametrize("host", ["user:hunter2-pass@127.0.0.1:9/v1", "//user:hunter2-pass@127.0.0.1:9/v1"])
def test_a_resumes_host_without_its_scheme_holding_a_credential_is_refused(tmp_path, host):
    with AnsweringAs("qwen2.5-7b", responder=Breaks(6)) as first:
        call_benchrun("runner=openai", f"runner.base_url={first.url}", "runner.model=qwen", "runner.retries=0",
                      "cache=false", f"outputs={tmp_path / 'o'}", cwd=tmp_path)
    [run_dir] = (tmp_path / "o").glob("*/*")
    refused = call_benchrun("resume", str(run_dir), "--host", host, cwd=tmp_path, module="benchrun.audit")
    assert (refused.returncode, refused.stderr) == (EXIT["usage"], f"benchrun: error: --host: {CREDENTIAL}\n")

"""Hostile input, fifteenth pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad,
each with the rule it now obeys.

- a custom scorer that starts a process of its own (a HumanEval-like scorer running an answer's code with
  `subprocess`): when the call overran scorer_timeout_s, the scorer process was killed and replaced, but the child
  running the answer's code (a loop without end) was left running for good, reparented to init, after benchrun had
  exited; so was a child a call left behind when the run ended. Now the scorer process leads a process group of its
  own and is ended with the whole group (`scorerprocess._ended`), as its call overruns, as it dies, and as the run ends;
  and a scorer signalling its process group (`os.killpg(0, signal.SIGTERM)`, ending what it started) no longer
  signals the run's own (which ended `interrupted`, exit 130, with a shell pipeline's other commands): that call's
  `ScorerProcessDied`, the run goes on
- an https:// server whose TLS handshake fails (a self-signed certificate, one for another name, or a server that
  speaks plain HTTP named with https://), or an https server named with http:// (it closes the connection without
  an answer): the preflight said `cannot reach ... (ConnectError); start it, or point runner.base_url at a running
  server` (the Ollama runner likewise, `start it with ollama serve`), wrong advice for a server that is running; now
  the line says what TLS did and its fix (`runners.base.there_unanswered`, both runners' preflight): trust its
  certificate with $SSL_CERT_FILE, name the server as its certificate does, name a plain HTTP server with http://,
  or a server that completes a TLS handshake with https://
- a killed run's `benchrun.log` replaced by a symbolic link (a shared archive's `benchrun.log` -> `~/.bashrc`) or a
  named pipe: `benchrun-audit resume` appended what the scorers printed to the file the link named (exit 0), and
  waited for good to open the pipe, SIGTERM unheard (the open never returned); the log is among a run's own files,
  which are never written through a link. Now the scorer process's log is checked as the writer checks every file
  of the run (`archive.dirlock.own_file`) before the process starts, and opened without following a link
  (`scorerprocess.ScorerProcess.start`, `_Printed`): one line naming it, exit 4, the run resumable once it is a file
- a redirect (3xx) answering runner=openai's structured-output probe (runner.structured=auto, the default; the
  judge's too): a traceback (exit 1), run.json `failed` by `benchrun failed: Redirected: ...`; the third pass refused
  a redirect of an answer and of GET /models, not of the probe. Now the probe's refusal is one line as the
  preflight's is (`runners.openai.OpenAIRunner._dialect`), exit 3
- an OpenAI-compatible judge's reply kept only its text: a judge that refused (`content: null`, `refusal: "..."`)
  was recorded as the reply `""` (`JudgeReplyInvalid`), its refusal written nowhere, and the served model id of each
  reply (a router answering from another model than the judge named) and its system_fingerprint, which a model's
  answers keep (`extra`), were dropped. Now a judge call keeps them as an answer does (`JudgementRecord.extra`, left
  out of the line when empty, so an Ollama judge's lines are as before; `execute.judging.Judge._judged`)
- $SSL_CERT_FILE naming a named pipe (a typo, a process substitution's leftover): OpenSSL opened it blocking, so
  with nothing writing to it every run waited at its start for good, and a SIGTERM then ended it as `... cannot be
  read as CA certificates (interrupted system call)`, exit 2; now a pipe or a device there is refused before it is
  opened (`runners.transport.ssl_context`), one line naming it, exit 2 (a pipe could not serve anyway: every
  runner's transport reads the file again, and a pipe gives its bytes once)

What held (tried, nothing new): an https:// server whose certificate $SSL_CERT_FILE trusts (completed, both
runners), `/dev/zero` as $SSL_CERT_FILE (one line at once); a gzip that does not decode, a `br` body and a body past
runner.max_response_bytes answering the structured-output probe (one line each); an IPv6 literal host
(`runner.host='http://[::1]:P'`, quoted) and a list of it with `127.0.0.1` (completed); `localhost` for a server on
127.0.0.1; a server of a list answering what is no chat answer (asked of another); a judge pulled again before a
plain resume (refused, naming both digests); the scorer process's group and the terminal: SIGINT, SIGTERM and
SIGKILL of the run at work (test_faults, the thirteenth and fourteenth passes' tests pass unchanged).

Found and not fixed: a run killed by SIGKILL leaves the processes its scorers started (the scorer process
dies with the run, its group then has no one to end it).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.http_fake import Response
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import Lab, wait_for
from benchrun.testing.ollama_server import FakeOllama, Reply
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, run_benchrun, run_dir_of
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, answer
from tests.helpers.tls import answering_with, certificate
from tests.helpers.wire import records, wire

pytestmark = pytest.mark.slow

SPAWNING = """import json
import subprocess
import sys
from pathlib import Path

FOREVER = [sys.executable, '-c', 'import time\\nwhile True: time.sleep(1)']


def spawns(response, values):
    if values['a'] in (1, 2):
        child = subprocess.Popen(FOREVER)
        Path({pids!r}, str(values['a'])).write_text(str(child.pid))
        if values['a'] == 2:
            child.wait()
    return int(json.loads(response)['answer'] == values['a'] * 7)
"""


def _running(pid: int) -> bool:
    """Whether process `pid` is there and not a zombie (dead, waiting to be reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_the_processes_a_scorer_starts_end_with_its_call_or_the_run(tmp_path):
    """a = 1 leaves its child running and returns; a = 2 waits on a child that never ends, overrunning its time."""
    pids = tmp_path / "pids"
    pids.mkdir()
    with Lab(tmp_path, n=4, latency_s=0, scorer=SPAWNING.format(pids=str(pids))) as lab:
        result = lab.call(*lab.args("scorer_timeout_s=2"))
        scored = {s["id"]: (s["metrics"], s["error"]) for s in records(lab, "scores.jsonl") if s["scorer"] == "spawns"}
    children = [int(pids.joinpath(name).read_text()) for name in ("1", "2")]
    try:
        wait_for(lambda: not any(map(_running, children)), timeout=20)
    except Exception:
        for pid in filter(_running, children):
            os.kill(pid, signal.SIGKILL)
        raise
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    assert scored == {"times7:a=0": ({"spawns": 1}, None), "times7:a=1": ({"spawns": 0}, None),
                      "times7:a=2": (None, {"type": "TimeoutError", "message": "timed out after 2 s"}),
                      "times7:a=3": ({"spawns": 0}, None)}


def _served_in_tls(tmp_path, runner: str, monkeypatch, name: str | None, trusted: bool, scheme: str = "https"):
    """A run of a fake server of `runner` named with `scheme`, answering with a certificate for `name` (None: in plain
    HTTP), which $SSL_CERT_FILE names if `trusted`: the URL it was named by and what benchrun said."""
    with FakeOllama() as ollama, FakeOpenAI(models=["m"]) as openai:
        server = ollama if runner == "ollama" else openai
        if name is not None:
            cert, key = certificate(tmp_path, name)
            server.serve_tls(answering_with(cert, key))
            if trusted:
                monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        url = server.url.replace("http://", f"{scheme}://", 1)
        named = ["runner.host=" + url] if runner == "ollama" else ["runner=openai", f"runner.base_url={url}",
                                                                    "runner.model=m"]
        return url, call_benchrun(*named, "cache=false", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)


TLS = {  # the server's certificate (None: it speaks plain HTTP), whether $SSL_CERT_FILE names it, the scheme it is
    # named with -> what is said
    "self-signed": ("127.0.0.1", False, "https", "answers with a TLS certificate this machine does not trust "
                    "(self-signed certificate); point $SSL_CERT_FILE at a PEM file of the authority that signed it "
                    "(of the certificate itself, for a self-signed one)"),
    "for another name": ("example.org", True, "https", "answers with a TLS certificate for another name (IP address "
                         "mismatch, certificate is not valid for '127.0.0.1'); name the server in {key} as its "
                         "certificate does"),
    "plain HTTP named https": (None, False, "https", "does not answer in TLS (wrong version number): a server of "
                               "plain HTTP is named with http:// in {key}"),
    "TLS named http": ("127.0.0.1", True, "http", "answers in TLS, not in plain HTTP: name it with https:// in {key} "
                       "(its certificate trusted by this machine, or named by $SSL_CERT_FILE)"),
}


@pytest.mark.parametrize("runner", ["ollama", "openai"])
@pytest.mark.parametrize("case", list(TLS))
def test_a_server_whose_tls_handshake_fails_is_said_to_be_there_with_the_fix(tmp_path, monkeypatch, runner, case):
    name, trusted, scheme, said = TLS[case]
    url, result = _served_in_tls(tmp_path, runner, monkeypatch, name, trusted, scheme)
    key = "runner.host" if runner == "ollama" else "runner.base_url"
    assert (result.returncode, result.stderr) == (
        EXIT["runner"], f"benchrun: error: the server at {url} {said.format(key=key)}\n")


@pytest.mark.parametrize("runner", ["ollama", "openai"])
def test_the_fix_said_of_a_self_signed_certificate_works(tmp_path, monkeypatch, runner):
    _, result = _served_in_tls(tmp_path, runner, monkeypatch, "127.0.0.1", trusted=True)
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")


SIGNALLING = ("import json\nimport os\nimport signal\n\n\ndef grp(response, values):\n    if values['a'] == 1:\n"
              "        os.killpg(0, signal.SIGTERM)\n    return int(json.loads(response)['answer'] == values['a'] * 7)\n")


def test_a_scorer_signalling_its_process_group_ends_its_own_call_not_the_run(tmp_path):
    """`os.killpg(0, ...)`, a scorer ending what it started: the run's own group (and a shell pipeline's) before."""
    with Lab(tmp_path, n=4, latency_s=0, scorer=SIGNALLING) as lab:
        result = subprocess.run([sys.executable, "-m", "benchrun", *lab.args()], cwd=tmp_path, env=child_env(),
                                capture_output=True, text=True, timeout=120, start_new_session=True)
        scored = {s["id"]: (s["metrics"], s["error"]) for s in records(lab, "scores.jsonl") if s["scorer"] == "grp"}
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    assert scored == {"times7:a=0": ({"grp": 1}, None), "times7:a=2": ({"grp": 1}, None),
                      "times7:a=1": (None, {"type": "ScorerProcessDied",
                                            "message": "the scorer's process ended (exit code -15) during this call"}),
                      "times7:a=3": ({"grp": 0}, None)}


PRINTING = ("import json\n\ndef times7(response, values):\n    print('scored', values['a'])\n"
            "    return int(json.loads(response)['answer'] == values['a'] * 7)\n")


PLANTED = {  # what is put where a killed run's log belongs -> what resume says of it (after "in 'LOG': ")
    "a link": "a symbolic link (to {victim}), where the run's own file belongs; benchrun never writes through one: put "
              "the file itself there",
    "a named pipe": "a named pipe (FIFO), where the run's own file belongs; benchrun writes only into its own files",
}


@pytest.mark.parametrize("planted", list(PLANTED))
def test_a_resume_writes_what_scorers_print_only_into_the_runs_own_log(tmp_path, planted):
    """The link's writes would land in the file it names; opening the pipe waited for a reader for good (SIGTERM
    too)."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    with Lab(tmp_path, n=4, latency_s=0, scorer=PRINTING) as lab:
        with lab.held_after(2, *lab.args()) as (proc, run_dir):
            proc.kill()
            proc.communicate()
        log = run_dir / "benchrun.log"
        log.unlink()
        log.symlink_to(victim) if planted == "a link" else os.mkfifo(log)
        if planted == "a link":
            refused = call_benchrun("resume", str(run_dir), cwd=tmp_path, module="benchrun.audit")
        else:  # a real process: a resume that waits on the pipe for good is ended by the timeout, not the test's hang
            refused = run_benchrun("resume", str(run_dir), cwd=tmp_path, module="benchrun.audit", timeout=60)
        log.unlink()
        resumed = lab.call("resume", str(run_dir), module="benchrun.audit")
    assert (refused.returncode, refused.stderr) == (
        EXIT["archive"], f"benchrun: error: in '{log}': {PLANTED[planted].format(victim=victim)}\n")
    assert victim.read_text() == "precious\n"
    assert resumed.returncode == EXIT["ok"], resumed.stderr
    assert sorted(s["id"] for s in records(lab, "scores.jsonl") if s["scorer"] == "times7") == [
        f"times7:a={a}" for a in range(4)]


def test_a_redirect_at_the_structured_output_probe_is_one_line(tmp_path):
    moved = Response(307, b"", wire=wire(b"", status="307 Temporary Redirect").replace(
        b"\r\n\r\n", b"\r\nLocation: http://127.0.0.1:9/v1/chat/completions\r\n\r\n", 1))
    with FakeOpenAI(models=["m"]) as server:
        served = server.dispatch
        server.dispatch = lambda request: moved if request.path.endswith("/chat/completions") else served(request)
        result = call_benchrun("runner=openai", f"runner.base_url={server.url}", "runner.model=m", "cache=false",
                               f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["runner"], (
        f"benchrun: error: the server at {server.url} refused the structured-output probe: HTTP 307: redirected to "
        "http://127.0.0.1:9/v1/chat/completions; benchrun follows no redirect, so that every answer comes from the "
        "server the run names: point the runner at the address it redirects to\n"))


REFUSED = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "judge-v2", "choices": [
    {"index": 0, "message": {"role": "assistant", "content": None, "refusal": "I cannot grade this answer."},
     "finish_reason": "stop"}]}).encode()
"""An OpenAI-compatible judge's refusal, answered by another model than the one asked."""


def test_what_an_openai_judges_server_says_of_its_reply_is_archived_with_it(tmp_path):
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2"], responder=answer) as model, FakeOpenAI(
            models=["qwen2.5"], responder=lambda req: Reply(wire=wire(REFUSED)) if "Reference:" in req.prompt else
            answer(req)) as judge:
        result = call_benchrun(f"runner.host={model.url}", "task.path=bench", "judge.runner=openai",
                               f"judge.base_url={judge.url}", "judge.model=qwen2.5", "cache=false",
                               f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    calls = read_jsonl(run_dir_of(result.stdout) / "judgements.jsonl")
    assert result.returncode == EXIT["ok"], result.stderr
    assert {(call["reply"], json.dumps(call["extra"])) for call in calls} == {("", json.dumps(
        {"model": "judge-v2", "system_fingerprint": None, "refusal": "I cannot grade this answer."}))}


def test_a_named_pipe_as_the_certificate_file_is_refused_not_waited_on(tmp_path):
    """OpenSSL opened it blocking: with nothing writing to it the run waited at its start for good."""
    pipe = tmp_path / "certificates.pem"
    os.mkfifo(pipe)
    with FakeOllama() as server:
        result = run_benchrun(f"runner.host={server.url}", "cache=false", f"outputs={tmp_path / 'outputs'}",
                              cwd=tmp_path, env={"SSL_CERT_FILE": str(pipe)}, timeout=60)
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: $SSL_CERT_FILE names '{pipe}', which cannot be read as CA certificates (a named pipe "
        "(FIFO), not a file); unset SSL_CERT_FILE, or point it at a PEM file of certificates\n"))
